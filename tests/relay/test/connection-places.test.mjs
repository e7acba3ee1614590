// Connection limits held by WebSockets: a Core WebSocket session holds its address's place in
// --max-connections-per-address for as long as its socket lives, and gives it back when the socket
// ends, closed cleanly or dropped. The listener keeps no record of a served connection (its place
// rides on the wsi: relay/listener.h), so this is the path that gives a WebSocket's place back.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, WebSocket, pollUntil, withTimeout, wsUrl } from "../lib.mjs";

const FROM = "127.0.0.2"; // startRelay's readiness probe comes from 127.0.0.1

// A WebSocket upgrade to the hub from FROM, open (resolves) or refused (rejects).
function openWebSocket(url) {
    return withTimeout(new Promise((resolve, reject) => {
        const ws = new WebSocket(url, { localAddress: FROM, perMessageDeflate: false });
        ws.once("open", () => resolve(ws));
        ws.once("unexpected-response", (req, res) => { req.socket.destroy(); reject(new Error(`HTTP ${res.statusCode}`)); });
        ws.once("error", reject);
    }), 10000, "a WebSocket from " + FROM);
}

// One GET /metrics on a connection of its own from FROM: its status.
function metricsStatus(relay) {
    return withTimeout(new Promise((resolve, reject) => {
        const req = http.get(`${relay.url}/metrics`, { localAddress: FROM, agent: false }, (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode));
        });
        req.on("error", reject);
    }), 10000, "GET /metrics from " + FROM);
}

test("--max-connections-per-address: a WebSocket holds its place while open and gives it back when it ends", async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--max-connections-per-address", "1"]);
    try {
        const url = wsUrl(relay.url, "chat");
        for (const end of ["close", "terminate"]) {
            // The place of the last connection (a GET's, or the WebSocket before) is free again.
            await pollUntil(() => metricsStatus(relay), (s) => s === 200, `a place for ${FROM} before the ${end} round`, 15000, 200);
            const ws = await pollUntil(() => openWebSocket(url).catch(() => null), (w) => w !== null,
                `a WebSocket from ${FROM} (${end} round)`, 15000, 200);
            assert.equal(await metricsStatus(relay), 503, `the open WebSocket holds the only place of ${FROM}`);
            const closed = new Promise((resolve) => ws.once("close", resolve));
            if (end === "close") ws.close(1000);
            else ws.terminate();
            await withTimeout(closed, 10000, `the WebSocket to end (${end})`);
            await pollUntil(() => metricsStatus(relay), (s) => s === 200,
                `the place the WebSocket held to serve again after ${end}`, 15000, 200);
        }
    } finally {
        await relay.stop();
    }
});
