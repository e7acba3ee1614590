#!/usr/bin/env node
// Replays a captured legacy SignalR session (docs/FIXTURES.md) against a live legacy endpoint and
// checks that the server answers as it did when the fixture was recorded. The client's side (HTTP
// requests, WebSocket upgrades, frames and closes) is sent in file order with this run's tokens,
// cursors and backend ids put in for the placeholders; the server's side is compared structurally:
// statuses, JSON shapes and values (a placeholder matches any value of its kind, the same
// placeholder always the same value, two placeholders of one kind never the same value), and order
// per WebSocket.
//
//   node replay.mjs --target http://127.0.0.1:8080 fixtures/legacy/*.jsonl [--pace 1] [--timeout 10000]
//
// Exit status 0 when every fixture replayed without a difference. The library side
// (replayFixture, parseFixture, parseJson, matchJson) is used by test/replay.test.mjs.
import fs from "node:fs";
import http from "node:http";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { WebSocket } from "ws";
import { FORMAT, VERSION } from "./record.mjs";
import { ANY, maskReferenceHeaders, maskReferenceJson } from "./reference-mask.mjs";

// ------------------------------------------------------------------ JSON that keeps its numbers

// A JSON number as written: JSON.parse would turn 9007199254740993 into ...992 and hide a relay that
// rounds through a double. Objects become Maps so that member order is kept for every key (plain
// objects move integer-like keys first).
export class JsonNumber {
    constructor(text) {
        this.text = text;
    }

    // Same value: integers exactly (BigInt), anything with a fraction or exponent as a double.
    equals(other) {
        if (/^-?\d+$/.test(this.text) && /^-?\d+$/.test(other.text)) {
            return BigInt(this.text) === BigInt(other.text);
        }
        return Number(this.text) === Number(other.text);
    }

    toJSON() {
        return Number(this.text);
    }
}

// Parses JSON text into strings, booleans, null, JsonNumber, arrays and Maps. Throws SyntaxError on
// anything JSON.parse would refuse (it checks first), so the walk below can trust the text.
export function parseJson(text) {
    JSON.parse(text);
    let i = 0;
    const ws = () => {
        while (i < text.length && " \t\r\n".includes(text[i])) i++;
    };
    const value = () => {
        ws();
        const ch = text[i];
        if (ch === "{") {
            i++;
            const map = new Map();
            ws();
            if (text[i] === "}") {
                i++;
                return map;
            }
            for (;;) {
                ws();
                const key = string();
                ws();
                i++; // ':'
                map.set(key, value());
                ws();
                if (text[i++] === "}") return map;
            }
        }
        if (ch === "[") {
            i++;
            const list = [];
            ws();
            if (text[i] === "]") {
                i++;
                return list;
            }
            for (;;) {
                list.push(value());
                ws();
                if (text[i++] === "]") return list;
            }
        }
        if (ch === '"') return string();
        if (text.startsWith("true", i)) return (i += 4), true;
        if (text.startsWith("false", i)) return (i += 5), false;
        if (text.startsWith("null", i)) return (i += 4), null;
        const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
        i += m[0].length;
        return new JsonNumber(m[0]);
    };
    const string = () => {
        let j = i + 1;
        while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
        const s = JSON.parse(text.slice(i, j + 1));
        i = j + 1;
        return s;
    };
    const v = value();
    return v;
}

function tryParseJson(text) {
    try {
        return { ok: true, value: parseJson(text) };
    } catch {
        return { ok: false };
    }
}

// Short JSON-ish text of a parsed value, for messages.
export function show(v, max = 300) {
    const plain = (x) => x instanceof Map ? Object.fromEntries([...x].map(([k, y]) => [k, plain(y)]))
        : Array.isArray(x) ? x.map(plain) : x instanceof JsonNumber ? Number(x.text) : x;
    const s = JSON.stringify(plain(v));
    return s === undefined ? String(v) : s.length > max ? `${s.slice(0, max)}...` : s;
}

// ------------------------------------------------------------------ placeholders and bindings

