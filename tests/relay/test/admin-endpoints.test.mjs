// /healthz, /readyz and /metrics: on the public port by default (as /metrics always was), and
// with --admin-listen only on that address (the public port then answers 404 for them). /readyz
// answers per hub, 503 once a hub has no backend instance left that the relay could reach, and
// under each hub one line per backend instance: its URL, its state and its active links.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { freePort } from "../../lib/common.mjs";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, DEAD_PORT, closeServer, connectRaw, httpRequest, listen, pollUntil } from "../lib.mjs";

test("default: /healthz, /readyz and /metrics on the public port", async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`]);
    try {
        const health = await httpRequest("GET", `${relay.url}/healthz`);
        assert.equal(health.status, 200);
        assert.equal(health.body, "ok");
        const ready = await httpRequest("GET", `${relay.url}/readyz`);
        assert.equal(ready.status, 200, ready.body);
        assert.equal(ready.body, "ready\nhub chat: ready (1 of 1 backend instance reachable)\n" +
            `  backend ${BACKEND_URL}/chat: up, 0 active links\n`);
        assert.equal((await httpRequest("GET", `${relay.url}/metrics`)).status, 200);
        // A client's backend link shows in its instance's line.
        const { client } = await connectRaw({ base: relay.url });
        try {
            assert.match((await httpRequest("GET", `${relay.url}/readyz`)).body,
                new RegExp(`^  backend ${BACKEND_URL}/chat: up, 1 active link$`, "m"));
        } finally {
            client.close();
        }
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
        // The dead instance: backed off after its failure (2 s), or its backoff over and not reachable.
        assert.match(after.body, new RegExp("^not ready\nhub chat: ready \\(1 of 1 backend instance reachable\\)\n" +
            `  backend ${BACKEND_URL}/chat: up, 0 active links\n` +
            "hub dead: not ready \\(0 of 1 backend instance reachable\\)\n" +
            `  backend http://127.0.0.1:${DEAD_PORT}/chat: ` +
            "(backed off for another \\d+\\.\\d s \\(\\d+ failures? in a row\\)|not reachable \\(its last connection or probe failed; the next client tries it\\)), 0 active links\n$"),
            after.body);
        assert.match((await httpRequest("GET", `${admin}/metrics`)).body,
            new RegExp(`^signalr_relay_backend_up\\{hub="dead",backend="http://127.0.0.1:${DEAD_PORT}/chat"\\} 0$`, "m"));
    } finally {
        await relay.stop();
    }
});

// --probe-interval: an HTTP check of every instance now and then (GET of the hub's path: any status
// counts, 401 included: the app answered), so /readyz follows a backend that goes away and comes back
// while no client connects.
const answering = (status) => http.createServer((req, res) => {
    res.writeHead(status, { connection: "close" });
    res.end();
});

test("probes: /readyz follows a backend that stops and comes back, without client traffic", async () => {
    const port = await freePort();
    let server = answering(401); // an [Authorize] hub answers 401: up all the same
    await listen(server, port);
    const relay = await startRelay(["--probe-interval", "1", "--hub", `chat=http://127.0.0.1:${port}/chat`]);
    try {
        assert.equal((await httpRequest("GET", `${relay.url}/readyz`)).status, 200);
        await new Promise((resolve) => setTimeout(resolve, 2500)); // probes ran and found it answering
        assert.equal((await httpRequest("GET", `${relay.url}/readyz`)).status, 200, "a 401 answer is an answer");
        await closeServer(server);
        const down = await pollUntil(() => httpRequest("GET", `${relay.url}/readyz`), (r) => r.status === 503,
            "/readyz 503 after the backend went away");
        assert.match(down.body, /^hub chat: not ready \(0 of 1 backend instance reachable\)$/m);
        server = answering(400);
        await listen(server, port);
        await pollUntil(() => httpRequest("GET", `${relay.url}/readyz`), (r) => r.status === 200,
            "/readyz 200 once it is back");
    } finally {
        await relay.stop();
        await closeServer(server).catch(() => {});
    }
});

// A backend process that accepts TCP and never answers (hung) is not ready: a TCP connect alone
// counted it as reachable. It is ready again once it answers HTTP.
test("probes: a backend that accepts TCP but never answers HTTP makes /readyz 503", async () => {
    const port = await freePort();
    const held = [];
    let server = net.createServer((s) => { held.push(s); s.on("error", () => {}); });
    await listen(server, port);
    const relay = await startRelay(["--probe-interval", "1", "--hub", `chat=http://127.0.0.1:${port}/chat`]);
    try {
        const down = await pollUntil(() => httpRequest("GET", `${relay.url}/readyz`), (r) => r.status === 503,
            "/readyz 503 for a backend that never answers", 15000, 200);
        assert.match(down.body, /^hub chat: not ready \(0 of 1 backend instance reachable\)$/m);
        assert.ok(held.some((s) => s.bytesRead > 0), "the probe asked the backend something");
        for (const s of held) s.destroy();
        await closeServer(server);
        server = answering(400); // ASP.NET Core answers a GET of a hub's path 400 "Connection ID required"
        await listen(server, port);
        await pollUntil(() => httpRequest("GET", `${relay.url}/readyz`), (r) => r.status === 200,
            "/readyz 200 once it answers", 15000, 200);
    } finally {
        await relay.stop();
        for (const s of held) s.destroy();
        await closeServer(server).catch(() => {});
    }
});
