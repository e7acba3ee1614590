// Issue 10: the relay's close for a text frame that is not UTF-8 (close 1007) lingers as its other
// closes do. It used to return -1 from lws' RECEIVE callback: lws then closed the socket behind its
// Close frame without reading on, so a client that kept sending (or had frames in flight) met a
// reset, and its kernel dropped the 1007 Close before the client read it (close 1006). Now the
// relay writes the Close 1007 with its reason, shuts down its write side and reads on, discarding,
// until the client closes or the closing deadline (5 s) passes; the descriptor is freed either way.
//
// The client is a raw socket speaking RFC 6455 (no WebSocket library sends a text frame that is not
// UTF-8, nor keeps sending after a Close): it sends the bad frame with 64 KiB of further frames
// behind it in one write, then another frame every 20 ms until it has the relay's Close or the
// connection ends. The tests share one relay (ASan build) in front of a stand-in backend (a
// negotiate and a SignalR WebSocket hub "chat"); synchronisation is on observable events only.
import { after, before, test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { startRelay } from "../../lib/process.mjs";
import { RS, WebSocket, closeServer, httpRequest, legacyConnectionData, listen, metrics, pollUntil, withTimeout } from "../lib.mjs";

const BOUND_MS = 30000; // generous: the closing deadline is 5 s
const REASON = "invalid UTF-8 in a text message";
const NOT_UTF8 = Buffer.from([0x7b, 0x22, 0x61, 0xff, 0xfe, 0x22, 0x7d, 0x1e]); // {"a\xff\xfe"} + RS

async function standInBackend() {
    let connections = 0;
    const server = http.createServer((req, res) => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ negotiateVersion: 1, connectionId: `c${++connections}`, connectionToken: `t${Date.now()}${Math.random()}`,
            availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] }));
    });
    const wss = new WebSocket.Server({ server });
    const seen = { disconnects: 0 };
    wss.on("connection", (ws) => {
        ws.on("message", (data) => {
            for (const record of data.toString().split(RS).filter(Boolean)) {
                const m = JSON.parse(record);
                if (m.protocol) ws.send(`{}${RS}`);
                else if (m.target === "Drop") ws._socket.destroy(); // the relay loses its backend link
            }
        });
        ws.on("close", () => { seen.disconnects++; });
    });
    await listen(server);
    return { url: `http://127.0.0.1:${server.address().port}`, seen,
        close: () => { wss.close(); return closeServer(server); } };
}

// One masked client frame (RFC 6455 §5.2).
function frame(opcode, payload) {
    const mask = crypto.randomBytes(4);
    const len = payload.length;
    const head = len < 126 ? Buffer.from([0x80 | opcode, 0x80 | len])
        : len < 65536 ? Buffer.from([0x80 | opcode, 0x80 | 126, len >> 8, len & 0xff])
        : (() => { const h = Buffer.alloc(10); h[0] = 0x80 | opcode; h[1] = 0x80 | 127; h.writeBigUInt64BE(BigInt(len), 2); return h; })();
    const body = Buffer.from(payload);
    for (let i = 0; i < body.length; i++) body[i] ^= mask[i & 3];
    return Buffer.concat([head, mask, body]);
}

