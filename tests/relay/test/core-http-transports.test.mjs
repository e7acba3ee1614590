// Core Server-Sent Events and long polling through the relay (specs/core-signalr.md §2): every
// status code and body the relay answers is compared with the one the real ASP.NET Core backend
// answers for the same request; then what only the relay's timers show (the poll timeout, the
// disconnect timeout, a vanished client) with the backend hearing the end, and no session left.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import { startRelay } from "../../lib/process.mjs";
import {
    RELAY_URL, BACKEND_URL, RS, DISCONNECT_TIMEOUT_MS, LONG_POLL_TIMEOUT_MS, RawClient, negotiate, wsUrl, httpRequest,
    settledMetrics, metrics, pollUntil, withTimeout, disconnectSeenByBackend, TIMEOUT_MS, MAX_BUFFERED_BYTES, CORS_ORIGIN,
} from "../lib.mjs";

const HANDSHAKE = `{"protocol":"json","version":1}${RS}`;

async function token(base, hub = "chat") {
    const n = await negotiate(base, hub);
    assert.equal(n.status, 200, n.body);
    return n.json.connectionToken;
}

function url(base, t, hub = "chat") {
    return `${base}/${hub}${t === null ? "" : `?id=${encodeURIComponent(t)}`}`;
}

const poll = (base, t) => httpRequest("GET", url(base, t));
const post = (base, t, body) => httpRequest("POST", url(base, t), { "content-type": "text/plain;charset=UTF-8" }, body);
const del = (base, t) => httpRequest("DELETE", url(base, t));
const answer = (res) => ({ status: res.status, body: res.body });

// Resolves once a poll sent to base is waiting there. The relay shows it (/metrics
// core_polls_waiting); the backend shows nothing, so there the caller gives it `attempt` x 300 ms
// and, should the poll still lose the race, runs the scenario again (scenarioOnBackend).
async function pollWaiting(base, before, attempt) {
    if (base === RELAY_URL) {
        await pollUntil(() => metrics(), (m) => m.core_polls_waiting > before, "the poll to wait at the relay");
    } else {
        await new Promise((r) => setTimeout(r, 300 * attempt));
    }
}

// Runs scenario(base, attempt) on base; on the backend again (up to 5 times) while raced(result).
async function scenarioOn(base, scenario, raced) {
    for (let attempt = 1; ; attempt++) {
        const result = await scenario(base, attempt);
        if (base === RELAY_URL || !raced(result) || attempt === 5) return result;
    }
}

// A long-polling connection past its handshake, with its first answers drained.
async function longPolling(base) {
    const t = await token(base);
    const first = await poll(base, t);
    assert.deepStrictEqual(answer(first), { status: 200, body: "" });
    assert.equal(first.headers["content-type"], "application/octet-stream");
    assert.equal((await post(base, t, HANDSHAKE)).status, 200);
    let text = "";
    while (!text.includes('"target":"welcome"')) text += (await poll(base, t)).body;
    assert.ok(text.startsWith(`{}${RS}`), text);
    const welcome = JSON.parse(text.split(RS).find((r) => r.includes("welcome")));
    return { t, connectionId: welcome.arguments[0] };
}

