// 2. The backend process dies (kill -9) under live sessions: hub "flaky" is a backend process
// of its own (backend B). Every client must learn that the relay lost its backend, in its own
// protocol, with allowReconnect: true (the backend is gone, not the client's fault: it may come
// back), and then its socket must close. Seen by stock clients (JSON, MessagePack, and one with
// automatic reconnect, which only reconnects when the Close allows it) and by raw clients that
// decode the Close record themselves.
import { describe, it, before, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    RELAY_URL, FLAKY_BACKEND_PID, connectRaw, connectStock, metrics, pollUntil, withTimeout, stopAll, msgpackDecode, settledMetrics,
} from "../lib.mjs";

const LOST = "Connection closed with an error. The relay lost its connection to the backend hub 'flaky'.";
const CLOSE_WITHIN_MS = 5000;

describe("backend killed mid-session", () => {
    const stock = {};
    const raw = {};
    const closes = {};
    let before_;
    let killedAt;

    before(async () => {
        before_ = await settledMetrics();
        const url = `${RELAY_URL}/flaky`;
        const keepAliveMs = 500; // under the tuned relay's client timeout
        stock.json = await connectStock(url, { keepAliveMs });
        stock.msgpack = await connectStock(url, { protocol: "messagepack", keepAliveMs });
        stock.reconnecting = await connectStock(url, { reconnectDelays: [60000], keepAliveMs });
        raw.json = await connectRaw({ hub: "flaky" });
        raw.msgpack = await connectRaw({ hub: "flaky", protocol: "messagepack" });
        for (const [name, { conn }] of Object.entries(stock)) {
            closes[name] = new Promise((resolve) => {
                conn.onclose((error) => resolve({ kind: "close", error, at: Date.now() }));
                conn.onreconnecting((error) => resolve({ kind: "reconnecting", error, at: Date.now() }));
            });
        }
        // Every session works before the kill.
        for (const { conn } of Object.values(stock)) assert.equal(await conn.invoke("Echo", "alive"), "alive");
        for (const { client } of Object.values(raw)) assert.equal(await client.invoke("Echo", ["alive"]), "alive");
        const during = await metrics();
        assert.equal(during.backend_links_active, before_.backend_links_active + 5);
        process.kill(FLAKY_BACKEND_PID, "SIGKILL");
        killedAt = Date.now();
    });

    after(async () => {
        await stopAll(...Object.values(stock).map((s) => s.conn), ...Object.values(raw).map((r) => r.client));
    });

    it("stock JSON client: onclose with the relay's error", async () => {
        const ev = await withTimeout(closes.json, CLOSE_WITHIN_MS, "onclose");
        assert.equal(ev.kind, "close");
        assert.ok(ev.error instanceof Error, "onclose must get an error");
        assert.equal(ev.error.message, `Server returned an error on close: ${LOST}`);
        assert.equal(stock.json.conn.state, "Disconnected");
    });

    it("stock MessagePack client: onclose with the relay's error", async () => {
        const ev = await withTimeout(closes.msgpack, CLOSE_WITHIN_MS, "onclose");
        assert.equal(ev.kind, "close");
        assert.equal(ev.error?.message, `Server returned an error on close: ${LOST}`);
    });

    it("stock client with automatic reconnect starts reconnecting (allowReconnect reached it)", async () => {
        const ev = await withTimeout(closes.reconnecting, CLOSE_WITHIN_MS, "onreconnecting");
        assert.equal(ev.kind, "reconnecting", "a Close without allowReconnect would end in onclose instead");
        assert.equal(ev.error?.message, `Server returned an error on close: ${LOST}`);
        assert.equal(stock.reconnecting.conn.state, "Reconnecting");
    });

    it("raw JSON client: the Close record carries the error and allowReconnect: true, then the socket closes", async () => {
        const { client } = raw.json;
        const close = await client.next((r) => r.type === 7, CLOSE_WITHIN_MS, "a Close record");
        assert.deepStrictEqual({ ...close }, { type: 7, error: LOST, allowReconnect: true });
        assert.equal(close.binary, false, "JSON travels in text frames");
        assert.ok(close.at - killedAt < CLOSE_WITHIN_MS);
        const closed = await client.waitClosed(CLOSE_WITHIN_MS);
        assert.equal(closed.code, 1000);
        const later = client.records.filter((r) => r.type !== 6);
        assert.deepStrictEqual(later, [], "nothing but pings may follow the Close");
    });

    it("raw MessagePack client: the binary Close record decodes to [7, error, true], then the socket closes", async () => {
        const { client } = raw.msgpack;
        const close = await client.next((r) => r.type === 7, CLOSE_WITHIN_MS, "a Close record");
        assert.equal(close.binary, true, "MessagePack travels in binary frames");
        // The frame's bytes decoded here again, independently of the client's record parser:
        // VarInt length prefix, then the MessagePack array.
        const frame = client.frames.find((f) => f.at === close.at && f.binary);
        const bytes = frame.bytes;
        const records = [];
        for (let at = 0; at < bytes.length;) {
            let len = 0, shift = 0, j = at;
            for (;;) { const b = bytes[j++]; len |= (b & 0x7f) << shift; shift += 7; if (!(b & 0x80)) break; }
            assert.ok(len > 0 && j + len <= bytes.length, "a whole record");
            records.push(msgpackDecode(bytes.subarray(j, j + len)));
            at = j + len;
        }
        assert.deepStrictEqual(records.find((r) => r[0] === 7), [7, LOST, true]);
        const closed = await client.waitClosed(CLOSE_WITHIN_MS);
        assert.equal(closed.code, 1000);
    });

    it("every session and backend link is released", async () => {
        await pollUntil(() => metrics(),
            (m) => m.sessions_active === before_.sessions_active && m.backend_links_active === before_.backend_links_active,
            "sessions_active and backend_links_active back to their earlier values", 10000);
    });
});
