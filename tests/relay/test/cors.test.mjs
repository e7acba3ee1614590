// 9. CORS. The tuned relay allows exactly one browser origin (--cors-origin https://app.example):
// a preflight from it gets 204 with that origin echoed and credentials allowed, any other origin
// gets 403, and a negotiate from it carries the same headers. The plain relay has no
// --cors-origin: it sends no CORS header at all, whatever the Origin.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { RELAY_URL, PLAIN_RELAY_URL, CORS_ORIGIN, httpRequest, negotiate } from "../lib.mjs";

const OTHER_ORIGIN = "https://evil.example";

function preflight(base, origin) {
    return httpRequest("OPTIONS", `${base}/chat/negotiate?negotiateVersion=1`, {
        Origin: origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-requested-with,x-signalr-user-agent",
    });
}

function corsHeaders(res) {
    return Object.fromEntries(Object.entries(res.headers).filter(([name]) => name.startsWith("access-control-")));
}

test("preflight from the allowed origin: 204, origin echoed, credentials true", async () => {
    const res = await preflight(RELAY_URL, CORS_ORIGIN);
    assert.equal(res.status, 204);
    assert.equal(res.headers["access-control-allow-origin"], CORS_ORIGIN);
    assert.equal(res.headers["access-control-allow-credentials"], "true");
    assert.match(res.headers["access-control-allow-methods"], /\bPOST\b/);
    assert.equal(res.headers["access-control-allow-headers"], "x-requested-with,x-signalr-user-agent");
    assert.match(res.headers.vary ?? "", /Origin/);
});

test("preflight from another origin: 403 without CORS headers", async () => {
    const res = await preflight(RELAY_URL, OTHER_ORIGIN);
    assert.equal(res.status, 403);
    assert.deepStrictEqual(corsHeaders(res), {});
});

test("an origin differing only in case or port is another origin", async () => {
    for (const origin of ["https://APP.example", "https://app.example:8443", "http://app.example"]) {
        const res = await preflight(RELAY_URL, origin);
        assert.equal(res.status, 403, origin);
    }
});

test("negotiate from the allowed origin carries the CORS headers; from another origin none", async () => {
    const allowed = await negotiate(RELAY_URL, "chat", { Origin: CORS_ORIGIN });
    assert.equal(allowed.status, 200, allowed.body);
    assert.equal(allowed.headers["access-control-allow-origin"], CORS_ORIGIN);
    assert.equal(allowed.headers["access-control-allow-credentials"], "true");
    const other = await negotiate(RELAY_URL, "chat", { Origin: OTHER_ORIGIN });
    assert.equal(other.status, 200, other.body);
    assert.deepStrictEqual(corsHeaders(other), {});
});

test("without --cors-origin: no CORS header at all, whatever the origin", async () => {
    for (const origin of [CORS_ORIGIN, OTHER_ORIGIN]) {
        const pre = await preflight(PLAIN_RELAY_URL, origin);
        assert.notEqual(pre.status, 204, `preflight from ${origin} accepted`);
        assert.deepStrictEqual(corsHeaders(pre), {}, `preflight from ${origin}`);
        const neg = await negotiate(PLAIN_RELAY_URL, "chat", { Origin: origin });
        assert.equal(neg.status, 200, neg.body);
        assert.deepStrictEqual(corsHeaders(neg), {}, `negotiate from ${origin}`);
    }
});
