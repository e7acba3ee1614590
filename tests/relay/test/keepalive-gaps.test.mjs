// The longest silence a quiet client sees. Clients judge a connection by it: the legacy clients give
// up after KeepAliveTimeout (two keep-alive intervals) and warn (ConnectionSlow) well before, Core
// clients after their server timeout. So the relay must never leave more than one keep-alive
// interval (plus a wheel tick and scheduling noise) without sending something, whatever else it
// sent in between. The worst case for a keep-alive that is skipped "because something was sent
// since the last tick" is a message just after a tick: two of the clients invoke a hub method
// shortly after each keep-alive they receive; the others stay quiet.
//
// Ten connections on one relay with a 3 s interval (--keepalive, --legacy-keepalive), held together
// for a minute, each measuring the largest gap between two things it received (and from the last
// one to the end of the minute):
//   legacy webSockets      one quiet, one invoking after each `{}`   (gap between frames)
//   legacy serverSentEvents two quiet                                 (gap between stream bytes)
//   legacy longPolling     two quiet                                  (see below)
//   Core WebSockets        one quiet, one invoking after each ping   (gap between frames)
//   Core Server-Sent Events two quiet (the relay pings there too)    (gap between stream bytes)
// Core long polling has no pings (as ASP.NET Core: the poll answered at --long-poll-timeout, 90 s,
// and the client's next poll are its rhythm), so it has no keep-alive gap to bound.
//
// Legacy longPolling: a held poll is the client's only receive channel, and the relay keeps it
// alive as the original does (legacy-signalr.md, long polling): when it has been held a keep-alive
// interval, its response head goes out followed by one space, and a space every interval after,
// until the poll is answered (a message, or --legacy-poll-timeout, 110 s here). So the silence on
// that channel is the time from the poll's request (or the last byte of it) to the next byte of its
// answer, and the bound is the same interval. Between two polls the client itself is silent (the
// time it takes to poll again: here at once, LongPollDelay 0), which is not the relay's.
//
// The bound: the interval, plus one wheel tick (the timer wheel's slots are 1 ms), plus a
// scheduling margin of 1.5 s. The margin is for a loaded 2-core machine: the ASan relay, ten
// connections in this node process and other suites share the cores, so the relay's timer
// callback, its write and node's read of it can each wait behind other runnable processes; the
// largest delay seen in runs here was under 0.5 s. 1.5 s is half the interval: a skipped
// keep-alive leaves almost two intervals (6 s) of silence, far above it.
import { it, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import WebSocket from "ws";
import { BACKEND_URL, RS, httpRequest, sleep, withTimeout, TIMEOUT_MS } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const INTERVAL_S = 3;
const HOLD_S = 60;
const WHEEL_TICK_MS = 1;
const MARGIN_MS = 1500;
const MAX_GAP_MS = INTERVAL_S * 1000 + WHEEL_TICK_MS + MARGIN_MS;
// Keep-alives a quiet connection must have received for the minute to have tested anything.
const MIN_KEEPALIVES = HOLD_S / INTERVAL_S / 2;

let relay = null;
after(async () => relay && relay.stop());

const hubs = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));
const FORM = { "content-type": "application/x-www-form-urlencoded; charset=UTF-8" };

function opened(ws, what) {
    return withTimeout(new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); }),
        TIMEOUT_MS, what);
}

// What each connection measures: arrival times of what it received, the keep-alives among them, and
// the time its observation started (the first thing received).
class Timeline {
    constructor(name) {
        this.name = name;
        this.times = [];
        this.keepalives = 0;
        this.sends = 0;
        this.stops = [];
    }

    mark() { this.times.push(Date.now()); }

    largestGap(end) {
        const t = [...this.times, end];
        let gap = 0;
        for (let i = 1; i < t.length; i++) gap = Math.max(gap, t[i] - t[i - 1]);
        return gap;
    }

    stop() { for (const s of this.stops) s(); }
}

async function legacyNegotiate(url) {
    const neg = await httpRequest("GET", `${url}/signalr/negotiate?clientProtocol=2.1&connectionData=${hubs}`);
    assert.equal(neg.status, 200, neg.body);
    const body = JSON.parse(neg.body);
    assert.equal(body.KeepAliveTimeout, 2 * INTERVAL_S);
    assert.equal(body.LongPollDelay, 0);
    return (transport) => `transport=${transport}&clientProtocol=2.1&connectionData=${hubs}` +
        `&connectionToken=${encodeURIComponent(body.ConnectionToken)}`;
}

