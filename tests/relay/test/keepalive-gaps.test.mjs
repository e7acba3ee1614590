// The longest silence a quiet client sees. Clients judge a connection by it: the legacy clients give
// up after KeepAliveTimeout (two keep-alive intervals) and warn (ConnectionSlow) well before, Core
// clients after their server timeout. So the relay must never leave more than one keep-alive
// interval (plus a wheel tick and scheduling noise) without sending something, whatever else it
// sent in between. The worst case for a keep-alive that is skipped "because something was sent
// since the last tick" is a message just after a tick: here every client invokes a hub method
// shortly after each keep-alive it receives, for a dozen intervals, on a relay of its own with a
// 3 s interval, and the largest gap between two frames is compared with the interval. The legacy
// and the Core client hold their dozen intervals at the same time (two quiet connections are no
// load), so the file takes 36 s, not 72.
import { describe, it, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { BACKEND_URL, RS, httpRequest, sleep, withTimeout, TIMEOUT_MS } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const INTERVAL_S = 3;
const ROUNDS = 12;
// A keep-alive skipped after a message sent just after a tick leaves almost two intervals of
// silence; the bound leaves 1.5 s for a busy machine and is still far from that.
const MAX_GAP_MS = INTERVAL_S * 1000 + 1500;

// The relay's start, shared by the two tests that run at once: one relay for both.
let relay = null;
after(async () => {
    const started = relay && (await relay.catch(() => null));
    if (started) await started.stop();
});

function ourRelay() {
    relay ??= startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--hub", `chatHub=${BACKEND_URL}/chat`,
        "--keepalive", String(INTERVAL_S), "--legacy-keepalive", String(INTERVAL_S)]);
    return relay;
}

// Frames as they arrive, with their arrival times; `onFrame(text)` may answer.
function watch(ws, onFrame) {
    const times = [];
    ws.on("message", (data) => {
        times.push(Date.now());
        onFrame(data.toString("utf8"));
    });
    return times;
}

function largestGap(times) {
    let gap = 0;
    for (let i = 1; i < times.length; i++) gap = Math.max(gap, times[i] - times[i - 1]);
    return gap;
}

function opened(ws, what) {
    return withTimeout(new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); }),
        TIMEOUT_MS, what);
}

describe("keep-alives leave no gap longer than the interval", { concurrency: true }, () => {
    it("legacy: a message just after a keep-alive does not push the next one back", async () => {
        const { url } = await ourRelay();
        const hubs = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));
        const neg = await httpRequest("GET", `${url}/signalr/negotiate?clientProtocol=2.1&connectionData=${hubs}`);
        assert.equal(neg.status, 200, neg.body);
        assert.equal(JSON.parse(neg.body).KeepAliveTimeout, 2 * INTERVAL_S);
        const query = `transport=webSockets&clientProtocol=2.1&connectionData=${hubs}` +
            `&connectionToken=${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}`;
        const ws = new WebSocket(`${url.replace(/^http/, "ws")}/signalr/connect?${query}`);
        let id = 0;
        const times = watch(ws, (text) => {
            // a keep-alive: answer it with an invocation a moment later, the bad case
            if (text === "{}") setTimeout(() => ws.send(JSON.stringify({ H: "chathub", M: "Echo", A: [id], I: id++ })), 200);
        });
        await opened(ws, "legacy connect");
        const start = await httpRequest("GET", `${url}/signalr/start?${query}`);
        assert.equal(start.status, 200, start.body);
        await sleep(ROUNDS * INTERVAL_S * 1000);
        ws.close();
        const gap = largestGap(times);
        assert.ok(gap <= MAX_GAP_MS, `${gap} ms without a frame (keep-alive interval ${INTERVAL_S} s)`);
        assert.ok(id >= ROUNDS / 3, `only ${id} keep-alives in ${ROUNDS} intervals: the test did not test`);
    });

    it("Core: a completion just after a ping does not push the next one back", async () => {
        const { url } = await ourRelay();
        const ws = new WebSocket(`${url.replace(/^http/, "ws")}/chat`);
        let id = 0;
        const times = watch(ws, (text) => {
            for (const record of text.split(RS).filter(Boolean)) {
                if (JSON.parse(record).type === 6) {
                    setTimeout(() => ws.send(JSON.stringify({ type: 1, target: "Echo", arguments: [id], invocationId: String(id++) }) + RS), 200);
                    // the client pings too, so the relay's client timeout never fires
                    ws.send(JSON.stringify({ type: 6 }) + RS);
                }
            }
        });
        await opened(ws, "Core connect");
        ws.send(JSON.stringify({ protocol: "json", version: 1 }) + RS);
        await sleep(ROUNDS * INTERVAL_S * 1000);
        ws.close();
        const gap = largestGap(times.slice(1)); // from the handshake answer on
        assert.ok(gap <= MAX_GAP_MS, `${gap} ms without a frame (keep-alive interval ${INTERVAL_S} s)`);
        assert.ok(id >= ROUNDS / 3, `only ${id} pings in ${ROUNDS} intervals: the test did not test`);
    });
});
