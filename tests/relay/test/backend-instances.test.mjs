// Several backend instances of one hub (--hub chat=URL1,URL2,URL3): the shared test backend and
// two of this test's own. Stock Core clients (negotiate, then WebSocket) and a legacy connection
// spread over the three by fewest connections, and every one works, which it can only if the
// WebSocket that follows a negotiate reaches the backend process that answered it (another one
// answers 404 to an unknown token). Then one of them is killed under load: its clients reconnect
// (automatic reconnect) to the survivors, new clients keep working; once it is back, new clients
// reach it again. /metrics and /readyz show each instance's connections and state. The test
// backend's RequestDetails names the port that served a call, so each client's instance is known:
// only the killed instance's clients reconnect, exactly once each, and no other client notices.
import { test, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../lib/common.mjs";
import { startProcess, startRelay } from "../../lib/process.mjs";
import {
    BACKEND_URL, TIMEOUT_MS, WebSocket, connectStock, httpRequest, pollUntil, stockConnection, stopAll, withTimeout,
} from "../lib.mjs";

const BACKEND_DLL = path.resolve(path.dirname(fileURLToPath(import.meta.url)),
    "../../backend/bin/Release/net10.0/signalr-test-backend.dll");

function startBackend(port) {
    return startProcess("dotnet", [BACKEND_DLL, "--urls", `http://127.0.0.1:${port}`], {
        port, ready: "/health", name: "signalr-test-backend", timeoutMs: 60000,
        env: { ASPNETCORE_ENVIRONMENT: "Production", Logging__LogLevel__Default: "Warning", DOTNET_NOLOGO: "1" },
    });
}

// The per-instance lines of /metrics: { url: { active, up, connects, failures } }.
async function instances(relay, hub = "chat") {
    const res = await httpRequest("GET", `${relay.url}/metrics`);
    const out = {};
    for (const line of res.body.split("\n")) {
        const m = /^signalr_relay_backend_(active|up|connects_total|instance_failures_total)\{hub="([^"]+)",backend="([^"]+)"\} (\d+)$/.exec(line);
        if (!m || m[2] !== hub) continue;
        const key = { active: "active", up: "up", connects_total: "connects", instance_failures_total: "failures" }[m[1]];
        (out[m[3]] ??= {})[key] = Number(m[4]);
    }
    return out;
}

// The /readyz lines of one hub's instances: { url: { state, links } }.
async function readyz(relay, hub = "chat") {
    const res = await httpRequest("GET", `${relay.url}/readyz`);
    const out = {};
    let inHub = false;
    for (const line of res.body.split("\n")) {
        if (line.startsWith("hub ")) inHub = line.startsWith(`hub ${hub}: `);
        const m = /^  backend (\S+): (.+), (\d+) active links?$/.exec(line);
        if (inHub && m) out[m[1]] = { state: m[2], links: Number(m[3]) };
    }
    return out;
}

// The backend port that serves this connection's calls.
const portOf = async (conn) => (await withTimeout(conn.invoke("RequestDetails"), TIMEOUT_MS, "RequestDetails")).localPort;
const portOfUrl = (u) => Number(new URL(u).port);

const ports = [await freePort(), await freePort()];
const own = await Promise.all(ports.map(startBackend));
const urls = [`${BACKEND_URL}/chat`, `${own[0].url}/chat`, `${own[1].url}/chat`];
after(async () => { for (const b of own) await b.kill("SIGTERM"); });

// A legacy connection to hub chathub by hand (negotiate, connect, start) and one call over it.
async function legacyEcho(relay, value) {
    const base = `${relay.url}/signalr`;
    const data = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));
    const neg = await httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${data}`);
    assert.equal(neg.status, 200, neg.body);
    const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}` +
        `&connectionData=${data}`;
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/connect?${query}`);
    ws.on("error", () => {});
    try {
        await withTimeout(new Promise((resolve) => ws.on("open", resolve)), TIMEOUT_MS, "legacy connect");
        const start = await httpRequest("GET", `${base}/start?${query}`);
        assert.equal(start.status, 200, start.body);
        const result = new Promise((resolve) => ws.on("message", (d) => {
            const f = JSON.parse(d.toString("utf8"));
            if (f.I === "0") resolve(f);
        }));
        ws.send(JSON.stringify({ H: "chathub", M: "Echo", A: [value], I: 0 }));
        return (await withTimeout(result, TIMEOUT_MS, "legacy Echo result")).R;
    } finally {
        ws.terminate();
    }
}

test("three instances: clients spread by fewest connections, each WebSocket reaches the instance that negotiated", async () => {
    const relay = await startRelay(["--hub", `chat=${urls.join(",")}`, "--hub", `chathub=${urls.join(",")}`]);
    const conns = [];
    try {
        for (let i = 0; i < 6; i++) {
            const { conn } = await connectStock(`${relay.url}/chat`);
            conns.push(conn);
            assert.equal(await conn.invoke("Echo", `client ${i}`), `client ${i}`);
        }
        const spread = await instances(relay);
        assert.deepEqual(Object.keys(spread).sort(), [...urls].sort());
        for (const u of urls) {
            assert.equal(spread[u].active, 2, `instance ${u}: ${JSON.stringify(spread)}`);
            assert.equal(spread[u].up, 1);
        }
        // /readyz: one line per instance, up, with its links; the clients' own calls agree.
        const served = (await Promise.all(conns.map(portOf))).sort();
        assert.deepEqual(served, urls.flatMap((u) => [portOfUrl(u), portOfUrl(u)]).sort());
        assert.deepEqual(await readyz(relay), Object.fromEntries(urls.map((u) => [u, { state: "up", links: 2 }])));
        // A legacy connection's hub link negotiates and links on one instance too.
        assert.equal(await legacyEcho(relay, "legacy"), "legacy");
    } finally {
        await stopAll(...conns);
        await relay.stop();
    }
});

test("an instance killed under load: its clients reconnect to the survivors, no other client notices; back, it takes new clients", async () => {
    const relay = await startRelay(["--hub", `chat=${urls.join(",")}`]);
    const conns = [];
    const reconnecting = [], reconnected = [];
    try {
        for (let i = 0; i < 6; i++) {
            // keepAliveMs: the stock 15 s pings are fine for the default-flag relay.
            const conn = stockConnection(`${relay.url}/chat`, { reconnectDelays: Array(60).fill(500) });
            reconnecting[i] = 0;
            reconnected[i] = 0;
            conn.onreconnecting(() => { reconnecting[i]++; });
            conn.onreconnected(() => { reconnected[i]++; });
            await withTimeout(conn.start(), TIMEOUT_MS, "start");
            conns.push(conn);
        }
        const victim = urls[1];
        assert.equal((await instances(relay))[victim].active, 2);
        const before = await Promise.all(conns.map(portOf));
        const onVictim = before.map((p) => p === ports[0]);
        assert.equal(onVictim.filter(Boolean).length, 2, `ports served: ${before}`);
        await own[0].kill("SIGKILL");
        await pollUntil(() => reconnected.filter((n, i) => onVictim[i] && n > 0).length, (n) => n === 2,
            "the killed instance's two clients to reconnect", 60000);
        for (const [i, c] of conns.entries()) {
            assert.equal(c.state, "Connected", `client ${i}`);
            assert.equal(await c.invoke("Echo", `after ${i}`), `after ${i}`);
        }
        // Exactly the victim's clients reconnected, once each; the other four never noticed.
        assert.deepEqual(reconnecting, onVictim.map((v) => (v ? 1 : 0)), `reconnecting per client (victim: ${onVictim})`);
        assert.deepEqual(reconnected, onVictim.map((v) => (v ? 1 : 0)), `reconnected per client (victim: ${onVictim})`);
        const after = await Promise.all(conns.map(portOf));
        for (const [i, p] of after.entries()) {
            if (onVictim[i]) assert.ok(p === portOfUrl(urls[0]) || p === ports[1], `client ${i} moved to a survivor: ${p}`);
            else assert.equal(p, before[i], `client ${i} stayed on its instance`);
        }
        const during = await instances(relay);
        assert.equal(during[victim].active, 0, JSON.stringify(during));
        assert.equal(during[urls[0]].active + during[urls[2]].active, 6, JSON.stringify(during));
        // /readyz: the killed instance out (backed off, or its backoff over but still failed), the
        // survivors up with as many links as clients on them.
        const ready = await readyz(relay);
        assert.match(ready[victim].state, /^(backed off for another \d+\.\d s \(\d+ failures? in a row\)|not reachable \(.+\))$/,
            JSON.stringify(ready));
        assert.equal(ready[victim].links, 0);
        for (const u of [urls[0], urls[2]]) {
            assert.equal(ready[u].state, "up", JSON.stringify(ready));
            assert.equal(ready[u].links, after.filter((p) => p === portOfUrl(u)).length, `${u}: ${JSON.stringify(ready)}`);
        }
        // New clients while it is down: all served (a refused negotiate tries the next instance).
        for (let i = 0; i < 3; i++) {
            const { conn } = await connectStock(`${relay.url}/chat`);
            conns.push(conn);
        }
        // Back on the same port: once its backoff is over, new clients go there (it has the fewest).
        own[0] = await startBackend(ports[0]);
        await pollUntil(async () => {
            const { conn } = await connectStock(`${relay.url}/chat`);
            conns.push(conn);
            return (await instances(relay))[victim].active;
        }, (n) => n >= 1, "a new client on the restarted instance", 60000, 500);
        assert.equal((await readyz(relay))[victim].state, "up");
    } finally {
        await stopAll(...conns);
        await relay.stop();
    }
});
