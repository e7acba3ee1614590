// rough-clients.mjs - the clients of scripts/soak.sh that signalr-loadgen does not play: slow
// readers and abrupt disconnects/reconnects, on raw WebSockets (the `ws` package of tests/relay).
//
//   node tests/soak/rough-clients.mjs --url http://127.0.0.1:PORT --seconds S [--slow N] [--legacy N]
//
// --slow N     Core JSON clients on /chat, each in a loop: connect (negotiate, WebSocket, handshake),
//              start a Counter stream and ask for several large Repeat results, then stop reading
//              (socket paused) for 2-12 s while the hub keeps pushing (stream items, broadcasts,
//              the large results) and the client keeps sending pings and small Echo calls; then
//              one of: read again and check every answer arrived, then close (50 %); drop the TCP
//              connection without a Close (30 %); send a Close while still not reading, and drop
//              it 2 s later if the close did not finish (20 %). Then reconnect. A Close from the
//              relay after reading again ("lost its connection to the backend", or the backend's own
//              Close record passed on: "Connection closed with an error.") is counted as
//              slow_closed_by_server, not an error: the ASP.NET Core backend ends some of these
//              connections itself (straight to the backend, without the relay, 16 of 73 resumed
//              slow readers in a 40 s trial never got their answers). Through the relay, a resumed
//              slow reader whose backend link was lost while everything the relay had was already
//              in the kernel's buffers used to find its socket reset (close 1006, no Close, none of
//              those bytes: "nothing for 60000 ms"); the relay's close now lingers
//              (tests/relay/test/paused-close.test.mjs). A socket that ends without a Close after
//              reading again is counted as slow_closed_at_deadline when the client did not read for
//              longer than the relay's close timeout (5 s: the relay ends a closing connection whose
//              client does not take its last messages by then, as ASP.NET Core does), and is an
//              error after a shorter pause.
// --legacy N   legacy (ASP.NET SignalR 2.x) clients on /signalr, hub chathub, each in a loop:
//              negotiate, connect, start, then 1-3 times: an Echo call, the WebSocket dropped without
//              /abort, back within 0.2-2 s with /reconnect and the last message cursor, an Echo call
//              on the resumed connection; then /abort (70 %) or vanish without /abort (30 %: the
//              relay's disconnect timeout ends it).
// At the end (after --seconds) every client finishes its cycle's close and the process prints one
// JSON line of counts; exit 0 when nothing unexpected happened, 2 otherwise (first errors on stderr).
import { createRequire } from "node:module";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../relay/package.json"));
const WebSocket = require("ws");

const args = { url: "", seconds: 60, slow: 30, legacy: 30, quiet: false };
for (let i = 2; i < process.argv.length; i++) {
    const a = process.argv[i];
    const v = () => process.argv[++i];
    if (a === "--url") args.url = v();
    else if (a === "--seconds") args.seconds = Number(v());
    else if (a === "--slow") args.slow = Number(v());
    else if (a === "--legacy") args.legacy = Number(v());
    else { console.error(`rough-clients: unknown argument ${a}`); process.exit(1); }
}
if (!/^http:\/\/127\./.test(args.url)) { console.error("rough-clients: --url http://127.x.x.x:PORT"); process.exit(1); }

const RS = "\x1e";
const WS_BASE = args.url.replace(/^http/, "ws");
const deadline = Date.now() + args.seconds * 1000;
const stats = {
    slow_cycles: 0, slow_resumed: 0, slow_dropped: 0, slow_closed_paused: 0, slow_results_checked: 0,
    slow_bytes_read: 0, slow_closed_by_server: 0, slow_closed_at_deadline: 0, legacy_cycles: 0, legacy_reconnects: 0, legacy_aborted: 0, legacy_vanished: 0,
    legacy_echoes: 0, errors: 0,
};
const firstErrors = [];
const errorKinds = new Map(); // the message with client numbers and ids taken out -> count

