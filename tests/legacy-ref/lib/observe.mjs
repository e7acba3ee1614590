// Raw HTTP exchanges with a legacy SignalR endpoint (the real 2.4.1 server of tests/legacy-ref, or
// the relay's /signalr): one function per case, each returning what came back, with the per-run
// values (tokens, connection ids, cursors) replaced by placeholders so that two servers' answers
// can be compared as text. Used by test/reference.test.mjs (asserts the real server's answers)
// and compare.mjs (prints where another server answers differently).
//
// Hub names as the jQuery client writes them (lower case), method names as the test hubs have them.

import { createRequire } from "node:module";
import { pollUntil } from "../../lib/common.mjs";

// The `ws` module of tests/legacy/capture (npm ci there), for the one case that talks WebSockets
// to a server that offers them (the relay); null when it is not installed.
function loadWs() {
    try {
        return createRequire(new URL("../../legacy/capture/package.json", import.meta.url))("ws").WebSocket;
    } catch {
        return null;
    }
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function connectionData(...hubs) {
    return JSON.stringify(hubs.map((name) => ({ name })));
}

// Shape of a per-run value, so answers compare as text: <guid>, <core-id>, <id:N chars>.
export function shapeOfId(id) {
    if (typeof id !== "string") return `<${typeof id}>`;
    if (GUID.test(id)) return "<guid>";
    if (/^[A-Za-z0-9_-]{22}$/.test(id)) return "<22 url-safe chars>";
    return `<${id.length} chars>`;
}

// Cursor shape: the 2.x server writes "d-<8 hex>-" and one "<stream key>,<hex id>" per stream
// the connection reads (its connection, each hub, each group), joined by "|", e.g.
// "d-4987E942-B,0|C,1|D,1"; shown as "d-<hex8>-K,N|K,N|K,N".
export function shapeOfCursor(c) {
    if (typeof c !== "string") return `<${typeof c}>`;
    const m = /^d-[0-9A-F]{8}-(.*)$/.exec(c);
    if (!m) return `<other cursor: ${c.length} chars>`;
    return "d-<hex8>-" + m[1].split("|").map((seg) => (/^[^,]+,[0-9A-F]+$/.test(seg) ? "K,N" : "?")).join("|");
}

export class Endpoint {
    constructor(url) {
        this.url = url.replace(/\/+$/, "");
    }

    // One request: status, headers we compare, body (text). readFor: for answers that stay open
    // (event streams, held polls), how long to read before giving up on the rest (ms); until: a
    // test of the body read so far that ends the reading early once it holds what is awaited;
    // onBody: called with the body read so far after each chunk (see stream()).
    async request(path, { method = "GET", form, headers = {}, readFor = 0, timeout = 10000, until = null, onBody = null } = {}) {
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), readFor || timeout);
        const init = { method, headers: { ...headers }, signal: controller.signal };
        if (form !== undefined) {
            init.body = new URLSearchParams(form).toString();
            init.headers["content-type"] = "application/x-www-form-urlencoded; charset=UTF-8";
        }
        const started = Date.now();
        let response;
        try {
            response = await fetch(this.url + path, init);
        } catch (e) {
            clearTimeout(timer);
            if (e.name === "AbortError") return { status: "no answer", ms: Date.now() - started, body: "", ended: false, chunkTimes: [] };
            throw e;
        }
        const chunks = [];
        const firstChunkAt = [];
        let ended = true;
        try {
            const reader = response.body.getReader();
            for (;;) {
                const { done, value } = await reader.read();
                if (done) break;
                firstChunkAt.push(Date.now() - started);
                chunks.push(Buffer.from(value));
                if (onBody) onBody(Buffer.concat(chunks).toString("utf8"));
                if (until && until(Buffer.concat(chunks).toString("utf8"))) {
                    controller.abort();
                    ended = false;
                    break;
                }
            }
        } catch (e) {
            if (e.name !== "AbortError") throw e;
            ended = false;
        } finally {
            clearTimeout(timer);
        }
        return {
            status: response.status,
            type: response.headers.get("content-type"),
            nosniff: response.headers.get("x-content-type-options"),
            cacheControl: response.headers.get("cache-control"),
            body: Buffer.concat(chunks).toString("utf8"),
            ended,
            chunkTimes: firstChunkAt,
            ms: Date.now() - started,
        };
    }

    // An answer that stays open (an event stream): { answer, ready }. ready resolves once the body
    // read so far holds what ready(body) waits for (by default the stream's first event, "data:
    // initialized": the server has taken the connection, so /start may follow), or when the answer
    // ends or fails first; it never waits longer than the request's own readFor.
    stream(path, options, ready = (body) => body.includes("data: initialized")) {
        let settle;
        const opened = new Promise((resolve) => { settle = resolve; });
        const answer = this.request(path, { ...options, onBody: (body) => { if (ready(body)) settle(); } });
        answer.then(settle, settle);
        return { answer, ready: opened };
    }

    query(params) {
        return "?" + new URLSearchParams(params).toString();
    }

    async negotiate(hubs = ["chathub"], extra = {}) {
        const params = { clientProtocol: "2.1", ...(hubs ? { connectionData: connectionData(...hubs) } : {}), ...extra };
        const r = await this.request("/negotiate" + this.query(params));
        let json = null;
        try { json = JSON.parse(r.body); } catch { /* not JSON */ }
        return { ...r, json };
    }

    // negotiate, then a connection's common query parameters for the given transport.
    async session(transport, hubs = ["chathub"]) {
        const n = await this.negotiate(hubs);
        if (!n.json) throw new Error(`negotiate answered ${n.status}: ${n.body.slice(0, 200)}`);
        const common = {
            transport,
            clientProtocol: "2.1",
            connectionToken: n.json.ConnectionToken,
            connectionData: connectionData(...hubs),
        };
        return { negotiate: n.json, common, q: (more = {}) => this.query({ ...common, ...more }) };
    }
}

