// 8b. Flow control toward a legacy client that stops reading its socket while the hub keeps
// answering it: as for Core clients (flow-control.test.mjs), the relay must stop reading from the
// hub once --max-buffered (64K) is queued toward the client, so its memory stays bounded, and once
// the client reads again every hub result arrives, whole and in call order.
// Each call is tiny and each answer large (ChatHub.Repeat), so only the way toward the client
// fills up. While its socket is paused the client keeps sending a fire-and-forget call twice a
// second: the relay must keep hearing it, or its dead-socket rule (nothing heard for three
// keep-alive intervals) would close the socket and the test would measure that instead.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { RELAY_PID, MAX_MESSAGE_BYTES, LegacyClient, metrics, pollUntil, rssBytes, sleep } from "../lib.mjs";

const CALLS = 112;
const PIECE = 64;                               // each answer is `count` copies of a 64-byte piece
const COUNT = 12 * 1024;                        // 768 KB per answer, well under --max-message-size (1M)
const TOTAL = CALLS * PIECE * COUNT;            // ~84 MB back toward the client
const RSS_GROWTH_LIMIT = 64 * 1024 * 1024;
const KEEPALIVE_SLACK = 1024;                   // bytes the relay's own keep-alive frames may add meanwhile

function piece(i) {
    const head = `#${i}#`;
    return head + String.fromCharCode(97 + (i % 26)).repeat(PIECE - head.length);
}

test("a legacy client that stops reading: bounded relay memory, hub reading paused, then every result in order", async () => {
    assert.ok(PIECE * COUNT + 200 < MAX_MESSAGE_BYTES);
    const client = await LegacyClient.open(["chathub"]);
    const started = await client.start();
    assert.equal(started.status, 200, started.body);
    const before = await metrics();
    const rssBefore = rssBytes(RELAY_PID);
    const heartbeat = setInterval(() => client.ws.send(JSON.stringify({ H: "chathub", M: "VoidMethod", A: [] })), 500);
    try {
        client.ws._socket.pause(); // the client stops reading; the kernel buffers fill, then the relay's queue
        for (let i = 0; i < CALLS; i++)
            client.ws.send(JSON.stringify({ H: "chathub", M: "Repeat", A: [piece(i), COUNT], I: i }));

        // The relay stops taking bytes from the hub (or, without flow control, runs out of them).
        // Only the relay's own keep-alive frames ({}, 2 bytes a second) may still move. First the
        // pause itself (counted in /metrics): on a loaded machine the first half second may see
        // nothing move only because the calls have not reached the hub yet.
        await pollUntil(() => metrics(), (m) => m.flow_control_pauses_total > before.flow_control_pauses_total,
            "the relay to pause reading from the hub", 60000);
        let stalled = await metrics();
        await pollUntil(async () => {
            const previous = stalled;
            await sleep(500);
            stalled = await metrics();
            return stalled.bytes_to_clients_total - previous.bytes_to_clients_total;
        }, (moved) => moved < KEEPALIVE_SLACK, "the relay to stop reading from the hub", 30000, 0);
        let peakGrowth = 0;
        for (let i = 0; i < 5; i++) {
            peakGrowth = Math.max(peakGrowth, rssBytes(RELAY_PID) - rssBefore);
            await sleep(200);
        }
        const stillStalled = await metrics();
        // The hub's bytes are counted once leaving the link and once more as legacy frames.
        const passed = (stalled.bytes_to_clients_total - before.bytes_to_clients_total) / 2;
        const pauses = stillStalled.flow_control_pauses_total - before.flow_control_pauses_total;
        const summary = `~${(passed / 1048576).toFixed(1)} of ${(TOTAL / 1048576).toFixed(0)} MB left the hub ` +
            `while the client was not reading; relay RSS grew by ${(peakGrowth / 1048576).toFixed(1)} MB; pauses +${pauses}`;
        console.log(`# ${summary}`);
        assert.ok(pauses > 0, summary);
        assert.ok(passed < TOTAL / 4, summary);
        assert.ok(peakGrowth < RSS_GROWTH_LIMIT, summary);
        assert.ok(stillStalled.bytes_to_clients_total - stalled.bytes_to_clients_total < KEEPALIVE_SLACK, "still paused");

        // Reading again: every result, whole, in the order of the calls.
        client.ws._socket.resume();
        for (let i = 0; i < CALLS; i++) {
            const result = await client.next((f) => f.I === String(i), `result ${i}`);
            assert.equal(result.E, undefined, `result ${i}: ${result.E}`);
            assert.equal(result.R.length, PIECE * COUNT, `result ${i} length`);
            assert.ok(result.R === piece(i).repeat(COUNT), `result ${i} content`);
        }
        const order = client.frames.filter((f) => f.I !== undefined).map((f) => Number(f.I));
        assert.deepEqual(order, [...Array(CALLS).keys()], "results in call order");
        await client.abort();
    } finally {
        clearInterval(heartbeat);
        client.ws.terminate();
    }
});
