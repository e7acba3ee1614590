// Service mode, Core requests before a connection's first GET: as ASP.NET Core answers them
// (tests/relay/test/core-http-early-send.test.mjs compares the relay with the real backend), a
// POST is taken (200) and the hub reads it once the first poll or SSE GET opens the connection,
// and a DELETE is refused (400, no transport yet) with the connection left as it was.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { APP_URL, RELAY_URL, metrics, pollUntil, withTimeout, TIMEOUT_MS } from "../lib.mjs";

const T = { timeout: 60000 };
const RS = "\x1e";
const HANDSHAKE = `{"protocol":"json","version":1}${RS}`;
const ECHO = `{"type":1,"invocationId":"1","target":"Echo","arguments":["early"]}${RS}`;
const ECHOED = `{"type":3,"invocationId":"1","result":"early"}${RS}`;
const live = async () => (await metrics()).signalr_relay_sessions_active;

// A connection negotiated at the app and the relay, not opened: its URL and headers.
async function negotiated(user) {
    const redirect = await (await fetch(`${APP_URL}/board/negotiate?negotiateVersion=1&user=${user}`, { method: "POST" })).json();
    const query = new URL(redirect.url).searchParams;
    query.set("negotiateVersion", "1");
    const headers = { Authorization: `Bearer ${redirect.accessToken}` };
    const neg = await fetch(`${RELAY_URL}/client/negotiate?${query}`, { method: "POST", headers });
    assert.equal(neg.status, 200);
    const { connectionToken } = await neg.json();
    query.delete("negotiateVersion");
    query.set("id", connectionToken);
    return { url: `${RELAY_URL}/client/?${query}`, headers };
}

async function send(c, method, body, extra = {}) {
    const res = await fetch(c.url, { method, headers: { ...c.headers, ...extra }, body });
    return { status: res.status, body: await res.text() };
}

async function pollFor(c, until) {
    let text = "";
    const deadline = Date.now() + 30000;
    while (!text.includes(until)) {
        assert.ok(Date.now() < deadline, `no ${until} in ${JSON.stringify(text)}`);
        const res = await send(c, "GET");
        assert.equal(res.status, 200, res.body);
        text += res.body;
    }
    return text;
}

test("long polling: DELETE before any GET is 400; the handshake POSTed before the first poll is answered after it", T, async () => {
    const before = await live();
    const c = await negotiated("early-lp");
    assert.deepStrictEqual(await send(c, "DELETE"), { status: 400, body: "Cannot terminate this connection using the DELETE endpoint." });
    assert.deepStrictEqual(await send(c, "POST", HANDSHAKE), { status: 200, body: "" });
    assert.deepStrictEqual(await send(c, "GET"), { status: 200, body: "" });
    assert.ok((await pollFor(c, `}${RS}`)).startsWith(`{}${RS}`), "the handshake answer first");
    assert.equal((await send(c, "POST", ECHO)).status, 200);
    await pollFor(c, ECHOED);
    assert.equal((await send(c, "DELETE")).status, 202);
    assert.equal((await send(c, "POST", ECHO)).status, 404);
    await pollUntil(live, (n) => n === before, "the connection's session gone");
});

test("SSE: the handshake POSTed before the stream's GET is answered on the stream", T, async () => {
    const before = await live();
    const c = await negotiated("early-sse");
    assert.deepStrictEqual(await send(c, "POST", HANDSHAKE), { status: 200, body: "" });
    const abort = new AbortController();
    const res = await fetch(c.url, { headers: { ...c.headers, accept: "text/event-stream" }, signal: abort.signal });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    let text = "";
    while (!text.includes(`data: {}${RS}`)) {
        const { value, done } = await reader.read();
        assert.ok(!done, `the stream ended: ${JSON.stringify(text)}`);
        text += Buffer.from(value).toString("utf8");
    }
    assert.equal((await send(c, "POST", ECHO)).status, 200);
    while (!text.includes(ECHOED)) {
        const { value, done } = await reader.read();
        assert.ok(!done, `the stream ended: ${JSON.stringify(text)}`);
        text += Buffer.from(value).toString("utf8");
    }
    abort.abort();
    await pollUntil(live, (n) => n === before, "the connection's session gone");
});

test("WebSocket: the handshake POSTed before it is read once it opens (the client sends none on it)", T, async () => {
    const before = await live();
    const c = await negotiated("early-ws");
    assert.deepStrictEqual(await send(c, "POST", HANDSHAKE), { status: 200, body: "" });
    const ws = new WebSocket(c.url.replace(/^http/, "ws"), { headers: c.headers });
    let text = "";
    let ended = null;
    const waiters = [];
    const wake = () => waiters.splice(0).forEach((w) => w());
    ws.on("message", (m) => { text += m.toString(); wake(); });
    ws.on("close", (code) => { ended = new Error(`closed ${code}: ${JSON.stringify(text)}`); wake(); });
    ws.on("error", (e) => { ended = e; wake(); });
    const until = (what) => withTimeout(new Promise((resolve, reject) => {
        const check = () => (text.includes(what) ? resolve() : ended ? reject(ended) : waiters.push(check));
        check();
    }), TIMEOUT_MS, what);
    await until(`{}${RS}`);
    assert.ok(text.startsWith(`{}${RS}`), text);
    ws.send(ECHO);
    await until(ECHOED);
    ws.close();
    await pollUntil(live, (n) => n === before, "the connection's session gone");
});
