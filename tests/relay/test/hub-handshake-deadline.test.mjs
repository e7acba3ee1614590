// 20. A backend that takes the WebSocket but never answers the SignalR handshake (issue 10, defect 3:
// every state has a deadline). Once the client's handshake has gone to the hub, the session waited
// for the hub's answer with no timer armed (the handshake timeout was cancelled and the keepalive
// starts with the answer): client, session and backend link were held for as long as that backend
// kept its socket open. Now the hub gets --handshake-timeout to answer, as the client does: then the
// client gets a handshake error naming the hub and everything is released. A fake backend of the
// test's own (node http + ws): it answers the relay's negotiate as ASP.NET Core does, completes the
// WebSocket upgrade, reads everything and answers nothing.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import WebSocket from "ws";
import { startRelay } from "../../lib/process.mjs";
import { RS, RawClient, metrics, pollUntil, withTimeout, wsUrl } from "../lib.mjs";

test("a hub that never answers the handshake: the client is told within --handshake-timeout, nothing is kept", async () => {
    const server = http.createServer((req, res) => {
        if (req.method !== "POST" || !req.url.startsWith("/hub/negotiate")) {
            res.writeHead(404).end();
            return;
        }
        res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({
            negotiateVersion: 1, connectionId: "silent-id", connectionToken: "silent-token",
            availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }],
        }));
    });
    const silent = new WebSocket.Server({ server });
    const heard = [];
    silent.on("connection", (ws) => ws.on("message", (data) => heard.push(data.toString())));
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const relay = await startRelay(["--hub", `silent=http://127.0.0.1:${server.address().port}/hub`,
        "--handshake-timeout", "2"]);
    let client = null;
    try {
        client = await RawClient.connect(wsUrl(relay.url, "silent"));
        client.sendText(JSON.stringify({ protocol: "json", version: 1 }) + RS);
        await pollUntil(() => heard.length, (n) => n > 0, "the handshake to reach the silent hub", 10000, 100);
        const held = await metrics(relay.url);
        assert.equal(held.sessions_active, 1);
        assert.equal(held.backend_links_active, 1);
        const answer = await withTimeout(client.next((r) => r.type === "handshake", 20000, "a handshake answer"),
            20000, "a handshake answer");
        assert.match(answer.error, /silent/, `the answer names the hub: ${answer.error}`);
        assert.equal((await client.waitClosed(10000)).code, 1000);
        const after = await pollUntil(() => metrics(relay.url),
            (m) => m.sessions_active === 0 && m.backend_links_active === 0, "session and link released", 20000, 200);
        console.log(`# silent hub: handshake error "${answer.error}"; sessions ${after.sessions_active}, links ${after.backend_links_active}`);
    } finally {
        client?.close();
        await relay.stop();
        for (const ws of silent.clients) ws.terminate();
        silent.close();
        server.close();
    }
});
