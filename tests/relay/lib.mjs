// Shared helpers for the relay's own tests (scripts/relay-tests.sh sets the environment):
// the relays' and backends' addresses and the tuned relay's flags, /metrics and RSS readers,
// plain HTTP requests with full control of the headers, a raw SignalR WebSocket client that
// records every frame and decodes JSON and MessagePack records (no SignalR library in the way,
// so a test sees exactly what the relay sent and when), stock @microsoft/signalr clients, and a
// legacy (ASP.NET SignalR 2.x) connection driven by hand.
// Every wait has a timeout, so a missing message fails a test instead of hanging it.
import assert from "node:assert/strict";
import fs from "node:fs";
import WebSocket from "ws";
import * as signalR from "@microsoft/signalr";
import { MessagePackHubProtocol } from "@microsoft/signalr-protocol-msgpack";
import { decode as msgpackDecode, encode as msgpackEncode } from "@msgpack/msgpack";

export { signalR, WebSocket, msgpackDecode };

function required(name) {
    const value = process.env[name];
    if (!value) {
        throw new Error(`${name} is not set: run the suite through scripts/relay-tests.sh`);
    }
    return value;
}

function seconds(name) {
    return Math.round(Number(required(name)) * 1000);
}

function size(name) {
    const m = /^(\d+)([KkMm]?)$/.exec(required(name));
    if (!m) throw new Error(`${name} is not a size`);
    return Number(m[1]) * (m[2] === "" ? 1 : /k/i.test(m[2]) ? 1024 : 1024 * 1024);
}

// The tuned relay (short timers, small limits, CORS, hubs dead and flaky) and its process id.
export const RELAY_URL = required("RELAY_URL");
export const RELAY_PID = Number(required("RELAY_PID"));
// A relay with default flags in front of the same backend.
export const PLAIN_RELAY_URL = required("PLAIN_RELAY_URL");
// A relay with default flags that the shutdown test stops (SIGTERM) under live sessions.
export const DOOMED_RELAY_URL = required("DOOMED_RELAY_URL");
export const DOOMED_RELAY_PID = Number(required("DOOMED_RELAY_PID"));
// The backend itself, for asking it what it saw and for comparing with a direct connection.
export const BACKEND_URL = required("BACKEND_URL");
export const FLAKY_BACKEND_PID = Number(required("FLAKY_BACKEND_PID"));
export const DEAD_PORT = Number(required("DEAD_PORT"));
// Hub "hung" of the tuned relay points here; the backend-hangs test listens and never answers.
export const HUNG_PORT = Number(required("HUNG_PORT"));

export const KEEPALIVE_MS = seconds("RELAY_KEEPALIVE_S");
export const CLIENT_TIMEOUT_MS = seconds("RELAY_CLIENT_TIMEOUT_S");
export const HANDSHAKE_TIMEOUT_MS = seconds("RELAY_HANDSHAKE_TIMEOUT_S");
export const NEGOTIATE_TIMEOUT_MS = seconds("RELAY_NEGOTIATE_TIMEOUT_S");
export const DISCONNECT_TIMEOUT_MS = seconds("RELAY_DISCONNECT_TIMEOUT_S");
export const LONG_POLL_TIMEOUT_MS = seconds("RELAY_LONG_POLL_TIMEOUT_S");
export const MAX_MESSAGE_BYTES = size("RELAY_MAX_MESSAGE");
export const MAX_BUFFERED_BYTES = size("RELAY_MAX_BUFFERED");
export const CORS_ORIGIN = required("RELAY_CORS_ORIGIN");

export const RS = "\x1e";
export const TIMEOUT_MS = 10000;
// ASP.NET Core's texts for a Close it sends on a server-side timeout (HubConnectionHandler).
export const TIMEOUT_CLOSE_ERROR = "Connection closed with an error.";

// ------------------------------------------------------------------------------------ waiting

// sleep, withTimeout, pollUntil (and httpRequest below) come from tests/lib/common.mjs, shared
// by every Node suite.
export { sleep, withTimeout, pollUntil, httpRequest, uniqueName, freePort, listen, closeServer } from "../lib/common.mjs";
import { sleep, withTimeout, httpRequest, pollUntil } from "../lib/common.mjs";

// ------------------------------------------------------------------------------ HTTP, metrics