async function legacyStart(url, query) {
    const start = await httpRequest("GET", `${url}/signalr/start?${query}`);
    assert.equal(start.status, 200, start.body);
}

// Legacy webSockets; `invoking`: an Echo 200 ms after each keep-alive, the bad case.
async function legacyWebSocket(url, name, invoking) {
    const tl = new Timeline(name);
    const query = (await legacyNegotiate(url))("webSockets");
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}/signalr/connect?${query}`);
    ws.on("message", (data) => {
        tl.mark();
        if (data.toString("utf8") !== "{}") return;
        tl.keepalives++;
        if (invoking) setTimeout(() => ws.send(JSON.stringify({ H: "chathub", M: "Echo", A: [tl.sends], I: tl.sends++ })), 200);
    });
    await opened(ws, `${name}: connect`);
    await legacyStart(url, query);
    tl.stops.push(() => ws.terminate());
    return tl;
}

// Legacy serverSentEvents, quiet: every chunk of the stream counts.
async function legacyServerSentEvents(url, name) {
    const tl = new Timeline(name);
    const query = (await legacyNegotiate(url))("serverSentEvents");
    let req;
    const initialized = new Promise((resolve, reject) => {
        req = http.get(`${url}/signalr/connect?${query}`, { headers: { accept: "text/event-stream" }, agent: false }, (res) => {
            res.setEncoding("utf8");
            res.on("data", (chunk) => {
                tl.mark();
                tl.keepalives += chunk.split("data: {}\n\n").length - 1;
                if (chunk.includes("data: initialized")) resolve();
            });
            res.on("error", () => {});
        });
        req.on("error", reject);
    });
    tl.stops.push(() => req.destroy());
    await withTimeout(initialized, TIMEOUT_MS, `${name}: the stream's 'initialized'`);
    await legacyStart(url, query);
    return tl;
}

// Legacy longPolling, quiet: polls one after the other; the time each poll is sent and every chunk
// of its answer count (see the header).
async function legacyLongPolling(url, name) {
    const tl = new Timeline(name);
    const query = (await legacyNegotiate(url))("longPolling");
    const connect = await httpRequest("POST", `${url}/signalr/connect?${query}`, FORM, "");
    assert.equal(connect.status, 200, connect.body);
    let cursor = JSON.parse(connect.body).C;
    await legacyStart(url, query);
    let stopped = false;
    let current = null;
    tl.stops.push(() => { stopped = true; current?.destroy(); });
    const pollOnce = () => new Promise((resolve, reject) => {
        tl.mark();
        const req = http.request(`${url}/signalr/poll?${query}`, { method: "POST", headers: FORM, agent: false }, (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (chunk) => {
                tl.mark();
                body += chunk;
                tl.keepalives += chunk.split(" ").length - 1;
            });
            res.on("end", () => resolve({ status: res.statusCode, body }));
            res.on("error", () => resolve(null));
            res.on("close", () => resolve(null)); // after "end" a no-op; destroyed at the end of the minute
        });
        req.on("error", (e) => (stopped ? resolve(null) : reject(e)));
        req.end(`messageId=${encodeURIComponent(cursor)}`);
        current = req;
    });
    tl.loop = (async () => {
        while (!stopped) {
            const answer = await pollOnce();
            if (!answer || stopped) return;
            assert.equal(answer.status, 200, answer.body);
            const frame = JSON.parse(answer.body);
            if (frame.C) cursor = frame.C;
        }
    })();
    return tl;
}

