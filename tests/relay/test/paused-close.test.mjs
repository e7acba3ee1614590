// Issue 10: a paused client lost what was already sent when the relay closed (the soak's "nothing for 60 s").
// A Core WebSocket client stops reading with 1 MiB of messages already in the kernel's buffers; its
// backend link then drops with the relay's own queue empty. The relay writes its Close and closes
// the socket: the relay's side is left in FIN_WAIT1 (unsent bytes, then a FIN). The relay used to
// close the descriptor there and then: the client's next ping met a closed socket, the kernel
// answered with a reset, and the client lost every message and the Close it had not read yet
// (close 1006). The relay now closes as nginx's lingering_close does: Close frame, shutdown of the
// write side, and the descriptor kept open (what the client sends is read and discarded) until the
// client closes or the closing deadline (5 s) passes.
//
// Each test has a relay of its own (ASan build) in front of a stand-in backend (negotiate plus a
// SignalR WebSocket: "Big" answers with 512 KiB, "Drop" ends the backend's socket without a Close).
// Synchronisation is on observable states only: /metrics, the relay's TCP state for the client's
// connection (/proc/net/tcp), the client's events, /proc/PID/fd.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import { startRelay } from "../../lib/process.mjs";
import { RS, WebSocket, closeServer, httpRequest, legacyConnectionData, listen, metrics, pollUntil, withTimeout } from "../lib.mjs";

const KB = 512;
const COUNT = 2;          // 1 MiB in flight: all of it in the kernel's buffers, the relay's queue empty
const BOUND_MS = 30000;   // generous: the closing deadline is 5 s

async function standInBackend() {
    const server = http.createServer((req, res) => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ negotiateVersion: 1, connectionId: "c1", connectionToken: `t${Date.now()}`,
            availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] }));
    });
    const wss = new WebSocket.Server({ server });
    wss.on("connection", (ws) => ws.on("message", (data) => {
        for (const record of data.toString().split(RS).filter(Boolean)) {
            const m = JSON.parse(record);
            if (m.protocol) ws.send(`{}${RS}`);
            else if (m.target === "Big") ws.send(JSON.stringify({ type: 1, target: "big", arguments: ["z".repeat(KB * 1024)] }) + RS);
            else if (m.target === "Drop") ws._socket.destroy();
        }
    }));
    await listen(server);
    return { url: `http://127.0.0.1:${server.address().port}`, close: () => { wss.close(); return closeServer(server); } };
}

// One side of a loopback connection (local port, remote port) in /proc/net/tcp: its state and the
// bytes in its send queue, or null when the kernel no longer has it.
const TCP_STATES = ["", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE",
    "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING"];
function tcpSide(localPort, remotePort) {
    const hex = (p) => `0100007F:${p.toString(16).toUpperCase().padStart(4, "0")}`;
    for (const line of fs.readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f[1] === hex(localPort) && f[2] === hex(remotePort))
            return { state: TCP_STATES[parseInt(f[3], 16)] ?? f[3], sendQueue: parseInt(f[4].split(":")[0], 16) };
    }
    return null;
}
const relaySideState = (relayPort, clientPort) => tcpSide(relayPort, clientPort)?.state ?? null;

const fdCount = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;

// A Core JSON client on the relay's hub "chat"; counts the "big" messages and keeps the Close message.
async function coreClient(relay) {
    const neg = await (await fetch(`${relay.url}/chat/negotiate?negotiateVersion=1`, { method: "POST" })).json();
    const ws = new WebSocket(`ws://127.0.0.1:${relay.port}/chat?id=${encodeURIComponent(neg.connectionToken)}`,
        { perMessageDeflate: false });
    const got = { messages: 0, closeMessage: null, handshake: false };
    let buffer = "";
    let handshaken;
    const handshake = new Promise((r) => { handshaken = r; });
    ws.on("message", (data) => {
        buffer += data.toString();
        let i;
        while ((i = buffer.indexOf(RS)) >= 0) {
            const m = JSON.parse(buffer.slice(0, i));
            buffer = buffer.slice(i + 1);
            if (!got.handshake) { got.handshake = true; handshaken(); continue; }
            if (m.type === 1 && m.target === "big") got.messages++;
            if (m.type === 7) got.closeMessage = m.error ?? "";
        }
    });
    const closed = new Promise((r) => ws.on("close", (code) => r(code)));
    ws.on("error", () => {});
    await withTimeout(new Promise((r, j) => { ws.once("open", r); ws.once("error", j); }), 10000, "WebSocket open");
    ws.send(`{"protocol":"json","version":1}${RS}`);
    await withTimeout(handshake, 10000, "handshake answer");
    const send = (target) => ws.send(JSON.stringify({ type: 1, target, arguments: [] }) + RS);
    return { ws, got, closed, send, clientPort: ws._socket.localPort };
}

// Pauses the client, has COUNT messages forwarded to it and the backend dropped, and waits until the
// relay has closed its side (FIN_WAIT1: its FIN queued behind the unsent bytes).
async function pausedWithDataInFlight(relay, client) {
    const before = await metrics(relay.url);
    client.ws._socket.pause();
    for (let i = 0; i < COUNT; i++) client.send("Big");
    await pollUntil(() => metrics(relay.url), (m) => m.messages_to_clients_total >= before.messages_to_clients_total + COUNT,
        "the messages forwarded to the paused client", BOUND_MS, 100);
    client.send("Drop");
    await pollUntil(async () => relaySideState(relay.port, client.clientPort), (s) => s !== "ESTABLISHED",
        "the relay to close its side of the paused client's connection", BOUND_MS, 50);
}

