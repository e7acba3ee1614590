// 5. The handshake as the relay answers it itself: the timeout (--handshake-timeout 1), and
// refusals, which must read exactly as the backend's own when the same bytes go to it directly;
// a handshake split over two WebSocket frames must work.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    RELAY_URL, BACKEND_URL, HANDSHAKE_TIMEOUT_MS, RS, RawClient, metrics, pollUntil, wsUrl, settledMetrics,
} from "../lib.mjs";

// Sends `frames` (strings, each one WebSocket message) on a fresh skip-negotiation connection to
// /chat and returns the handshake answer and the close that follows it.
async function answerTo(base, frames) {
    const client = await RawClient.connect(wsUrl(base, "chat"));
    try {
        for (const f of frames) client.sendText(f);
        const answer = await client.next((r) => r.type === "handshake", 5000, "the handshake answer");
        const closed = answer.error !== undefined ? await client.waitClosed(10000) : null;
        return { answer: { ...answer }, closed, client };
    } finally {
        client.close();
    }
}

const refusals = [
    ["garbage", ["hello" + RS], "An unexpected error occurred during connection handshake."],
    ["no version", [JSON.stringify({ protocol: "json" }) + RS], "An unexpected error occurred during connection handshake."],
    ["protocol xml", [JSON.stringify({ protocol: "xml", version: 1 }) + RS], "The protocol 'xml' is not supported."],
    ["json version 3", [JSON.stringify({ protocol: "json", version: 3 }) + RS],
        "The server does not support version 3 of the 'json' protocol."],
    ["messagepack version 3", [JSON.stringify({ protocol: "messagepack", version: 3 }) + RS],
        "The server does not support version 3 of the 'messagepack' protocol."],
];

for (const [name, frames, text] of refusals) {
    test(`handshake refused (${name}): "${text}", as the backend says it, then the socket closes`, async () => {
        const direct = await answerTo(BACKEND_URL, frames);
        const relayed = await answerTo(RELAY_URL, frames);
        assert.deepStrictEqual(direct.answer, { type: "handshake", error: text }, "the backend's own answer");
        assert.deepStrictEqual(relayed.answer, direct.answer);
        assert.equal(relayed.closed.code, 1000);
        assert.deepStrictEqual(relayed.client.records, [], "nothing follows a refused handshake");
    });
}

test(`no handshake within --handshake-timeout: "Handshake was canceled.", then the socket closes`, async () => {
    for (const partial of [null, '{"protocol":"json",']) {
        const client = await RawClient.connect(wsUrl(RELAY_URL, "chat"));
        try {
            const openedAt = Date.now();
            if (partial) client.sendText(partial);
            const answer = await client.next((r) => r.type === "handshake", HANDSHAKE_TIMEOUT_MS + 10000, "the answer");
            const waited = answer.at - openedAt;
            assert.deepStrictEqual({ ...answer }, { type: "handshake", error: "Handshake was canceled." });
            // Never early; late by at most what a loaded two-core machine costs (not 0.8 s).
            assert.ok(waited >= HANDSHAKE_TIMEOUT_MS - 100 && waited <= HANDSHAKE_TIMEOUT_MS + 2000,
                `answered after ${waited} ms (timeout ${HANDSHAKE_TIMEOUT_MS} ms, partial ${!!partial})`);
            const closed = await client.waitClosed(10000);
            assert.equal(closed.code, 1000);
        } finally {
            client.close();
        }
    }
});

test("a handshake split over two WebSocket frames is accepted", async () => {
    for (const base of [BACKEND_URL, RELAY_URL]) {
        const client = await RawClient.connect(wsUrl(base, "chat"));
        try {
            client.sendText('{"protocol":"json",');
            await client.pingPong(); // the server has read the half (and the ping after it)
            assert.equal(client.frames.length, 0, "answered half a handshake");
            client.sendText('"version":1}' + RS);
            const answer = await client.next((r) => r.type === "handshake", 5000, "the handshake answer");
            assert.deepStrictEqual({ ...answer }, { type: "handshake" });
            const welcome = await client.next((r) => r.type === 1 && r.target === "welcome", 5000, "welcome");
            assert.equal(typeof welcome.arguments[0], "string");
            assert.equal(await client.invoke("Echo", ["split"]), "split");
        } finally {
            client.close();
        }
    }
});

test("a handshake and an invocation in one frame: both are served", async () => {
    const client = await RawClient.connect(wsUrl(RELAY_URL, "chat"));
    try {
        client.sendText(JSON.stringify({ protocol: "json", version: 1 }) + RS +
            JSON.stringify({ type: 1, invocationId: "7", target: "Add", arguments: [40, 2] }) + RS);
        const answer = await client.next((r) => r.type === "handshake", 5000, "the handshake answer");
        assert.deepStrictEqual({ ...answer }, { type: "handshake" });
        const done = await client.next((r) => r.type === 3 && r.invocationId === "7", 5000, "the completion");
        assert.equal(done.result, 42);
    } finally {
        client.close();
    }
});

// A skip-negotiation client whose handshake is refused while the relay is still opening its backend
// link (negotiate done, WebSocket to the backend not yet established): the half-open link must be
// released like any other. Refusals spread over the first milliseconds hit that window.
test("handshake refusals racing the backend link: every link is released", async () => {
    const before = await settledMetrics();
    const clients = [];
    for (let i = 0; i < 40; i++) {
        const client = await RawClient.connect(wsUrl(RELAY_URL, "chat"));
        clients.push(client);
        setTimeout(() => client.sendText("hello" + RS), i % 20);
    }
    for (const client of clients) {
        const answer = await client.next((r) => r.type === "handshake", 5000, "the handshake answer");
        assert.equal(answer.error, "An unexpected error occurred during connection handshake.");
        await client.waitClosed(10000);
    }
    await pollUntil(() => metrics(),
        (m) => m.sessions_active === before.sessions_active && m.backend_links_active === before.backend_links_active,
        "sessions and backend links back to their earlier values", 10000);
});
