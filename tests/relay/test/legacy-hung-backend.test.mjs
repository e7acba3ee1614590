// A legacy connection whose hub's backend fails (issue 10, defect 6: "answer 502/504 with a text body
// naming the hub, on every path"). Legacy negotiate asks each hub's backend first (a Core negotiate,
// relay/legacy_authorize.c), so these backends answer that and fail only on the hub link that
// follows. The connect itself (SSE, long polling, WebSocket) is answered at once, as the original
// server does; /start waits for the hub links and then answers 504 when the backend never answered
// the link within --backend-timeout, 502 when it refused the connection or closed it, each with a
// text naming the hub. (The relay answered 500 to all of them.) A backend that fails the negotiate
// itself is answered at legacy negotiate (legacy-authorize.test.mjs).
import { test, before, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { WebSocket, httpRequest, listen, closeServer, pollUntil, metrics, withTimeout } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const BACKEND_TIMEOUT_S = 2;
const NEGOTIATE_BODY = JSON.stringify({ negotiateVersion: 1, connectionId: "late-id", connectionToken: "late-token",
    availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] });
const sockets = [];
// Answers every negotiate (POST) at once; any other request gets `other(socket)`.
const negotiating = (other) => net.createServer((socket) => {
    sockets.push(socket);
    socket.on("error", () => {});
    let data = "";
    socket.on("data", (d) => {
        data += d.toString("latin1");
        if (!/\r\n\r\n/.test(data)) return;
        if (data.startsWith("POST "))
            socket.end(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${NEGOTIATE_BODY.length}\r\n\r\n${NEGOTIATE_BODY}`);
        else
            other(socket);
    });
});
const silent = negotiating(() => {}); // never answers the WebSocket upgrade
const slamming = negotiating((socket) => socket.destroy()); // closes it at once
const vanishing = negotiating(() => {}); // stops listening after the negotiate: the link is refused
let relay;

before(async () => {
    const silentPort = await listen(silent);
    const slamPort = await listen(slamming);
    const gonePort = await listen(vanishing);
    relay = await startRelay(["--hub", `stuck=http://127.0.0.1:${silentPort}/chat`,
        "--hub", `slam=http://127.0.0.1:${slamPort}/chat`, "--hub", `gone=http://127.0.0.1:${gonePort}/chat`,
        "--backend-timeout", String(BACKEND_TIMEOUT_S)]);
});

after(async () => {
    await relay?.stop();
    for (const s of sockets) s.destroy();
    await closeServer(silent);
    await closeServer(slamming);
    if (vanishing.listening) await closeServer(vanishing);
});

// negotiate, then connect over `transport`; resolves with the query /start takes and a closer.
async function connect(hub, transport) {
    const base = `${relay.url}/signalr`;
    const data = encodeURIComponent(JSON.stringify([{ name: hub }]));
    const neg = await httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${data}`);
    assert.equal(neg.status, 200, neg.body);
    if (hub === "gone") { // the backend goes away between negotiate and connect
        for (const s of sockets) s.destroy();
        await closeServer(vanishing);
    }
    const query = `transport=${transport}&clientProtocol=2.1&connectionToken=` +
        `${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}&connectionData=${data}`;
    if (transport === "webSockets") {
        const ws = new WebSocket(`${base.replace(/^http/, "ws")}/connect?${query}`);
        ws.on("error", () => {});
        await withTimeout(new Promise((resolve) => ws.on("open", resolve)), 10000, "legacy WebSocket connect");
        return { base, query, close: () => ws.terminate() };
    }
    if (transport === "longPolling") {
        const res = await httpRequest("GET", `${base}/connect?${query}`);
        assert.equal(res.status, 200, res.body);
        return { base, query, close: () => {} };
    }
    // serverSentEvents: the stream stays open; its head is the connect's answer.
    const req = http.request(`${base}/connect?${query}`, { agent: false });
    req.on("error", () => {});
    const res = await withTimeout(new Promise((resolve) => req.on("response", resolve).end()), 10000, "legacy SSE connect");
    assert.equal(res.statusCode, 200);
    res.resume();
    return { base, query, close: () => req.destroy() };
}

const cases = [
    { hub: "stuck", transport: "serverSentEvents", status: 504,
      text: `The relay could not connect to the backend hub 'stuck': the backend did not answer within ${BACKEND_TIMEOUT_S} s` },
    { hub: "stuck", transport: "longPolling", status: 504,
      text: `The relay could not connect to the backend hub 'stuck': the backend did not answer within ${BACKEND_TIMEOUT_S} s` },
    { hub: "stuck", transport: "webSockets", status: 504,
      text: `The relay could not connect to the backend hub 'stuck': the backend did not answer within ${BACKEND_TIMEOUT_S} s` },
    { hub: "gone", transport: "longPolling", status: 502, text: /^The relay could not connect to the backend hub 'gone': / },
    { hub: "slam", transport: "serverSentEvents", status: 502, text: /^The relay could not connect to the backend hub 'slam': / },
];

for (const { hub, transport, status, text } of cases) {
    test(`legacy ${transport} connection, backend ${hub === "stuck" ? "silent" : hub === "gone" ? "refusing" : "closing"}: ` +
        `/start answers ${status} naming the hub`, async () => {
        const c = await connect(hub, transport);
        try {
            const started = Date.now();
            const res = await httpRequest("GET", `${c.base}/start?${c.query}`, {}, null, 30000);
            const took = Date.now() - started;
            assert.equal(res.status, status, res.body);
            assert.match(res.headers["content-type"], /^text\/plain/);
            if (typeof text === "string") assert.equal(res.body, text);
            else assert.match(res.body, text);
            if (status === 504)
                assert.ok(took < 15000, `answered after ${took} ms, long after --backend-timeout`);
        } finally {
            c.close();
        }
        await pollUntil(() => metrics(relay.url), (m) => m.backend_links_active === 0, "no backend link left", 20000);
    });
}