test("a paused Core client whose backend drops gets every message already sent and the Close once it reads again", async () => {
    const backend = await standInBackend();
    const relay = await startRelay(["--hub", `chat=${backend.url}/chat`]);
    try {
        const client = await coreClient(relay);
        await pausedWithDataInFlight(relay, client);
        // As a frozen tab's client does: it still sends (its ping) while not reading. The socket the
        // relay closed at once answered this with a reset, and the client's kernel dropped the rest.
        await new Promise((r, j) => client.ws.send(`{"type":6}${RS}`, (e) => (e ? j(e) : r())));
        // The relay's side has taken the ping (or answered it with a reset): the client's side has
        // nothing left to send, or is gone.
        await pollUntil(async () => tcpSide(client.clientPort, relay.port), (side) => side === null || side.sendQueue === 0,
            "the relay's side to take the ping", BOUND_MS, 50);
        client.ws._socket.resume();
        const code = await withTimeout(client.closed, BOUND_MS, "the client's close");
        assert.deepEqual({ messages: client.got.messages, code, closeMessage: client.got.closeMessage },
            { messages: COUNT, code: 1000,
              closeMessage: "Connection closed with an error. The relay lost its connection to the backend hub 'chat'." });
    } finally {
        await relay.stop();
        await backend.close();
    }
});

test("a paused Core client that never reads again is still closed at the closing deadline, its descriptor freed", async () => {
    const backend = await standInBackend();
    const relay = await startRelay(["--hub", `chat=${backend.url}/chat`]);
    try {
        const base = await metrics(relay.url);
        const fdsBefore = fdCount(relay.pid);
        const client = await coreClient(relay);
        await pausedWithDataInFlight(relay, client);
        const after = await pollUntil(() => metrics(relay.url), (m) => m.sessions_active === base.sessions_active,
            "the session released with its client still paused", BOUND_MS, 250);
        assert.equal(after.backend_links_active, base.backend_links_active);
        await pollUntil(async () => fdCount(relay.pid), (n) => n <= fdsBefore, `the relay's descriptors back to ${fdsBefore}`, BOUND_MS, 250);
        assert.match(fs.readFileSync(relay.log, "utf8"), /did not take its last messages within 5000 ms/);
        client.ws.terminate();
    } finally {
        await relay.stop();
        await backend.close();
    }
});

test("a Core client that reads is closed as soon as it answers the Close, not at the closing deadline", async () => {
    const backend = await standInBackend();
    const relay = await startRelay(["--hub", `chat=${backend.url}/chat`]);
    try {
        const base = await metrics(relay.url);
        const client = await coreClient(relay);
        client.send("Big");
        client.send("Drop");
        assert.equal(await withTimeout(client.closed, BOUND_MS, "the client's close"), 1000);
        assert.equal(client.got.messages, 1);
        await pollUntil(() => metrics(relay.url), (m) => m.sessions_active === base.sessions_active,
            "the session released", BOUND_MS, 100);
        // Held until the deadline, the session would have logged that its client did not take its last messages.
        assert.doesNotMatch(fs.readFileSync(relay.log, "utf8"), /did not take its last messages/);
    } finally {
        await relay.stop();
        await backend.close();
    }
});

// A legacy (ASP.NET SignalR 2.x) WebSocket client of hub "chat" on the relay: negotiate, /connect,
// /start; counts the "big" client calls and keeps the error frame ({E: ...}).
async function legacyClient(relay) {
    const base = `${relay.url}/signalr`;
    const data = legacyConnectionData("chat");
    const neg = await httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${data}`);
    assert.equal(neg.status, 200, neg.body);
    const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}` +
        `&connectionData=${data}`;
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/connect?${query}`, { perMessageDeflate: false });
    const got = { messages: 0, error: null };
    ws.on("message", (raw) => {
        const frame = JSON.parse(raw.toString("utf8"));
        for (const m of frame.M ?? []) if (m.M === "big") got.messages++;
        if (frame.E) got.error = frame.E;
    });
    const closed = new Promise((r) => ws.on("close", (code) => r(code)));
    ws.on("error", () => {});
    await withTimeout(new Promise((r, j) => { ws.once("open", r); ws.once("error", j); }), 10000, "legacy connect");
    const started = await httpRequest("GET", `${base}/start?${query}`);
    assert.equal(started.status, 200, started.body);
    let id = 0;
    const send = (method) => ws.send(JSON.stringify({ H: "chat", M: method, A: [], I: String(id++) }));
    return { ws, got, closed, send, clientPort: ws._socket.localPort };
}

test("a paused legacy WebSocket client whose backend drops gets every message already sent and the close once it reads again", async () => {
    const backend = await standInBackend();
    const relay = await startRelay(["--hub", `chat=${backend.url}/chat`]);
    try {
        const client = await legacyClient(relay);
        await pausedWithDataInFlight(relay, client);
        await new Promise((r, j) => client.ws.send(JSON.stringify({ H: "chat", M: "Echo", A: [], I: "99" }), (e) => (e ? j(e) : r())));
        await pollUntil(async () => tcpSide(client.clientPort, relay.port), (side) => side === null || side.sendQueue === 0,
            "the relay's side to take the client's message", BOUND_MS, 50);
        client.ws._socket.resume();
        const code = await withTimeout(client.closed, BOUND_MS, "the client's close");
        assert.deepEqual({ messages: client.got.messages, code, error: client.got.error !== null },
            { messages: COUNT, code: 1000, error: true });
    } finally {
        await relay.stop();
        await backend.close();
    }
});
