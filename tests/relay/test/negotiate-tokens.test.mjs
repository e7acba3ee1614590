// 6. Negotiate tokens: one not used within --negotiate-timeout expires; an unknown one, or one
// already used, is refused with ASP.NET Core's 404 "No Connection with that ID".
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    RELAY_URL, BACKEND_URL, NEGOTIATE_TIMEOUT_MS, RawClient, metrics, negotiate, pollUntil, wsUrl, settledMetrics,
} from "../lib.mjs";

const NO_CONNECTION = "No Connection with that ID";

async function refusal(base, hub, query) {
    const err = await RawClient.connect(wsUrl(base, hub, query)).then(
        (client) => { client.close(); return null; }, (e) => e);
    assert.ok(err, `the WebSocket ${base}/${hub}?${query} was accepted`);
    return { status: err.status, body: err.body };
}

async function negotiated(hub = "chat") {
    const n = await negotiate(RELAY_URL, hub);
    assert.equal(n.status, 200, n.body);
    assert.match(n.json.connectionToken, /^[A-Za-z0-9_-]{22}$/);
    return n.json;
}

test("a token unused for longer than --negotiate-timeout is refused with 404", async () => {
    const before = await settledMetrics();
    const issuedAt = Date.now();
    const { connectionToken } = await negotiated();
    assert.equal((await metrics()).negotiations_pending, before.negotiations_pending + 1);
    assert.equal((await metrics()).timers_armed, before.timers_armed + 1, "one expiry timer per token");
    // Not too early (measured from the moment the token was issued), and gone some time after.
    const gone = await pollUntil(() => metrics(), (m) => m.negotiations_pending === before.negotiations_pending,
        "the token to expire", NEGOTIATE_TIMEOUT_MS + 10000, 25);
    const lived = Date.now() - issuedAt;
    assert.ok(lived >= NEGOTIATE_TIMEOUT_MS - 50, `expired after ${lived} ms`);
    assert.equal(gone.timers_armed, before.timers_armed, "its expiry timer fired and is gone");
    const refused = await refusal(RELAY_URL, "chat", `id=${connectionToken}`);
    assert.deepStrictEqual(refused, { status: 404, body: NO_CONNECTION });
});

test("a token used within --negotiate-timeout works", async () => {
    const { connectionToken } = await negotiated();
    const client = await RawClient.connect(wsUrl(RELAY_URL, "chat", `id=${connectionToken}`));
    try {
        assert.deepStrictEqual({ ...(await client.handshake()) }, { type: "handshake" });
        assert.equal(await client.invoke("Echo", ["in time"]), "in time");
    } finally {
        client.close();
    }
});

test("an unknown id: 404 'No Connection with that ID', as the backend answers it", async () => {
    const direct = await refusal(BACKEND_URL, "chat", "id=AAAAAAAAAAAAAAAAAAAAAA");
    assert.deepStrictEqual(direct, { status: 404, body: NO_CONNECTION }, "the backend's own answer");
    const relayed = await refusal(RELAY_URL, "chat", "id=AAAAAAAAAAAAAAAAAAAAAA");
    assert.deepStrictEqual(relayed, direct);
});

test("a token used twice: the second use gets the backend's 409, the first session is unharmed", async () => {
    const { connectionToken } = await negotiated();
    const first = await RawClient.connect(wsUrl(RELAY_URL, "chat", `id=${connectionToken}`));
    try {
        assert.deepStrictEqual({ ...(await first.handshake()) }, { type: "handshake" });
        const refused = await refusal(RELAY_URL, "chat", `id=${connectionToken}`);
        assert.deepStrictEqual(refused, { status: 409, body: "" });
        assert.equal(await first.invoke("Echo", ["still mine"]), "still mine");
    } finally {
        first.close();
    }
});

test("a token negotiated for one hub is refused on another", async () => {
    const { connectionToken } = await negotiated("status");
    const refused = await refusal(RELAY_URL, "chat", `id=${connectionToken}`);
    assert.deepStrictEqual(refused, { status: 404, body: NO_CONNECTION });
});

test("no token is left pending: each was used, refused or expired", async () => {
    const m = await metrics();
    assert.equal(m.negotiations_pending, 0);
});
