#!/usr/bin/env node
// probe.mjs - a fake Azure SignalR "service" for pinning down what the real SDK sends. A test-side
// tool, NOT the product: it speaks just enough of the service protocol to keep an app's server
// connections up and logs every message, decoded, with the WebSocket frames they came in.
//
// It listens on 127.0.0.1:PORT, takes the SDK's `GET /server/?hub=..&cid=..` WebSocket upgrades
// (checks the bearer JWT: alg, HMAC with the UTF-8 AccessKey, aud, claims), answers the service
// handshake, pings `[3]` every --ping-ms, acks group ops (18/19), answers `shutdown fin:N` with
// `finack`, and logs each message both ways as `[type, field, ...]` with MessagePack wire types
// kept (str "..", bin b"..", nil, maps {k:v}).
//
// With --app URL and --scenario demo it also plays fake clients through the app: it calls the
// app's negotiate (as a real client would), decodes the client token, then sends OpenConnection +
// the client's SignalR handshake + hub invocations as ConnectionData on the app's server
// connections, and logs what the SDK answers. See ../README.md and ../OBSERVED.md.
//
// Usage: node probe.mjs --port 5390 --key SECRET [--app http://127.0.0.1:5391] [--scenario demo]
//          [--ping-ms 5000] [--no-finack] [--no-ack] [--ack-status 1] [--handshake-error TEXT]
//          [--frames] [--hex] [--quiet-pings] [--observe-s 0] [--exit-after-scenario]
import http from "node:http";
import crypto from "node:crypto";
import { Bin, MpMap, map, encode, decode, frame, unframe, render } from "./msgpack.mjs";

// ---------------------------------------------------------------- options
const args = process.argv.slice(2);
function opt(name, def) {
    const i = args.indexOf(`--${name}`);
    if (i < 0) return def;
    if (typeof def === "boolean") return true;
    return args[i + 1];
}
const PORT = Number(opt("port", "5390"));
const KEY = opt("key", process.env.PROBE_ACCESS_KEY || "");
const APP = opt("app", "");
const SCENARIO = opt("scenario", "listen");
const PING_MS = Number(opt("ping-ms", "5000"));
const NO_FINACK = opt("no-finack", false);
const NO_ACK = opt("no-ack", false);
const ACK_STATUS = Number(opt("ack-status", "1"));
const HANDSHAKE_ERROR = opt("handshake-error", null);
const FRAMES = opt("frames", false);
const HEX = opt("hex", false);
const QUIET_PINGS = opt("quiet-pings", false);
const OBSERVE_S = Number(opt("observe-s", "0"));
const EXIT_AFTER = opt("exit-after-scenario", false);
if (!KEY) { console.error("probe: --key ACCESSKEY (or env PROBE_ACCESS_KEY) is required"); process.exit(2); }

const T0 = Date.now();
const ts = () => `+${((Date.now() - T0) / 1000).toFixed(3)}s`;
const log = (...a) => console.log(ts(), ...a);

const NAMES = {
    1: "HandshakeRequest", 2: "HandshakeResponse", 3: "Ping", 4: "OpenConnection", 5: "CloseConnection",
    6: "ConnectionData", 7: "MultiConnectionData", 8: "UserData", 9: "MultiUserData", 10: "BroadcastData",
    11: "JoinGroup", 12: "LeaveGroup", 13: "GroupBroadcastData", 14: "MultiGroupBroadcastData",
    15: "ServiceError", 16: "UserJoinGroup", 17: "UserLeaveGroup", 18: "JoinGroupWithAck",
    19: "LeaveGroupWithAck", 20: "Ack", 21: "CheckUserInGroupWithAck", 22: "ServiceEvent",
    23: "CheckGroupExistenceWithAck", 24: "CheckConnectionExistenceWithAck", 25: "CheckUserExistenceWithAck",
    26: "UserJoinGroupWithAck", 27: "UserLeaveGroupWithAck", 28: "AccessKeyRequest", 29: "AccessKeyResponse",
    30: "CloseConnectionWithAck", 31: "CloseConnectionsWithAck", 32: "CloseUserConnectionsWithAck",
    33: "CloseGroupConnectionsWithAck", 34: "ClientInvocation", 35: "ClientCompletion", 36: "ErrorCompletion",
    37: "ServiceMapping", 38: "ConnectionReconnect", 39: "ConnectionFlowControl", 40: "GroupMemberQuery",
    41: "RefreshAuth", 42: "GetConnectionClaims", 43: "UpdateConnectionClaims",
};

