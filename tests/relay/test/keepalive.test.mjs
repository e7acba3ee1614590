// 4. Keepalive and client timeout on the tuned relay (--keepalive 1 --client-timeout 2), which
// sits in front of a backend that pings only every 15 s: so pings arriving every second are the
// relay's own. As in ASP.NET Core, the client timeout is armed by the client's first Ping; a
// client that never pings is never timed out, and any message from the client resets it.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    KEEPALIVE_MS, CLIENT_TIMEOUT_MS, TIMEOUT_CLOSE_ERROR, connectRaw, metrics, pollUntil, sleep, stopAll, settledMetrics,
} from "../lib.mjs";

// The wire forms of a Ping (core-signalr spec, 6.2).
const JSON_PING = Buffer.from("7b2274797065223a367d1e", "hex");
const MSGPACK_PING = Buffer.from("029106", "hex");

// The relay's pings may come up to 10 % early (jitter), and late by whatever the shared machine
// costs (event loop, ASan): never early, and far closer to 1 s than to the backend's 15 s.
const LATE_MS = 2000;
function assertPingRhythm(pings, what) {
    for (let i = 1; i < pings.length; i++) {
        const gap = pings[i].at - pings[i - 1].at;
        assert.ok(gap >= KEEPALIVE_MS * 0.8 && gap <= KEEPALIVE_MS + LATE_MS, `${what}: ping gap ${gap} ms`);
    }
}

test("an idle client that pinged once gets relay pings about every second, then the timeout Close", async () => {
    const { client } = await connectRaw();
    try {
        client.ping();
        const pingedAt = Date.now();
        const close = await client.next((r) => r.type === 7, CLIENT_TIMEOUT_MS + 10000, "the timeout Close");
        const silence = close.at - pingedAt;
        assert.ok(silence >= CLIENT_TIMEOUT_MS - 100 && silence <= CLIENT_TIMEOUT_MS + LATE_MS,
            `closed after ${silence} ms of silence (timeout ${CLIENT_TIMEOUT_MS} ms)`);
        assert.deepStrictEqual({ ...close }, { type: 7, error: TIMEOUT_CLOSE_ERROR, allowReconnect: true });
        const pings = client.records.filter((r) => r.type === 6 && r.at < close.at);
        assert.ok(pings.length >= 1, `only ${pings.length} pings in ${silence} ms`);
        assertPingRhythm(pings, "pinged client");
        const closed = await client.waitClosed(10000);
        assert.equal(closed.code, 1000);
    } finally {
        client.close();
    }
});

test("clients that never pinged are not timed out and get pings every second (JSON and MessagePack)", async () => {
    const before = await settledMetrics();
    const json = (await connectRaw()).client;
    const msgpack = (await connectRaw({ protocol: "messagepack" })).client;
    try {
        const start = Date.now();
        // Watched for longer than the client timeout, until each has seen a few relay pings (the
        // observable event; the bound only fails a relay that stopped pinging).
        const watch = CLIENT_TIMEOUT_MS + 1500;
        const expected = Math.floor(watch / KEEPALIVE_MS) - 1;
        const pingsOf = (client, wire) => client.frames.filter((f) => f.at >= start && f.bytes.equals(wire));
        await pollUntil(() => Math.min(pingsOf(json, JSON_PING).length, pingsOf(msgpack, MSGPACK_PING).length),
            (n) => n >= expected && Date.now() - start >= watch, `${expected} relay pings on each client`, watch + 10000, 100);
        for (const [name, client, wire] of [["json", json, JSON_PING], ["messagepack", msgpack, MSGPACK_PING]]) {
            assert.equal(client.closeInfo, null, `${name} client was closed`);
            assert.deepStrictEqual(client.records.filter((r) => r.type === 7), [], `${name}: a Close arrived`);
            const pings = pingsOf(client, wire);
            assertPingRhythm(pings, name);
            assert.equal(pings[0].binary, name === "messagepack", `${name} ping frame type`);
            // Still served: a call goes through after longer than the client timeout.
            assert.equal(await client.invoke("Echo", [`${name} still here`]), `${name} still here`);
        }
        const during = await metrics();
        assert.equal(during.sessions_active, before.sessions_active + 2);
    } finally {
        await stopAll(json, msgpack);
    }
});

test("a client that pinged once and keeps sending other messages is not timed out", async () => {
    const { client } = await connectRaw();
    try {
        client.ping();
        const until = Date.now() + CLIENT_TIMEOUT_MS + 1500;
        let n = 0;
        while (Date.now() < until) {
            assert.equal(await client.invoke("Add", [n, 1]), n + 1);
            n++;
            await sleep(CLIENT_TIMEOUT_MS / 3);
        }
        assert.equal(client.closeInfo, null, "closed although it kept talking");
        assert.deepStrictEqual(client.records.filter((r) => r.type === 7), []);
    } finally {
        client.close();
    }
});

test("every timer of the closed sessions is disarmed", async () => {
    // What may stay armed: one expiry timer per negotiate token not used yet.
    await pollUntil(() => metrics(), (m) => m.sessions_active === 0 && m.timers_armed === m.negotiations_pending,
        "no sessions and no session timers", 10000);
});