// A WebSocket on a raw socket: the upgrade, then the server's frames parsed as they come.
async function rawWebSocket(port, pathAndQuery) {
    // Half-open allowed: the relay's FIN does not end the client's side; the client closes when it chooses.
    const socket = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    await withTimeout(new Promise((r, j) => { socket.once("connect", r); socket.once("error", j); }), 10000, "TCP connect");
    const key = crypto.randomBytes(16).toString("base64");
    socket.write(`GET ${pathAndQuery} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    const c = { socket, texts: [], pongs: 0, close: null, error: null, ended: false, waiters: [] };
    const wake = () => { for (const w of c.waiters.splice(0)) w(); };
    let buf = Buffer.alloc(0);
    let upgraded = false;
    socket.on("data", (d) => {
        buf = Buffer.concat([buf, d]);
        if (!upgraded) {
            const end = buf.indexOf("\r\n\r\n");
            if (end < 0) return;
            assert.match(buf.subarray(0, end).toString(), /^HTTP\/1\.1 101/);
            upgraded = true;
            buf = buf.subarray(end + 4);
        }
        for (;;) {
            if (buf.length < 2) break;
            let len = buf[1] & 0x7f, at = 2;
            if (len === 126) { if (buf.length < 4) break; len = buf.readUInt16BE(2); at = 4; }
            else if (len === 127) { if (buf.length < 10) break; len = Number(buf.readBigUInt64BE(2)); at = 10; }
            if (buf.length < at + len) break;
            const opcode = buf[0] & 0x0f, payload = buf.subarray(at, at + len);
            buf = buf.subarray(at + len);
            if (opcode === 1) c.texts.push(payload.toString());
            if (opcode === 10) c.pongs++;
            if (opcode === 8) c.close = { code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005, reason: payload.subarray(2).toString() };
        }
        wake();
    });
    socket.on("error", (e) => { c.error = e.code ?? String(e); wake(); });
    socket.on("close", () => { c.ended = true; wake(); }); // both sides closed, or reset
    c.until = (done, what) => withTimeout(new Promise((resolve) => {
        const check = () => (done() ? resolve() : c.waiters.push(check));
        check();
    }), BOUND_MS, what);
    c.send = (opcode, payload) => socket.write(frame(opcode, Buffer.from(payload)));
    return c;
}

// The relay's side of its connection with a client (/proc/net/tcp): its TCP state, or null when gone.
const TCP_STATES = ["", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE",
    "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING"];
function relaySide(relayPort, clientPort) {
    const hex = (p) => `0100007F:${p.toString(16).toUpperCase().padStart(4, "0")}`;
    for (const line of fs.readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f[1] === hex(relayPort) && f[2] === hex(clientPort)) return TCP_STATES[parseInt(f[3], 16)] ?? f[3];
    }
    return null;
}

const fdCount = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;

// The bad frame with 64 KiB of further text frames behind it, then one more every 20 ms until the
// relay's Close arrives or the connection ends: a client that keeps sending.
async function sendNotUtf8AndKeepSending(c, more) {
    c.socket.write(Buffer.concat([frame(1, NOT_UTF8), ...Array.from({ length: 64 }, () => frame(1, more(1024)))]));
    const timer = setInterval(() => { if (!c.ended && !c.error) c.send(1, more(100)); }, 20);
    try {
        await c.until(() => c.close || c.ended || c.error, "the relay's Close or the end of the connection");
    } finally {
        clearInterval(timer);
    }
    return { close: c.close, error: c.error };
}

let backend, relay;
before(async () => {
    backend = await standInBackend();
    relay = await startRelay(["--hub", `chat=${backend.url}/chat`]);
});
after(async () => {
    await relay?.stop();
    await backend?.close();
});

const coreFiller = (n) => JSON.stringify({ type: 1, target: "Echo", arguments: ["x".repeat(n)] }) + RS;

async function coreRaw(relay) {
    const neg = await (await fetch(`${relay.url}/chat/negotiate?negotiateVersion=1`, { method: "POST" })).json();
    const c = await rawWebSocket(relay.port, `/chat?id=${encodeURIComponent(neg.connectionToken)}`);
    c.connectionId = neg.connectionId;
    c.send(1, `{"protocol":"json","version":1}${RS}`);
    await c.until(() => c.texts.length > 0 || c.ended, "the handshake answer");
    assert.equal(c.texts[0], `{}${RS}`);
    return c;
}

test("Core: a client that keeps sending after its invalid UTF-8 still gets Close 1007 with its reason, and is let go when it answers", async () => {
    {
        const base = await metrics(relay.url);
        const fdsBefore = fdCount(relay.pid);
        const disconnectsBefore = backend.seen.disconnects;
        const c = await coreRaw(relay);
        assert.deepEqual(await sendNotUtf8AndKeepSending(c, coreFiller), { close: { code: 1007, reason: REASON }, error: null });
        assert.equal(c.texts.filter((t) => t.includes('"type":7')).length, 0, "no Close message: the client's own fault");
        // The client's Close (1007 echoed), then its end of the TCP connection, as RFC 6455 §7.1.1
        // asks of a client: the relay lets go at once.
        c.send(8, Buffer.from([0x03, 0xef]));
        c.socket.end();
        await c.until(() => c.ended || c.error, "the connection to end");
        assert.equal(c.error, null, "no reset");
        await pollUntil(() => metrics(relay.url), (m) => m.sessions_active === base.sessions_active,
            "the session released", BOUND_MS, 100);
        await pollUntil(async () => backend.seen.disconnects, (n) => n === disconnectsBefore + 1, "the backend's WebSocket closed", BOUND_MS, 100);
        await pollUntil(async () => fdCount(relay.pid), (n) => n <= fdsBefore, `the relay's descriptors back to ${fdsBefore}`, BOUND_MS, 100);
        assert.doesNotMatch(fs.readFileSync(relay.log, "utf8"), /did not take its last messages/);
    }
});

