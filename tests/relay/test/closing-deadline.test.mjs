// 17. Sessions that never die (issue 10, defect 3). A client stops reading its socket, asks the hub
// for more than the socket buffers hold, then sends a message over --max-message-size. The relay
// ends the session (a Close or error frame queued behind everything else, the hub link closed) and
// waits to flush its queue toward a client that never reads: with every timer cancelled in that
// closing state, the session, its queue and its socket were held forever (50 such clients: 122 MiB
// after 120 s). Every closing state now has a deadline on the timer wheel: the socket is closed if
// it has not taken its last messages within RELAY_CLOSE_TIMEOUT_MS (5 s). Checked for Core clients
// (tuned relay, 1M limit) and legacy clients (plain relay, 4M limit): the sessions and backend links
// gauges go back to where they were, within a bound far below "never", while the clients still
// hold their sockets unread.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    PLAIN_RELAY_URL, RELAY_PID, RELAY_URL, WebSocket, connectRaw, httpRequest, legacyConnectionData, metrics,
    pollUntil, rssBytes, withTimeout,
} from "../lib.mjs";

const CLIENTS = 5;
const CALLS = 30;                  // Repeat answers of 500 KB each: 15 MB asked per client
const BOUND_MS = 30000;            // the deadline is 5 s; "never" was the bug

const repeatArgs = ["x".repeat(1000), 500];

async function stalledCoreClient() {
    const { client } = await connectRaw({ base: RELAY_URL });
    client.ws._socket.pause(); // reads nothing from now on
    for (let i = 0; i < CALLS; i++) client.startInvoke("Repeat", repeatArgs);
    return client;
}

// A legacy connection on the plain relay (10 s keep-alive, so the dead-socket watch, 30 s, does not
// close it first): negotiate, /connect, /start, then it stops reading and asks for 15 MB.
async function stalledLegacyClient() {
    const base = `${PLAIN_RELAY_URL}/signalr`;
    const data = legacyConnectionData("chathub");
    const neg = await httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${data}`);
    assert.equal(neg.status, 200, neg.body);
    const token = encodeURIComponent(JSON.parse(neg.body).ConnectionToken);
    const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${token}&connectionData=${data}`;
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/connect?${query}`, { perMessageDeflate: false });
    const closed = new Promise((resolve) => ws.on("close", resolve));
    ws.on("error", () => {});
    await withTimeout(new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); }), 10000, "legacy connect");
    const started = await httpRequest("GET", `${base}/start?${query}`);
    assert.equal(started.status, 200, started.body);
    ws._socket.pause();
    for (let i = 0; i < CALLS; i++) ws.send(JSON.stringify({ H: "chathub", M: "Repeat", A: repeatArgs, I: String(i) }));
    return { ws, closed };
}

// Opens CLIENTS stalled clients (open() resolves to each one's WebSocket), waits until the relay holds
// their queues, lets each send an oversized message, and waits for the gauges to come back.
async function checkReleased(base, label, gauge, open, oversize) {
    const before = await metrics(base);
    const clients = [];
    try {
        for (let i = 0; i < CLIENTS; i++) clients.push(await open());
        // Each session's queue toward its client passed --max-buffered: the relay paused its link.
        await pollUntil(() => metrics(base), (m) => m.flow_control_pauses_total >= before.flow_control_pauses_total + CLIENTS,
            `${label}: every session paused by flow control`, 30000, 200);
        const held = await metrics(base);
        assert.equal(held[gauge], before[gauge] + CLIENTS, `${label}: sessions held`);
        for (const ws of clients) ws.send("y".repeat(oversize));
        const started = Date.now();
        const after = await pollUntil(() => metrics(base),
            (m) => m[gauge] === before[gauge] && m.backend_links_active === before.backend_links_active,
            `${label}: the ${CLIENTS} closing sessions released (${gauge} back to ${before[gauge]})`, BOUND_MS, 250);
        console.log(`# ${label}: ${CLIENTS} sessions closing toward clients that do not read: released after ` +
            `${Date.now() - started} ms; ${gauge} ${held[gauge]} -> ${after[gauge]}, backend links ` +
            `${held.backend_links_active} -> ${after.backend_links_active}; relay RSS ${(rssBytes(RELAY_PID) / 1048576).toFixed(0)} MiB (tuned)`);
    } finally {
        for (const ws of clients) ws.terminate();
    }
}

test("Core clients that stop reading, then send an oversized message: the closing sessions end in bounded time", async () => {
    await checkReleased(RELAY_URL, "Core", "sessions_active", async () => (await stalledCoreClient()).ws, 1536 * 1024);
});

test("legacy clients that stop reading, then send an oversized message: the closing sessions end in bounded time", async () => {
    await checkReleased(PLAIN_RELAY_URL, "legacy", "legacy_sessions_active", async () => (await stalledLegacyClient()).ws,
        5 * 1024 * 1024);
});
