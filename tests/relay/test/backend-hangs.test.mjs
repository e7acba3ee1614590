// A backend that accepts connections and answers only when the test says so (hub "hung": this
// test listens on its port). A client that gives up while the relay is still waiting for that
// backend must not leave anything behind. (How long the relay itself waits for a backend that
// never answers is lws' timeout, 20 s: not tested here.)
import { test, before, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import net from "node:net";
import http from "node:http";
import {
    RELAY_URL, HUNG_PORT, NEGOTIATE_TIMEOUT_MS, RawClient, WebSocket, cpuShareOver, httpRequest, metrics, pollUntil,
    wsUrl, withTimeout, TIMEOUT_MS, RS, settledMetrics,
} from "../lib.mjs";

let server;
const sockets = [];

before(async () => {
    server = net.createServer((socket) => {
        const entry = { socket, data: "", closedAt: null };
        socket.on("data", (d) => { entry.data += d.toString("latin1"); });
        socket.on("close", () => { entry.closedAt = Date.now(); });
        socket.on("error", () => {});
        sockets.push(entry);
    });
    await new Promise((resolve, reject) => server.listen(HUNG_PORT, "127.0.0.1", resolve).on("error", reject));
});

after(() => {
    for (const { socket } of sockets) socket.destroy();
    server.close();
});

// Waits for the relay's next request to the hung backend and returns it: the first connection
// from index `count` on that carries one and was not returned before. The relay's probes
// (--probe-interval: a GET of the hub path with User-Agent signalr-relay-probe) are not it.
const returned = new Set();
const isProbe = (data) => /\r\nUser-Agent: signalr-relay-probe\r\n/i.test(data);
async function nextBackendRequest(count, what) {
    const found = await pollUntil(() => sockets.slice(count).find((s) => !returned.has(s) && /\r\n\r\n/.test(s.data) &&
        !isProbe(s.data)),
        (s) => s !== undefined, what, 10000);
    returned.add(found);
    return found;
}

const NEGOTIATE_BODY = JSON.stringify({ negotiateVersion: 1, connectionId: "hung-id", connectionToken: "hung-token",
    availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] });
const NEGOTIATE_ANSWER = `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${NEGOTIATE_BODY.length}\r\n\r\n${NEGOTIATE_BODY}`;

// The relay does not notice a client that leaves while its negotiate waits for the backend (lws
// stops reading a request's connection until it is answered); it finds out when the backend
// answers and the reply cannot be written. Nothing may be kept then but the token it minted,
// which expires as any unused one.
test("negotiate abandoned by its client, answered late by the backend: nothing is kept", async () => {
    const start = await settledMetrics();
    const n = sockets.length;
    const req = http.request(`${RELAY_URL}/hung/negotiate?negotiateVersion=1`, { method: "POST", agent: false });
    req.on("error", () => {});
    req.end();
    const backendRequest = await nextBackendRequest(n, "the relay's negotiate to the hung backend");
    assert.match(backendRequest.data, /^POST \/chat\/negotiate\?negotiateVersion=1 HTTP\/1\.1\r\n/);
    req.destroy(); // the client gives up
    // Its hang-up is input the relay does not read before the answer: it must not wake for it in a loop.
    const busy = await cpuShareOver(1000);
    assert.ok(busy < 0.5, `the relay used ${Math.round(busy * 100)} % of a CPU while the abandoned negotiate waited`);
    // Still waiting for the backend then (so the close below is the answer's doing):
    assert.equal(backendRequest.closedAt, null, "the relay gave up on the backend by itself");
    backendRequest.socket.write(NEGOTIATE_ANSWER); // the backend answers late
    await pollUntil(() => backendRequest.closedAt, (t) => t !== null, "the relay to close its backend request", 10000);
    await pollUntil(() => metrics(), (m) => m.negotiations_pending === start.negotiations_pending &&
        m.timers_armed === start.timers_armed, "no negotiation or timer left", NEGOTIATE_TIMEOUT_MS + TIMEOUT_MS);
    const m = await metrics();
    assert.equal(m.sessions_active, start.sessions_active);
    assert.equal(m.backend_failures_total, start.backend_failures_total, "a client giving up is no backend failure");
});