function error(what) {
    stats.errors++;
    if (firstErrors.length < 20) firstErrors.push(what);
    const kind = what.replace(/^(slow|legacy) \d+/, "$1 N").replace(/\d+/g, "N");
    errorKinds.set(kind, (errorKinds.get(kind) || 0) + 1);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rand = (lo, hi) => lo + Math.random() * (hi - lo);
const running = () => Date.now() < deadline;

// One connection per request, closed after it (as signalr-loadgen and browsers' negotiates do).
// Not Node 20's default keep-alive agent: the relay closes the connection after a request that said
// `Connection: close` without saying so in its answer (Kestrel does), so the agent would reuse a
// closed socket for the next request ("socket hang up").
function request(method, url, timeoutMs = 15000) {
    return new Promise((resolve, reject) => {
        const req = http.request(url, { method, agent: false, headers: { Connection: "close" }, timeout: timeoutMs }, (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
        });
        req.on("timeout", () => req.destroy(new Error(`${method} ${url}: timeout`)));
        req.on("error", (e) => reject(new Error(`${method} ${new URL(url).pathname}: ${e.message}`)));
        req.end();
    });
}

// The message handler is attached before the socket opens: a frame in the same packet as the
// upgrade answer would otherwise be lost.
function openWs(url, onMessage) {
    return new Promise((resolve, reject) => {
        const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
        ws.on("message", onMessage);
        const timer = setTimeout(() => { ws.terminate(); reject(new Error(`${url}: no answer in 15 s`)); }, 15000);
        ws.once("open", () => { clearTimeout(timer); resolve(ws); });
        ws.once("unexpected-response", (req, res) => {
            clearTimeout(timer); req.socket.destroy(); reject(new Error(`${url}: HTTP ${res.statusCode}`));
        });
        ws.once("error", (e) => { clearTimeout(timer); reject(new Error(`WebSocket ${new URL(url).pathname}: ${e.message}`)); });
    });
}

// Resolves when pred() holds (checked on every event the caller signals through `kick`), or rejects.
// `progress()` restarts the bound: a stream that is still arriving is slow, not stuck (a loaded
// two-core machine can take minutes to deliver 12 MiB to a node client); only a silence of `ms`
// fails.
function waiter(ms, what) {
    let done, fail, t;
    const p = new Promise((res, rej) => { done = res; fail = rej; });
    const arm = () => { clearTimeout(t); t = setTimeout(() => fail(new Error(`nothing for ${ms} ms: ${what()}`)), ms); };
    if (typeof what !== "function") { const text = what; what = () => text; }
    arm();
    return { p, done: (v) => { clearTimeout(t); done(v); }, cancel: () => clearTimeout(t), progress: arm };
}

// ------------------------------------------------------------------------------- slow readers

const CLOSE_TIMEOUT_MS = 5000;     // the relay's RELAY_CLOSE_TIMEOUT_MS (relay/wsmsg.h)
const REPEAT_TEXT = "y".repeat(1024);
const REPEAT_COUNT = 1024;         // 1 MiB per result
const REPEATS = 12;                // 12 MiB toward a client that is not reading: more than the
                                   // kernel's loopback buffers take, so the relay's queue fills

async function slowCycle(n) {
    const neg = await request("POST", `${args.url}/chat/negotiate?negotiateVersion=1`);
    if (neg.status !== 200) throw new Error(`negotiate: HTTP ${neg.status} ${neg.body.slice(0, 100)}`);
    const token = JSON.parse(neg.body).connectionToken;
    let buf = "", handshake = false, closing = false, serverClose = null;
    const pending = new Set();
    let onEvent = () => {};
    const ws = await openWs(`${WS_BASE}/chat?id=${encodeURIComponent(token)}`, (data) => {
        stats.slow_bytes_read += data.length;
        buf += data.toString("utf8");
        let i;
        while ((i = buf.indexOf(RS)) >= 0) {
            const rec = buf.slice(0, i);
            buf = buf.slice(i + 1);
            const m = JSON.parse(rec);
            if (!handshake) {
                handshake = true;
                if (m.error) error(`slow ${n}: handshake error ${m.error}`);
            } else if (m.type === 3 && pending.has(m.invocationId)) {
                if (m.error) error(`slow ${n}: invocation ${m.invocationId} failed: ${m.error}`);
                else if (m.invocationId.startsWith("r") && m.result.length !== REPEAT_TEXT.length * REPEAT_COUNT)
                    error(`slow ${n}: Repeat result of ${m.result.length} characters`);
                else stats.slow_results_checked++;
                pending.delete(m.invocationId);
            } else if (m.type === 7) {
                serverClose = m;
            }
        }
        onEvent();
    });
    const closed = new Promise((resolve) => ws.on("close", (code) => resolve(code)));
    ws.on("error", () => {});
    const send = (obj) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj) + RS); };
    ws.send(`{"protocol":"json","version":1}${RS}`);
    let w = waiter(15000, "handshake");
    onEvent = () => handshake && w.done();
    await w.p;
    send({ type: 4, invocationId: "s", target: "Counter", arguments: [1000000, 100] });
    for (let i = 0; i < REPEATS; i++) {
        pending.add(`r${i}`);
        send({ type: 1, invocationId: `r${i}`, target: "Repeat", arguments: [REPEAT_TEXT, REPEAT_COUNT] });
    }
    ws._socket.pause();
    const pausedAt = Date.now();
    // Not reading, still talking: pings and small calls, as a busy page whose tab is frozen would.
    const pauseUntil = Date.now() + rand(2000, 12000);
    let echo = 0;
    while (Date.now() < pauseUntil) {
        send({ type: 6 });
        const id = `e${echo++}`;
        pending.add(id);
        send({ type: 1, invocationId: id, target: "Echo", arguments: [`slow ${n} ${id}`] });
        await sleep(2000);
    }
    const roll = Math.random();
    stats.slow_cycles++;
    if (roll < 0.5) {
        stats.slow_resumed++;
        const pausedMs = Date.now() - pausedAt;
        ws._socket.resume();
        send({ type: 5, invocationId: "s" });
        let abrupt = null;
        w = waiter(60000, () => `slow ${n}: ${pending.size} answers after reading again`);
        onEvent = () => { w.progress(); if (pending.size === 0 || serverClose) w.done(); };
        closed.then((code) => { if (!serverClose && !closing) { abrupt = code; w.done(); } });
        onEvent();
        await w.p;
        if (abrupt !== null && pending.size > 0) {
            // The socket ended without a Close. The relay does that to a connection it is closing
            // (the backend ended it) whose client has not taken its last messages within the close
            // timeout (5 s, as ASP.NET Core's CloseTimeout): only a client that did not read for
            // longer than that can meet it. A shorter pause ending so is a relay bug.
            if (pausedMs <= CLOSE_TIMEOUT_MS)
                error(`slow ${n}: socket closed (${abrupt}) without a Close after a pause of ${pausedMs} ms`);
            else
                stats.slow_closed_at_deadline++;
            ws.terminate();
            return;
        }
        if (serverClose) {
            // The backend ends some slow readers' connections itself (it does so to direct clients
            // too); the relay says so with a Close. A slow reader must expect it.
            stats.slow_closed_by_server++;
            if (!/relay lost its connection to the backend|^Connection closed with an error\.$/.test(serverClose.error || ""))
                error(`slow ${n}: unexpected Close: ${JSON.stringify(serverClose)}`);
            ws.terminate();
            return;
        }
        closing = true;
        ws.close(1000);
        w = waiter(15000, "close handshake");
        closed.then(() => w.done());
        await w.p;
    } else if (roll < 0.8) {
        stats.slow_dropped++;
        ws._socket.destroy();
    } else {
        stats.slow_closed_paused++;
        closing = true;
        ws.close(1000);
        await Promise.race([closed, sleep(2000)]);
        ws._socket.destroy();
    }
    void closing;
}