// /metrics parsed into { name_without_prefix: number }, plus the raw response.
export async function metrics(base = RELAY_URL) {
    const res = await httpRequest("GET", `${base}/metrics`);
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    const values = {};
    for (const line of res.body.split("\n")) {
        const m = /^signalr_relay_([a-z_]+) (\d+)$/.exec(line);
        if (m) values[m[1]] = Number(m[2]);
    }
    return Object.defineProperty(values, "response", { value: res, enumerable: false });
}

// Resident set size of a process in bytes, from /proc/PID/status.
export function rssBytes(pid = RELAY_PID) {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    if (!m) throw new Error(`no VmRSS for pid ${pid}`);
    return Number(m[1]) * 1024;
}

// CPU time (user + system) a process has used so far, in seconds, from /proc/PID/stat.
export function cpuSeconds(pid = RELAY_PID) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

// The share of one CPU a process uses over `ms` (0.0 .. 1.0): a busy loop shows as ~1.
export async function cpuShareOver(ms, pid = RELAY_PID) {
    const before = cpuSeconds(pid);
    await sleep(ms);
    return (cpuSeconds(pid) - before) / (ms / 1000);
}

// POST {hub}/negotiate?negotiateVersion=1 straight over HTTP: { status, headers, body, json }.
export async function negotiate(base, hub, headers = {}) {
    const res = await httpRequest("POST", `${base}/${hub}/negotiate?negotiateVersion=1`, headers);
    let json = null;
    try { json = JSON.parse(res.body); } catch { /* not JSON: a text answer */ }
    return { ...res, json };
}

export function wsUrl(base, hub, query = "") {
    return `${base.replace(/^http/, "ws")}/${hub}${query ? `?${query}` : ""}`;
}

// ------------------------------------------------------------------------- MessagePack records

function varintPrefix(length) {
    const bytes = [];
    do {
        let b = length & 0x7f;
        length = Math.floor(length / 128);
        if (length > 0) b |= 0x80;
        bytes.push(b);
    } while (length > 0);
    return Buffer.from(bytes);
}

export function msgpackRecord(array) {
    const body = Buffer.from(msgpackEncode(array));
    return Buffer.concat([varintPrefix(body.length), body]);
}

// Splits length-prefixed MessagePack records; returns [records, bytes left over].
function splitMsgpack(buf) {
    const records = [];
    let offset = 0;
    while (offset < buf.length) {
        let length = 0, shift = 0, i = offset, done = false;
        while (i < buf.length && shift <= 28) {
            const b = buf[i++];
            length += (b & 0x7f) * 2 ** shift;
            shift += 7;
            if ((b & 0x80) === 0) { done = true; break; }
        }
        if (!done || i + length > buf.length) break;
        records.push(buf.subarray(i, i + length));
        offset = i + length;
    }
    return [records, buf.subarray(offset)];
}

// A decoded MessagePack hub message as the JSON protocol would spell it (raw array in .raw).
function fromMsgpackArray(a) {
    const [type] = a;
    switch (type) {
        case 1: return { type, invocationId: a[2] ?? undefined, target: a[3], arguments: a[4], raw: a };
        case 2: return { type, invocationId: a[2], item: a[3], raw: a };
        case 3: return {
            type, invocationId: a[2],
            ...(a[3] === 1 ? { error: a[4] } : a[3] === 3 ? { result: a[4] } : {}), raw: a,
        };
        case 6: return { type, raw: a };
        case 7: return { type, error: a[1] ?? undefined, allowReconnect: a[2], raw: a };
        default: return { type, raw: a };
    }
}

// --------------------------------------------------------------------------------- raw client

