// signalr-replay against a small fake ASP.NET Core SignalR server (WebSockets, JSON): the end of a
// session. After the client's Close record and the server's, either side may close the socket
// first; a capture (the relay's --capture of a stock client) has one order, a replay may see the
// other. Both must pass; a server that closes before its Close record still fails.
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { WebSocketServer } from "ws";
import { runReplay } from "./replay-bin.mjs";

const RS = "\u001e";
const line = (o) => JSON.stringify(o);
const frame = (t, dir, text) => line({ type: "ws-frame", ws: 1, t, dir, text });

// Skip-negotiation WebSocket: handshake, a call, the client's Close record, the server's, and the
// client closing the socket (as the stock JS client did through the relay in service mode).
const FIXTURE = [
    line({ type: "session", format: "signalr-capture", version: 2, door: "core", label: "/hub", upstream: "proxy" }),
    line({ type: "ws-open", ws: 1, t: 0, path: "/hub", rawQuery: "", query: [], headers: { "user-agent": "test" } }),
    line({ type: "ws-accepted", ws: 1, t: 1, status: 101 }),
    frame(2, "c2s", `{"protocol":"json","version":1}${RS}`),
    frame(3, "s2c", `{}${RS}`),
    frame(4, "c2s", `{"type":1,"target":"Add","arguments":[2,3],"invocationId":"0"}${RS}`),
    frame(5, "s2c", `{"type":3,"invocationId":"0","result":5}${RS}`),
    frame(6, "c2s", `{"type":7}${RS}`),
    frame(7, "s2c", `{"type":7}${RS}`),
    line({ type: "ws-close", ws: 1, t: 8, by: "client", code: 1005, reason: "" }),
    line({ type: "end", t: 9, placeholders: [] }),
].join("\n") + "\n";

// how: "waits" (the server waits for the client to close), "closesFirst" (it closes right after
// its Close record), "closesEarly" (it closes without sending its Close record).
async function fakeCoreServer(how) {
    const server = http.createServer((req, res) => res.writeHead(404).end());
    const wss = new WebSocketServer({ server, path: "/hub" });
    wss.on("connection", (ws) => {
        ws.on("message", (data) => {
            for (const text of data.toString().split(RS).filter(Boolean)) {
                const msg = JSON.parse(text);
                if (msg.protocol) ws.send(`{}${RS}`);
                else if (msg.type === 1) ws.send(`{"type":3,"invocationId":"${msg.invocationId}","result":${msg.arguments[0] + msg.arguments[1]}}${RS}`);
                else if (msg.type === 7) {
                    // closesFirst: the Close record and the close frame in one write, so that the
                    // replayer reads both before it can act (the order the relay produced)
                    if (how === "closesFirst") ws._socket.cork();
                    if (how !== "closesEarly") ws.send(`{"type":7}${RS}`);
                    if (how !== "waits") ws.close(1000);
                    if (how === "closesFirst") process.nextTick(() => ws._socket.uncork());
                }
            }
        });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
        target: `http://127.0.0.1:${server.address().port}`,
        close: async () => {
            for (const c of wss.clients) c.terminate();
            await new Promise((resolve) => server.close(resolve));
        },
    };
}

for (const [how, passes] of [["waits", true], ["closesFirst", true], ["closesEarly", false]]) {
    test(`Core: the end of a session, the server ${how}: ${passes ? "passes" : "fails"}`, async () => {
        const server = await fakeCoreServer(how);
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signalr-replay-core-"));
        const file = path.join(dir, "core.jsonl");
        fs.writeFileSync(file, FIXTURE);
        try {
            const run = await runReplay(["check", "--target", server.target, "--timeout", "10000", "--grace", "200", file]);
            assert.equal(run.code, passes ? 0 : 1, run.stdout + run.stderr);
            if (passes) assert.match(run.stdout, /replay: 1 passed, 0 failed/);
            else assert.match(run.stdout, /the server closed it \(1000 ""\); in the recording the client closed it \(line 10: ws-close ws 1\) and 1 recorded message\(s\) never came/, run.stdout);
        } finally {
            await server.close();
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
}
