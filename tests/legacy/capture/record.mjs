#!/usr/bin/env node
// Records a legacy SignalR session as replayable JSON lines (format: docs/FIXTURES.md). It sits
// between a client and a server on 127.0.0.1 as a forwarding proxy for HTTP and WebSockets,
// passes every byte on unchanged, and writes what went each way with ids, tokens, cursors and
// other per-run values replaced by placeholders such as <connectionToken>.
//
// It is for what the relay's own recorder (--capture) cannot do: recording in front of a server
// that is not the relay, the real ASP.NET SignalR 2.4.1 server of fixtures/legacy/reference/
// (scripts/capture-legacy-ref-fixtures.sh). fixtures/legacy/*.jsonl are --capture recordings
// (scripts/capture-legacy-fixtures.sh). Unlike --capture it writes a whole scenario, every
// connection through it, into one file.
//
//   node record.mjs --listen 127.0.0.1:8090 --upstream http://127.0.0.1:8080 --out session.jsonl
//                   [--label "jquery 2.4.3 webSockets"]
//
// Point the client at http://127.0.0.1:8090/signalr instead of the server. The recorder stops on
// SIGINT/SIGTERM, or after --duration seconds, and ends the file with a "end" line.
import fs from "node:fs";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { WebSocket, WebSocketServer } from "ws";

export const FORMAT = "signalr-legacy-capture";
export const VERSION = 1;

// Request headers worth keeping (lower case); values of the masked ones are replaced.
const KEPT_REQUEST_HEADERS = ["content-type", "accept", "user-agent", "x-requested-with", "origin",
    "authorization", "cookie", "upgrade", "sec-websocket-protocol", "sec-websocket-version", "transfer-encoding"];
const KEPT_RESPONSE_HEADERS = ["content-type", "x-content-type-options", "cache-control",
    "access-control-allow-origin", "access-control-allow-credentials", "transfer-encoding", "content-length"];
const MASKED_HEADERS = { authorization: "<authorization>", cookie: "<cookie>", origin: "<origin>" };
// Query parameters whose values are per-run noise (spec §1.2).
const NOISE_PARAMS = { _: "<timestamp>", tid: "<tid>", noCache: "<noCache>" };
const MAX_BODY = 8 << 20;

// Replaces per-run values by placeholders, by where they stand rather than by what they look like
// (a cursor may be "1", which also appears as an invocation id): the negotiate fields, C and G of a
// PersistentResponse, the connectionToken/messageId/groupsToken parameters and form fields. (The
// connection ids an ASP.NET Core backend mints behind the relay, <backendId:K>, are --capture's
// to mask: a server that is not the relay has none.)
export class Masker {
    constructor() {
        this.tables = new Map(); // kind -> Map(value -> placeholder)
    }

    // kind "cursor" and "groupsToken" are numbered per legacy connection (scope = that
    // connection's number, see scopeOf): <cursor:2.5> is the 5th cursor of connection 2. Tokens
    // and ids: the first is <kind>, later ones <kind#2>, <kind#3>, ...
    placeholder(kind, value, scope = 0) {
        const perConnection = kind === "cursor" || kind === "groupsToken";
        const key = perConnection ? `${kind}@${scope}` : kind;
        if (!this.tables.has(key)) {
            this.tables.set(key, new Map());
        }
        const table = this.tables.get(key);
        if (!table.has(value)) {
            const n = table.size + 1;
            table.set(value, perConnection ? `<${kind}:${scope}.${n}>` : n === 1 ? `<${kind}>` : `<${kind}#${n}>`);
        }
        return table.get(value);
    }

    // The number of the legacy connection a connectionToken belongs to (1 for <connectionToken>,
    // n for <connectionToken#n>); 0 when there is none.
    scopeOf(token) {
        if (typeof token !== "string" || token.length === 0) {
            return 0;
        }
        const placeholder = this.placeholder("connectionToken", token);
        const m = /#(\d+)>$/.exec(placeholder);
        return m ? Number(m[1]) : 1;
    }

    // Server JSON (a frame, a response body): top-level fields by name.
    maskServerJson(text, scope = 0) {
        const msg = tryJson(text);
        if (msg === undefined) {
            return text;
        }
        const persistent = msg && typeof msg === "object" && !Array.isArray(msg) && Array.isArray(msg.M);
        return rewriteStrings(text, (path, value) => {
            if (path.length === 1) {
                const key = path[0];
                if (key === "ConnectionToken") return this.placeholder("connectionToken", value);
                if (key === "ConnectionId") return this.placeholder("connectionId", value);
                if (key === "AccessToken") return this.placeholder("accessToken", value);
                if (persistent && key === "C") return this.placeholder("cursor", value, scope);
                if (persistent && key === "G") return this.placeholder("groupsToken", value, scope);
            }
            return null;
        });
    }

