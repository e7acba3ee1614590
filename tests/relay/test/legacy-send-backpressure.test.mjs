// Backpressure toward the hub for legacy /send (serverSentEvents and longPolling clients): while
// the connection's hub link holds more than --max-buffered for a backend that does not read, a
// /send is held unanswered (a WebSocket client is no longer read, the same rule), instead of being
// queued toward the hub without bound and answered. Once the backend reads again, every held /send
// goes out in the order it came and is answered. The backend here is a stand-in that speaks just
// enough of ASP.NET Core SignalR (negotiate, the WebSocket, the handshake) and stops reading on cue.
import { after, before, describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import { WebSocket } from "../lib.mjs";

const WebSocketServer = WebSocket.Server;
import { httpRequest, pollUntil, sleep, withTimeout } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const RS = "\x1e";
const PIECE = 256 * 1024;          // each /send carries ~256 KB toward the hub
const FORM = { "content-type": "application/x-www-form-urlencoded; charset=UTF-8" };
const connectionData = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));
let server, wss, relay, BASE;
const links = [];                  // { ws, received: [index of each Echo], paused }

before(async () => {
    server = http.createServer((req, res) => {
        if (req.method === "POST" && req.url.startsWith("/chat/negotiate")) {
            const id = `fake-${links.length}-${Date.now()}`;
            res.writeHead(200, { "content-type": "application/json" });
            res.end(JSON.stringify({ negotiateVersion: 1, connectionId: id, connectionToken: id,
                availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] }));
            return;
        }
        res.writeHead(404).end();
    });
    wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
    server.on("upgrade", (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => {
        const link = { ws, received: [], handshaken: false };
        links.push(link);
        let pending = "";
        ws.on("message", (data) => {
            pending += data.toString();
            let end;
            while ((end = pending.indexOf(RS)) >= 0) {
                const record = JSON.parse(pending.slice(0, end));
                pending = pending.slice(end + 1);
                if (!link.handshaken) {
                    link.handshaken = true;
                    ws.send("{}" + RS);
                } else if (record.type === 1 && record.target === "Echo") {
                    link.received.push(record.arguments[0]);
                    if (record.invocationId) ws.send(JSON.stringify({ type: 3, invocationId: record.invocationId, result: record.arguments[0] }) + RS);
                }
            }
        });
    }));
    await new Promise((resolve, reject) => server.listen(0, "127.0.0.1", resolve).on("error", reject));
    relay = await startRelay(["--hub", `ChatHub=http://127.0.0.1:${server.address().port}/chat`,
        "--max-buffered", "64K", "--max-message-size", "1M"]);
    BASE = `${relay.url}/signalr`;
});
after(async () => {
    for (const l of links) l.ws.terminate();
    wss?.close();
    server?.close();
    await relay?.stop();
});

function sendData(i, withId) {
    const call = { H: "chathub", M: "Echo", A: [i, "x".repeat(PIECE)] };
    if (withId) call.I = i;
    return `data=${encodeURIComponent(JSON.stringify(call))}`;
}

describe("legacy /send toward a hub that stops reading", () => {
    it("is held while the hub link is full, then every held /send goes out in order and is answered", async () => {
        const neg = await httpRequest("GET", `${BASE}/negotiate?clientProtocol=2.1&connectionData=${connectionData}`);
        assert.equal(neg.status, 200, neg.body);
        const q = `transport=longPolling&clientProtocol=2.1&connectionToken=` +
            `${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}&connectionData=${connectionData}`;
        assert.equal((await httpRequest("POST", `${BASE}/connect?${q}`, FORM, "")).status, 200);
        assert.equal((await httpRequest("GET", `${BASE}/start?${q}`)).status, 200);
        const link = links.at(-1);
        assert.ok(link?.handshaken, "the relay's hub link is up");
        link.ws._socket.pause(); // the backend stops reading: kernel buffers fill, then the link's queue

        // Fire-and-forget /sends, one after the other: each is answered at once while the link
        // takes it; the first one held is the backpressure. Bounded: 200 x 256 KB = 50 MB.
        let held = null;
        let sent = 0;
        for (; sent < 200 && !held; sent++) {
            const answer = httpRequest("POST", `${BASE}/send?${q}`, FORM, sendData(sent, false), 60000);
            const first = await Promise.race([answer, sleep(3000).then(() => null)]);
            if (first === null) held = answer;
            else assert.equal(first.status, 200, first.body);
        }
        assert.ok(held, `every one of ${sent} /sends (${sent * PIECE} bytes) was answered with the backend not reading`);
        // A /send with an id behind it waits too, and is answered with its result once it went out.
        const withId = httpRequest("POST", `${BASE}/send?${q}`, FORM, sendData(sent, true), 60000);

        link.ws._socket.resume();
        const res = await withTimeout(held, 30000, "the held /send once the backend reads again");
        assert.equal(res.status, 200, res.body);
        const result = await withTimeout(withId, 30000, "the /send with an id");
        assert.equal(result.status, 200, result.body);
        assert.equal(JSON.parse(result.body).R, sent);
        await pollUntil(() => link.received.length, (n) => n === sent + 1, "every Echo at the backend", 30000);
        assert.deepEqual(link.received, Array.from({ length: sent + 1 }, (_, i) => i), "in the order sent");
        await httpRequest("POST", `${BASE}/abort?${q}`, FORM, "");
    });
});
