// A backend link the relay closes has its closing deadline on the timer wheel (issue 10: "every state
// of every session and link has a deadline on the wheel, including closing"). The backend here is a
// raw TCP server: it answers the negotiate, accepts the WebSocket upgrade, answers the hub handshake,
// and then
//  - "deaf": reads and ignores everything, the relay's Close frame included, never closing its side;
//  - "stalled": stops reading, so the messages the client sent it stay queued in the relay.
// When the client leaves, the relay closes its link; the link must be gone (counted out, its timer
// disarmed) within RELAY_CLOSE_TIMEOUT_MS (5 s) and a margin for a loaded machine. While it closes,
// its deadline is one of the wheel's timers (signalr_relay_timers_armed): lws' own timeout, which
// the relay set before, closed it as well, but outside the one clock the relay counts.
import { test, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import net from "node:net";
import { RS, RawClient, listen, closeServer, metrics, pollUntil, wsUrl } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const CLOSE_TIMEOUT_MS = 5000;
const NEGOTIATE_BODY = JSON.stringify({ negotiateVersion: 1, connectionId: "deaf-id", connectionToken: "deaf-token",
    availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] });

const links = []; // { socket, closeFrameAt, endedAt, pending, opcodes }

// The relay's frames toward the backend, parsed whole: TCP may deliver several in one chunk (the hub
// handshake and the Close together) or one across chunks, so the Close is found wherever it lies.
function readFrames(link, chunk) {
    link.pending = Buffer.concat([link.pending, chunk]);
    for (;;) {
        const b = link.pending;
        if (b.length < 2) return;
        let len = b[1] & 0x7f, at = 2;
        if (len === 126) { if (b.length < 4) return; len = b.readUInt16BE(2); at = 4; }
        else if (len === 127) { if (b.length < 10) return; len = Number(b.readBigUInt64BE(2)); at = 10; }
        if (b[1] & 0x80) at += 4; // the client's mask
        if (b.length < at + len) return;
        const opcode = b[0] & 0x0f;
        link.opcodes.push(opcode);
        if (opcode === 0x8 && link.closeFrameAt === null) link.closeFrameAt = Date.now();
        link.pending = b.subarray(at + len);
    }
}
let stallAfterUpgrade = false;
const deaf = net.createServer((socket) => {
    socket.on("error", () => {});
    let data = Buffer.alloc(0);
    let upgraded = null;
    socket.on("data", (d) => {
        if (upgraded) {
            readFrames(upgraded, d); // ignored all the same, the Close included
            return;
        }
        data = Buffer.concat([data, d]);
        const text = data.toString("latin1");
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) return;
        if (!/\r\nupgrade: *websocket/i.test(text)) { // the negotiate, or the relay's probe (GET of the hub path)
            if (!text.startsWith("POST ")) {
                socket.end("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
                return;
            }
            socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${NEGOTIATE_BODY.length}\r\n\r\n${NEGOTIATE_BODY}`);
            return;
        }
        const key = /\r\nsec-websocket-key: *([^\r]+)\r\n/i.exec(text)[1].trim();
        const accept = crypto.createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
        const handshake = Buffer.from(`{}${RS}`);
        socket.write(Buffer.concat([Buffer.from([0x81, handshake.length]), handshake])); // the hub's handshake answer
        upgraded = { socket, closeFrameAt: null, endedAt: null, pending: data.subarray(end + 4), opcodes: [] };
        readFrames(upgraded, Buffer.alloc(0));
        if (stallAfterUpgrade) socket.pause(); // reads nothing more: the relay's queue toward it stays
        socket.on("end", () => { upgraded.endedAt ??= Date.now(); });
        socket.on("close", () => { upgraded.endedAt ??= Date.now(); });
        links.push(upgraded);
    });
});
let deafPort = null;
const listenDeaf = async () => (deafPort ??= await listen(deaf));
after(async () => {
    for (const l of links) l.socket.destroy();
    await closeServer(deaf);
});

test("a backend that never answers the relay's Close: the link is closed at once", async () => {
    stallAfterUpgrade = false;
    const port = await listenDeaf();
    const relay = await startRelay(["--hub", `deaf=http://127.0.0.1:${port}/chat`]);
    try {
        const first = links.length;
        const client = await RawClient.connect(wsUrl(relay.url, "deaf"));
        const answer = await client.handshake(1, "json", 20000);
        assert.equal(answer.error, undefined, JSON.stringify(answer));
        const link = links[first];
        client.terminate(); // the client leaves: the relay closes its link
        const closeSent = await pollUntil(() => link.closeFrameAt, (t) => t !== null,
            () => `the relay's Close frame to the backend (frames seen: ${JSON.stringify(link.opcodes)}, socket ended: ${link.endedAt !== null})`, 20000);
        const ended = await pollUntil(() => link.endedAt, (t) => t !== null,
            "the relay to close the link's socket", 4 * CLOSE_TIMEOUT_MS, 100);
        assert.ok(ended - closeSent < CLOSE_TIMEOUT_MS + 3000, `the link's socket was closed ${ended - closeSent} ms after the Close frame`);
        await pollUntil(() => metrics(relay.url), (m) => m.backend_links_active === 0 && m.sessions_active === 0 &&
            m.timers_armed === 0, "the link, its session and their timers gone", 10000);
    } finally {
        await relay.stop();
    }
});

test("a backend that stops reading: the closing link is cut off after the closing deadline", async () => {
    stallAfterUpgrade = true;
    const port = await listenDeaf();
    // --max-buffered high enough that the relay keeps reading the client while the backend is stalled.
    const relay = await startRelay(["--hub", `deaf=http://127.0.0.1:${port}/chat`, "--max-buffered", "64M"]);
    try {
        const client = await RawClient.connect(wsUrl(relay.url, "deaf"));
        const answer = await client.handshake(1, "json", 20000);
        assert.equal(answer.error, undefined, JSON.stringify(answer));
        // 16 MB toward the backend: more than the kernel's socket buffers take; the rest stays queued.
        const record = JSON.stringify({ type: 1, target: "Echo", arguments: ["x".repeat(64 * 1024)] }) + RS;
        for (let i = 0; i < 256; i++) client.ws.send(record);
        await pollUntil(() => metrics(relay.url), (m) => m.messages_to_backend_total >= 256,
            "the relay to take every message from the client", 30000, 200);
        const closedAt = Date.now();
        client.ws.close(1000); // the client leaves cleanly: the relay closes its link behind the queue
        // The session is gone and the link is closing: its deadline is on the wheel, counted in /metrics
        // (lws' own timeout, which the relay used before, was not).
        const closing = await pollUntil(() => metrics(relay.url), (m) => m.sessions_active === 0,
            "the client's session gone", 10000, 100);
        assert.equal(closing.backend_links_active, 1, "the link is still closing");
        assert.equal(closing.timers_armed, 1, "the closing link's deadline is on the timer wheel");
        await pollUntil(() => metrics(relay.url), (m) => m.backend_links_active === 0 && m.sessions_active === 0,
            "the closing link cut off", 6 * CLOSE_TIMEOUT_MS, 200);
        const took = Date.now() - closedAt;
        assert.ok(took >= CLOSE_TIMEOUT_MS - 1000, `the link was cut off ${took} ms after the client left, before the deadline`);
        assert.ok(took < CLOSE_TIMEOUT_MS + 5000, `the link was cut off ${took} ms after the client left`);
        await pollUntil(() => metrics(relay.url), (m) => m.timers_armed === 0, "no timer left armed", 10000);
    } finally {
        await relay.stop();
    }
});