    // A body that is a series of SSE events: each "data:" line is server JSON.
    maskEventStream(text, scope) {
        return text.replace(/^data: (.*)$/gm, (_, json) => `data: ${this.maskServerJson(json, scope)}`);
    }

    // name=value pairs (a query string or a form body) -> the masked raw text, still encoded as
    // the client wrote it apart from the placeholders, the decoded pairs, and the scope (legacy
    // connection number) from a connectionToken among them, else the given one.
    maskPairs(raw, scope = 0) {
        const pairs = [];
        const rawParts = [];
        const parts = raw.split("&").filter((p) => p.length > 0);
        for (const part of parts) {
            if (part.startsWith("connectionToken=")) {
                scope = this.scopeOf(safeDecode(part.slice("connectionToken=".length)));
            }
        }
        for (const part of parts) {
            const eq = part.indexOf("=");
            const rawName = eq < 0 ? part : part.slice(0, eq);
            let rawValue = eq < 0 ? "" : part.slice(eq + 1);
            const name = safeDecode(rawName);
            let value = safeDecode(rawValue);
            const kind = PAIR_KINDS[name];
            if (name in NOISE_PARAMS) {
                value = rawValue = NOISE_PARAMS[name];
            } else if (kind) {
                value = rawValue = this.placeholder(kind, value, scope);
            }
            pairs.push([name, value]);
            rawParts.push(eq < 0 ? rawName : `${rawName}=${rawValue}`);
        }
        return { raw: rawParts.join("&"), pairs, scope };
    }

    placeholders() {
        return [...this.tables.values()].flatMap((t) => [...t.values()]);
    }
}

// Parameters and form fields that carry per-run values (spec §1.2).
const PAIR_KINDS = { connectionToken: "connectionToken", messageId: "cursor", groupsToken: "groupsToken" };

// Rewrites the string values of a JSON text without touching anything else: replace(path, value)
// returns a placeholder for the string at path (keys and array indexes from the root), or null
// to keep it. Object keys are never replaced. The text must be valid JSON.
export function rewriteStrings(text, replace) {
    let out = "";
    const stack = []; // { array: bool, key: string|null, index: number, expectKey: bool }
    let i = 0;
    while (i < text.length) {
        const ch = text[i];
        if (ch === '"') {
            let j = i + 1;
            while (text[j] !== '"') {
                j += text[j] === "\\" ? 2 : 1;
            }
            const token = text.slice(i, j + 1);
            const top = stack[stack.length - 1];
            if (top && !top.array && top.expectKey) {
                top.key = JSON.parse(token);
                out += token;
            } else {
                const path = stack.map((f) => (f.array ? f.index : f.key));
                const placeholder = replace(path, JSON.parse(token));
                out += placeholder === null ? token : JSON.stringify(placeholder);
            }
            i = j + 1;
            continue;
        }
        if (ch === "{" || ch === "[") {
            stack.push({ array: ch === "[", key: null, index: 0, expectKey: ch === "{" });
        } else if (ch === "}" || ch === "]") {
            stack.pop();
        } else if (ch === ":") {
            stack[stack.length - 1].expectKey = false;
        } else if (ch === ",") {
            const top = stack[stack.length - 1];
            if (top.array) top.index++;
            else top.expectKey = true;
        }
        out += ch;
        i++;
    }
    return out;
}

function formEncode(value) {
    return encodeURIComponent(value).replace(/%20/g, "+");
}

function safeDecode(s) {
    try {
        return decodeURIComponent(s.replace(/\+/g, " "));
    } catch {
        return s;
    }
}

function tryJson(text) {
    try {
        return JSON.parse(text);
    } catch {
        return undefined;
    }
}

function pickHeaders(headers, kept) {
    const out = {};
    for (const name of kept) {
        if (headers[name] !== undefined) {
            out[name] = MASKED_HEADERS[name] ?? String(headers[name]);
        }
    }
    return out;
}