// The placeholders of docs/FIXTURES.md. Only these: an echoed "</script>" is not one.
const PLACEHOLDER = /<(connectionToken|connectionId|accessToken|cursor|groupsToken|backendId|timestamp|tid|noCache|upstream|authorization|cookie|origin)((?:#\d+)|(?::\d+(?:\.\d+)?))?>/g;
const WHOLE_PLACEHOLDER = new RegExp(`^${PLACEHOLDER.source}$`);
const HAS_PLACEHOLDER = new RegExp(PLACEHOLDER.source);
// What a value of each kind looks like in a server answer.
const KIND_PATTERN = {
    backendId: "[A-Za-z0-9_-]{22}",
};
const ANY_PATTERN = "[^\"]+?";

// The family a placeholder belongs to for the "distinct placeholders, distinct values" check:
// cursors and groups tokens per legacy connection (<cursor:2.5> -> cursor:2), others by kind.
function familyOf(placeholder) {
    const m = /^<(\w+)(?::(\d+)\.\d+)?/.exec(placeholder);
    return m[2] ? `${m[1]}:${m[2]}` : m[1];
}

function kindOf(placeholder) {
    return /^<(\w+)/.exec(placeholder)[1];
}

// This run's values of the placeholders, learned from the server's answers.
export class Bindings {
    constructor() {
        this.values = new Map(); // placeholder -> value
        this.owners = new Map(); // family + "\0" + value -> placeholder
    }

    get(placeholder) {
        return this.values.get(placeholder);
    }

    // Binds or checks; returns null, or why the value cannot be this placeholder's.
    bind(placeholder, value) {
        const pattern = KIND_PATTERN[kindOf(placeholder)];
        if (pattern && !new RegExp(`^${pattern}$`).test(value)) {
            return `${JSON.stringify(value)} is not a ${kindOf(placeholder)}`;
        }
        if (value.length === 0) {
            return `empty value for ${placeholder}`;
        }
        const known = this.values.get(placeholder);
        if (known !== undefined) {
            return known === value ? null : `${placeholder} was ${JSON.stringify(known)} earlier in this run, now ${JSON.stringify(value)}`;
        }
        const ownerKey = `${familyOf(placeholder)}\0${value}`;
        const owner = this.owners.get(ownerKey);
        // Real-server fixtures (reference-mask.mjs, row 17): the 2.x server's cursor moves without
        // a message (one position per stream), the relay's only with one, so two recorded cursors
        // may be one value here.
        if (owner !== undefined && owner !== placeholder && !(this.sharedCursors && kindOf(placeholder) === "cursor")) {
            return `${JSON.stringify(value)} is already ${owner} in this run; the fixture has a different value (${placeholder}) here`;
        }
        this.values.set(placeholder, value);
        this.owners.set(ownerKey, placeholder);
        return null;
    }
}

function escapeRegex(s) {
    return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// Matches a recorded string (maybe with placeholders in it) against a server's string, binding
// what is unbound. Returns null or the reason it differs.
export function matchString(expected, actual, bindings) {
    if (typeof actual !== "string") {
        return `expected a string ${JSON.stringify(expected)}, got ${show(actual)}`;
    }
    if (!HAS_PLACEHOLDER.test(expected)) {
        return expected === actual ? null : `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
    }
    const whole = WHOLE_PLACEHOLDER.exec(expected);
    if (whole) {
        const why = bindings.bind(expected, actual);
        return why && `${expected}: ${why}`;
    }
    // Placeholders inside a longer string (a backend id in a text): one regular expression with a
    // named group per unbound placeholder and a back-reference for its repeats.
    const groups = new Map();
    let source = "^";
    let last = 0;
    for (const m of expected.matchAll(PLACEHOLDER)) {
        source += escapeRegex(expected.slice(last, m.index));
        const known = bindings.get(m[0]);
        if (known !== undefined) {
            source += escapeRegex(known);
        } else if (groups.has(m[0])) {
            source += `\\k<${groups.get(m[0])}>`;
        } else {
            const name = `g${groups.size}`;
            groups.set(m[0], name);
            source += `(?<${name}>${KIND_PATTERN[m[1]] || ANY_PATTERN})`;
        }
        last = m.index + m[0].length;
    }
    source += `${escapeRegex(expected.slice(last))}$`;
    const found = new RegExp(source, "s").exec(actual);
    if (!found) {
        return `expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
    }
    for (const [placeholder, name] of groups) {
        const why = bindings.bind(placeholder, found.groups[name]);
        if (why) return `${placeholder}: ${why}`;
    }
    return null;
}

function typeName(v) {
    return v === null ? "null" : v instanceof Map ? "object" : Array.isArray(v) ? "array"
        : v instanceof JsonNumber ? "number" : typeof v;
}

// Compares a recorded JSON value with a server's (both from parseJson). `ordered`: member order
// must be the same at the top level too (negotiate body, hub results: the spec fixes it).
// Returns null or "<path>: <reason>".
export function matchJson(expected, actual, bindings, { ordered = false, path = "$" } = {}) {
    if (expected === ANY) return null; // a difference masked for real-server fixtures (reference-mask.mjs)
    if (typeName(expected) !== typeName(actual)) {
        return `${path}: expected ${typeName(expected)} ${show(expected)}, got ${typeName(actual)} ${show(actual)}`;
    }
    if (typeof expected === "string") {
        const why = matchString(expected, actual, bindings);
        return why && `${path}: ${why}`;
    }
    if (expected instanceof JsonNumber) {
        return expected.equals(actual) ? null : `${path}: expected ${expected.text}, got ${actual.text}`;
    }
    if (Array.isArray(expected)) {
        if (expected.length !== actual.length) {
            return `${path}: expected ${expected.length} elements ${show(expected)}, got ${actual.length} ${show(actual)}`;
        }
        for (let k = 0; k < expected.length; k++) {
            const why = matchJson(expected[k], actual[k], bindings, { path: `${path}[${k}]` });
            if (why) return why;
        }
        return null;
    }
    if (expected instanceof Map) {
        const want = [...expected.keys()];
        const got = [...actual.keys()];
        const missing = want.filter((k) => !actual.has(k));
        const extra = got.filter((k) => !expected.has(k));
        if (missing.length || extra.length) {
            return `${path}: members differ (missing ${JSON.stringify(missing)}, unexpected ${JSON.stringify(extra)}) in ${show(actual)}`;
        }
        if (ordered && want.join("\0") !== got.join("\0")) {
            return `${path}: member order ${JSON.stringify(got)}, recorded ${JSON.stringify(want)}`;
        }
        for (const k of want) {
            const why = matchJson(expected.get(k), actual.get(k), bindings, { path: `${path}.${k}` });
            if (why) return why;
        }
        return null;
    }
    return expected === actual ? null : `${path}: expected ${show(expected)}, got ${show(actual)}`;
}

// Server-Sent Events responses: each recorded data line (keep-alives left out) becomes an
// "sse-event" entry placed in the timeline at the time its chunk came, so that the replay waits for
// it before the client actions that followed it (a /start, a /reconnect using its cursor).
function splitEventStreams(fixture) {
    if (fixture.sseSplit) return;
    fixture.sseSplit = true;
    const added = [];
    for (const e of fixture.events) {
        if (e.type !== "http-response" || e.headers?.["content-type"] !== "text/event-stream") continue;
        const pieces = e.chunks ?? [{ t: e.t, data: e.body ?? "" }];
        let pending = "", index = 0;
        for (const piece of pieces) {
            pending += piece.data;
            let end;
            while ((end = pending.indexOf("\n\n")) >= 0) {
                const data = pending.slice(0, end).replace(/^data: /, "");
                pending = pending.slice(end + 2);
                if (data === "{}") continue;
                added.push({ type: "sse-event", id: e.id, t: piece.t, line: e.line, index: index++, data });
            }
        }
    }
    for (const e of fixture.events) { // the client closed this answer (an event stream) at tEnd: so does the replay
        if (e.type === "http-response" && e.cut === "client") added.push({ type: "http-cut", id: e.id, t: e.tEnd, line: e.line });
    }
    for (const a of added) {
        // After every event of the same time or earlier: the first later one follows it.
        let k = fixture.events.findIndex((x) => typeof x.t === "number" && x.t > a.t);
        if (k < 0) k = fixture.events.length;
        fixture.events.splice(k, 0, a);
    }
}

// Writes a value from parseJson back as JSON text (numbers as written, member order kept).
function serializeJson(v) {
    if (v instanceof JsonNumber) return v.text;
    if (v instanceof Map) return `{${[...v].map(([k, x]) => `${JSON.stringify(k)}:${serializeJson(x)}`).join(",")}}`;
    if (Array.isArray(v)) return `[${v.map(serializeJson).join(",")}]`;
    return JSON.stringify(v);
}

// ------------------------------------------------------------------ the fixture

// Reads a fixture's text: { session, events (each with its line number), placeholders }.
export function parseFixture(text, name = "fixture") {
    const lines = text.split("\n").filter((l) => l.trim().length > 0);
    const entries = lines.map((l, k) => {
        try {
            return { ...JSON.parse(l), line: k + 1 };
        } catch (error) {
            throw new Error(`${name}:${k + 1}: not JSON (${error.message})`);
        }
    });
    const session = entries[0];
    if (!session || session.type !== "session" || session.format !== FORMAT) {
        throw new Error(`${name}: the first line is not a ${FORMAT} session line`);
    }
    if (session.version !== VERSION) {
        throw new Error(`${name}: format version ${session.version}, this replayer reads ${VERSION}`);
    }
    const end = entries[entries.length - 1];
    if (end.type !== "end") {
        throw new Error(`${name}: no end line (a truncated capture)`);
    }
    return { name, session, events: entries.slice(1, -1), placeholders: end.placeholders };
}

function isKeepAlive(value) {
    return value instanceof Map && value.size === 0;
}

function isPersistentResponse(value) {
    return value instanceof Map && Array.isArray(value.get("M"));
}

// What one WebSocket of the fixture expects from the server: the sequence of items (each element
// of a PersistentResponse's M, each standalone frame such as a hub result), the recorded frames
// over that sequence ([start, end) item positions, head fields other than C and M, cursor), and the
// frames whose heads carry more than C and M (S, T, G, L...), which must come at the same position.
class ExpectedStream {
    constructor(ws) {
        this.ws = ws;
        this.items = []; // { element: bool, value|text|binary, frame }
        this.frames = []; // { event, start, end, head, cursor, special, headMatched, cursorBound, done }
        this.close = null; // the recorded ws-close event if the server closed first
        this.opened = null; // the ws-open event
    }

    addFrame(event) {
        const frame = { event, start: this.items.length, head: null, cursor: null, special: false,
            headMatched: false, cursorBound: false, done: false };
        if (event.binary !== undefined) {
            this.items.push({ element: false, binary: event.binary, frame });
        } else {
            const parsed = tryParseJson(event.text);
            if (!parsed.ok) {
                this.items.push({ element: false, text: event.text, frame });
            } else if (isKeepAlive(parsed.value)) {
                frame.keepAlive = true;
            } else if (isPersistentResponse(parsed.value)) {
                const head = new Map([...parsed.value].filter(([k]) => k !== "M" && k !== "C"));
                frame.head = head;
                frame.special = head.size > 0;
                frame.cursor = parsed.value.has("C") ? parsed.value.get("C") : null;
                for (const element of parsed.value.get("M")) {
                    this.items.push({ element: true, value: element, frame });
                }
                frame.persistent = true;
            } else {
                this.items.push({ element: false, value: parsed.value, frame });
            }
        }
        frame.end = this.items.length;
        event.expected = frame;
        if (frame.keepAlive || (frame.persistent && frame.start === frame.end && !frame.special)) {
            // Keep-alives come as time allows; an empty plain frame says nothing either.
            frame.done = true;
        }
        this.frames.push(frame);
    }
}

// ------------------------------------------------------------------ replaying

class Mismatch extends Error {}

function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

function describe(event) {
    switch (event.type) {
        case "http-request": return `line ${event.line}: ${event.method} ${event.path}`;
        case "http-response": return `line ${event.line}: response ${event.id} (${event.status ?? event.error})`;
        case "sse-event": return `line ${event.line}: event ${event.index + 1} of stream ${event.id}: data: ${event.data.slice(0, 120)}`;
        case "ws-open": return `line ${event.line}: WebSocket ${event.ws} ${event.path}`;
        case "ws-frame": return `line ${event.line}: ws ${event.ws} ${event.dir} ${(event.text ?? "<binary>").slice(0, 120)}`;
        case "http-cut": return `line ${event.line}: the client closes its request ${event.id}`;
        default: return `line ${event.line}: ${event.type} ws ${event.ws}`;
    }
}

// Response headers worth comparing (the rest, such as content-length, vary with token lengths).
const COMPARED_RESPONSE_HEADERS = ["content-type", "x-content-type-options", "cache-control"];
// Request headers sent as recorded (the masked origin becomes the target's own origin).
const SENT_REQUEST_HEADERS = ["content-type", "accept", "user-agent", "x-requested-with"];
// How long a client close waits for the server's side of the closing handshake.
const CLOSE_WAIT_MS = 2000;

export class Replayer {
    // fixture: parseFixture's result. target: "http://127.0.0.1:port" (the relay's origin).
    constructor(fixture, { target, timeoutMs = 10000, pace = 0, graceMs = 300, log = () => {}, reference = false }) {
        this.fixture = fixture;
        this.reference = reference; // recorded against the real 2.x server: its listed differences masked
        this.target = new URL(target);
        this.timeoutMs = timeoutMs;
        this.pace = pace;
        this.graceMs = graceMs;
        this.log = log;
        this.bindings = new Bindings();
        this.bindings.sharedCursors = reference;
        this.streams = new Map(); // ws number -> ExpectedStream
        this.sockets = new Map(); // ws number -> { socket, pos, specialIndex, clientClosed, closed }
        this.responses = new Map(); // http id -> the recorded http-response event
        this.liveRequests = new Map(); // http id -> this run's request (an event stream the client cuts)
        this.failure = null;
        this.waiters = new Set();
        this.stats = { requests: 0, upgrades: 0, framesSent: 0, itemsCompared: 0, framesReceived: 0,
            keepAlivesIgnored: 0, afterCloseIgnored: 0 };
        splitEventStreams(fixture);
        this.sse = new Map(); // http id -> the recorded sse-event entries of that stream, in order
        for (const event of fixture.events) {
            event.done = false;
            if (event.type === "sse-event") {
                if (!this.sse.has(event.id)) this.sse.set(event.id, []);
                this.sse.get(event.id).push(event);
            } else if (event.type === "http-response") {
                this.responses.set(event.id, event);
                if (event.error !== undefined) event.done = true; // nothing to compare against
                // Cut by the client (an event stream): its events are compared one by one, and the
                // replay cuts it too (http-cut); nothing is left to wait for at its end.
                if (event.cut === "client") event.done = true;
            } else if (event.type === "ws-open") {
                this.stream(event.ws).opened = event;
            } else if (event.type === "ws-frame" && event.dir === "s2c") {
                this.stream(event.ws).addFrame(event);
                event.done = event.expected.done;
            } else if (event.type === "ws-close" && event.by === "server") {
                this.stream(event.ws).close = event;
            }
        }
    }

    stream(ws) {
        if (!this.streams.has(ws)) this.streams.set(ws, new ExpectedStream(ws));
        return this.streams.get(ws);
    }

    isServerEvent(event) {
        return event.type === "http-response" || event.type === "sse-event" || event.type === "ws-accepted" || event.type === "ws-refused"
            || (event.type === "ws-frame" && event.dir === "s2c") || (event.type === "ws-close" && event.by === "server");
    }

    fail(why) {
        if (!this.failure) {
            this.failure = why;
            this.log(`MISMATCH ${why}`);
        }
        this.wake();
    }

    wake() {
        for (const w of this.waiters) w();
    }

    // Waits until predicate() holds, the replay failed, or the timeout passed.
    async until(predicate, what) {
        const deadline = Date.now() + this.timeoutMs;
        while (!this.failure && !predicate()) {
            const left = deadline - Date.now();
            if (left <= 0) {
                this.fail(`timed out after ${this.timeoutMs} ms waiting for ${what()}`);
                break;
            }
            await new Promise((resolve) => {
                const done = () => {
                    clearTimeout(timer);
                    this.waiters.delete(done);
                    resolve();
                };
                const timer = setTimeout(done, left);
                this.waiters.add(done);
            });
        }
        if (this.failure) throw new Mismatch(this.failure);
    }

    // ---- substitution

    value(placeholder, where, event) {
        switch (kindOf(placeholder)) {
            case "timestamp": return String(Date.now());
            case "tid": return String(Math.floor(Math.random() * 11));
            case "noCache": return randomUUID();
            case "origin": return this.target.origin;
            default: {
                const v = this.bindings.get(placeholder);
                if (v === undefined) {
                    throw new Mismatch(`${describe(event)}: ${placeholder} in the ${where} has no value in this run ` +
                        "(the server never sent it where the fixture has it)");
                }
                return v;
            }
        }
    }

    // encode: how a value goes into this context (query/form: percent-encoded; JSON: escaped).
    substitute(text, where, event, encode) {
        return text.replace(PLACEHOLDER, (p) => encode(this.value(p, where, event)));
    }

    requestHeaders(recorded, event) {
        const headers = {};
        for (const name of SENT_REQUEST_HEADERS) {
            if (recorded[name] !== undefined) headers[name] = recorded[name];
        }
        if (recorded.origin !== undefined) headers.origin = this.value(recorded.origin, "origin header", event);
        return headers;
    }

    url(path, rawQuery, event) {
        const query = this.substitute(rawQuery ?? "", "query", event, encodeURIComponent);
        return `${path}${query ? `?${query}` : ""}`;
    }

    // ---- client actions

    async act(event) {
        switch (event.type) {
            case "http-request": return this.sendRequest(event);
            case "ws-open": return this.openSocket(event);
            case "ws-frame": return this.sendFrame(event);
            case "ws-close": return this.closeSocket(event);
            case "http-cut": {
                const live = this.liveRequests.get(event.id);
                const response = this.responses.get(event.id);
                if (response) response.done = true; // cut by the client: nothing more to compare
                live?.destroy();
                return undefined;
            }
            default: return undefined;
        }
    }

    sendRequest(event, again = null) {
        const expected = this.responses.get(event.id);
        let path = this.url(event.path, event.rawQuery, event);
        let body = event.form !== undefined
            ? this.substitute(event.body ?? "", "form body", event, encodeURIComponent)
            : this.substitute(event.body ?? "", "body", event, (v) => JSON.stringify(v).slice(1, -1));
        if (again) { // the rest of a long poll's recorded messages: the same poll from the cursor reached
            const id = `messageId=${encodeURIComponent(again.cursor)}`;
            path = path.replace(/messageId=[^&]*/, id);
            body = body.replace(/messageId=[^&]*/, id);
        }
        const headers = this.requestHeaders(event.headers ?? {}, event);
        if (body.length > 0 || event.method !== "GET") headers["content-length"] = Buffer.byteLength(body);
        this.stats.requests++;
        const req = http.request({ hostname: this.target.hostname, port: this.target.port, method: event.method, path, headers },
            (res) => {
                const chunks = [];
                const stream = this.sse.get(event.id) ? { pending: "", next: 0 } : null;
                res.on("data", (c) => {
                    chunks.push(c);
                    if (stream) this.onStreamData(event, res, stream, c.toString("utf8"));
                });
                res.on("end", () => this.onResponse(event, expected, res, Buffer.concat(chunks).toString("utf8"), again));
                res.on("error", (error) => {
                    if (this.responses.get(event.id)?.cut !== "client") this.fail(`${describe(event)}: response failed: ${error.message}`);
                });
            });
        this.liveRequests.set(event.id, req);
        req.on("error", (error) => {
            if (this.responses.get(event.id)?.cut !== "client") this.fail(`${describe(event)}: request failed: ${error.message}`);
        });
        req.end(body);
    }

    // A long poll answers with what has arrived by then, so the same messages may come in other
    // batches than recorded (timing). When an answer holds only a prefix of the recorded messages,
    // the poll is sent again from the cursor it reached and the answers are compared joined.
    continuePoll(request, expected, res, body, again) {
        if (res.statusCode !== 200 || !/\/(poll|reconnect)$/.test(request.path) ||
            !/transport=longPolling/i.test(request.rawQuery ?? "")) return false;
        const want = tryParseJson(expected.body ?? "");
        const got = tryParseJson(body);
        if (!want.ok || !got.ok || !(want.value instanceof Map) || !(got.value instanceof Map)) return false;
        const wantM = want.value.get("M"), gotM = got.value.get("M");
        if (!Array.isArray(wantM) || !Array.isArray(gotM)) return false;
        const joined = [...(again?.elements ?? []), ...gotM];
        if (joined.length === 0 || joined.length >= wantM.length) {
            if (again) {
                got.value.set("M", joined);
                return { body: serializeJson(got.value) };
            }
            return false;
        }
        this.sendRequest(request, { cursor: got.value.get("C"), elements: joined });
        return true;
    }

    // A Server-Sent Events stream, event by event as it comes (its response ends only when the
    // stream does, and later requests use the cursors it carried): each data line against the next
    // recorded one, keep-alives ({}) left out on both sides.
    onStreamData(request, res, stream, text) {
        const expected = this.sse.get(request.id);
        if (stream.next === 0 && stream.pending === "") {
            const response = this.responses.get(request.id);
            if (response && res.statusCode !== response.status) {
                return this.fail(`${describe(response)}: status ${res.statusCode}, recorded ${response.status}`);
            }
        }
        stream.pending += text;
        let end;
        while ((end = stream.pending.indexOf("\n\n")) >= 0) {
            const line = stream.pending.slice(0, end);
            stream.pending = stream.pending.slice(end + 2);
            if (!line.startsWith("data: ")) return this.fail(`stream ${request.id}: not a data line: ${JSON.stringify(line)}`);
            const data = line.slice(6);
            if (data === "{}") { this.stats.keepAlivesIgnored++; continue; }
            const want = expected[stream.next];
            if (!want) return this.fail(`stream ${request.id}: an event beyond the recording: data: ${data.slice(0, 200)}`);
            const joined = this.joinStreamFrames(stream, want, data);
            if (joined === null) continue; // a prefix of the recorded frame: the rest is on its way
            const why = this.compareBody(want.data, joined, false);
            if (why) return this.fail(`${describe(want)}: ${why}`);
            want.done = true;
            stream.next++;
            this.stats.itemsCompared++;
            this.wake();
        }
    }

    // As continuePoll for a stream: the messages of one recorded frame may come in two frames when
    // some were still on their way (e.g. broadcasts reaching the relay just after a /reconnect was
    // answered). A frame holding a prefix of the recorded messages waits for the next ones, and the
    // frames are compared joined (the last one's cursor). Returns the data to compare, or null.
    joinStreamFrames(stream, want, data) {
        const wanted = tryParseJson(want.data), got = tryParseJson(data);
        const wantM = wanted.ok && wanted.value instanceof Map ? wanted.value.get("M") : null;
        const gotM = got.ok && got.value instanceof Map ? got.value.get("M") : null;
        if (!Array.isArray(wantM) || !Array.isArray(gotM)) return data;
        const joined = [...(stream.held ?? []), ...gotM];
        if (joined.length > 0 && joined.length < wantM.length) {
            stream.held = joined;
            return null;
        }
        if (!stream.held) return data;
        stream.held = null;
        got.value.set("M", joined);
        return serializeJson(got.value);
    }

    onResponse(request, expected, res, body, again = null) {
        if (!expected || expected.done) return; // the recording has no answer to compare with
        if (this.sse.has(request.id)) { // compared event by event (onStreamData); here status and headers
            if (res.statusCode !== expected.status) return this.fail(`${describe(expected)}: status ${res.statusCode}, recorded ${expected.status}`);
            expected.done = true;
            this.wake();
            return;
        }
        const continued = this.continuePoll(request, expected, res, body, again);
        if (continued === true) return;
        if (continued) body = continued.body;
        const where = `${describe(expected)} to ${request.method} ${request.path}`;
        if (res.statusCode !== expected.status) {
            return this.fail(`${where}: status ${res.statusCode}, recorded ${expected.status} (body ${JSON.stringify(body.slice(0, 200))})`);
        }
        const expectedHeaders = this.reference ? maskReferenceHeaders(expected.status, { ...expected.headers }) : expected.headers;
        for (const name of COMPARED_RESPONSE_HEADERS) {
            const want = expectedHeaders?.[name];
            if (want !== undefined && res.headers[name] !== want) {
                return this.fail(`${where}: header ${name} ${JSON.stringify(res.headers[name])}, recorded ${JSON.stringify(want)}`);
            }
        }
        const why = this.compareBody(expected.body ?? "", body, request.path.endsWith("/negotiate"),
            request.path.endsWith("/negotiate"));
        if (why) return this.fail(`${where}: body ${why}`);
        this.stats.itemsCompared++;
        expected.done = true;
        this.wake();
    }

    compareBody(expected, actual, ordered, negotiate = false) {
        const want = expected.trim() ? tryParseJson(expected) : { ok: false };
        if (want.ok && this.reference) want.value = maskReferenceJson(want.value, { negotiate });
        if (!want.ok) {
            return matchString(expected, actual, this.bindings);
        }
        const got = tryParseJson(actual);
        if (!got.ok) return `is not JSON: ${JSON.stringify(actual.slice(0, 200))}`;
        return matchJson(want.value, got.value, this.bindings, { ordered });
    }

    openSocket(event) {
        const stream = this.stream(event.ws);
        const url = `ws://${this.target.host}${this.url(event.path, event.rawQuery, event)}`;
        const headers = {};
        if (event.headers?.["user-agent"]) headers["user-agent"] = event.headers["user-agent"];
        const protocols = event.headers?.["sec-websocket-protocol"]?.split(",").map((p) => p.trim()) ?? [];
        const socket = new WebSocket(url, protocols, {
            headers, perMessageDeflate: false, maxPayload: 64 << 20,
            ...(event.headers?.origin ? { origin: this.value(event.headers.origin, "origin header", event) } : {}),
        });
        const state = { socket, pos: 0, specialIndex: 0, clientClosed: false, closed: false };
        this.sockets.set(event.ws, state);
        this.stats.upgrades++;
        const answer = this.fixture.events.find((e) => e.ws === event.ws && (e.type === "ws-accepted" || e.type === "ws-refused"));
        socket.on("unexpected-response", (_, res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => {
                const body = Buffer.concat(chunks).toString("utf8");
                state.closed = true;
                if (!answer || answer.type !== "ws-refused") {
                    return this.fail(`${describe(event)}: refused with ${res.statusCode} ${JSON.stringify(body.slice(0, 200))}, recorded accepted`);
                }
                if (answer.status !== undefined && answer.status !== res.statusCode) {
                    return this.fail(`${describe(answer)}: refused with ${res.statusCode}, recorded ${answer.status}`);
                }
                const why = answer.body !== undefined && this.compareBody(answer.body, body, false);
                if (why) return this.fail(`${describe(answer)}: refusal body ${why}`);
                answer.done = true;
                this.wake();
            });
        });
        socket.on("open", () => {
            if (!answer || answer.type !== "ws-accepted") {
                return this.fail(`${describe(event)}: accepted, recorded ${answer ? `refused (${answer.status ?? answer.error})` : "no answer"}`);
            }
            answer.done = true;
            this.wake();
        });
        socket.on("message", (data, isBinary) => this.onFrame(stream, state, data, isBinary));
        socket.on("close", (code, reason) => this.onClose(stream, state, code, reason.toString("utf8")));
        socket.on("error", (error) => {
            if (!state.clientClosed && !this.failure && answer?.type !== "ws-refused") {
                this.fail(`${describe(event)}: socket error ${error.message}`);
            }
        });
    }

    sendFrame(event) {
        if (event.dir !== "c2s") return;
        const state = this.sockets.get(event.ws);
        if (!state || state.socket.readyState !== WebSocket.OPEN) {
            throw new Mismatch(`${describe(event)}: the socket is not open here`);
        }
        if (event.binary !== undefined) {
            state.socket.send(Buffer.from(event.binary, "base64"), { binary: true });
        } else {
            state.socket.send(this.substitute(event.text, "frame", event, (v) => JSON.stringify(v).slice(1, -1)));
        }
        this.stats.framesSent++;
    }

    closeSocket(event) {
        if (event.by !== "client") return;
        const state = this.sockets.get(event.ws);
        if (!state) return;
        if (state.closed) {
            throw new Mismatch(`${describe(event)}: the server had already closed this socket; the client closed it in the recording`);
        }
        state.clientClosed = true;
        // What the recording has the server send after this is what was in flight; not compared.
        const stream = this.stream(event.ws);
        for (const f of stream.frames) {
            if (!f.done) {
                f.done = true;
                f.event.done = true;
            }
        }
        // 1005 (no code) and 1006 (no close frame, e.g. a cut connection) cannot be sent as codes.
        if (event.code === 1006) state.socket.terminate();
        else if (event.code === 1005 || event.code === undefined) state.socket.close();
        else state.socket.close(event.code, event.reason ?? "");
        // The client went on once its socket was closed; so does the replay (the server has then
        // seen the close before anything that follows), but it does not wait long for a slow echo.
        return this.socketClosed(state, CLOSE_WAIT_MS);
    }

    async socketClosed(state, ms) {
        const deadline = Date.now() + ms;
        while (!state.closed && Date.now() < deadline) {
            await new Promise((resolve) => {
                const done = () => {
                    clearTimeout(timer);
                    this.waiters.delete(done);
                    resolve();
                };
                const timer = setTimeout(done, deadline - Date.now());
                this.waiters.add(done);
            });
        }
    }

    // ---- the server's side of a WebSocket

    onFrame(stream, state, data, isBinary) {
        if (this.failure) return;
        this.stats.framesReceived++;
        if (state.clientClosed) {
            // Whatever was in flight when the client closed: the recording cannot say.
            this.stats.afterCloseIgnored++;
            return;
        }
        try {
            this.matchFrame(stream, state, data, isBinary);
        } catch (error) {
            if (!(error instanceof Mismatch)) throw error;
            this.fail(error.message);
        }
        this.wake();
    }

    matchFrame(stream, state, data, isBinary) {
        const where = `ws ${stream.ws} (${stream.opened.path})`;
        const nextItem = () => {
            const item = stream.items[state.pos];
            if (!item) {
                throw new Mismatch(`${where}: unexpected frame ${show(isBinary ? "<binary>" : data.toString("utf8"))} after all ${stream.items.length} recorded ones`);
            }
            return item;
        };
        if (isBinary) {
            const item = nextItem();
            const got = Buffer.from(data).toString("base64");
            if (item.binary !== got) throw new Mismatch(`${describe(item.frame.event)}: got binary ${got.slice(0, 80)}`);
            return this.advance(stream, state);
        }
        const text = data.toString("utf8");
        const parsed = tryParseJson(text);
        if (parsed.ok && isKeepAlive(parsed.value)) {
            this.stats.keepAlivesIgnored++;
            return;
        }
        if (!parsed.ok) {
            const item = nextItem();
            const why = item.text !== undefined ? matchString(item.text, text, this.bindings) : "is not JSON";
            if (why) throw new Mismatch(`${describe(item.frame.event)}: got ${JSON.stringify(text.slice(0, 200))}: ${why}`);
            return this.advance(stream, state);
        }
        const value = parsed.value;
        if (!isPersistentResponse(value)) {
            const item = nextItem();
            if (item.element) {
                throw new Mismatch(`${describe(item.frame.event)}: expected message ${show(item.value)} in a PersistentResponse, got standalone frame ${show(value)}`);
            }
            const why = item.value === undefined ? "is JSON, recorded text" : matchJson(item.value, value, this.bindings, { ordered: true });
            if (why) throw new Mismatch(`${describe(item.frame.event)}: got ${show(value)}: ${why}`);
            return this.advance(stream, state);
        }
        // A PersistentResponse: head fields, then its messages, then its cursor.
        const start = state.pos;
        const head = new Map([...value].filter(([k]) => k !== "M" && k !== "C"));
        const nextSpecial = stream.frames.filter((f) => f.special)[state.specialIndex];
        if (head.size > 0) {
            if (!nextSpecial) {
                throw new Mismatch(`${where}: frame with ${show(head)} at message ${start}; the recording has no such frame: ${show(value)}`);
            }
            if (nextSpecial.start !== start) {
                throw new Mismatch(`${describe(nextSpecial.event)}: frame with ${show(head)} came at message ${start}, recorded at ${nextSpecial.start}`);
            }
            const why = matchJson(nextSpecial.head, head, this.bindings);
            if (why) throw new Mismatch(`${describe(nextSpecial.event)}: head ${why}`);
            nextSpecial.headMatched = true;
            state.specialIndex++;
        } else if (nextSpecial && nextSpecial.start <= start) {
            throw new Mismatch(`${describe(nextSpecial.event)}: expected a frame with ${show(nextSpecial.head)} here, got ${show(value)}`);
        }
        for (const element of value.get("M")) {
            const item = nextItem();
            if (!item.element) {
                throw new Mismatch(`${describe(item.frame.event)}: expected standalone frame ${show(item.value ?? item.text)}, got message ${show(element)} in M`);
            }
            const why = matchJson(item.value, element, this.bindings, { path: "$.M[]" });
            if (why) throw new Mismatch(`${describe(item.frame.event)}: got ${show(element)}: ${why}`);
            state.pos++;
            this.stats.itemsCompared++;
        }
        // The cursor names the position after the last message: it binds the placeholder of the
        // recorded frame that ended at the same position, however the messages were batched.
        const ending = stream.frames.find((f) => f.persistent && !f.cursorBound && f.end === state.pos);
        if (ending) {
            if (ending.cursor !== null && !value.has("C")) {
                throw new Mismatch(`${describe(ending.event)}: frame without C: ${show(value)}`);
            }
            if (ending.cursor !== null) {
                const why = matchJson(ending.cursor, value.get("C"), this.bindings, { path: "$.C" });
                if (why) throw new Mismatch(`${describe(ending.event)}: ${why}`);
            }
            ending.cursorBound = true;
        } else if (!value.has("C")) {
            throw new Mismatch(`${where}: PersistentResponse without C: ${show(value)}`);
        }
        this.stats.itemsCompared++;
        this.markFrames(stream, state);
    }

    advance(stream, state) {
        state.pos++;
        this.stats.itemsCompared++;
        this.markFrames(stream, state);
    }

    markFrames(stream, state) {
        for (const f of stream.frames) {
            if (!f.done && f.end <= state.pos && (!f.special || f.headMatched)) {
                f.done = true;
                f.event.done = true;
            }
        }
    }

    onClose(stream, state, code, reason) {
        state.closed = true;
        if (this.failure || state.clientClosed) {
            this.wake();
            return;
        }
        const recorded = stream.close;
        if (!recorded) {
            const clientClose = this.fixture.events.find((e) => e.type === "ws-close" && e.ws === stream.ws);
            const left = stream.items.length - state.pos;
            return this.fail(`ws ${stream.ws} (${stream.opened.path}): the server closed it (${code} ${JSON.stringify(reason)})` +
                (clientClose ? `; in the recording the client closed it (${describe(clientClose)})` : "; the recording never closed it") +
                (left ? ` and ${left} recorded message(s) never came` : ""));
        }
        if (state.pos < stream.items.length) {
            return this.fail(`${describe(recorded)}: the server closed ws ${stream.ws} before ${stream.items.length - state.pos} recorded message(s), ` +
                `the next: ${show(stream.items[state.pos].value ?? stream.items[state.pos].text)}`);
        }
        if (recorded.code !== code || (recorded.reason ?? "") !== reason) {
            return this.fail(`${describe(recorded)}: close ${code} ${JSON.stringify(reason)}, recorded ${recorded.code} ${JSON.stringify(recorded.reason)}`);
        }
        recorded.done = true;
        this.wake();
    }

    // ---- the run

    // The first server event before index k that has not arrived yet, or null.
    pendingBefore(k) {
        const events = this.fixture.events;
        for (let j = 0; j < k; j++) {
            if (this.isServerEvent(events[j]) && !events[j].done) return events[j];
        }
        return null;
    }

    async run() {
        const started = Date.now();
        const events = this.fixture.events;
        let lastActionT = null;
        let lastActionAt = Date.now();
        try {
            for (let k = 0; k < events.length; k++) {
                const event = events[k];
                if (this.isServerEvent(event)) continue;
                // Everything the server sent before this client action in the recording must have
                // come: the order the recorder saw is one the client and server really produced.
                await this.until(() => this.pendingBefore(k) === null, () => describe(this.pendingBefore(k)));
                if (this.pace > 0 && lastActionT !== null && typeof event.t === "number") {
                    await sleep(Math.max(0, (event.t - lastActionT) * this.pace - (Date.now() - lastActionAt)));
                }
                lastActionT = event.t;
                lastActionAt = Date.now();
                await this.act(event);
                if (this.failure) throw new Mismatch(this.failure);
            }
            await this.until(() => this.pendingBefore(events.length) === null, () => describe(this.pendingBefore(events.length)));
            // Anything the server sends beyond the recording shows up within this grace period.
            await sleep(this.graceMs);
            if (this.failure) throw new Mismatch(this.failure);
        } catch (error) {
            if (!(error instanceof Mismatch)) throw error;
            this.fail(error.message);
        } finally {
            for (const { socket } of this.sockets.values()) socket.terminate();
        }
        return { ok: !this.failure, failure: this.failure, ms: Date.now() - started, stats: this.stats, bindings: this.bindings };
    }
}

// Replays one fixture (its text or a parsed one) against target; resolves with
// { ok, failure, ms, stats }.
export function replayFixture(fixture, options) {
    const parsed = typeof fixture === "string" ? parseFixture(fixture) : fixture;
    return new Replayer(parsed, options).run();
}

// ------------------------------------------------------------------ command line

function parseArgs(argv) {
    const args = { target: null, pace: 0, timeout: 10000, files: [], verbose: false };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === "--target") args.target = argv[++i];
        else if (a === "--pace") args.pace = Number(argv[++i]);
        else if (a === "--timeout") args.timeout = Number(argv[++i]);
        else if (a === "--verbose") args.verbose = true;
        else if (a === "--reference") args.reference = true;
        else if (a.startsWith("--")) throw new Error(`unknown option ${a}`);
        else args.files.push(a);
    }
    if (!args.target || args.files.length === 0) {
        throw new Error("usage: replay.mjs --target http://127.0.0.1:8080 fixture.jsonl... [--pace factor] [--timeout ms] [--verbose] [--reference]");
    }
    return args;
}

async function main() {
    const args = parseArgs(process.argv.slice(2));
    let failed = 0;
    for (const file of args.files) {
        const fixture = parseFixture(fs.readFileSync(file, "utf8"), file);
        const result = await replayFixture(fixture, {
            target: args.target, pace: args.pace, timeoutMs: args.timeout, reference: args.reference,
            log: args.verbose ? (m) => process.stderr.write(`${m}\n`) : () => {},
        });
        const s = result.stats;
        process.stdout.write(`${result.ok ? "ok  " : "FAIL"} ${file} (${result.ms} ms; ${s.requests} requests, ` +
            `${s.upgrades} sockets, ${s.framesSent} frames sent, ${s.itemsCompared} answers compared)\n`);
        if (!result.ok) {
            failed++;
            process.stdout.write(`     ${result.failure}\n`);
        }
    }
    process.stdout.write(`replay: ${args.files.length - failed} passed, ${failed} failed\n`);
    process.exit(failed ? 1 : 0);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
    main().catch((error) => {
        process.stderr.write(`${error.message}\n`);
        process.exit(2);
    });
}
