// paused-close.mjs - what a Core client that has stopped reading gets when its backend link drops:
// a reproduction of the soak's "one resumed slow reader got nothing for 60 s" (scripts/soak.sh,
// rough-clients.mjs), small enough to run by hand. Not part of scripts/test.sh: its scenario is
// tests/relay/test/paused-close.test.mjs. Exited 1 before the relay's lingering close (issue 10).
//
//   node tests/soak/paused-close.mjs RELAY_BIN [--kb 512] [--count 2] [--pause-ms 3000]
//
// A stand-in backend (negotiate + a SignalR WebSocket that answers the JSON handshake) sends
// `count` messages of `kb` KiB to the client, which has paused its socket (node's
// socket.pause(): the bytes stay in the kernel's buffers) and keeps sending a ping every 500 ms,
// as a frozen browser tab does. Then the backend drops its WebSocket without a Close, and the
// client reads again after pause-ms. It should get every message, then the relay's Close
// ("... lost its connection to the backend ...") and a normal close; prints one JSON line and
// exits 0 when it did, 1 when it did not.
//
// Measured on relay 4c8f24b (ASan and Release builds, this two-core machine): with 1 or 2 MiB in flight (the
// relay's own queue empty, everything already in the kernel's buffers) the client's socket is
// reset about a second after the drop, while it is still paused (close 1006), and it gets neither
// the messages nor the Close; with 4 MiB in flight (the relay still holding some: its queue or
// lws' partial write) the closing deadline keeps the socket and the client gets all of it and the
// Close. The relay logs "hub channel lost: closed by the backend" and "session: closed" within a
// millisecond of the drop: the session is gone and lws closes the socket while the kernel still
// holds unsent bytes; the client's next ping then meets a closed socket and is answered with a
// reset, which makes the client's kernel (and node) drop what it had not read yet.
// Since the lingering close (relay/wsmsg.c, wsmsg_close_lingering) it exits 0 for 1, 2 and 8 messages
// of 512 KiB: the relay shuts down its write side and keeps the socket until the client goes.
import { createRequire } from "node:module";
import http from "node:http";
import net from "node:net";
import { spawn } from "node:child_process";

const require = createRequire(new URL("../relay/package.json", import.meta.url));
const WebSocket = require("ws");
const RS = "\x1e";

const argv = process.argv.slice(2);
const relayBin = argv[0];
const opt = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i > 0 ? Number(argv[i + 1]) : fallback; };
const kb = opt("kb", 512), count = opt("count", 2), pauseMs = opt("pause-ms", 3000);
if (!relayBin) {
    console.error("usage: node tests/soak/paused-close.mjs RELAY_BIN [--kb 512] [--count 2] [--pause-ms 3000]");
    process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The stand-in backend: "Big" sends one message of kb KiB, "Drop" ends the socket without a Close.
const server = http.createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ negotiateVersion: 1, connectionId: `c${Date.now()}`, connectionToken: `t${Date.now()}`,
        availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] }));
});
const wss = new WebSocket.Server({ server });
wss.on("connection", (ws) => ws.on("message", (data) => {
    for (const record of data.toString().split(RS).filter(Boolean)) {
        const m = JSON.parse(record);
        if (m.protocol) ws.send(`{}${RS}`);
        else if (m.target === "Big") ws.send(JSON.stringify({ type: 1, target: "big", arguments: ["z".repeat(kb * 1024)] }) + RS);
        else if (m.target === "Drop") ws._socket.destroy();
    }
}));
await new Promise((r) => server.listen(0, "127.0.0.1", r));

const probe = net.createServer();
await new Promise((r) => probe.listen(0, "127.0.0.1", r));
const relayPort = probe.address().port;
await new Promise((r) => probe.close(r));
const relay = spawn(relayBin, ["--listen", `127.0.0.1:${relayPort}`, "--hub", `chat=http://127.0.0.1:${server.address().port}/chat`],
    { stdio: ["ignore", "ignore", "inherit"] });
const base = `http://127.0.0.1:${relayPort}`;
for (let i = 0; ; i++) {
    try { await fetch(`${base}/metrics`); break; } catch (e) { if (i === 100) throw e; await sleep(100); }
}

const neg = await (await fetch(`${base}/chat/negotiate?negotiateVersion=1`, { method: "POST" })).json();
const ws = new WebSocket(`ws://127.0.0.1:${relayPort}/chat?id=${encodeURIComponent(neg.connectionToken)}`);
const started = Date.now();
const at = () => Date.now() - started;
const result = { kb, count, pauseMs, messages: 0, closeMessage: null, closeCode: null, closedAtMs: null, resumedAtMs: null };
let buffer = "";
ws.on("message", (data) => {
    buffer += data.toString();
    let i;
    while ((i = buffer.indexOf(RS)) >= 0) {
        const m = JSON.parse(buffer.slice(0, i));
        buffer = buffer.slice(i + 1);
        if (m.type === 1 && m.target === "big") result.messages++;
        if (m.type === 7) result.closeMessage = m.error ?? "";
    }
});
const closed = new Promise((r) => ws.on("close", (code) => { result.closeCode = code; result.closedAtMs = at(); r(); }));
ws.on("error", () => {});
await new Promise((r) => ws.on("open", r));
ws.send(`{"protocol":"json","version":1}${RS}`);
await sleep(300);
ws._socket.pause();
for (let i = 0; i < count; i++) ws.send(JSON.stringify({ type: 1, target: "Big", arguments: [] }) + RS);
const pinger = setInterval(() => { if (ws.readyState === WebSocket.OPEN) ws.send(`{"type":6}${RS}`); }, 500);
await sleep(1000);
ws.send(JSON.stringify({ type: 1, target: "Drop", arguments: [] }) + RS);
await sleep(pauseMs);
result.resumedAtMs = at();
ws._socket.resume();
await Promise.race([closed, sleep(10000)]);
clearInterval(pinger);
relay.kill("SIGTERM");
await new Promise((r) => relay.on("exit", r));
server.close();
const ok = result.messages === count && result.closeMessage !== null && result.closeCode === 1000;
console.log(JSON.stringify({ ok, ...result }));
process.exit(ok ? 0 : 1);
