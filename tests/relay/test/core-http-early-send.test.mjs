// Core HTTP requests before a connection's first GET (proxy mode): ASP.NET Core has the
// connection from its negotiate on, with no transport yet, so a POST for it is taken into the
// connection (200) and read by the hub once the first GET starts it, and a DELETE is refused
// (400: not long polling yet). Each case runs on the backend straight and through the relay, and
// the status codes, bodies and what the client then receives must be the same.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import {
    RELAY_URL, BACKEND_URL, RS, negotiate, httpRequest, withTimeout, settledMetrics, TIMEOUT_MS, WebSocket, wsUrl,
} from "../lib.mjs";

const HANDSHAKE = `{"protocol":"json","version":1}${RS}`;
const ECHO = `{"type":1,"invocationId":"1","target":"Echo","arguments":["early"]}${RS}`;
const ECHOED = `{"type":3,"invocationId":"1","result":"early"}${RS}`;

async function token(base) {
    const n = await negotiate(base, "chat");
    assert.equal(n.status, 200, n.body);
    return n.json.connectionToken;
}

const url = (base, t) => `${base}/chat?id=${encodeURIComponent(t)}`;
const poll = (base, t) => httpRequest("GET", url(base, t));
const post = (base, t, body) => httpRequest("POST", url(base, t), { "content-type": "text/plain;charset=UTF-8" }, body);
const del = (base, t) => httpRequest("DELETE", url(base, t));
const answer = (res) => ({ status: res.status, body: res.body });

// Polls until `until` is in what arrived (each poll answers at once or after the poll timeout).
async function pollFor(base, t, until) {
    let text = "";
    const deadline = Date.now() + 3 * TIMEOUT_MS;
    while (!text.includes(until)) {
        assert.ok(Date.now() < deadline, `no ${until} in ${JSON.stringify(text)}`);
        const res = await poll(base, t);
        assert.equal(res.status, 200, res.body);
        text += res.body;
    }
    return text;
}

// What a long-polling client sees once its handshake is in: the handshake answer first, then the
// hub's welcome; an Echo comes back. Ends the connection with DELETE.
async function handshakeThenEcho(base, t) {
    const text = await pollFor(base, t, '"target":"welcome"');
    const seen = { handshakeAnswerFirst: text.startsWith(`{}${RS}`) };
    seen.echoPost = answer(await post(base, t, ECHO));
    seen.echo = (await pollFor(base, t, ECHOED)).includes(ECHOED);
    seen.delete = answer(await del(base, t));
    return seen;
}

// Both sides, one after the other; the relay's answers must equal the backend's.
async function sameOnBoth(scenario) {
    const direct = await scenario(BACKEND_URL);
    const relayed = await scenario(RELAY_URL);
    assert.deepStrictEqual(relayed, direct);
    return relayed;
}

test("long polling: the handshake POSTed before any GET is taken (200) and answered after the first poll", async () => {
    const seen = await sameOnBoth(async (base) => {
        const t = await token(base);
        const early = answer(await post(base, t, HANDSHAKE));
        const first = answer(await poll(base, t));
        return { early, first, ...(await handshakeThenEcho(base, t)) };
    });
    assert.deepStrictEqual(seen.early, { status: 200, body: "" });
    assert.deepStrictEqual(seen.first, { status: 200, body: "" });
    assert.equal(seen.handshakeAnswerFirst, true);
    assert.equal(seen.echo, true);
    await settledMetrics();
});

test("long polling: a POST sent while the first poll is outstanding is taken too", async () => {
    const seen = await sameOnBoth(async (base) => {
        const t = await token(base);
        const firstPending = poll(base, t);
        const early = answer(await post(base, t, HANDSHAKE));
        const first = answer(await firstPending);
        return { early, first, ...(await handshakeThenEcho(base, t)) };
    });
    assert.deepStrictEqual(seen.early, { status: 200, body: "" });
    assert.equal(seen.echo, true);
    await settledMetrics();
});

