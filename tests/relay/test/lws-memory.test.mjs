// libwebsockets' per-connection chunks come from the relay's pools (relay/lws_memory.c): with
// real clients connected through a relay of its own, /metrics counts their long-lived lws chunks
// in the pools (a client connection's `struct lws`, WebSocket state and receive buffer, and the
// same three of its backend link), and when they have gone every chunk was given back through
// the allocator; the relay then exits 0 with a clean ASan/LeakSanitizer log (startRelay's stop).
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, connectStock, metrics, pollUntil, stopAll, withTimeout } from "../lib.mjs";

const CLIENTS = 20;

test(`${CLIENTS} proxied clients: lws' long-lived chunks pooled while they are connected, all given back after`, async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`]);
    let conns = [];
    try {
        const before = await metrics(relay.url);
        assert.equal(typeof before.lws_pooled_chunks, "number", "/metrics has signalr_relay_lws_pooled_chunks");
        const results = await withTimeout(Promise.all(Array.from({ length: CLIENTS }, async (_, i) => {
            const c = await connectStock(`${relay.url}/chat`, { protocol: i % 2 ? "messagepack" : "json", timeoutMs: 60000 });
            conns.push(c.conn);
            return c.conn.invoke("Echo", `hello ${i}`);
        })), 90000, `${CLIENTS} connections`);
        results.forEach((echo, i) => assert.equal(echo, `hello ${i}`));
        const during = await metrics(relay.url);
        assert.equal(during.sessions_active, CLIENTS);
        assert.equal(during.backend_links_active, CLIENTS);
        // per client: its wsi, its WebSocket state, its receive buffer; the same for its backend link
        assert.ok(during.lws_pooled_chunks >= before.lws_pooled_chunks + 6 * CLIENTS,
            `pooled chunks ${before.lws_pooled_chunks} -> ${during.lws_pooled_chunks}`);
        assert.ok(during.lws_pool_pages >= 3, `pool pages ${during.lws_pool_pages}`);
        console.log(`# lws chunks pooled ${before.lws_pooled_chunks} -> ${during.lws_pooled_chunks}, pages ${during.lws_pool_pages}`);
        await stopAll(...conns);
        conns = [];
        const after = await pollUntil(() => metrics(relay.url),
            (m) => m.sessions_active === 0 && m.backend_links_active === 0 && m.lws_pooled_chunks <= before.lws_pooled_chunks,
            "every pooled lws chunk given back", 30000);
        // one empty page per pool may be kept, no more
        assert.ok(after.lws_pool_pages <= during.lws_pool_pages, `pages ${after.lws_pool_pages}`);
    } finally {
        await stopAll(...conns);
        await relay.stop(); // exit 0, no sanitizer report: every page released after lws_context_destroy
    }
});