// ---------------------------------------------------------------- JWT
function b64urlJson(s) { return JSON.parse(Buffer.from(s, "base64url").toString("utf8")); }

export function checkJwt(token, expectedAudPath) {
    const parts = token.split(".");
    if (parts.length !== 3) return { ok: false, why: "not a compact JWS" };
    const [h, p, s] = parts;
    const header = b64urlJson(h), payload = b64urlJson(p);
    const algo = { HS256: "sha256", HS512: "sha512" }[header.alg];
    const sig = (key) => crypto.createHmac(algo, key).update(`${h}.${p}`).digest("base64url");
    const utf8 = algo && sig(Buffer.from(KEY, "utf8")) === s;
    let b64 = false;
    try { b64 = algo && sig(Buffer.from(KEY, "base64")) === s; } catch { /* not base64 */ }
    const now = Math.floor(Date.now() / 1000);
    const notes = [];
    if (!algo) notes.push(`alg ${header.alg} unsupported`);
    notes.push(utf8 ? "signature OK with UTF-8(AccessKey)" : "signature does NOT verify with UTF-8(AccessKey)");
    if (b64) notes.push("also verifies with base64-decoded key");
    if (!(payload.nbf <= now + 300 && payload.exp > now - 300)) notes.push("nbf/exp out of range");
    notes.push(`lifetime ${payload.exp - payload.iat}s`);
    if (expectedAudPath && payload.aud !== expectedAudPath) notes.push(`aud != ${expectedAudPath}`);
    return { ok: !!utf8, header, payload, notes };
}

// ---------------------------------------------------------------- server connections
let nextConnNo = 1;
const serverConns = []; // { no, hub, cid, serverId, ws, handshakeDone, listeners }
const listeners = new Set(); // (conn, msg) => void, for the scenario's waits

function short(conn) { return `#${conn.no} ${conn.hub}/${conn.cid.slice(0, 8)}`; }

function sendMsg(conn, msg, note = "") {
    const body = encode(msg);
    const bytes = frame(body);
    wsSend(conn.socket, bytes);
    if (!(QUIET_PINGS && msg[0] === 3 && msg.length === 1))
        log(`${short(conn)} R->S ${msg[0]} ${NAMES[msg[0]] || "?"} ${render(msg)}${note ? "  " + note : ""}${HEX ? "\n        hex " + bytes.toString("hex") : ""}`);
}

// The service drops a server connection: WebSocket close 1000, then TCP close.
function closeConn(conn) {
    log(`${short(conn)} R->S WebSocket close 1000 (the probe drops this server connection)`);
    wsSend(conn.socket, Buffer.from([0x03, 0xe8]), 0x8);
    setTimeout(() => conn.socket.end(), 50);
}

// Several messages in one WebSocket frame (the SDK must treat the connection as a byte stream).
function sendMsgsOneFrame(conn, msgs, note = "") {
    wsSend(conn.socket, Buffer.concat(msgs.map((m) => frame(encode(m)))));
    for (const m of msgs) log(`${short(conn)} R->S ${m[0]} ${NAMES[m[0]] || "?"} ${render(m)}  (one frame of ${msgs.length})${note ? " " + note : ""}`);
}

