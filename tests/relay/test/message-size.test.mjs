// 7. A client message larger than --max-message-size (1M here): the relay closes that client with
// a Close message, as ASP.NET Core does for a message over its own limit (same base text, same
// allowReconnect), never forwards it, and goes on serving everyone else.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    RELAY_URL, BACKEND_URL, MAX_MESSAGE_BYTES, RS, RawClient, connectRaw, disconnectSeenByBackend, metrics,
    msgpackRecord, wsUrl, settledMetrics,
} from "../lib.mjs";

// The backend's own limit (tests/backend: MaximumReceiveMessageSize) is 2 MB.
const OVER_BACKEND_LIMIT = 3 * 1024 * 1024;

function oversizedInvocation(protocol, payloadBytes) {
    const value = "x".repeat(payloadBytes);
    return protocol === "messagepack"
        ? msgpackRecord([1, {}, "1", "Echo", [value]])
        : JSON.stringify({ type: 1, invocationId: "1", target: "Echo", arguments: [value] }) + RS;
}

// Sends one oversized invocation and returns the Close record and the socket close.
async function sendOversized(client, protocol, payloadBytes, closeWithinMs = 5000) {
    client.ws.send(oversizedInvocation(protocol, payloadBytes));
    const close = await client.next((r) => r.type === 7, 10000, "a Close record");
    const closed = await client.waitClosed(closeWithinMs);
    assert.deepStrictEqual(client.records.filter((r) => r.type !== 6), [], "nothing but pings after the Close");
    return { close: { ...close }, closed };
}

test("the backend itself, for a message over its limit: Close with allowReconnect (reference)", async () => {
    const { client } = await connectRaw({ base: BACKEND_URL, skipNegotiation: true });
    // The backend stops reading at its limit, so the client's Close frame waits behind the rest of
    // the message until the server's WebSocket CloseTimeout (5 s) ends the socket.
    const { close } = await sendOversized(client, "json", OVER_BACKEND_LIMIT, 12000);
    assert.deepStrictEqual(close, { type: 7, error: "Connection closed with an error.", allowReconnect: true });
});

for (const protocol of ["json", "messagepack"]) {
    test(`${protocol}: a message over --max-message-size closes that client with an error; others go on`, async () => {
        const before = await settledMetrics();
        const bystander = (await connectRaw({ protocol: "json" })).client;
        const { client, connectionId } = await connectRaw({ protocol });
        try {
            const { close, closed } = await sendOversized(client, protocol, MAX_MESSAGE_BYTES + 1024);
            assert.ok(close.error.startsWith("Connection closed with an error."), close.error);
            assert.match(close.error, /maximum message size/);
            assert.equal(close.allowReconnect, true, "as the backend does for its own limit");
            assert.equal(closed.code, 1000);
            const info = await disconnectSeenByBackend(connectionId, 10000);
            assert.equal(info.hub, "chat");
            const after = await metrics();
            assert.equal(after.protocol_errors_total, before.protocol_errors_total + 1);
            // Nothing of it reached the backend: only the handshake went there from this client.
            assert.ok(after.bytes_to_backend_total - before.bytes_to_backend_total < MAX_MESSAGE_BYTES / 2,
                `${after.bytes_to_backend_total - before.bytes_to_backend_total} bytes went to the backend`);
            // The relay goes on serving: the bystander and a new connection.
            assert.equal(await bystander.invoke("Echo", ["still served"]), "still served");
            const fresh = (await connectRaw({ protocol })).client;
            assert.equal(await fresh.invoke("Echo", ["new one"]), "new one");
            fresh.close();
        } finally {
            client.close();
            bystander.close();
        }
    });
}

test("a message just under --max-message-size passes", async () => {
    const { client } = await connectRaw();
    try {
        const value = "y".repeat(MAX_MESSAGE_BYTES - 200);
        assert.equal(await client.invoke("Echo", [value]), value);
    } finally {
        client.close();
    }
});

test("an oversized first message (no handshake yet): 'Handshake was canceled.'", async () => {
    const client = await RawClient.connect(wsUrl(RELAY_URL, "chat"));
    try {
        client.sendText("z".repeat(MAX_MESSAGE_BYTES + 1024));
        const answer = await client.next((r) => r.type === "handshake", 5000, "the handshake answer");
        assert.deepStrictEqual({ ...answer }, { type: "handshake", error: "Handshake was canceled." });
        assert.equal((await client.waitClosed(10000)).code, 1000);
    } finally {
        client.close();
    }
});

test("a backend message over --max-message-size: that client gets a Close, the backend session ends, others go on", async () => {
    const before = await settledMetrics();
    const bystander = (await connectRaw()).client;
    const { client, connectionId } = await connectRaw();
    try {
        const id = client.startInvoke("Repeat", ["x", MAX_MESSAGE_BYTES + 1024]);
        const close = await client.next((r) => r.type === 7, 10000, "a Close record");
        assert.ok(close.error.startsWith("Connection closed with an error."), close.error);
        assert.equal(close.allowReconnect, true);
        assert.equal((await client.waitClosed(10000)).code, 1000);
        assert.deepStrictEqual(client.records.filter((r) => r.type === 3 && r.invocationId === id), [],
            "no (truncated) completion reached the client");
        const info = await disconnectSeenByBackend(connectionId, 10000);
        assert.equal(info.hub, "chat");
        assert.equal(await bystander.invoke("Repeat", ["ab", 1000]), "ab".repeat(1000));
        const after = await metrics();
        assert.equal(after.backend_links_active, before.backend_links_active + 1, "only the bystander's link is left");
    } finally {
        client.close();
        bystander.close();
    }
});
