// Parity: the same raw HTTP cases (lib/observe.mjs) against the real ASP.NET SignalR 2.4.1 server
// and through the relay (in front of tests/backend), and the fields where the relay has been made
// to answer as the real server does asserted equal. What still differs by design is in README.md's
// table and not asserted here.
//   SIGNALR_LEGACY_REF_URL=http://127.0.0.1:A/signalr SIGNALR_LEGACY_RELAY_URL=http://127.0.0.1:B/signalr node --test parity/
// (run-tests.sh's "parity" suite starts all three and sets both).
import assert from "node:assert/strict";
import { test } from "node:test";
import { cases, Endpoint } from "../lib/observe.mjs";

const refUrl = process.env.SIGNALR_LEGACY_REF_URL;
const relayUrl = process.env.SIGNALR_LEGACY_RELAY_URL;
if (!refUrl || !relayUrl) throw new Error("set SIGNALR_LEGACY_REF_URL and SIGNALR_LEGACY_RELAY_URL (run-tests.sh does)");
const real = new Endpoint(refUrl);
const relay = new Endpoint(relayUrl);
const T = { timeout: 30000 };

// Runs one case against both; returns [real, relay].
async function both(name) {
    return [await cases[name](real), await cases[name](relay)];
}

function pick(o, keys) {
    return Object.fromEntries(keys.map((k) => [k, o?.[k]]));
}

test("negotiate naming a hub the server does not have: 500, no Content-Type, empty body", T, async () => {
    const [a, b] = await both("negotiate unknown hub");
    assert.deepEqual(a, { status: 500, type: null, body: "" });
    assert.deepEqual(b, a);
});

test("refusals before a connection exists: 400, the same text, no Content-Type", T, async () => {
    for (const name of ["connect with a bad connectionToken", "connect without connectionToken",
        "connect with an unknown transport", "connect without transport"]) {
        const [a, b] = await both(name);
        assert.equal(a.type, null, `${name}: the real server's answer`);
        assert.deepEqual(b, a, name);
    }
});

test("JSONP (callback=) refused: 403, no Content-Type, empty body", T, async () => {
    const [a, b] = await both("JSONP callback, OPTIONS preflight, POST negotiate, cross-origin GET");
    assert.equal(a.jsonp, "403 null ");
    assert.equal(b.jsonp, a.jsonp);
});

test("hub layer: error texts of failed invocations and the hub name in pushes", T, async () => {
    const [a, b] = await both("hub layer: results, errors, pushes (WebSockets if offered, else SSE)");
    // 1 unknown method, 2 a non-Hub exception, 3 wrong argument count: the 2.x server's one text,
    // with hub and method as the client wrote them. 0, 4-7: results and a HubException.
    for (const k of ["0", "1", "2", "3", "4", "5", "6", "7"]) assert.equal(b[k], a[k], `invocation ${k}`);
    assert.equal(a[1], '{"I":"1","E":"There was an error invoking Hub method \'chathub.Nope\'."}');
    // The pushes: the same hub name (the server's, not the client's "chathub") and method; the
    // arguments differ by design (connection ids, README row 16).
    const shape = (pushes) => pushes.map((p) => { const { A, ...rest } = JSON.parse(p); return rest; });
    assert.deepEqual(shape(a.pushes)[0], { H: "ChatHub", M: "welcome" });
    assert.deepEqual(shape(b.pushes), shape(a.pushes));
});

test("GET /signalr/hubs: 200 application/javascript with the generated proxies", T, async () => {
    const [a, b] = await both("ping, abort, hubs script");
    assert.equal(a.hubs, "200 application/javascript; charset=UTF-8 proxy script with chatHub");
    assert.equal(b.hubs, a.hubs);
});

test("negotiate for an [Authorize] hub: 401 empty without a token or with a bad one, 200 with the token", T, async () => {
    const [a, b] = await both("negotiate SecureHub ([Authorize]) without and with token");
    assert.deepEqual(a, { without: "401 ", good: 200, bad: "401 " });
    assert.deepEqual(b, a);
});

test("/send results and errors over longPolling: hub results, the 500s of a /send the server cannot dispatch, GET /send", T, async () => {
    const [a, b] = await both("send results and errors");
    assert.equal(a["unknown hub"], "500 ");
    assert.equal(a["GET /send"], '200 {"R":3,"I":"13"}');
    assert.deepEqual(b, a);
});

test("unknown paths under /signalr: 400 Protocol error: Unknown transport., no Content-Type, nosniff", T, async () => {
    const [a, b] = await both("unknown path under /signalr");
    assert.deepEqual(a, {
        "/nothing": "400 null nosniff Protocol error: Unknown transport.",
        "/negotiate/extra": "400 null nosniff Protocol error: Unknown transport.",
        "/": "400 null nosniff Protocol error: Unknown transport.",
    });
    assert.deepEqual(b, a);
});

// The status only: the body of a 404 outside /signalr is the host's, not SignalR's (README row 28).
test("a path outside /signalr: 404", T, async () => {
    const [a, b] = await both("path outside /signalr");
    assert.equal(a.status, 404);
    assert.equal(b.status, a.status);
});