// Core WebSockets; `invoking`: an Echo 200 ms after each ping (and a ping back), the bad case.
async function coreWebSocket(url, name, invoking) {
    const tl = new Timeline(name);
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}/chat`);
    ws.on("message", (data) => {
        tl.mark();
        for (const record of data.toString("utf8").split(RS).filter(Boolean)) {
            if (JSON.parse(record).type !== 6) continue;
            tl.keepalives++;
            if (!invoking) continue;
            setTimeout(() => ws.send(JSON.stringify({ type: 1, target: "Echo", arguments: [tl.sends], invocationId: String(tl.sends++) }) + RS), 200);
            ws.send(JSON.stringify({ type: 6 }) + RS); // so the relay's client timeout never fires
        }
    });
    await opened(ws, `${name}: connect`);
    ws.send(JSON.stringify({ protocol: "json", version: 1 }) + RS);
    tl.stops.push(() => ws.terminate());
    return tl;
}

// Core Server-Sent Events, quiet: negotiate, the stream, the handshake POSTed.
async function coreServerSentEvents(url, name) {
    const tl = new Timeline(name);
    const neg = await httpRequest("POST", `${url}/chat/negotiate?negotiateVersion=1`);
    assert.equal(neg.status, 200, neg.body);
    const id = encodeURIComponent(JSON.parse(neg.body).connectionToken);
    let req;
    const open = new Promise((resolve, reject) => {
        req = http.get(`${url}/chat?id=${id}`, { headers: { accept: "text/event-stream" }, agent: false }, (res) => {
            assert.equal(res.statusCode, 200);
            res.setEncoding("utf8");
            res.on("data", (chunk) => {
                tl.mark();
                tl.keepalives += chunk.split('{"type":6}').length - 1;
            });
            res.on("error", () => {});
            resolve();
        });
        req.on("error", reject);
    });
    tl.stops.push(() => req.destroy());
    await withTimeout(open, TIMEOUT_MS, `${name}: the event stream`);
    const hs = await httpRequest("POST", `${url}/chat?id=${id}`, { "content-type": "text/plain" },
        JSON.stringify({ protocol: "json", version: 1 }) + RS);
    assert.equal(hs.status, 200, hs.body);
    return tl;
}

it("a minute of quiet and busy connections on every transport: no gap longer than the interval", async () => {
    relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--hub", `chatHub=${BACKEND_URL}/chat`,
        "--keepalive", String(INTERVAL_S), "--legacy-keepalive", String(INTERVAL_S), "--legacy-poll-timeout", "110",
        "--legacy-long-poll-delay", "0"]);
    const { url } = relay;
    const timelines = await Promise.all([
        legacyWebSocket(url, "legacy webSockets, quiet", false),
        legacyWebSocket(url, "legacy webSockets, invoking after each keep-alive", true),
        legacyServerSentEvents(url, "legacy serverSentEvents 1"),
        legacyServerSentEvents(url, "legacy serverSentEvents 2"),
        legacyLongPolling(url, "legacy longPolling 1"),
        legacyLongPolling(url, "legacy longPolling 2"),
        coreWebSocket(url, "Core WebSockets, quiet", false),
        coreWebSocket(url, "Core WebSockets, invoking after each ping", true),
        coreServerSentEvents(url, "Core Server-Sent Events 1"),
        coreServerSentEvents(url, "Core Server-Sent Events 2"),
    ]);
    try {
        await sleep(HOLD_S * 1000); // the observation itself: what arrives meanwhile is the subject
    } finally {
        for (const tl of timelines) tl.stop();
    }
    const end = Date.now();
    await Promise.all(timelines.map((tl) => tl.loop?.catch((e) => { tl.failure = e; })));
    const report = timelines.map((tl) => `${tl.name}: largest gap ${tl.largestGap(end)} ms, ${tl.keepalives} keep-alives` +
        (tl.sends ? `, ${tl.sends} invocations` : ""));
    console.log(`bound ${MAX_GAP_MS} ms\n${report.join("\n")}`);
    for (const tl of timelines) {
        assert.equal(tl.failure, undefined, `${tl.name}: ${tl.failure}`);
        assert.ok(tl.largestGap(end) <= MAX_GAP_MS, `${tl.name}: ${tl.largestGap(end)} ms without a byte ` +
            `(interval ${INTERVAL_S} s, bound ${MAX_GAP_MS} ms)\n${report.join("\n")}`);
        assert.ok(tl.keepalives >= MIN_KEEPALIVES, `${tl.name}: only ${tl.keepalives} keep-alives in ${HOLD_S} s: it did not test`);
        if (tl.name.includes("invoking"))
            assert.ok(tl.sends >= MIN_KEEPALIVES, `${tl.name}: only ${tl.sends} invocations: the bad case did not happen`);
    }
});