function onServiceMessage(conn, body) {
    let msg;
    try { msg = decode(body); } catch (e) { log(`${short(conn)} S->R undecodable (${e.message}) ${body.toString("hex")}`); return; }
    const type = Array.isArray(msg) ? msg[0] : "?";
    const isKeepAlive = type === 3 && msg.length >= 1 && (msg.length === 1 || msg[1] === "#clientInHub");
    if (!(QUIET_PINGS && isKeepAlive))
        log(`${short(conn)} S->R ${type} ${NAMES[type] || "?"} len=${body.length} ${render(msg)}${HEX ? "\n        hex " + frame(body).toString("hex") : ""}`);
    if (!conn.handshakeDone && type === 1) {
        conn.handshakeDone = true;
        const resp = HANDSHAKE_ERROR ? [2, HANDSHAKE_ERROR, map([]), conn.cid] : [2, null, map([]), conn.cid];
        sendMsg(conn, resp);
        if (!HANDSHAKE_ERROR && PING_MS > 0) conn.pingTimer = setInterval(() => sendMsg(conn, [3]), PING_MS);
        return;
    }
    if (type === 3 && msg[1] === "shutdown" && String(msg[2]).startsWith("fin:") && !NO_FINACK)
        sendMsg(conn, [3, "shutdown", "finack"]);
    if ((type === 18 || type === 19) && !NO_ACK)
        sendMsg(conn, [20, msg[3], ACK_STATUS, "", map([])]);
    for (const l of listeners) l(conn, msg);
}

// ---------------------------------------------------------------- minimal WebSocket server
function wsSend(socket, payload, opcode = 2) {
    if (socket.destroyed) return;
    const n = payload.length;
    let hdr;
    if (n < 126) hdr = Buffer.from([0x80 | opcode, n]);
    else if (n < 65536) { hdr = Buffer.alloc(4); hdr[0] = 0x80 | opcode; hdr[1] = 126; hdr.writeUInt16BE(n, 2); }
    else { hdr = Buffer.alloc(10); hdr[0] = 0x80 | opcode; hdr[1] = 127; hdr.writeBigUInt64BE(BigInt(n), 2); }
    socket.write(Buffer.concat([hdr, payload]));
}

function acceptServerConnection(req, socket, head) {
    const url = new URL(req.url, "http://x");
    const hub = url.searchParams.get("hub") || "?";
    const cid = url.searchParams.get("cid") || "?";
    const conn = { no: nextConnNo++, hub, cid, socket, handshakeDone: false, stream: Buffer.alloc(0), frag: 0 };
    log(`${short(conn)} UPGRADE ${req.method} ${req.url}`);
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const [k, v] = [req.rawHeaders[i], req.rawHeaders[i + 1]];
        log(`${short(conn)}   ${k}: ${k.toLowerCase() === "authorization" && conn.no > 1 ? v.slice(0, 40) + "…" : v}`);
    }
    const auth = req.headers.authorization || "";
    const token = auth.startsWith("Bearer ") ? auth.slice(7) : url.searchParams.get("access_token");
    if (!token) { log(`${short(conn)} no token: 401`); socket.end("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"); return; }
    const jwt = checkJwt(token, `http://${req.headers.host.replace(/:\d+$/, "")}/server/?hub=${hub}`);
    conn.serverId = jwt.payload?.nameid;
    log(`${short(conn)} server JWT header=${JSON.stringify(jwt.header)} payload=${JSON.stringify(jwt.payload)} | ${jwt.notes.join("; ")}`);
    if (!jwt.ok) { socket.end("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"); return; }
    const accept = crypto.createHash("sha1").update(req.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    serverConns.push(conn);
    let buf = Buffer.from(head);
    socket.on("data", (d) => { buf = Buffer.concat([buf, d]); buf = parseFrames(conn, buf); });
    socket.on("close", () => {
        clearInterval(conn.pingTimer);
        serverConns.splice(serverConns.indexOf(conn), 1);
        log(`${short(conn)} TCP closed`);
    });
    socket.on("error", (e) => log(`${short(conn)} socket error ${e.message}`));
}

