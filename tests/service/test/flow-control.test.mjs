// A client that stops reading while the app sends to everyone: a shared server connection
// cannot be paused for it, so the relay holds its messages up to --max-buffered and then closes
// it with a reason (counted in /metrics). The other clients get everything, in order.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { APP_URL, RELAY_URL, connect, metrics, pollUntil, stopAll, waitFor, withTimeout } from "../lib.mjs";

const RS = "\x1e";

// A raw client through the app's redirect, so the test controls when it reads.
async function rawClient(user) {
    const res = await fetch(`${APP_URL}/board/negotiate?negotiateVersion=1&user=${user}`, { method: "POST" });
    const redirect = await res.json();
    const query = new URL(redirect.url).searchParams;
    query.set("negotiateVersion", "1");
    const neg = await fetch(`${RELAY_URL}/client/negotiate?${query}`, {
        method: "POST", headers: { Authorization: `Bearer ${redirect.accessToken}` },
    });
    assert.equal(neg.status, 200);
    const { connectionToken } = await neg.json();
    query.delete("negotiateVersion");
    query.set("id", connectionToken);
    query.set("access_token", redirect.accessToken);
    const ws = new WebSocket(`${RELAY_URL.replace("http", "ws")}/client/?${query}`);
    const client = { ws, text: "", closed: null };
    ws.on("message", (data) => (client.text += data.toString()));
    client.closedPromise = new Promise((resolve) => ws.on("close", (code) => resolve((client.closed = code))));
    await withTimeout(new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); }), 10000, "open");
    ws.send(`{"protocol":"json","version":1}${RS}`);
    await pollUntil(async () => client.text, (t) => t.startsWith(`{}${RS}`), "the handshake answer");
    return client;
}

test("a client that does not read is closed with a reason; the others get everything in order", { timeout: 90000 }, async () => {
    const before = (await metrics()).signalr_relay_service_slow_client_closes_total;
    const fast = await connect({ user: "flow-fast", protocol: "messagepack" });
    const slow = await rawClient("flow-slow");
    try {
        slow.ws._socket.pause(); /* stops reading: the kernel's buffers fill, then the relay's */
        const chunk = "x".repeat(256 * 1024);
        const count = 48;
        let sent = 0;
        for (let i = 0; i < count; i++) {
            await fast.connection.invoke("SendToAll", `${i}:${chunk}`);
            sent++;
            const m = await metrics();
            if (m.signalr_relay_service_slow_client_closes_total > before) break;
        }
        await pollUntil(metrics, (m) => m.signalr_relay_service_slow_client_closes_total === before + 1,
            "the slow client to be closed", 20000);
        /* The fast client gets every message, in order. */
        await waitFor(fast, () => fast.got.filter((m) => m[0] === "broadcast").length >= sent, "fast's messages", "got", 30000);
        const numbers = fast.got.filter((m) => m[0] === "broadcast").map((m) => Number(m[2].split(":")[0]));
        assert.deepEqual(numbers, numbers.map((_, i) => i));
        slow.ws._socket.resume(); /* it reads what was queued, then the Close, then the socket closes */
        await withTimeout(slow.closedPromise, 20000, "the slow client's socket to close");
        assert.match(slow.text, /"type":7/);
        assert.ok(fast.connection.state === "Connected");
    } finally {
        slow.ws.terminate();
        await stopAll(fast);
    }
});