async function slowClient(n) {
    await sleep(rand(0, 5000));
    while (running()) {
        try {
            await slowCycle(n);
        } catch (e) {
            error(`slow ${n}: ${e.message}`);
        }
        await sleep(rand(200, 2000));
    }
}

// ------------------------------------------------------------------------------ legacy clients

const CONNECTION_DATA = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));

async function legacyCycle(n) {
    const base = `${args.url}/signalr`;
    const neg = await request("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${CONNECTION_DATA}`);
    if (neg.status !== 200) throw new Error(`legacy negotiate: HTTP ${neg.status} ${neg.body.slice(0, 100)}`);
    const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}` +
        `&connectionData=${CONNECTION_DATA}`;
    let cursor = null, ws = null, results = new Map(), onFrame = () => {}, stopped = false, inited = false;
    const attach = async (command, extra) => {
        ws = await openWs(`${WS_BASE}/signalr/${command}?${query}${extra}`, (data) => {
            const f = JSON.parse(data.toString("utf8"));
            if (f.C) cursor = f.C;
            if (f.I !== undefined) results.set(f.I, f);
            if (f.E !== undefined) stopped = f.E;
            if (f.S === 1) inited = true;
            onFrame(f);
        });
        ws.on("error", () => {});
    };
    await attach("connect", "");
    let w = waiter(15000, "legacy init frame");
    onFrame = () => inited && w.done();
    onFrame();
    await w.p;
    const start = await request("GET", `${base}/start?${query}`);
    if (start.status !== 200) throw new Error(`legacy start: HTTP ${start.status} ${start.body.slice(0, 100)}`);
    let id = 0;
    const echo = async () => {
        const i = String(id++);
        w = waiter(15000, `legacy Echo ${i}`);
        onFrame = () => (results.has(i) || stopped) && w.done();
        ws.send(JSON.stringify({ H: "chathub", M: "Echo", A: [`legacy ${n} ${i}`], I: i }));
        onFrame();
        await w.p;
        if (stopped) throw new Error(`legacy: E frame: ${stopped}`);
        if (results.get(i).R !== `legacy ${n} ${i}`) throw new Error(`legacy Echo ${i}: ${JSON.stringify(results.get(i))}`);
        stats.legacy_echoes++;
    };
    await echo();
    const drops = 1 + Math.floor(Math.random() * 3);
    for (let d = 0; d < drops; d++) {
        ws._socket.destroy();
        await sleep(rand(200, 2000));
        await attach("reconnect", `&messageId=${encodeURIComponent(cursor)}`);
        stats.legacy_reconnects++;
        await echo();
    }
    stats.legacy_cycles++;
    if (Math.random() < 0.7) {
        stats.legacy_aborted++;
        const abort = await request("POST", `${base}/abort?${query}`);
        if (abort.status !== 200) error(`legacy abort: HTTP ${abort.status}`);
        await Promise.race([new Promise((r) => ws.once("close", r)), sleep(5000)]);
        ws.terminate();
    } else {
        stats.legacy_vanished++;
        ws._socket.destroy();
    }
}

async function legacyClient(n) {
    await sleep(rand(0, 5000));
    while (running()) {
        try {
            await legacyCycle(n);
        } catch (e) {
            error(`legacy ${n}: ${e.message}`);
        }
        await sleep(rand(200, 2000));
    }
}

const all = [];
for (let i = 0; i < args.slow; i++) all.push(slowClient(i));
for (let i = 0; i < args.legacy; i++) all.push(legacyClient(i));
await Promise.all(all);
for (const e of firstErrors) console.error(`rough-clients: ${e}`);
for (const [kind, count] of errorKinds) console.error(`rough-clients: ${count} x ${kind}`);
console.log(JSON.stringify(stats));
process.exit(stats.errors === 0 ? 0 : 2);