function parseFrames(conn, buf) {
    for (;;) {
        if (buf.length < 2) return buf;
        const fin = (buf[0] & 0x80) !== 0, opcode = buf[0] & 0x0f, masked = (buf[1] & 0x80) !== 0;
        let len = buf[1] & 0x7f, p = 2;
        if (len === 126) { if (buf.length < 4) return buf; len = buf.readUInt16BE(2); p = 4; }
        else if (len === 127) { if (buf.length < 10) return buf; len = Number(buf.readBigUInt64BE(2)); p = 10; }
        const maskKey = masked ? buf.subarray(p, p + 4) : null;
        if (masked) p += 4;
        if (buf.length < p + len) return buf;
        const payload = Buffer.from(buf.subarray(p, p + len));
        if (maskKey) for (let i = 0; i < payload.length; i++) payload[i] ^= maskKey[i & 3];
        buf = buf.subarray(p + len);
        const tag = `fin=${fin ? 1 : 0} opcode=${opcode} len=${len}`;
        if (opcode === 0x8) {
            const code = payload.length >= 2 ? payload.readUInt16BE(0) : null;
            log(`${short(conn)} WS close frame code=${code} reason=${JSON.stringify(payload.subarray(2).toString())}`);
            wsSend(conn.socket, payload.subarray(0, 2), 0x8);
            conn.socket.end();
            continue;
        }
        if (opcode === 0x9) { log(`${short(conn)} WS ping frame len=${len}`); wsSend(conn.socket, payload, 0xa); continue; }
        if (opcode === 0xa) { log(`${short(conn)} WS pong frame len=${len} (unsolicited)`); continue; }
        if (opcode === 0x1) log(`${short(conn)} WS TEXT frame (unexpected) ${tag}`);
        if (FRAMES || !fin || opcode === 0) {
            if (FRAMES || conn.frag === 0) log(`${short(conn)} WS frame ${tag}`);
            conn.frag = fin ? 0 : conn.frag + 1;
            if (fin && !FRAMES) log(`${short(conn)} WS frame ${tag} (end of a fragmented message)`);
        }
        // The service protocol is a byte stream: frame boundaries mean nothing.
        conn.stream = Buffer.concat([conn.stream, payload]);
        const [bodies, rest] = unframe(conn.stream);
        conn.stream = Buffer.from(rest);
        if (FRAMES && bodies.length > 1) log(`${short(conn)}   (${bodies.length} messages in this frame)`);
        for (const b of bodies) onServiceMessage(conn, b);
    }
}

const server = http.createServer((req, res) => {
    log(`HTTP ${req.method} ${req.url} (not a server connection) -> 404`);
    res.writeHead(404).end();
});
server.on("upgrade", (req, socket, head) => {
    if (!req.url.startsWith("/server/")) { log(`UPGRADE ${req.url} refused`); socket.end("HTTP/1.1 404 Not Found\r\n\r\n"); return; }
    acceptServerConnection(req, socket, head);
});
server.listen(PORT, "127.0.0.1", () => log(`probe listening on 127.0.0.1:${PORT} (scenario ${SCENARIO}, ping every ${PING_MS} ms)`));

function shutdown(code = 0) {
    log("probe exiting");
    for (const c of serverConns) c.socket.destroy();
    server.close();
    setTimeout(() => process.exit(code), 100);
}
process.on("SIGTERM", () => shutdown(0));
process.on("SIGINT", () => shutdown(0));

// ---------------------------------------------------------------- scenario
if (SCENARIO !== "listen") {
    const { runScenario } = await import(`./scenario-${SCENARIO}.mjs`);
    const ctx = { APP, log, listeners, serverConns, sendMsg, sendMsgsOneFrame, closeConn, checkJwt, short, map, Bin, MpMap, encode, decode, frame, unframe, render };
    runScenario(ctx).then(async () => {
        log("SCENARIO DONE");
        if (OBSERVE_S > 0) { log(`observing for ${OBSERVE_S}s`); await new Promise((r) => setTimeout(r, OBSERVE_S * 1000)); log("OBSERVE DONE"); }
        if (EXIT_AFTER) shutdown(0);
    }, (e) => { log(`SCENARIO FAILED ${e.stack}`); if (EXIT_AFTER) shutdown(1); });
}