// A SignalR client written from the protocol, on a bare `ws` WebSocket. Every frame is kept
// (time, binary flag, bytes); records are decoded as they arrive: first the handshake answer
// (JSON + RS whatever the protocol), then JSON records or MessagePack records.
export class RawClient {
    static connect(url, { protocol = "json", headers = {} } = {}) {
        return new Promise((resolve, reject) => {
            const ws = new WebSocket(url, { headers, perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
            const timer = setTimeout(() => { ws.terminate(); reject(new Error(`WebSocket ${url}: no answer`)); }, TIMEOUT_MS);
            ws.once("open", () => { clearTimeout(timer); resolve(new RawClient(ws, protocol)); });
            ws.once("unexpected-response", (req, res) => {
                // The refused request's socket stays open (keep-alive) unless destroyed here.
                const socket = req.socket;
                const chunks = [];
                res.on("data", (c) => chunks.push(c));
                res.on("end", () => {
                    clearTimeout(timer);
                    const err = new Error(`WebSocket ${url} refused: HTTP ${res.statusCode}`);
                    err.status = res.statusCode;
                    err.body = Buffer.concat(chunks).toString("utf8");
                    socket.destroy();
                    reject(err);
                });
            });
            ws.once("error", (e) => { clearTimeout(timer); reject(e); });
        });
    }

    constructor(ws, protocol) {
        this.ws = ws;
        this.protocol = protocol;
        this.frames = [];
        this.records = [];     // not yet taken by next()
        this.waiters = [];
        this.handshakeDone = false;
        this.carry = Buffer.alloc(0);
        this.nextInvocationId = 1;
        this.closeInfo = null;
        this.closed = new Promise((resolve) => {
            ws.on("close", (code, reason) => {
                this.closeInfo = { code, reason: String(reason), at: Date.now() };
                resolve(this.closeInfo);
                this.wake();
            });
        });
        ws.on("error", () => {}); // a reset after terminate(): the close event says enough
        ws.on("message", (data) => this.onFrame(data));
    }

    onFrame(data) {
        const binary = typeof data !== "string";
        let buf = binary ? Buffer.from(data) : Buffer.from(data, "utf8");
        const at = Date.now();
        this.frames.push({ at, binary, bytes: buf });
        buf = this.carry.length ? Buffer.concat([this.carry, buf]) : buf;
        if (!this.handshakeDone) {
            const end = buf.indexOf(0x1e);
            if (end < 0) { this.carry = buf; return; }
            this.push({ type: "handshake", ...JSON.parse(buf.subarray(0, end).toString("utf8")) }, at, binary);
            this.handshakeDone = true;
            buf = buf.subarray(end + 1);
        }
        if (this.protocol === "messagepack") {
            const [records, rest] = splitMsgpack(buf);
            for (const r of records) this.push(fromMsgpackArray(msgpackDecode(r)), at, binary);
            this.carry = Buffer.from(rest);
        } else {
            const text = buf.toString("utf8");
            const last = text.lastIndexOf(RS);
            for (const part of text.slice(0, last + 1).split(RS).slice(0, -1)) this.push(JSON.parse(part), at, binary);
            this.carry = Buffer.from(text.slice(last + 1), "utf8");
        }
    }

    push(msg, at, binary) {
        Object.defineProperty(msg, "at", { value: at, enumerable: false });
        Object.defineProperty(msg, "binary", { value: binary, enumerable: false });
        this.records.push(msg);
        this.wake();
    }

    wake() {
        const waiters = this.waiters;
        this.waiters = [];
        for (const w of waiters) w();
    }

    // The next not-yet-taken record matching `filter` (records before it stay queued). Fails
    // when the socket closes first or after timeoutMs.
    async next(filter = () => true, timeoutMs = TIMEOUT_MS, what = "a record") {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
            const i = this.records.findIndex(filter);
            if (i >= 0) return this.records.splice(i, 1)[0];
            if (this.closeInfo) throw new Error(`socket closed (${this.closeInfo.code}) before ${what}`);
            const left = deadline - Date.now();
            if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
            await new Promise((resolve) => {
                const t = setTimeout(resolve, left);
                this.waiters.push(() => { clearTimeout(t); resolve(); });
            });
        }
    }

    // Resolves with the close info, or fails after timeoutMs.
    waitClosed(timeoutMs = TIMEOUT_MS) {
        return withTimeout(this.closed, timeoutMs, "the socket to close");
    }

    sendText(text) { this.ws.send(text); }

    // Two WebSocket pings, each sent when the pong of the one before came: the peer has read all
    // that was sent before, and whatever it had queued for this socket by then came before the
    // second pong (lws may send a pong ahead of a message already waiting, not ahead of two).
    // A socket that closes meanwhile answers no ping: this returns then, and the caller's checks
    // say what came before the close.
    async pingPong(timeoutMs = TIMEOUT_MS) {
        for (let i = 0; i < 2 && this.ws.readyState === WebSocket.OPEN; i++) {
            const pong = new Promise((resolve) => this.ws.once("pong", resolve));
            this.ws.ping();
            await withTimeout(Promise.race([pong, this.closed]), timeoutMs, "the pong");
        }
    }

    send(message) {
        if (this.protocol === "messagepack") this.ws.send(msgpackRecord(message));
        else this.ws.send(JSON.stringify(message) + RS);
    }

    async handshake(version = 1, protocol = this.protocol, timeoutMs = TIMEOUT_MS) {
        this.sendText(JSON.stringify({ protocol, version }) + RS);
        return this.next((r) => r.type === "handshake", timeoutMs, "the handshake answer");
    }

    ping() {
        this.send(this.protocol === "messagepack" ? [6] : { type: 6 });
    }

    // Sends an Invocation and returns its id (the Completion arrives as a record).
    startInvoke(target, args) {
        const id = String(this.nextInvocationId++);
        this.send(this.protocol === "messagepack" ? [1, {}, id, target, args] : { type: 1, invocationId: id, target, arguments: args });
        return id;
    }

    async invoke(target, args, timeoutMs = TIMEOUT_MS) {
        const id = this.startInvoke(target, args);
        const done = await this.next((r) => r.type === 3 && r.invocationId === id, timeoutMs, `completion of ${target}`);
        if (done.error !== undefined) throw new Error(`${target} failed: ${done.error}`);
        return done.result;
    }

    terminate() { this.ws.terminate(); }

    close() {
        if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(1000);
        else if (this.ws.readyState !== WebSocket.CLOSED) this.ws.terminate();
    }
}

// Opens /{hub} through `base`, negotiating first unless skipNegotiation, completes the handshake
// and, for the chat hubs, waits for ChatHub's "welcome" push carrying the backend's connection id.
export async function connectRaw({ base = RELAY_URL, hub = "chat", protocol = "json", skipNegotiation = false,
    headers = {}, welcome = true } = {}) {
    let query = "";
    if (!skipNegotiation) {
        const n = await negotiate(base, hub, headers);
        if (n.status !== 200 || !n.json?.connectionToken) {
            throw new Error(`negotiate ${hub}: HTTP ${n.status} ${n.body}`);
        }
        query = `id=${encodeURIComponent(n.json.connectionToken)}`;
    }
    const client = await RawClient.connect(wsUrl(base, hub, query), { protocol, headers });
    const answer = await client.handshake();
    if (answer.error !== undefined) {
        client.terminate();
        throw new Error(`handshake refused: ${answer.error}`);
    }
    let connectionId = null;
    if (welcome) {
        const w = await client.next((r) => r.type === 1 && r.target === "welcome", TIMEOUT_MS, "welcome");
        connectionId = w.arguments[0];
    }
    return { client, connectionId };
}

// ------------------------------------------------------------------------------ stock clients

// The stock JS client pings right after connecting and then every 15 s, which arms the tuned
// relay's 2 s client timeout: pass keepAliveMs below it for a connection that must stay open.
export function stockConnection(url, { protocol = "json", skipNegotiation = false, reconnectDelays = null,
    keepAliveMs = null } = {}) {
    const builder = new signalR.HubConnectionBuilder()
        .withUrl(url, { transport: signalR.HttpTransportType.WebSockets, skipNegotiation })
        .configureLogging(signalR.LogLevel.None);
    if (keepAliveMs) builder.withKeepAliveInterval(keepAliveMs);
    if (protocol === "messagepack") builder.withHubProtocol(new MessagePackHubProtocol());
    if (reconnectDelays) builder.withAutomaticReconnect(reconnectDelays);
    return builder.build();
}

// Starts a stock connection to a chat hub and returns it with the backend's connection id.
export async function connectStock(url, options = {}) {
    const conn = stockConnection(url, options);
    const welcome = new Promise((resolve) => conn.on("welcome", (id) => resolve(id)));
    const timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
    await withTimeout(conn.start(), timeoutMs, `start ${url}`);
    const connectionId = await withTimeout(welcome, timeoutMs, "welcome");
    return { conn, connectionId };
}

export async function stopAll(...conns) {
    await Promise.all(conns.filter(Boolean).map((c) => (c instanceof RawClient ? c.close() : c.stop().catch(() => {}))));
}

// Asks the backend, over a direct connection, what it recorded when `connectionId` went away;
// polls until OnDisconnectedAsync has run or the timeout passes.
export async function disconnectSeenByBackend(connectionId, timeoutMs = TIMEOUT_MS) {
    const { conn } = await connectStock(`${BACKEND_URL}/chat`);
    try {
        return await pollUntil(() => conn.invoke("GetDisconnectInfo", connectionId),
            (info) => info.disconnected === true, `OnDisconnectedAsync for ${connectionId}`, timeoutMs);
    } finally {
        await stopAll(conn);
    }
}

// /metrics of a relay with nothing left of earlier tests: no Core or legacy session and no backend
// link still closing, and no timer but the expiry timers of unused negotiate tokens. A test that
// compares gauges with a baseline takes the baseline from here, so that a close of an earlier
// test that lands during this one cannot move it.
export function settledMetrics(base = RELAY_URL, timeoutMs = 20000) {
    return pollUntil(() => metrics(base),
        (m) => m.sessions_active === 0 && (m.legacy_sessions_active ?? 0) === 0 && m.backend_links_active === 0 &&
            m.timers_armed === m.negotiations_pending,
        "no session, backend link or session timer left from earlier tests", timeoutMs);
}

// The tuned relay's legacy endpoint, and a legacy connection driven by hand over raw HTTP and WebSockets.
export const LEGACY_BASE = `${RELAY_URL}/signalr`;

export function legacyConnectionData(...hubs) {
    return encodeURIComponent(JSON.stringify(hubs.map((name) => ({ name }))));
}

export async function legacyNegotiate(hubs, clientProtocol = "2.1") {
    const res = await httpRequest("GET", `${LEGACY_BASE}/negotiate?clientProtocol=${clientProtocol}&connectionData=${legacyConnectionData(...hubs)}`);
    return { ...res, json: res.status === 200 ? JSON.parse(res.body) : null };
}

export const LEGACY_FORM = { "content-type": "application/x-www-form-urlencoded; charset=UTF-8" };

// A legacy longPolling connection driven by hand at base (a relay's /signalr): negotiate, /connect,
// /start. Returns the query every later request carries and /connect's answer (its C is the cursor).
export async function legacyLongPollingConnection(base = LEGACY_BASE, hubs = ["chathub"]) {
    const neg = await httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${legacyConnectionData(...hubs)}`);
    assert.equal(neg.status, 200, neg.body);
    const q = `transport=longPolling&clientProtocol=2.1&connectionToken=` +
        `${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}&connectionData=${legacyConnectionData(...hubs)}`;
    const connect = await httpRequest("POST", `${base}/connect?${q}`, LEGACY_FORM, "");
    assert.equal(connect.status, 200, connect.body);
    const start = await httpRequest("GET", `${base}/start?${q}`);
    assert.equal(start.status, 200, start.body);
    return { q, connect };
}

// A legacy connection driven by hand: negotiate, /connect WebSocket, /start.
export class LegacyClient {
    static async open(hubs = ["chathub"]) {
        const c = new LegacyClient();
        c.hubs = hubs;
        const neg = await legacyNegotiate(hubs);
        if (neg.status !== 200) throw new Error(`legacy negotiate answered ${neg.status}: ${neg.body}`);
        c.negotiate = neg.json;
        c.query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(neg.json.ConnectionToken)}` +
            `&connectionData=${legacyConnectionData(...hubs)}`;
        await c.attach("connect", "");
        return c;
    }

