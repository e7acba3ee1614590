// 1. A hub whose backend is not there (hub "dead" points at a port nothing listens on): the
// relay must say so in the way each client can read, and count the failure in /metrics.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    RELAY_URL, DEAD_PORT, RawClient, metrics, negotiate, wsUrl, stockConnection, withTimeout, pollUntil,
    TIMEOUT_MS, settledMetrics,
} from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

// "<what failed>: <cause>": the cause is what the relay's connect attempt reported; it must be
// there (non-empty), and both paths must report the same cause for the same failure.
function causeOf(text, prefix) {
    assert.ok(text.startsWith(prefix), `'${text}' does not start with '${prefix}'`);
    const cause = text.slice(prefix.length);
    assert.match(cause, /\S/, `no cause after '${prefix}'`);
    return cause;
}
let negotiateCause = null;

async function sessionsBackTo(value, base = RELAY_URL) {
    await pollUntil(() => metrics(base), (m) => m.sessions_active === value, `sessions_active back to ${value}`, 10000);
}

test("negotiate answers 503 with a text naming the hub and the failure", async () => {
    const before = await settledMetrics();
    const res = await negotiate(RELAY_URL, "dead");
    assert.equal(res.status, 503, res.body);
    assert.match(res.headers["content-type"], /^text\/plain/);
    negotiateCause = causeOf(res.body, "The backend hub 'dead' is unreachable: ");
    const after = await metrics();
    assert.equal(after.backend_failures_total, before.backend_failures_total + 1, "backend_failures_total");
    assert.equal(after.negotiations_pending, before.negotiations_pending, "no token was kept");
    assert.equal(after.negotiations_total, before.negotiations_total + 1, "negotiations_total");
});

// A relay of its own for the next test, with hub "dead" and the default 15 s handshake timeout: the
// tuned relay's 1 s would answer by itself ("Handshake was canceled.") if the wait below took
// longer on a loaded machine, and 1 s is no window to check an absence in. Stopped with SIGTERM:
// it must exit 0 without a sanitizer report.
function startOwnRelay() {
    return startRelay(["--hub", `dead=http://127.0.0.1:${DEAD_PORT}/chat`]);
}

test("skip-negotiation WebSocket gets a handshake error naming the failure, then the socket closes", async () => {
    const own = await startOwnRelay();
    try {
        const before = await settledMetrics(own.url);
        const client = await RawClient.connect(wsUrl(own.url, "dead"));
        try {
            // The backend connection fails at once, but a server never speaks before the client's
            // handshake request: nothing may arrive until it is sent. Waiting for the failure in
            // /metrics (the event an early answer would follow) and then for WebSocket pongs (the
            // relay read and answered frames sent after it) gives an early answer its chance.
            await pollUntil(() => metrics(own.url), (m) => m.backend_failures_total === before.backend_failures_total + 1,
                "the relay's backend connection for the client to fail", 10000);
            await client.pingPong();
            assert.equal(client.frames.length, 0, "the relay answered a handshake that was not sent yet");
            const answer = await client.handshake();
            assert.equal(typeof answer.error, "string", JSON.stringify(answer));
            const cause = causeOf(answer.error, "The relay could not connect to the backend hub 'dead': ");
            if (negotiateCause !== null) assert.equal(cause, negotiateCause, "same failure, same cause");
            assert.equal(Object.keys(answer).filter((k) => k !== "type").join(), "error", "only an error member");
            const closed = await client.waitClosed(10000);
            assert.equal(closed.code, 1000);
            assert.equal(client.records.length, 0, `nothing after the handshake error: ${JSON.stringify(client.records)}`);
        } finally {
            client.close();
        }
        const after = await metrics(own.url);
        assert.equal(after.backend_failures_total, before.backend_failures_total + 1, "backend_failures_total");
        await sessionsBackTo(before.sessions_active, own.url);
    } finally {
        await own.stop();
    }
});

test("stock client with skipNegotiation: start() rejects with the relay's text", async () => {
    const before = await settledMetrics();
    const conn = stockConnection(`${RELAY_URL}/dead`, { skipNegotiation: true });
    const failure = await withTimeout(conn.start().then(() => null, (e) => e), TIMEOUT_MS, "start() to fail");
    assert.ok(failure instanceof Error, "start() must fail");
    assert.match(failure.message, /could not connect to the backend hub 'dead'/);
    assert.equal(conn.state, "Disconnected");
    const after = await metrics();
    assert.equal(after.backend_failures_total, before.backend_failures_total + 1, "backend_failures_total");
    await sessionsBackTo(before.sessions_active);
});

test("stock client with negotiate: start() rejects with the 503 text", async () => {
    const conn = stockConnection(`${RELAY_URL}/dead`);
    const failure = await withTimeout(conn.start().then(() => null, (e) => e), TIMEOUT_MS, "start() to fail");
    assert.ok(failure instanceof Error, "start() must fail");
    assert.match(failure.message, /503/);
    assert.match(failure.message, new RegExp(`${DEAD_PORT}|unreachable`));
});