for (const phase of ["negotiating", "linking"]) {
    test(`skip-negotiation client gone while the relay is ${phase}: its backend connection is dropped`, async () => {
        const start = await settledMetrics();
        const n = sockets.length;
        const client = await RawClient.connect(wsUrl(RELAY_URL, "hung"));
        client.sendText(JSON.stringify({ protocol: "json", version: 1 }) + RS);
        const backendRequest = await nextBackendRequest(n, "the relay's negotiate to the hung backend");
        let pending = backendRequest;
        if (phase === "linking") {
            // Answer the negotiate, then hang on the WebSocket upgrade that follows.
            backendRequest.socket.end(NEGOTIATE_ANSWER);
            pending = await nextBackendRequest(n + 1, "the relay's WebSocket upgrade to the hung backend");
            const line = /^GET \/chat\?id=([^ &]+) HTTP\/1\.1\r\n/.exec(pending.data);
            assert.ok(line, pending.data);
            assert.equal(decodeURIComponent(line[1]), "hung-token");
            assert.match(pending.data, /\r\nupgrade: websocket\r\n/i);
        }
        // The relay reads and answers the client's socket meanwhile (pongs): it is waiting, not stuck.
        await client.pingPong();
        assert.equal(pending.closedAt, null, "the relay gave up on the backend by itself");
        assert.deepStrictEqual(client.frames, [], "no answer can have come yet");
        client.terminate();
        await pollUntil(() => pending.closedAt, (t) => t !== null, "the relay to close its backend connection", 10000);
        await pollUntil(() => metrics(),
            (m) => m.sessions_active === start.sessions_active && m.backend_links_active === start.backend_links_active,
            "sessions and backend links back to their earlier values", 10000);
    });
}

// A legacy /start waits for the backend links of the connection's hubs; a client that gives up on
// it meanwhile must not make the relay spin either, and closing the connection drops its link.
test("legacy start abandoned while its backend link negotiates: no busy loop, nothing kept", async () => {
    const start = await settledMetrics();
    const n = sockets.length;
    const base = `${RELAY_URL}/signalr`;
    const data = encodeURIComponent(JSON.stringify([{ name: "hung" }]));
    // Legacy negotiate asks the hub's backend first (relay/legacy_authorize.c): that one is answered.
    const negotiating = httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${data}`);
    const check = await nextBackendRequest(n, "the legacy negotiate's request to the hung backend");
    check.socket.end(NEGOTIATE_ANSWER);
    const neg = await negotiating;
    assert.equal(neg.status, 200, neg.body);
    const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}` +
        `&connectionData=${data}`;
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/connect?${query}`);
    ws.on("error", () => {});
    let backendRequest;
    try { // a failure must not leave the socket open: the test runner would wait for it forever
        await withTimeout(new Promise((resolve) => ws.on("open", resolve)), TIMEOUT_MS, "legacy connect");
        backendRequest = await nextBackendRequest(n, "the relay's negotiate to the hung backend");
        const req = http.request(`${base}/start?${query}`, { agent: false });
        req.on("error", () => {});
        const sent = new Promise((resolve) => req.on("finish", resolve));
        req.end();
        // The /start is written; a later request answered means the relay's loop went past the
        // socket it came on (nothing counts a waiting /start to wait for).
        await withTimeout(sent, TIMEOUT_MS, "the /start to be written");
        await metrics();
        req.destroy(); // the client gives up on its start
        const busy = await cpuShareOver(1000);
        assert.ok(busy < 0.5, `the relay used ${Math.round(busy * 100)} % of a CPU while the abandoned start waited`);
    } finally {
        ws.terminate();
    }
    await pollUntil(() => metrics(), (m) => m.legacy_sessions_active === start.legacy_sessions_active,
        // DisconnectTimeout + the original's 5 s transport threshold, and room for a loaded machine.
        "the legacy session gone", Number(process.env.RELAY_LEGACY_DISCONNECT_S) * 1000 + 5000 + TIMEOUT_MS);
    await pollUntil(() => backendRequest.closedAt, (t) => t !== null, "the relay to close its backend request", 10000);
});