test("DELETE before any GET is refused (400) and the connection stays; POST after a DELETE is 404", async () => {
    const seen = await sameOnBoth(async (base) => {
        const t = await token(base);
        const earlyDelete = answer(await del(base, t));
        const early = answer(await post(base, t, HANDSHAKE));
        const first = answer(await poll(base, t));
        const rest = await handshakeThenEcho(base, t); // ends with DELETE (202)
        // Right after DELETE the backend may still be disposing the connection: 404 with an empty
        // body, or "No Connection with that ID" a moment later; the status is the same.
        const afterDelete = { status: (await post(base, t, ECHO)).status };
        return { earlyDelete, early, first, ...rest, afterDelete };
    });
    assert.deepStrictEqual(seen.earlyDelete, { status: 400, body: "Cannot terminate this connection using the DELETE endpoint." });
    assert.deepStrictEqual(seen.delete, { status: 202, body: "" });
    assert.deepStrictEqual(seen.afterDelete, { status: 404 });
    await settledMetrics();
});

// The records of an SSE stream until `until` arrived; the stream is closed then.
function sseUntil(base, t, until) {
    return withTimeout(new Promise((resolve, reject) => {
        const req = http.get(url(base, t), { headers: { accept: "text/event-stream" }, agent: false }, (res) => {
            let data = "";
            res.setEncoding("utf8");
            res.on("data", (chunk) => {
                data += chunk;
                const records = data.split("\r\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("");
                if (records.includes(until)) {
                    req.destroy();
                    resolve({ status: res.statusCode, records });
                }
            });
            res.on("error", () => {});
        });
        req.on("error", reject);
    }), TIMEOUT_MS, `${until} on the event stream`);
}

test("SSE: the handshake POSTed before the stream's GET is answered on the stream", async () => {
    const seen = await sameOnBoth(async (base) => {
        const t = await token(base);
        const early = answer(await post(base, t, HANDSHAKE));
        const stream = await sseUntil(base, t, '"target":"welcome"');
        return { early, status: stream.status, handshakeAnswerFirst: stream.records.startsWith(`{}${RS}`) };
    });
    assert.deepStrictEqual(seen, { early: { status: 200, body: "" }, status: 200, handshakeAnswerFirst: true });
    await settledMetrics();
});

// What a WebSocket for token t receives until `until` arrived (then it is closed) or it closed.
function wsUntil(base, t, until) {
    return withTimeout(new Promise((resolve, reject) => {
        const ws = new WebSocket(wsUrl(base, "chat", `id=${encodeURIComponent(t)}`));
        let data = "";
        ws.on("message", (m) => {
            data += m.toString();
            if (data.includes(until)) {
                ws.close();
                resolve({ data, closed: false });
            }
        });
        ws.on("close", (code) => resolve({ data, closed: code }));
        ws.on("error", reject);
    }), TIMEOUT_MS, `${until} on the WebSocket`);
}

test("WebSocket: the handshake POSTed before it is read once it opens (the client sends none on it)", async () => {
    const seen = await sameOnBoth(async (base) => {
        const t = await token(base);
        const early = answer(await post(base, t, HANDSHAKE));
        const got = await wsUntil(base, t, '"target":"welcome"');
        return { early, handshakeAnswerFirst: got.data.startsWith(`{}${RS}`), closed: got.closed };
    });
    assert.deepStrictEqual(seen, { early: { status: 200, body: "" }, handshakeAnswerFirst: true, closed: false });
    await settledMetrics();
});

test("a POST for a token never negotiated is still 404 on both", async () => {
    const seen = await sameOnBoth(async (base) => answer(await post(base, "AAAAAAAAAAAAAAAAAAAAAA", HANDSHAKE)));
    assert.deepStrictEqual(seen, { status: 404, body: "No Connection with that ID" });
});
