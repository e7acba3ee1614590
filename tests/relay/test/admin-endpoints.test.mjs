// /healthz, /readyz and /metrics: on the public port by default (as /metrics always was), and
// with --admin-listen only on that address (the public port then answers 404 for them). /readyz
// answers per hub, 503 once a hub has no backend instance left that the relay could reach.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import net from "node:net";
import { freePort } from "../../lib/common.mjs";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, DEAD_PORT, closeServer, httpRequest, listen, pollUntil } from "../lib.mjs";

test("default: /healthz, /readyz and /metrics on the public port", async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`]);
    try {
        const health = await httpRequest("GET", `${relay.url}/healthz`);
        assert.equal(health.status, 200);
        assert.equal(health.body, "ok");
        const ready = await httpRequest("GET", `${relay.url}/readyz`);
        assert.equal(ready.status, 200, ready.body);
        assert.equal(ready.body, "ready\nhub chat: ready (1 of 1 backend instance reachable)\n");
        assert.equal((await httpRequest("GET", `${relay.url}/metrics`)).status, 200);
    } finally {
        await relay.stop();
    }
});

test("--admin-listen: admin paths there only; /readyz turns 503 when a hub's backends fail", async () => {
    const adminPort = await freePort();
    const admin = `http://127.0.0.1:${adminPort}`;
    const relay = await startRelay(["--admin-listen", `127.0.0.1:${adminPort}`, "--probe-interval", "0", "--hub", `chat=${BACKEND_URL}/chat`,
        "--hub", `dead=http://127.0.0.1:${DEAD_PORT}/chat`], { ready: `${admin}/healthz` });
    try {
        for (const p of ["/healthz", "/readyz", "/metrics"])
            assert.equal((await httpRequest("GET", `${relay.url}${p}`)).status, 404, `${p} on the public port`);
        assert.equal((await httpRequest("GET", `${admin}/healthz`)).body, "ok");
        assert.equal((await httpRequest("GET", `${admin}/chat/negotiate`)).status, 404, "hubs are not served there");
        assert.match((await httpRequest("GET", `${admin}/metrics`)).body, /^signalr_relay_sessions_active 0$/m);
        const before = await httpRequest("GET", `${admin}/readyz`);
        assert.equal(before.status, 200, before.body);
        // A client's negotiate for hub dead fails: that hub is not ready, the other one is.
        const neg = await httpRequest("POST", `${relay.url}/dead/negotiate?negotiateVersion=1`);
        assert.equal(neg.status, 503, neg.body);
        const after = await pollUntil(() => httpRequest("GET", `${admin}/readyz`), (r) => r.status === 503, "/readyz 503");
        assert.equal(after.body, "not ready\nhub chat: ready (1 of 1 backend instance reachable)\n" +
            "hub dead: not ready (0 of 1 backend instance reachable)\n");
        assert.match((await httpRequest("GET", `${admin}/metrics`)).body,
            new RegExp(`^signalr_relay_backend_up\\{hub="dead",backend="http://127.0.0.1:${DEAD_PORT}/chat"\\} 0$`, "m"));
    } finally {
        await relay.stop();
    }
});

// --probe-interval: a TCP connect to every instance now and then, so /readyz follows a backend that
// goes away and comes back while no client connects.
test("probes: /readyz follows a backend that stops and comes back, without client traffic", async () => {
    const port = await freePort();
    let server = net.createServer((s) => s.destroy());
    await listen(server, port);
    const relay = await startRelay(["--probe-interval", "1", "--hub", `chat=http://127.0.0.1:${port}/chat`]);
    try {
        assert.equal((await httpRequest("GET", `${relay.url}/readyz`)).status, 200);
        await closeServer(server);
        const down = await pollUntil(() => httpRequest("GET", `${relay.url}/readyz`), (r) => r.status === 503,
            "/readyz 503 after the backend went away");
        assert.match(down.body, /^hub chat: not ready \(0 of 1 backend instance reachable\)$/m);
        server = net.createServer((s) => s.destroy());
        await listen(server, port);
        await pollUntil(() => httpRequest("GET", `${relay.url}/readyz`), (r) => r.status === 200,
            "/readyz 200 once it is back");
    } finally {
        await relay.stop();
        await closeServer(server).catch(() => {});
    }
});
