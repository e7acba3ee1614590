// 8. Flow control: a client that stops reading its socket while the backend keeps answering it.
// The relay must stop reading from the backend once --max-buffered (64K) is queued toward the
// client (and stop reading the client once as much is queued toward the backend), so its memory
// stays bounded however much the client asks for; once the client reads again, every message
// arrives, whole and in order.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { RELAY_PID, MAX_MESSAGE_BYTES, connectRaw, metrics, pollUntil, rssBytes, sleep } from "../lib.mjs";

const CALLS = 112;
const PAYLOAD_BYTES = 768 * 1024;              // well under --max-message-size (1M) with framing
const TOTAL = CALLS * PAYLOAD_BYTES;           // ~84 MB back toward the client
const RSS_GROWTH_LIMIT = 64 * 1024 * 1024;

function payload(i) {
    const head = `#${i}#`;
    return head + String.fromCharCode(97 + (i % 26)).repeat(PAYLOAD_BYTES - head.length);
}

test("a client that stops reading: bounded relay memory, reading paused, then everything in order", async () => {
    assert.ok(PAYLOAD_BYTES + 200 < MAX_MESSAGE_BYTES);
    const before = await metrics();
    const rssBefore = rssBytes(RELAY_PID);
    const { client } = await connectRaw();
    try {
        client.ws._socket.pause(); // the client stops reading; the kernel buffers fill, then the relay's queue
        for (let i = 0; i < CALLS; i++) client.startInvoke("Echo", [payload(i)]);

        // The relay pauses: the pause counter moves and it stops taking bytes from the backend.
        const paused = await pollUntil(() => metrics(),
            (m) => m.flow_control_pauses_total > before.flow_control_pauses_total, "a flow-control pause", 20000);
        let stalled = paused;
        await pollUntil(async () => {
            const previous = stalled;
            await sleep(500);
            stalled = await metrics();
            return stalled.bytes_to_clients_total - previous.bytes_to_clients_total;
        }, (moved) => moved === 0, "the relay to stop reading from the backend", 20000, 0);
        // Memory while stalled, sampled over a second.
        let peakGrowth = 0;
        for (let i = 0; i < 5; i++) {
            peakGrowth = Math.max(peakGrowth, rssBytes(RELAY_PID) - rssBefore);
            await sleep(200);
        }
        const passed = stalled.bytes_to_clients_total - before.bytes_to_clients_total;
        const stillStalled = await metrics();
        const summary = `${(passed / 1048576).toFixed(1)} of ${(TOTAL / 1048576).toFixed(0)} MB left the backend ` +
            `while the client was not reading; relay RSS grew by ${(peakGrowth / 1048576).toFixed(1)} MB; ` +
            `pauses +${stillStalled.flow_control_pauses_total - before.flow_control_pauses_total}`;
        console.log(`# ${summary}`);
        assert.ok(passed < TOTAL / 4, summary);
        assert.ok(peakGrowth < RSS_GROWTH_LIMIT, summary);
        assert.equal(stillStalled.bytes_to_clients_total, stalled.bytes_to_clients_total, "still paused");

        // Reading again: every completion, whole, in the order of the calls.
        client.ws._socket.resume();
        for (let i = 0; i < CALLS; i++) {
            const done = await client.next((r) => r.type === 3, 30000, `completion ${i + 1}`);
            assert.equal(done.invocationId, String(i + 1), "completions in call order");
            const expected = payload(i);
            assert.equal(done.result.length, expected.length, `completion ${i + 1} length`);
            assert.ok(done.result === expected, `completion ${i + 1} content`);
        }
        assert.equal(client.closeInfo, null);
        const after = await metrics();
        assert.ok(after.bytes_to_clients_total - before.bytes_to_clients_total >= TOTAL);
        client.close();
    } finally {
        // After a failure while paused, a close handshake would wait for a socket nobody reads.
        if (client.ws.readyState === client.ws.OPEN) client.terminate();
    }
});