// SSE frames "data: X\n\n" -> [X, ...]
export function sseData(body) {
    return body.split("\n\n").filter((f) => f.startsWith("data: ")).map((f) => f.slice(6));
}

// Replaces per-run values in a JSON persistent response or hub result text.
export function normalize(text, s) {
    let out = text;
    if (s?.negotiate) {
        out = out.split(s.negotiate.ConnectionId).join("<connectionId>");
    }
    out = out.replace(/"C":"([^"]*)"/g, (_, c) => `"C":"${shapeOfCursor(c)}"`);
    out = out.replace(/"G":"([^"]*)"/g, '"G":"<groupsToken>"');
    out = out.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<guid>");
    out = out.replace(/"[A-Za-z0-9_-]{22}"/g, '"<22 url-safe chars>"');
    return out;
}

// Every case: name -> async (endpoint) => observation (plain JSON-able object). The names are
// what the README's difference table and the tests refer to.
export const cases = {
    async "negotiate clientProtocol=2.1"(ep) {
        const n = await ep.negotiate();
        const j = n.json ?? {};
        return {
            status: n.status, type: n.type, nosniff: n.nosniff,
            keys: Object.keys(j),
            Url: j.Url, ConnectionId: shapeOfId(j.ConnectionId), ConnectionToken: shapeOfId(j.ConnectionToken),
            KeepAliveTimeout: j.KeepAliveTimeout, DisconnectTimeout: j.DisconnectTimeout,
            ConnectionTimeout: j.ConnectionTimeout, TryWebSockets: j.TryWebSockets,
            ProtocolVersion: j.ProtocolVersion, TransportConnectTimeout: j.TransportConnectTimeout,
            LongPollDelay: j.LongPollDelay,
        };
    },

    async "negotiate ProtocolVersion per clientProtocol"(ep) {
        const out = {};
        for (const v of ["1.2", "1.3", "1.4", "1.5", "2.0", "2.1", "3.0", "abc", null]) {
            const extra = v === null ? {} : { clientProtocol: v };
            const params = { connectionData: connectionData("chathub"), ...extra };
            const r = await ep.request("/negotiate" + ep.query(params));
            let pv = null;
            try { pv = JSON.parse(r.body).ProtocolVersion; } catch { pv = `${r.status} ${r.body.slice(0, 80)}`; }
            out[v === null ? "(none)" : v] = pv;
        }
        return out;
    },

    async "negotiate without connectionData"(ep) {
        const r = await ep.request("/negotiate" + ep.query({ clientProtocol: "2.1" }));
        return { status: r.status, body: r.status === 200 ? "<negotiate json>" : r.body };
    },

    async "negotiate unknown hub"(ep) {
        const n = await ep.negotiate(["nosuchhub"]);
        return { status: n.status, type: n.type, body: n.body };
    },

    async "negotiate hub name casing (ChatHub, CHATHUB)"(ep) {
        const a = await ep.negotiate(["ChatHub"]);
        const b = await ep.negotiate(["CHATHUB"]);
        return { ChatHub: a.status, CHATHUB: b.status };
    },

    async "negotiate SecureHub ([Authorize]) without and with token"(ep) {
        const none = await ep.negotiate(["securehub"]);
        const good = await ep.negotiate(["securehub"], { access_token: "good-token" });
        const bad = await ep.negotiate(["securehub"], { access_token: "bad-token" });
        return {
            without: `${none.status} ${none.body.slice(0, 120)}`,
            good: good.status,
            bad: `${bad.status} ${bad.body.slice(0, 120)}`,
        };
    },

    async "connect with a bad connectionToken"(ep) {
        const r = await ep.request("/connect" + ep.query({
            transport: "longPolling", clientProtocol: "2.1", connectionToken: "not-a-token",
            connectionData: connectionData("chathub"),
        }));
        return { status: r.status, type: r.type, body: r.body };
    },

    async "connect without connectionToken"(ep) {
        const r = await ep.request("/connect" + ep.query({
            transport: "longPolling", clientProtocol: "2.1", connectionData: connectionData("chathub"),
        }));
        return { status: r.status, type: r.type, body: r.body };
    },

    async "connect with an unknown transport"(ep) {
        const s = await ep.session("carrierPigeon");
        const r = await ep.request("/connect" + s.q());
        return { status: r.status, type: r.type, body: r.body };
    },

    async "connect without transport"(ep) {
        const s = await ep.session("longPolling");
        const { transport, ...rest } = s.common;
        const r = await ep.request("/connect" + ep.query(rest));
        return { status: r.status, type: r.type, body: r.body };
    },

    async "send and poll after abort"(ep) {
        const s = await ep.session("longPolling");
        await ep.request("/connect" + s.q());
        await ep.request("/start" + s.q());
        await ep.request("/abort" + s.q(), { method: "POST", form: {} });
        const r = await ep.request("/send" + s.q(), { method: "POST", form: { data: '{"H":"chathub","M":"Add","A":[1,2],"I":0}' } });
        const p = await ep.request("/poll" + s.q({ messageId: "x" }), { method: "POST", form: {}, readFor: 3000 });
        // A held poll may already have sent its headers and a space (after ~1.5 s): still held.
        const held = !p.ended && p.body.trim() === "";
        return {
            sendAfterAbort: `${r.status} ${normalize(r.body, s)}`,
            pollAfterAbort: held ? "held (nothing within 3 s)" : `${p.status} ${normalize(p.body, s).slice(0, 120)}`,
        };
    },

    async "unknown path under /signalr"(ep) {
        const out = {};
        for (const p of ["/nothing", "/negotiate/extra", "/"]) {
            const r = await ep.request(p + ep.query({ clientProtocol: "2.1" }));
            out[p] = `${r.status} ${r.type} ${r.nosniff} ${r.body.slice(0, 80)}`;
        }
        return out;
    },

    async "JSONP callback, OPTIONS preflight, POST negotiate, cross-origin GET"(ep) {
        const cd = connectionData("chathub");
        const jsonp = await ep.request("/negotiate" + ep.query({ clientProtocol: "2.1", connectionData: cd, callback: "cb" }));
        const options = await ep.request("/negotiate" + ep.query({ clientProtocol: "2.1", connectionData: cd }), {
            method: "OPTIONS",
            headers: { origin: "http://example.test", "access-control-request-method": "GET" },
        });
        const post = await ep.request("/negotiate" + ep.query({ clientProtocol: "2.1", connectionData: cd }), { method: "POST", form: {} });
        const cross = await fetch(ep.url + "/negotiate" + ep.query({ clientProtocol: "2.1", connectionData: cd }), {
            headers: { origin: "http://example.test" },
        });
        await cross.arrayBuffer();
        return {
            jsonp: `${jsonp.status} ${jsonp.type} ${jsonp.body.startsWith("cb(") ? "cb(<negotiate json>)" : jsonp.body.startsWith("{") ? "<negotiate json>" : jsonp.body.slice(0, 80)}`,
            options: `${options.status} ${options.body.startsWith("{") ? "<negotiate json>" : options.body.slice(0, 80)}`,
            post: `${post.status} ${post.body.startsWith("{") ? "<negotiate json>" : post.body.slice(0, 80)}`,
            crossOriginAllowOrigin: cross.headers.get("access-control-allow-origin"),
        };
    },

    async "path outside /signalr"(ep) {
        const u = new URL(ep.url);
        const r = await fetch(`${u.origin}/not-signalr/negotiate?clientProtocol=2.1`);
        return { status: r.status, type: r.headers.get("content-type"), body: (await r.text()).slice(0, 80) };
    },

    async "serverSentEvents connect, start, send, push"(ep) {
        const s = await ep.session("serverSentEvents");
        // Read until the broadcast is in (a loaded machine may take seconds), at most 15 s.
        const stream = ep.stream("/connect" + s.q({ tid: "1" }), { readFor: 15000, until: (body) => body.includes("sse-hello") });
        await stream.ready;
        const start = await ep.request("/start" + s.q());
        const send = await ep.request("/send" + s.q(), { method: "POST", form: { data: '{"H":"chathub","M":"Broadcast","A":["sse-hello"],"I":0}' } });
        const r = await stream.answer;
        return {
            status: r.status, type: r.type, cacheControl: r.cacheControl,
            frames: sseData(r.body).map((f) => normalize(f, s)),
            start: `${start.status} ${start.type} ${start.body}`,
            send: `${send.status} ${send.body}`,
        };
    },

    async "longPolling connect, start, send, poll"(ep) {
        const s = await ep.session("longPolling");
        const connect = await ep.request("/connect" + s.q({ tid: "1" }), { method: "POST", form: {} });
        const init = JSON.parse(connect.body);
        const start = await ep.request("/start" + s.q());
        const first = await ep.request("/poll" + s.q(), { method: "POST", form: { messageId: init.C }, readFor: 4000 });
        let cursor = init.C;
        try { cursor = JSON.parse(first.body).C ?? cursor; } catch { /* kept */ }
        const send = await ep.request("/send" + s.q(), { method: "POST", form: { data: '{"H":"chathub","M":"Broadcast","A":["lp-hello"],"I":0}' } });
        const second = await ep.request("/poll" + s.q(), { method: "POST", form: { messageId: cursor }, readFor: 4000 });
        return {
            connect: `${connect.status} ${connect.type} ${normalize(connect.body, s)}`,
            start: `${start.status} ${start.body}`,
            firstPoll: `${first.status} ${normalize(first.body, s)}`,
            send: `${send.status} ${send.body}`,
            secondPoll: `${second.status} ${normalize(second.body, s)}`,
        };
    },

    async "longPolling poll held with nothing to send"(ep) {
        const s = await ep.session("longPolling");
        const connect = await ep.request("/connect" + s.q(), { method: "POST", form: {} });
        const init = JSON.parse(connect.body);
        await ep.request("/start" + s.q());
        // The first poll collects the OnConnected push; the second has nothing to wait for.
        const first = await ep.request("/poll" + s.q(), { method: "POST", form: { messageId: init.C }, readFor: 4000 });
        let cursor = init.C;
        try { cursor = JSON.parse(first.body).C ?? cursor; } catch { /* kept */ }
        const held = await ep.request("/poll" + s.q(), { method: "POST", form: { messageId: cursor }, readFor: 3000 });
        await ep.request("/abort" + s.q(), { method: "POST", form: {} });
        return {
            status: held.status,
            answeredWithin3s: held.ended,
            bodyAfter3s: JSON.stringify(held.body),
            firstByteMs: held.chunkTimes.length ? (held.chunkTimes[0] < 1000 ? "<1 s" : held.chunkTimes[0] < 2500 ? "1-2.5 s" : ">2.5 s") : "none",
        };
    },

    async "foreverFrame connect"(ep) {
        const s = await ep.session("foreverFrame");
        // Read until the first message's script is in (a loaded machine may take seconds), at most
        // 15 s; an answer that ends (a server that declines the transport) ends the reading too.
        const r = await ep.request("/connect" + s.q({ frameId: "7" }), { readFor: 15000, until: (body) => /<script>r\(c, .*?\);<\/script>/.test(body) });
        const scripts = [...r.body.matchAll(/<script>r\(c, (.*?)\);<\/script>/g)].map((m) => normalize(m[1], s));
        return {
            status: r.status, type: r.type,
            prelude: r.body.includes("window.parent") ? "HTML prelude reaching window.parent" : r.body.slice(0, 120),
            scripts,
        };
    },

    async "send results and errors"(ep) {
        const s = await ep.session("longPolling");
        await ep.request("/connect" + s.q(), { method: "POST", form: {} });
        await ep.request("/start" + s.q());
        const send = async (msg) => {
            const r = await ep.request("/send" + s.q(), { method: "POST", form: { data: JSON.stringify(msg) } });
            return `${r.status} ${normalize(r.body, s)}`;
        };
        const out = {
            "Add(40,2) I=0": await send({ H: "chathub", M: "Add", A: [40, 2], I: 0 }),
            "I as string \"7\"": await send({ H: "chathub", M: "Add", A: [1, 2], I: "7" }),
            "VoidMethod": await send({ H: "chathub", M: "VoidMethod", A: [], I: 1 }),
            "Echo(null)": await send({ H: "chathub", M: "Echo", A: [null], I: 2 }),
            "ThrowHubException": await send({ H: "chathub", M: "ThrowHubException", A: ["no way"], I: 3 }),
            "ThrowOther": await send({ H: "chathub", M: "ThrowOther", A: [], I: 4 }),
            "unknown method": await send({ H: "chathub", M: "Nope", A: [], I: 5 }),
            "wrong argument count": await send({ H: "chathub", M: "Add", A: [1], I: 6 }),
            "wrong argument type": await send({ H: "chathub", M: "Add", A: ["x", 2], I: 7 }),
            "hub ChatHub (other casing)": await send({ H: "ChatHub", M: "Add", A: [1, 1], I: 8 }),
            "hub not in connectionData (statushub)": await send({ H: "statushub", M: "Echo", A: ["s"], I: 9 }),
            "unknown hub": await send({ H: "nosuchhub", M: "Echo", A: [1], I: 10 }),
            "method name casing (add)": await send({ H: "chathub", M: "add", A: [2, 2], I: 11 }),
            "A missing": await send({ H: "chathub", M: "VoidMethod", I: 12 }),
        };
        const bad = await ep.request("/send" + s.q(), { method: "POST", form: { data: "not json" } });
        out["data not JSON"] = `${bad.status} ${bad.body.slice(0, 120)}`;
        const none = await ep.request("/send" + s.q(), { method: "POST", form: {} });
        out["no data field"] = `${none.status} ${none.body.slice(0, 120)}`;
        const get = await ep.request("/send" + s.q({ data: '{"H":"chathub","M":"Add","A":[1,2],"I":13}' }));
        out["GET /send"] = `${get.status} ${get.body.slice(0, 120)}`;
        await ep.request("/abort" + s.q(), { method: "POST", form: {} });
        return out;
    },

    async "Counter progress over serverSentEvents"(ep) {
        const s = await ep.session("serverSentEvents");
        // Read until the third progress message is in, at most 15 s.
        const stream = ep.stream("/connect" + s.q(), { readFor: 15000, until: (body) => (body.match(/"I":"P\|0"/g) ?? []).length >= 3 });
        await stream.ready;
        await ep.request("/start" + s.q());
        const send = await ep.request("/send" + s.q(), { method: "POST", form: { data: '{"H":"chathub","M":"Counter","A":[3,10],"I":0}' } });
        const r = await stream.answer;
        const progress = sseData(r.body).map((f) => { try { return JSON.parse(f); } catch { return null; } })
            .filter((m) => m && m.M).flatMap((m) => m.M).filter((m) => m.P || (typeof m.I === "string" && m.I.startsWith("P|")));
        return { send: `${send.status} ${send.body}`, progress: progress.map((m) => JSON.stringify(m)) };
    },

    async "ping, abort, hubs script"(ep) {
        const ping = await ep.request("/ping" + ep.query({ _: "1" }));
        const s = await ep.session("longPolling");
        await ep.request("/connect" + s.q(), { method: "POST", form: {} });
        const abortPost = await ep.request("/abort" + s.q(), { method: "POST", form: {} });
        const abortAgain = await ep.request("/abort" + s.q(), { method: "GET" });
        const hubs = await ep.request("/hubs");
        return {
            ping: `${ping.status} ${ping.type} ${ping.body}`,
            abort: `${abortPost.status} ${abortPost.type} ${JSON.stringify(abortPost.body)}`,
            "abort again (GET)": `${abortAgain.status} ${JSON.stringify(abortAgain.body)}`,
            hubs: `${hubs.status} ${hubs.type} ${/proxies\['chatHub'\]|proxies\['chathub'\]/i.test(hubs.body) ? "proxy script with chatHub" : hubs.body.slice(0, 80)}`,
        };
    },

    async "start before connect, start twice"(ep) {
        const s = await ep.session("longPolling");
        const early = await ep.request("/start" + s.q());
        await ep.request("/connect" + s.q(), { method: "POST", form: {} });
        const once = await ep.request("/start" + s.q());
        const twice = await ep.request("/start" + s.q());
        await ep.request("/abort" + s.q(), { method: "POST", form: {} });
        return {
            "start before connect": `${early.status} ${early.body.slice(0, 120)}`,
            start: `${once.status} ${once.body}`,
            "start again": `${twice.status} ${twice.body.slice(0, 120)}`,
        };
    },

    async "reconnect serverSentEvents with messageId"(ep) {
        const s = await ep.session("serverSentEvents");
        // Read until OnConnected's welcome is in (the last frame before the broadcast), at most 15 s.
        const firstStream = ep.stream("/connect" + s.q(), { readFor: 15000, until: (body) => body.includes('"M":"welcome"') });
        await firstStream.ready;
        await ep.request("/start" + s.q());
        const first = await firstStream.answer;
        const frames = sseData(first.body).map((f) => { try { return JSON.parse(f); } catch { return null; } }).filter(Boolean);
        const cursor = frames.length ? frames[frames.length - 1].C : "";
        await ep.request("/send" + s.q(), { method: "POST", form: { data: '{"H":"chathub","M":"Broadcast","A":["while-away"],"I":0}' } });
        // Read until the replayed broadcast is in, at most 15 s.
        const again = await ep.request("/reconnect" + s.q({ messageId: cursor }), { readFor: 15000, until: (body) => body.includes("while-away") });
        await ep.request("/abort" + s.q(), { method: "POST", form: {} });
        return { status: again.status, frames: sseData(again.body).map((f) => normalize(f, s)) };
    },

    // The hub layer, whatever the transport: the same invocations over WebSockets where the
    // server offers them (the relay; needs `ws`), else over serverSentEvents with /send (the real
    // server here). Results by invocation id, and the pushes, normalized.
    async "hub layer: results, errors, pushes (WebSockets if offered, else SSE)"(ep) {
        const WebSocket = loadWs();
        const n = await ep.negotiate();
        const useWs = Boolean(n.json?.TryWebSockets && WebSocket);
        const transport = useWs ? "webSockets" : "serverSentEvents";
        const s = await ep.session(transport);
        const messages = [
            { H: "chathub", M: "Add", A: [40, 2], I: 0 },
            { H: "chathub", M: "Nope", A: [], I: 1 },
            { H: "chathub", M: "ThrowOther", A: [], I: 2 },
            { H: "chathub", M: "Add", A: [1], I: 3 },
            { H: "chathub", M: "ThrowHubException", A: ["no way"], I: 4 },
            { H: "statushub", M: "Echo", A: ["s"], I: 5 },
            { H: "ChatHub", M: "add", A: [2, 2], I: 6 },
            { H: "chathub", M: "Counter", A: [2, 10], I: 7 },
        ];
        const results = {};
        const pushes = [];
        const onFrame = (text) => {
            let m;
            try { m = JSON.parse(text); } catch { return; }
            if (m.I !== undefined && !m.C) {
                results[m.I] = normalize(text, s);
                return;
            }
            for (const item of m.M ?? []) {
                const copy = { ...item };
                if (Array.isArray(copy.A)) copy.A = copy.A.map((a) => (typeof a === "string" && a.length >= 22 ? shapeOfId(a) : a));
                pushes.push(JSON.stringify(copy));
            }
            if (m.C) pushes.cursor = shapeOfCursor(m.C);
        };
        if (useWs) {
            const ws = new WebSocket(ep.url.replace(/^http/, "ws") + "/connect" + s.q({ tid: "1" }));
            ws.on("message", (d) => onFrame(d.toString()));
            await new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); });
            await ep.request("/start" + s.q());
            for (const m of messages) ws.send(JSON.stringify(m));
            // Every result, and both progress messages of Counter (the last call), at most 20 s.
            const progress = () => pushes.filter((p) => p.startsWith('{"I":"P|7"')).length;
            await pollUntil(() => [Object.keys(results).length, progress()], ([r, p]) => r >= messages.length && p >= 2,
                "every hub result and Counter's two progress messages", 20000);
            ws.close();
        } else {
            // Read until both progress messages of Counter (the last call) are in: on a loaded
            // machine they may come seconds later.
            const stream = ep.stream("/connect" + s.q({ tid: "1" }),
                { readFor: 20000, until: (body) => (body.match(/"I":"P\|7"/g) ?? []).length >= 2 });
            await stream.ready;
            await ep.request("/start" + s.q());
            for (const m of messages) {
                const r = await ep.request("/send" + s.q(), { method: "POST", form: { data: JSON.stringify(m) } });
                onFrame(r.body);
            }
            const r = await stream.answer;
            for (const f of sseData(r.body)) onFrame(f);
        }
        await ep.request("/abort" + s.q(), { method: "POST", form: {} });
        return { transport, cursor: pushes.cursor, pushes: [...pushes], ...results };
    },

    async "webSockets connect over plain HTTP (no upgrade)"(ep) {
        const s = await ep.session("webSockets");
        const r = await ep.request("/connect" + s.q());
        return { status: r.status, body: r.body.slice(0, 120) };
    },
};