test("Core: a client that never answers the 1007 and never stops sending is closed at the closing deadline", async () => {
    {
        const base = await metrics(relay.url);
        const fdsBefore = fdCount(relay.pid);
        const c = await coreRaw(relay);
        assert.deepEqual(await sendNotUtf8AndKeepSending(c, coreFiller), { close: { code: 1007, reason: REASON }, error: null });
        const timer = setInterval(() => { if (!c.ended && !c.error) c.send(1, coreFiller(100)); }, 50);
        try {
            await c.until(() => c.ended || c.error, "the relay to end the connection at its deadline (a reset: the client still sends)");
        } finally {
            clearInterval(timer);
        }
        await pollUntil(() => metrics(relay.url), (m) => m.sessions_active === base.sessions_active,
            "the session released", BOUND_MS, 100);
        await pollUntil(async () => fdCount(relay.pid), (n) => n <= fdsBefore, `the relay's descriptors back to ${fdsBefore}`, BOUND_MS, 100);
        c.socket.destroy();
    }
});

test("Core: a WebSocket ping after the relay's Close gets no pong and does not end the linger: the closing deadline does", async () => {
    const c = await coreRaw(relay);
    const deadline = new RegExp(`did not take its last messages within 5000 ms.* conn=${c.connectionId} `);
    const deadlineLogged = () => deadline.test(fs.readFileSync(relay.log, "utf8"));
    c.send(1, JSON.stringify({ type: 1, target: "Drop", arguments: [] }) + RS);
    await c.until(() => c.close || c.ended || c.error, "the relay's Close");
    assert.equal(c.close?.code, 1000);
    // lws used to answer the ping with a pong on the socket shut down for writing: the write failed
    // and lws closed the socket at once, under the client's next frames.
    c.send(9, "still there?");
    const timer = setInterval(() => { if (!c.ended && !c.error) c.send(1, coreFiller(100)); }, 50);
    try {
        await c.until(() => c.ended || c.error, "the relay to end the connection at its deadline (a reset: the client still sends)");
    } finally {
        clearInterval(timer);
    }
    assert.equal(c.pongs, 0, "no pong after the relay's Close");
    await pollUntil(async () => deadlineLogged(), (yes) => yes, "the session's closing deadline to end it (not the ping)",
        BOUND_MS, 100);
    c.socket.destroy();
});

test("legacy: a WebSocket client that keeps sending after its invalid UTF-8 still gets Close 1007 with its reason", async () => {
    {
        const data = legacyConnectionData("chat");
        const neg = await httpRequest("GET", `${relay.url}/signalr/negotiate?clientProtocol=2.1&connectionData=${data}`);
        assert.equal(neg.status, 200, neg.body);
        const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}` +
            `&connectionData=${data}`;
        const c = await rawWebSocket(relay.port, `/signalr/connect?${query}`);
        await c.until(() => c.texts.length > 0 || c.ended, "the init frame");
        const clientPort = c.socket.localPort;
        const started = await httpRequest("GET", `${relay.url}/signalr/start?${query}`);
        assert.equal(started.status, 200, started.body);
        let id = 0;
        const filler = (n) => JSON.stringify({ H: "chat", M: "Echo", A: ["x".repeat(n)], I: String(id++) });
        assert.deepEqual(await sendNotUtf8AndKeepSending(c, filler), { close: { code: 1007, reason: REASON }, error: null });
        c.send(8, Buffer.from([0x03, 0xef]));
        c.socket.end();
        await c.until(() => c.ended || c.error, "the connection to end");
        assert.equal(c.error, null, "no reset");
        // The session keeps its backend link for a reconnect; the client's socket itself is closed.
        await pollUntil(async () => relaySide(relay.port, clientPort), (s) => s === null || s === "TIME_WAIT",
            "the relay's socket of the client closed", BOUND_MS, 100);
    }
});