// A request body: a form (legacy /send data=..., jQuery long-poll messageId=...) or anything else.
function maskRequestBody(body, masker, scope) {
    if (/^[^=&{\["]+=/.test(body)) {
        const { raw, pairs } = masker.maskPairs(body, scope);
        return { body: raw, form: pairs };
    }
    return { body };
}

// A response body by its content type: SSE events, JSON, or text.
function maskResponseBody(text, contentType, masker, scope) {
    if (/^text\/event-stream/.test(contentType || "")) {
        return masker.maskEventStream(text, scope);
    }
    return masker.maskServerJson(text, scope);
}

export class Recorder {
    constructor({ upstream, out, label }) {
        this.upstream = new URL(upstream);
        this.out = out; // a writable stream
        this.masker = new Masker();
        this.started = Date.now();
        this.nextHttp = 1;
        this.nextWs = 1;
        this.sockets = new Set();
        this.wss = new WebSocketServer({ noServer: true, maxPayload: 64 << 20, perMessageDeflate: false });
        this.write({ type: "session", format: FORMAT, version: VERSION, label: label || null,
            upstream: `${this.upstream.protocol}//<upstream>` });
        this.server = http.createServer((req, res) => this.onRequest(req, res));
        this.server.on("upgrade", (req, socket, head) => this.onUpgrade(req, socket, head));
        this.server.on("connection", (s) => {
            this.sockets.add(s);
            s.on("close", () => this.sockets.delete(s));
        });
    }

    t() {
        return Date.now() - this.started;
    }

    write(entry) {
        this.out.write(JSON.stringify(entry) + "\n");
    }

    target(req) {
        return { hostname: this.upstream.hostname, port: this.upstream.port || 80, path: req.url };
    }

    requestLine(req) {
        const q = req.url.indexOf("?");
        const path = q < 0 ? req.url : req.url.slice(0, q);
        const { raw, pairs, scope } = this.masker.maskPairs(q < 0 ? "" : req.url.slice(q + 1));
        return { line: { path, rawQuery: raw, query: pairs }, scope };
    }

    onRequest(req, res) {
        const id = this.nextHttp++;
        const chunks = [];
        let size = 0;
        req.on("data", (c) => {
            size += c.length;
            if (size <= MAX_BODY) chunks.push(c);
        });
        req.on("end", () => {
            const body = Buffer.concat(chunks).toString("utf8");
            const { line, scope } = this.requestLine(req);
            this.write({
                type: "http-request", id, t: this.t(), method: req.method, ...line,
                headers: pickHeaders(req.headers, KEPT_REQUEST_HEADERS),
                ...maskRequestBody(body, this.masker, scope),
            });
            const headers = { ...req.headers, host: `${this.upstream.hostname}:${this.upstream.port || 80}` };
            let answer = null; // { tHead, upRes, parts, recorded } once the upstream answered
            const up = http.request({ ...this.target(req), method: req.method, headers }, (upRes) => {
                const tHead = this.t();
                res.writeHead(upRes.statusCode, upRes.statusMessage, upRes.headers);
                const parts = [];
                answer = { tHead, upRes, parts, recorded: false };
                upRes.on("data", (c) => {
                    res.write(c);
                    parts.push({ t: this.t(), data: c.toString("utf8") });
                });
                upRes.on("end", () => {
                    res.end();
                    if (!answer.recorded) this.recordResponse(id, tHead, upRes, parts, scope);
                    answer.recorded = true;
                });
                upRes.on("error", () => res.destroy());
            });
            up.on("error", (error) => {
                this.write({ type: "http-response", id, t: this.t(), error: error.code || error.message });
                res.writeHead(502, { "Content-Type": "text/plain" }).end(`recorder: upstream failed: ${error.message}`);
            });
            // The client went away before the answer was complete (e.g. a long poll it aborted).
            // An answer already under way (an event stream the client closed) is recorded as far as
            // it came, with cut: "client" and tEnd the time of the cut.
            res.on("close", () => {
                if (res.writableFinished) return;
                if (answer && !answer.recorded) {
                    answer.recorded = true;
                    this.recordResponse(id, answer.tHead, answer.upRes, answer.parts, scope, "client");
                }
                up.destroy();
            });
            up.end(Buffer.concat(chunks));
        });
    }

    recordResponse(id, tHead, upRes, parts, scope, cut = null) {
        const body = parts.map((p) => p.data).join("");
        const contentType = upRes.headers["content-type"];
        const entry = {
            type: "http-response", id, t: tHead, tEnd: this.t(), status: upRes.statusCode,
            headers: pickHeaders(upRes.headers, KEPT_RESPONSE_HEADERS),
            body: maskResponseBody(body, contentType, this.masker, scope),
        };
        if (parts.length > 1) {
            entry.chunks = parts.map((p) => ({ t: p.t, data: maskResponseBody(p.data, contentType, this.masker, scope) }));
        }
        if (cut) entry.cut = cut;
        this.write(entry);
    }

    onUpgrade(req, socket, head) {
        const ws = this.nextWs++;
        const { line, scope } = this.requestLine(req);
        this.write({ type: "ws-open", ws, t: this.t(), ...line, headers: pickHeaders(req.headers, KEPT_REQUEST_HEADERS) });
        const url = `ws://${this.upstream.hostname}:${this.upstream.port || 80}${req.url}`;
        // The upstream handshake is ws's own (key, version); these client headers go along.
        const headers = {};
        for (const name of ["user-agent", "authorization", "cookie", "origin"]) {
            if (req.headers[name]) headers[name] = req.headers[name];
        }
        const upstream = new WebSocket(url, { headers, perMessageDeflate: false, maxPayload: 64 << 20 });
        upstream.on("unexpected-response", (_, upRes) => {
            const parts = [];
            upRes.on("data", (c) => parts.push(c));
            upRes.on("end", () => {
                const body = Buffer.concat(parts);
                this.write({ type: "ws-refused", ws, t: this.t(), status: upRes.statusCode, body: body.toString("utf8") });
                socket.end(`HTTP/1.1 ${upRes.statusCode} ${upRes.statusMessage}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n` + body.toString("latin1"), "latin1");
            });
        });
        upstream.on("error", (error) => {
            if (upstream.readyState === WebSocket.CONNECTING || !socket.writable) {
                this.write({ type: "ws-refused", ws, t: this.t(), error: error.code || error.message });
                socket.destroy();
            }
        });
        upstream.on("open", () => {
            this.wss.handleUpgrade(req, socket, head, (client) => this.bridge(ws, client, upstream, scope));
        });
    }

    bridge(ws, client, upstream, scope) {
        this.write({ type: "ws-accepted", ws, t: this.t(), status: 101 });
        const frame = (dir, data, isBinary) => {
            const entry = { type: "ws-frame", ws, t: this.t(), dir };
            if (isBinary) {
                entry.binary = Buffer.from(data).toString("base64");
            } else {
                const text = data.toString("utf8");
                entry.text = dir === "s2c" ? this.masker.maskServerJson(text, scope) : text;
            }
            this.write(entry);
        };
        client.on("message", (data, isBinary) => {
            frame("c2s", data, isBinary);
            if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary: isBinary });
        });
        upstream.on("message", (data, isBinary) => {
            frame("s2c", data, isBinary);
            if (client.readyState === WebSocket.OPEN) client.send(data, { binary: isBinary });
        });
        let closed = false;
        const closeFrom = (by, other, code, reason) => {
            if (closed) return;
            closed = true;
            this.write({ type: "ws-close", ws, t: this.t(), by, code, reason: reason.toString("utf8") });
            // 1005 (no code) and 1006 (no close frame) cannot be sent on; end the other side alike.
            if (code === 1006) other.terminate();
            else if (code === 1005) other.close();
            else other.close(code, reason);
        };
        client.on("close", (code, reason) => closeFrom("client", upstream, code, reason));
        upstream.on("close", (code, reason) => closeFrom("server", client, code, reason));
        client.on("error", () => client.terminate());
        upstream.on("error", () => upstream.terminate());
    }

    listen(host, port) {
        return new Promise((resolve, reject) => {
            this.server.once("error", reject);
            this.server.listen(port, host, () => resolve(this.server.address()));
        });
    }

    async close() {
        for (const c of this.wss.clients) c.terminate();
        for (const s of this.sockets) s.destroy();
        await new Promise((resolve) => this.server.close(resolve));
        this.write({ type: "end", t: this.t(), placeholders: this.masker.placeholders() });
    }
}

function parseArgs(argv) {
    const args = { listen: "127.0.0.1:8090", upstream: null, out: null, label: null, duration: 0 };
    for (let i = 0; i < argv.length; i++) {
        const key = argv[i].replace(/^--/, "");
        if (!(key in args)) throw new Error(`unknown option ${argv[i]}`);
        args[key] = argv[++i];
    }
    if (!args.upstream || !args.out) {
        throw new Error("usage: record.mjs --upstream http://127.0.0.1:8080 --out session.jsonl [--listen 127.0.0.1:8090] [--label text] [--duration seconds]");
    }
    return args;
}

async function main() {
    const args = parseArgs(process.argv.slice(2));
    const [host, port] = args.listen.split(":");
    if (!/^127\./.test(host) && host !== "localhost") {
        throw new Error("the recorder listens on loopback only (127.0.0.0/8)");
    }
    const out = fs.createWriteStream(args.out);
    const recorder = new Recorder({ upstream: args.upstream, out, label: args.label });
    const address = await recorder.listen(host, Number(port));
    process.stderr.write(`recording ${address.address}:${address.port} -> ${args.upstream} into ${args.out}\n`);
    const stop = async () => {
        await recorder.close();
        out.end(() => process.exit(0));
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    if (Number(args.duration) > 0) setTimeout(stop, Number(args.duration) * 1000);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
    main().catch((error) => {
        process.stderr.write(`${error.message}\n`);
        process.exit(2);
    });
}
