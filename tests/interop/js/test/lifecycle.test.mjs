// Connection lifecycle: server-initiated close (Context.Abort), client stop() reaching the
// backend's OnDisconnectedAsync, and connecting with skipNegotiation (WebSockets only).
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    signalR, CONNECTION_ID_RE, TIMEOUT_MS,
    connectChat, pollUntil, withTimeout, stopAll,
} from "../lib.mjs";

// Asks the backend, over a separate connection, what it recorded when `backendId` went away.
async function disconnectSeenByBackend(backendId) {
    const probe = await connectChat();
    try {
        return await pollUntil(() => probe.conn.invoke("GetDisconnectInfo", backendId),
            (info) => info.disconnected === true, `OnDisconnectedAsync for ${backendId}`);
    } finally {
        await stopAll(probe.conn);
    }
}

test("AbortMe: the server closes the connection and onclose fires", async () => {
    const { conn, backendId } = await connectChat();
    try {
        const closed = new Promise((resolve) => conn.onclose(resolve));
        await conn.send("AbortMe");
        const error = await withTimeout(closed, TIMEOUT_MS, "onclose after AbortMe");
        // Context.Abort() sends a Close message without error and without allowReconnect.
        assert.equal(error, undefined);
        assert.equal(conn.state, signalR.HubConnectionState.Disconnected);
        const info = await disconnectSeenByBackend(backendId);
        assert.deepStrictEqual(info, { disconnected: true, hub: "chat", error: null });
    } finally {
        await stopAll(conn);
    }
});

test("stop() makes the backend run OnDisconnectedAsync without error", async () => {
    const { conn, backendId } = await connectChat();
    let closeError = "onclose not called";
    conn.onclose((e) => { closeError = e; });
    await conn.stop();
    assert.equal(closeError, undefined);
    const info = await disconnectSeenByBackend(backendId);
    assert.deepStrictEqual(info, { disconnected: true, hub: "chat", error: null });
});

test("skipNegotiation connects straight over WebSockets", async () => {
    const { conn, backendId } = await connectChat({ skipNegotiation: true });
    try {
        assert.match(backendId, CONNECTION_ID_RE);
        // Without negotiate the client never learns a connection id.
        assert.equal(conn.connectionId ?? null, null);
        const who = await conn.invoke("WhoAmI");
        assert.equal(who.transport, "WebSockets");
        assert.equal(who.connectionId, backendId);
        assert.equal(await conn.invoke("Echo", "no negotiate"), "no negotiate");
    } finally {
        await stopAll(conn);
    }
});