// An SSE stream: resolves with { res, events (the records seen so far, each with its RS), next(pred), close() }.
function sse(base, t, hub = "chat") {
    return new Promise((resolve, reject) => {
        const req = http.get(url(base, t, hub), { headers: { accept: "text/event-stream" }, agent: false }, (res) => {
            const stream = { res, raw: "", events: [], waiters: [], close: () => req.destroy() };
            stream.next = (pred, what) => withTimeout(new Promise((ok) => {
                const check = () => { const e = stream.events.find(pred); if (e) { ok(e); return true; } return false; };
                if (!check()) stream.waiters.push(check);
            }), TIMEOUT_MS, what);
            res.setEncoding("utf8");
            res.on("data", (chunk) => {
                stream.raw += chunk;
                let end;
                while ((end = stream.raw.indexOf("\r\n\r\n", stream.consumed ?? 0)) >= 0) {
                    const block = stream.raw.slice(stream.consumed ?? 0, end);
                    stream.consumed = end + 4;
                    const data = block.split("\r\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
                    // One event may carry several records (the server writes what it had buffered).
                    if (data.length) stream.events.push(...data.join("\n").split(RS).filter((r) => r).map((r) => r + RS));
                }
                stream.waiters = stream.waiters.filter((w) => !w());
            });
            res.on("error", () => {});
            resolve(stream);
        });
        req.on("error", reject);
    });
}

test("status codes without a connection are the backend's: no id 400, unknown id 404, PUT 405", async () => {
    for (const [method, headers] of [["GET", {}], ["GET", { accept: "text/event-stream" }], ["POST", {}], ["DELETE", {}]]) {
        for (const t of [null, "AAAAAAAAAAAAAAAAAAAAAA"]) {
            const direct = answer(await httpRequest(method, url(BACKEND_URL, t), headers, method === "POST" ? "x" : null));
            const relayed = answer(await httpRequest(method, url(RELAY_URL, t), headers, method === "POST" ? "x" : null));
            assert.deepStrictEqual(relayed, direct, `${method} ${JSON.stringify(headers)} id=${t}`);
            assert.equal(direct.status, t === null ? 400 : 404);
        }
    }
    const direct = await httpRequest("PUT", url(BACKEND_URL, "x"));
    const relayed = await httpRequest("PUT", url(RELAY_URL, "x"));
    assert.equal(relayed.status, direct.status);
    assert.equal(relayed.status, 405);
});

test("long polling: the same answers as the backend through a whole connection, DELETE 202 then 404", async () => {
    const seen = {};
    const scenario = async (base, attempt) => {
        const { t } = await longPolling(base);
        const steps = [];
        assert.equal((await post(base, t, `{"type":1,"invocationId":"1","target":"Echo","arguments":["lp"]}${RS}`)).status, 200);
        steps.push(answer(await poll(base, t)));
        // SSE on a long-polling connection, a WebSocket on it, DELETE on it
        steps.push(answer(await httpRequest("GET", url(base, t), { accept: "text/event-stream" })));
        const ws = await RawClient.connect(wsUrl(base, "chat", `id=${encodeURIComponent(t)}`)).then(
            (c) => { c.close(); return "accepted"; }, (e) => ({ status: e.status, body: e.body }));
        steps.push(ws);
        // A waiting poll is answered 204 by DELETE, which answers 202.
        const before = (await metrics()).core_polls_waiting;
        const waiting = poll(base, t);
        await pollWaiting(base, before, attempt);
        steps.push(answer(await del(base, t)));
        steps.push(answer(await waiting));
        // Right after DELETE the backend may still be disposing the connection: 404 with an
        // empty body then, "No Connection with that ID" a moment later. The status is the same
        // (the relay's texts are checked in the other tests).
        steps.push({ status: (await poll(base, t)).status });
        steps.push({ status: (await post(base, t, `{"type":6}${RS}`)).status });
        return steps;
    };
    // The backend's waiting poll usually takes the Close message its hub writes while DELETE
    // disposes the connection (200 {"type":7,"allowReconnect":true}), else it gets 204; both
    // end the poll for good. The relay ends it with 204 (its hub channel closes quietly).
    const ended = (a) => (a.status === 200 && /^\{"type":7[,}]/.test(a.body) ? { status: 204, body: "" } : a);
    for (const base of [BACKEND_URL, RELAY_URL]) {
        seen[base] = await scenarioOn(base, scenario, (r) => r[4].status === 404);
        if (base === BACKEND_URL) seen[base][4] = ended(seen[base][4]);
    }
    assert.deepStrictEqual(seen[RELAY_URL], seen[BACKEND_URL]);
    assert.deepStrictEqual(seen[RELAY_URL].map((s) => s.status), [200, 400, 400, 202, 204, 404, 404]);
    assert.equal(seen[RELAY_URL][0].body, `{"type":3,"invocationId":"1","result":"lp"}${RS}`);
    await settledMetrics();
});

test("long polling: a newer poll ends the waiting one with 204, as on the backend", async () => {
    const seen = {};
    const scenario = async (base, attempt) => {
        const { t } = await longPolling(base);
        const before = (await metrics()).core_polls_waiting;
        const older = poll(base, t);
        await pollWaiting(base, before, attempt);
        const newer = poll(base, t);
        const olderAnswer = answer(await older);
        assert.equal((await post(base, t, `{"type":1,"invocationId":"2","target":"Echo","arguments":["x"]}${RS}`)).status, 200);
        return [olderAnswer, answer(await newer), answer(await del(base, t))];
    };
    for (const base of [BACKEND_URL, RELAY_URL]) seen[base] = await scenarioOn(base, scenario, (r) => r[0].status !== 204);
    assert.deepStrictEqual(seen[RELAY_URL], seen[BACKEND_URL]);
    assert.deepStrictEqual(seen[RELAY_URL][0], { status: 204, body: "" });
    await settledMetrics();
});

test("long polling: an empty poll is answered 200 after --long-poll-timeout; no poll for --disconnect-timeout ends it", async () => {
    const before = await settledMetrics();
    const { t, connectionId } = await longPolling(RELAY_URL);
    const started = Date.now();
    const empty = await poll(RELAY_URL, t);
    const held = Date.now() - started;
    assert.deepStrictEqual(answer(empty), { status: 200, body: "" });
    assert.ok(held >= LONG_POLL_TIMEOUT_MS - 100, `answered after ${held} ms`);
    assert.equal((await metrics()).sessions_active, before.sessions_active + 1, "still connected between polls");
    // No further poll: the connection is over after the disconnect timeout, and the hub hears it.
    const info = await disconnectSeenByBackend(connectionId, DISCONNECT_TIMEOUT_MS + TIMEOUT_MS);
    assert.equal(info.disconnected, true);
    assert.deepStrictEqual(answer(await poll(RELAY_URL, t)), { status: 404, body: "No Connection with that ID" });
    await settledMetrics();
});

test("long polling: a client that vanishes mid-poll is gone after the timeouts, nothing leaks", async () => {
    const { t, connectionId } = await longPolling(RELAY_URL);
    const before = (await metrics()).core_polls_waiting;
    const req = http.get(url(RELAY_URL, t), { agent: false });
    req.on("error", () => {});
    await pollWaiting(RELAY_URL, before, 1);
    req.destroy();
    const info = await disconnectSeenByBackend(connectionId, LONG_POLL_TIMEOUT_MS + DISCONNECT_TIMEOUT_MS + TIMEOUT_MS);
    assert.equal(info.disconnected, true);
    await settledMetrics();
});

test("SSE: the stream's shape and answers match the backend's; closing it ends the connection", async () => {
    const seen = {};
    for (const base of [BACKEND_URL, RELAY_URL]) {
        const t = await token(base);
        const stream = await sse(base, t);
        assert.equal(stream.res.statusCode, 200);
        assert.match(stream.res.headers["content-type"], /^text\/event-stream/);
        assert.equal((await post(base, t, HANDSHAKE)).status, 200);
        await stream.next((e) => e === `{}${RS}`, "handshake answer");
        const welcome = JSON.parse((await stream.next((e) => e.includes("welcome"), "welcome")).slice(0, -1));
        assert.equal((await post(base, t, `{"type":1,"invocationId":"1","target":"Echo","arguments":["a\\nb"]}${RS}`)).status, 200);
        const echo = await stream.next((e) => e.includes('"invocationId":"1"'), "echo");
        const steps = [echo, stream.raw.slice(0, 3)];
        steps.push(answer(await httpRequest("GET", url(base, t), { accept: "text/event-stream" })));
        steps.push(answer(await poll(base, t)));
        steps.push(answer(await del(base, t)));
        stream.close();
        if (base === RELAY_URL) {
            const info = await disconnectSeenByBackend(welcome.arguments[0]);
            assert.equal(info.disconnected, true);
        }
        await pollUntil(() => post(base, t, `{"type":6}${RS}`), (r) => r.status === 404, "the connection to go");
        seen[base] = steps;
    }
    assert.deepStrictEqual(seen[RELAY_URL], seen[BACKEND_URL]);
    assert.deepStrictEqual(seen[RELAY_URL].slice(1).map((s) => s.status ?? s), [":\r\n", 409, 400, 400]);
    await settledMetrics();
});

test("SSE: MessagePack is refused in the handshake with the backend's text", async () => {
    const seen = {};
    for (const base of [BACKEND_URL, RELAY_URL]) {
        const t = await token(base);
        const stream = await sse(base, t);
        assert.equal((await post(base, t, `{"protocol":"messagepack","version":1}${RS}`)).status, 200);
        seen[base] = await stream.next((e) => e.includes("error"), "the refusal");
        stream.close();
    }
    assert.equal(seen[RELAY_URL], seen[BACKEND_URL]);
    assert.match(seen[RELAY_URL], /does not support 'Binary' transfer format/);
    await settledMetrics();
});

test("POST on a WebSocket connection: 405, a second WebSocket: 409, as on the backend", async () => {
    const seen = {};
    for (const base of [BACKEND_URL, RELAY_URL]) {
        const t = await token(base);
        const ws = await RawClient.connect(wsUrl(base, "chat", `id=${encodeURIComponent(t)}`));
        try {
            await ws.handshake();
            const second = await RawClient.connect(wsUrl(base, "chat", `id=${encodeURIComponent(t)}`)).then(
                (c) => { c.close(); return "accepted"; }, (e) => ({ status: e.status, body: e.body }));
            seen[base] = [answer(await post(base, t, `{"type":6}${RS}`)), second,
                answer(await httpRequest("GET", url(base, t), { accept: "text/event-stream" }))];
        } finally {
            ws.close();
        }
    }
    assert.deepStrictEqual(seen[RELAY_URL], seen[BACKEND_URL]);
    assert.deepStrictEqual(seen[RELAY_URL].map((s) => s.status), [405, 409, 400]);
    await settledMetrics();
});

test("long polling: a client that does not poll holds the hub at --max-buffered; then every item arrives once, in order", async () => {
    // A relay of its own: the tuned relay's 1 s --disconnect-timeout would end a client that does
    // not poll before the hub fills the buffer on a loaded machine.
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--max-buffered", String(MAX_BUFFERED_BYTES),
        "--disconnect-timeout", "60"]);
    try {
        const base = relay.url;
        const { t } = await longPolling(base);
        const COUNT = 20000; // ~30 bytes each: several times the 64K --max-buffered
        const invoke = `{"type":4,"invocationId":"s1","target":"Counter","arguments":[${COUNT},0]}${RS}`;
        assert.equal((await post(base, t, invoke)).status, 200);
        // Nobody polls: the relay's queue toward the client passes the mark and it pauses the hub side.
        await pollUntil(() => metrics(base), (m) => m.flow_control_pauses_total > 0, "the relay to pause the hub side");
        const items = [];
        let done = null;
        while (!done) {
            const res = await poll(base, t);
            assert.equal(res.status, 200);
            assert.ok(Buffer.byteLength(res.body) <= 2 * MAX_BUFFERED_BYTES, `a poll carried ${res.body.length} bytes`);
            for (const record of res.body.split(RS).filter((r) => r)) {
                const m = JSON.parse(record);
                if (m.type === 2 && m.invocationId === "s1") items.push(m.item);
                if (m.type === 3 && m.invocationId === "s1") done = m;
            }
        }
        assert.equal(done.error, undefined);
        assert.equal(items.length, COUNT);
        assert.ok(items.every((v, i) => v === i), "items in order, each once");
        assert.equal((await del(base, t)).status, 202);
    } finally {
        await relay.stop();
    }
});

test("long polling: a poll answered after waiting still carries the CORS headers of its request", async () => {
    const { t } = await longPolling(RELAY_URL);
    const before = (await metrics()).core_polls_waiting;
    const waiting = httpRequest("GET", url(RELAY_URL, t), { origin: CORS_ORIGIN });
    await pollWaiting(RELAY_URL, before, 1);
    assert.equal((await post(RELAY_URL, t, `{"type":1,"invocationId":"c","target":"Echo","arguments":["cors"]}${RS}`)).status, 200);
    const res = await waiting;
    assert.equal(res.status, 200);
    assert.equal(res.body, `{"type":3,"invocationId":"c","result":"cors"}${RS}`);
    assert.equal(res.headers["access-control-allow-origin"], CORS_ORIGIN);
    assert.equal(res.headers["access-control-allow-credentials"], "true");
    assert.equal((await del(RELAY_URL, t)).status, 202);
    await settledMetrics();
});
