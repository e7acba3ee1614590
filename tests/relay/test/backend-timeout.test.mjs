// A backend that accepts TCP and never answers: the client's negotiate gets 504 with a text naming
// the hub once --backend-timeout has passed (the relay once closed the client's socket after
// ~28 s without any answer), the backend request is dropped, and nothing stays behind.
import { test, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import net from "node:net";
import {
    RS, RawClient, WebSocket, httpRequest, listen, closeServer, pollUntil, metrics, withTimeout, wsUrl,
} from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const BACKEND_TIMEOUT_S = 2;
const sockets = [];
const silent = net.createServer((socket) => { sockets.push(socket); socket.on("error", () => {}); });
after(async () => {
    for (const s of sockets) s.destroy();
    await closeServer(silent);
});
let silentPort = null;
const listenSilent = async () => (silentPort ??= await listen(silent));

test("negotiate to a backend that never answers: 504 naming the hub, nothing kept", async () => {
    const port = await listenSilent();
    const relay = await startRelay(["--hub", `stuck=http://127.0.0.1:${port}/chat`, "--backend-timeout", String(BACKEND_TIMEOUT_S)]);
    try {
        const started = Date.now();
        const res = await httpRequest("POST", `${relay.url}/stuck/negotiate?negotiateVersion=1`, {}, null, 30000);
        const took = Date.now() - started;
        assert.equal(res.status, 504, res.body);
        assert.equal(res.body, `The backend hub 'stuck' did not answer the negotiate within ${BACKEND_TIMEOUT_S} s.`);
        assert.ok(took >= BACKEND_TIMEOUT_S * 1000 - 100, `answered after ${took} ms, before the timeout`);
        assert.ok(sockets.length >= 1, "the relay never reached the backend");
        await pollUntil(() => metrics(relay.url), (m) => m.negotiations_pending === 0 && m.timers_armed === 0,
            "the negotiation and its timer gone");
        assert.equal((await metrics(relay.url)).backend_failures_total, 1);
    } finally {
        await relay.stop();
    }
});

// libwebsockets 4.1.6 gives a client connection its own timeout (20 s) for every wait, and used to
// decide before a longer --backend-timeout: at 20 s the client got 503 "backend closed the
// connection" instead of the 504 due at 22 s. Its timeouts now stay behind the relay's deadline.
test("--backend-timeout above libwebsockets' 20 s: the relay's deadline decides (504 at 22 s)", async () => {
    const port = await listenSilent();
    const relay = await startRelay(["--hub", `stuck=http://127.0.0.1:${port}/chat`, "--backend-timeout", "22"]);
    try {
        const started = Date.now();
        const res = await httpRequest("POST", `${relay.url}/stuck/negotiate?negotiateVersion=1`, {}, null, 60000);
        const took = Date.now() - started;
        assert.equal(res.status, 504, `after ${took} ms: ${res.body}`);
        assert.equal(res.body, "The backend hub 'stuck' did not answer the negotiate within 22 s.");
        assert.ok(took >= 21900, `answered after ${took} ms, before the timeout`);
    } finally {
        await relay.stop();
    }
});

// The same backend on the relay's own backend requests (issue 10, defect 6 "on every path"): a
// client that skips negotiation, a backend that answers the negotiate and then never the WebSocket
// upgrade, and a legacy connection's hub link. Each fails after --backend-timeout (lws' own 20 s
// timeout was the only bound before), with a text naming the hub.
const NEGOTIATE_BODY = JSON.stringify({ negotiateVersion: 1, connectionId: "late-id", connectionToken: "late-token",
    availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] });
const halfSockets = [];
// Answers every negotiate at once and never a WebSocket upgrade.
const halfway = net.createServer((socket) => {
    halfSockets.push(socket);
    socket.on("error", () => {});
    let data = "";
    socket.on("data", (d) => {
        data += d.toString("latin1");
        if (/\r\n\r\n/.test(data) && data.startsWith("POST "))
            socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${NEGOTIATE_BODY.length}\r\n\r\n${NEGOTIATE_BODY}`);
    });
});
let halfwayPort = null;
const listenHalfway = async () => (halfwayPort ??= await listen(halfway));
after(async () => {
    for (const s of halfSockets) s.destroy();
    if (halfwayPort !== null) await closeServer(halfway);
});

const TIMED_OUT = `did not answer within ${BACKEND_TIMEOUT_S} s`;
const LWS_TIMEOUT_MS = 20000;

for (const which of ["silent", "halfway"]) {
    test(`skip-negotiation client, backend ${which === "silent" ? "silent" : "silent on the WebSocket upgrade"}: ` +
        "a handshake error naming the hub after --backend-timeout", async () => {
        const port = which === "silent" ? await listenSilent() : await listenHalfway();
        const relay = await startRelay(["--hub", `stuck=http://127.0.0.1:${port}/chat`, "--backend-timeout", String(BACKEND_TIMEOUT_S)]);
        try {
            const started = Date.now();
            const client = await RawClient.connect(wsUrl(relay.url, "stuck"));
            const answer = await client.handshake(1, "json", LWS_TIMEOUT_MS - 2000);
            const took = Date.now() - started;
            assert.equal(answer.error, `The relay could not connect to the backend hub 'stuck': the backend ${TIMED_OUT}`);
            await client.waitClosed();
            assert.ok(took >= BACKEND_TIMEOUT_S * 1000 - 100, `answered after ${took} ms, before the timeout`);
            await pollUntil(() => metrics(relay.url), (m) => m.sessions_active === 0 && m.backend_links_active === 0 &&
                m.timers_armed === 0, "the session, its backend request and their timers gone");
        } finally {
            await relay.stop();
        }
    });
}

// Legacy negotiate asks the backend first (relay/legacy_authorize.c): a backend silent from its first
// byte is answered there (504, legacy-authorize.test.mjs); one that answers the negotiate and never
// the hub link's WebSocket upgrade fails the link, and /start says so.
test("legacy connection, backend silent on the link: /start fails naming the hub after --backend-timeout", async () => {
    const port = await listenHalfway();
    const relay = await startRelay(["--hub", `stuck=http://127.0.0.1:${port}/chat`, "--backend-timeout", String(BACKEND_TIMEOUT_S)]);
    const base = `${relay.url}/signalr`;
    const data = encodeURIComponent(JSON.stringify([{ name: "stuck" }]));
    let ws;
    try {
        const neg = await httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${data}`);
        assert.equal(neg.status, 200, neg.body);
        const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}` +
            `&connectionData=${data}`;
        ws = new WebSocket(`${base.replace(/^http/, "ws")}/connect?${query}`);
        ws.on("error", () => {});
        await withTimeout(new Promise((resolve) => ws.on("open", resolve)), 10000, "legacy connect");
        const started = Date.now();
        const start = await httpRequest("GET", `${base}/start?${query}`, {}, null, LWS_TIMEOUT_MS - 2000);
        const took = Date.now() - started;
        assert.equal(start.status, 504, start.body);
        assert.match(start.body, new RegExp(`backend hub 'stuck'.*${TIMED_OUT}`));
        assert.ok(took < LWS_TIMEOUT_MS - 5000, `answered after ${took} ms`);
    } finally {
        ws?.terminate();
        await relay.stop();
    }
});