    async attach(command, extra) {
        this.frames = [];
        this.waiters = [];
        this.ws = new WebSocket(`${LEGACY_BASE.replace(/^http/, "ws")}/${command}?${this.query}${extra}`);
        this.closed = new Promise((resolve) => this.ws.on("close", (code) => resolve(code)));
        this.ws.on("message", (data) => {
            const frame = JSON.parse(data.toString("utf8"));
            this.frames.push(frame);
            if (frame.C) this.cursor = frame.C;
            this.waiters = this.waiters.filter((w) => !w(frame));
        });
        await withTimeout(new Promise((resolve, reject) => { this.ws.on("open", resolve); this.ws.on("error", reject); }),
            TIMEOUT_MS, `${command} open`);
    }

    next(match, what) {
        const found = this.frames.find(match);
        if (found) return Promise.resolve(found);
        return withTimeout(new Promise((resolve) => this.waiters.push((f) => (match(f) ? (resolve(f), true) : false))),
            TIMEOUT_MS, what);
    }

    start() {
        return httpRequest("GET", `${LEGACY_BASE}/start?${this.query}`);
    }

    async invoke(hub, method, args, id) {
        this.ws.send(JSON.stringify({ H: hub, M: method, A: args, I: id }));
        return this.next((f) => f.I === String(id), `result ${id}`);
    }

    abort() {
        return httpRequest("POST", `${LEGACY_BASE}/abort?${this.query}`);
    }
}
