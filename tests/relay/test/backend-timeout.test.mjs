// A backend that accepts TCP and never answers: the client's negotiate gets 504 with a text naming
// the hub once --backend-timeout has passed (the relay once closed the client's socket after
// ~28 s without any answer), the backend request is dropped, and nothing stays behind.
import { test, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import net from "node:net";
import { httpRequest, listen, closeServer, pollUntil, metrics } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const BACKEND_TIMEOUT_S = 2;
const sockets = [];
const silent = net.createServer((socket) => { sockets.push(socket); socket.on("error", () => {}); });
after(async () => {
    for (const s of sockets) s.destroy();
    await closeServer(silent);
});

test("negotiate to a backend that never answers: 504 naming the hub, nothing kept", async () => {
    const port = await listen(silent);
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
