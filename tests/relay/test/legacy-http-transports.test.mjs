// The legacy endpoint's HTTP transports, driven over raw HTTP as the stock clients drive them
// (specs/legacy-signalr.md sections 1.8, 4.2-4.4 and 12): serverSentEvents (event stream +
// /send), longPolling (/connect, held /poll, LongPollDelay as "L", the poll timeout), foreverFrame
// declined, one receive channel per connection whatever carries it (a new one ends the old, and a
// client that changes transport mid-session gets every message once, in order), a /send result
// that waits until the client has the progress pushed before it, and --legacy-websockets.
// The real clients run the full scenarios over these transports in tests/legacy (interop.sh).
import { after, before, describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import { BACKEND_URL, WebSocket, httpRequest, metrics, pollUntil, withTimeout } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const POLL_TIMEOUT_S = 2;
const LONG_POLL_DELAY_S = 0.5;
const HUB = "chatHub";
let relay, BASE;

before(async () => {
    relay = await startRelay(["--hub", `${HUB}=${BACKEND_URL}/chat`, "--legacy-poll-timeout", String(POLL_TIMEOUT_S),
        "--legacy-long-poll-delay", String(LONG_POLL_DELAY_S)]);
    BASE = `${relay.url}/signalr`;
});
after(async () => {
    await relay?.stop();
});

const connectionData = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));

// One legacy connection over raw HTTP: query per transport, SSE stream reader, polls and sends.
class Conn {
    static async open(base = BASE) {
        const neg = await httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${connectionData}`);
        assert.equal(neg.status, 200, neg.body);
        const c = new Conn();
        c.base = base;
        c.negotiate = JSON.parse(neg.body);
        c.token = encodeURIComponent(c.negotiate.ConnectionToken);
        c.nextId = 0;
        return c;
    }

    query(transport) {
        return `transport=${transport}&clientProtocol=2.1&connectionToken=${this.token}&connectionData=${connectionData}`;
    }

    // Opens an SSE stream; events collect in stream.events (the data of each), stream.frames (parsed JSON).
    sse(command = "connect", extra = "") {
        const stream = { events: [], frames: [], ended: false, raw: "" };
        stream.ready = new Promise((resolve, reject) => {
            const req = http.get(`${this.base}/${command}?${this.query("serverSentEvents")}${extra}`,
                { headers: { accept: "text/event-stream" }, agent: false }, (res) => {
                    stream.res = res;
                    resolve(res);
                    res.setEncoding("utf8");
                    res.on("data", (chunk) => {
                        stream.raw += chunk;
                        let end;
                        while ((end = stream.raw.indexOf("\n\n")) >= 0) {
                            const event = stream.raw.slice(0, end);
                            stream.raw = stream.raw.slice(end + 2);
                            assert.ok(event.startsWith("data: "), `an event that is not one data line: ${JSON.stringify(event)}`);
                            const data = event.slice("data: ".length);
                            stream.events.push(data);
                            if (data !== "initialized") stream.frames.push(JSON.parse(data));
                        }
                    });
                    res.on("end", () => { stream.ended = true; });
                    res.on("close", () => { stream.ended = true; });
                });
            req.on("error", reject);
            stream.req = req;
        });
        stream.close = () => stream.req.destroy();
        return stream;
    }

    async start(transport) {
        const res = await httpRequest("GET", `${this.base}/start?${this.query(transport)}`);
        assert.deepEqual([res.status, res.body], [200, '{ "Response": "started" }']);
    }

    // POST /connect|/poll|/reconnect over longPolling, messageId in the form body (as jQuery) or the query (as .NET).
    async poll(command, messageId, { inQuery = false, timeoutMs = 20000 } = {}) {
        const id = messageId === undefined ? "" : encodeURIComponent(messageId);
        const url = `${this.base}/${command}?${this.query("longPolling")}${inQuery && messageId !== undefined ? `&messageId=${id}` : ""}`;
        const body = !inQuery && messageId !== undefined ? `messageId=${id}` : "";
        const res = await httpRequest("POST", url, { "content-type": "application/x-www-form-urlencoded; charset=UTF-8" },
            body, timeoutMs);
        assert.equal(res.status, 200, res.body);
        assert.equal(res.headers["content-type"], "application/json; charset=UTF-8");
        return JSON.parse(res.body);
    }

    async send(transport, method, ...args) {
        const invocation = JSON.stringify({ H: "chathub", M: method, A: args, I: this.nextId++ });
        const res = await httpRequest("POST", `${this.base}/send?${this.query(transport)}`,
            { "content-type": "application/x-www-form-urlencoded; charset=UTF-8" },
            `data=${encodeURIComponent(invocation)}`, 20000);
        assert.equal(res.status, 200, res.body);
        return JSON.parse(res.body);
    }

    async abort(transport) {
        return httpRequest("POST", `${this.base}/abort?${this.query(transport)}`);
    }
}

// Waits until the relay holds n long polls (the metric), so that what the test does next comes after.
async function heldPolls(n) {
    await pollUntil(() => metrics(relay.url), (m) => m.legacy_polls_held === n, `${n} held poll(s) at the relay`);
}

function broadcastsIn(frames, tag) {
    return frames.flatMap((f) => f.M ?? []).filter((m) => m.M === "broadcast" && String(m.A[0]).startsWith(tag))
        .map((m) => m.A[0]);
}

describe("legacy serverSentEvents", () => {
    // Its own relay with a 1 s --legacy-keepalive, so that a keep-alive comes within the test.
    let own;
    before(async () => {
        own = await startRelay(["--hub", `${HUB}=${BACKEND_URL}/chat`, "--legacy-keepalive", "1"]);
    });
    after(async () => {
        await own?.stop();
    });

    it("streams 'initialized', the init frame, pushes and keep-alives as single data lines; /send answers with the hub result", async () => {
        const c = await Conn.open(`${own.url}/signalr`);
        const stream = c.sse();
        const res = await stream.ready;
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers["content-type"], "text/event-stream");
        assert.equal(res.headers["cache-control"], "no-cache");
        assert.equal(res.headers["x-accel-buffering"], "no");
        assert.equal(res.headers["x-content-type-options"], "nosniff");
        await pollUntil(() => stream.frames.length, (n) => n >= 1, "the init frame");
        assert.equal(stream.events[0], "initialized");
        assert.equal(stream.frames[0].S, 1);
        assert.deepEqual(stream.frames[0].M, []);
        await c.start("serverSentEvents");
        assert.deepEqual(await c.send("serverSentEvents", "Add", 2, 3), { R: 5, I: "0" });
        assert.deepEqual(await c.send("serverSentEvents", "VoidMethod"), { I: "1" });
        const tag = `sse-${Date.now()}`;
        await c.send("serverSentEvents", "Broadcast", `${tag}-1`);
        await pollUntil(() => broadcastsIn(stream.frames, tag), (b) => b.length === 1, "the broadcast on the stream");
        // Quiet for a keep-alive interval: the relay writes one, `data: {}` (the reader above
        // asserts that each event is one data line).
        const after = stream.events.length;
        await pollUntil(() => stream.events.slice(after), (e) => e.includes("{}"), "a keep-alive (data: {}) on the quiet stream");
        assert.equal((await c.abort("serverSentEvents")).status, 200);
        await pollUntil(() => stream.ended, (e) => e, "the stream ended after /abort");
    });
});

describe("legacy longPolling", () => {
    it("connect answers at once with S and L; a poll is held until a message, or answered empty at --legacy-poll-timeout", async () => {
        const c = await Conn.open();
        assert.equal(c.negotiate.ConnectionTimeout, POLL_TIMEOUT_S);
        assert.equal(c.negotiate.LongPollDelay, LONG_POLL_DELAY_S);
        const init = await c.poll("connect");
        assert.equal(init.S, 1);
        assert.equal(init.L, LONG_POLL_DELAY_S * 1000);
        assert.deepEqual(init.M, []);
        await c.start("longPolling");
        // The welcome push of OnConnectedAsync waits for the first poll (cursor from the form body, as jQuery).
        const first = await c.poll("poll", init.C);
        assert.equal(first.M[0].M, "welcome");
        assert.equal(first.L, LONG_POLL_DELAY_S * 1000);
        // Nothing waits: held, then answered empty with the same cursor (cursor in the query, as .NET).
        const started = Date.now();
        const empty = await c.poll("poll", first.C, { inQuery: true });
        const held = Date.now() - started;
        assert.deepEqual(empty.M, []);
        assert.equal(empty.C, first.C);
        assert.ok(held >= POLL_TIMEOUT_S * 1000 - 250, `an empty poll answered after ${held} ms, before the poll timeout`);
        // A held poll is answered as soon as a message comes.
        const tag = `lp-${Date.now()}`;
        const pending = c.poll("poll", empty.C);
        const [got] = await Promise.all([pending, c.send("longPolling", "Broadcast", `${tag}-1`)]);
        assert.deepEqual(broadcastsIn([got], tag), [`${tag}-1`]);
        // A held poll ends with an empty answer on /abort.
        const last = c.poll("poll", got.C);
        await heldPolls(1);
        assert.equal((await c.abort("longPolling")).status, 200);
        assert.deepEqual((await last).M, []);
    });

    it("a /send result waits until the client has polled every progress message pushed before it", async () => {
        const c = await Conn.open();
        let cursor = (await c.poll("connect")).C;
        await c.start("longPolling");
        const seen = [];
        let done = false, progressAtResult = null;
        const poller = (async () => {
            while (!done) {
                const r = await c.poll("poll", cursor);
                cursor = r.C;
                for (const m of r.M) if (m.P) seen.push(m.P.D);
            }
        })();
        // No delay between items: the completion follows the last item at once, so without the
        // hold the result would overtake the polls that carry the last items.
        const result = await c.send("longPolling", "Counter", 8, 0);
        progressAtResult = [...seen];
        assert.deepEqual(result, { I: "0" });
        assert.deepEqual(progressAtResult, [0, 1, 2, 3, 4, 5, 6, 7], "progress polled before the result was answered");
        done = true;
        await c.abort("longPolling");
        await withTimeout(poller, 15000, "the poll loop to end");
    });
});

describe("one receive channel per connection, whatever carries it", () => {
    it("a new channel ends the old one, and a client that changes transport mid-session misses nothing", async () => {
        const c = await Conn.open();
        const stream = c.sse();
        await stream.ready;
        await pollUntil(() => stream.frames.length, (n) => n >= 1, "the init frame");
        await c.start("serverSentEvents");
        const tag = `switch-${Date.now()}`;
        await c.send("serverSentEvents", "Broadcast", `${tag}-1`);
        await pollUntil(() => broadcastsIn(stream.frames, tag), (b) => b.length === 1, "the first broadcast on the stream");
        const cursor = stream.frames[stream.frames.length - 1].C;
        // The client drops its stream; messages are pushed meanwhile.
        stream.close();
        for (let i = 2; i <= 4; i++) await c.send("serverSentEvents", "Broadcast", `${tag}-${i}`);
        // It comes back over longPolling (as after a fallback): everything after its cursor, once, in order.
        const back = await c.poll("reconnect", cursor);
        assert.deepEqual(broadcastsIn([back], tag), [`${tag}-2`, `${tag}-3`, `${tag}-4`]);
        // A held poll is ended (answered, empty) by a newer channel: an SSE /reconnect.
        const held = c.poll("poll", back.C);
        await heldPolls(1);
        const again = c.sse("reconnect", `&messageId=${encodeURIComponent(back.C)}`);
        await again.ready;
        assert.deepEqual((await held).M, [], "the held poll was answered when the stream replaced it");
        await c.send("longPolling", "Broadcast", `${tag}-5`);
        await pollUntil(() => broadcastsIn(again.frames, tag), (b) => b.length === 1, "the fifth broadcast on the new stream");
        assert.deepEqual(broadcastsIn(again.frames, tag), [`${tag}-5`]);
        // And the stream is ended by a newer poll.
        const pending = c.poll("poll", again.frames[again.frames.length - 1].C);
        await pollUntil(() => again.ended, (e) => e, "the stream ended by the newer poll");
        await c.abort("longPolling");
        assert.deepEqual((await pending).M, []);
    });
});

// Groups tokens: the original keeps no state between requests, so it sends the connection's
// groups as a signed token ("G") that the client echoes as groupsToken on reconnect and poll.
// The relay's groups live on its hub links, which the backend keeps through a dropped receive
// channel, so it sends no G and reads no groupsToken (tests/legacy-ref/README.md, differences).
// A member whose receive channel drops and reconnects with its cursor only, as the stock clients
// do when they were never given a G, still gets its group's messages: the one sent while it was
// away (replayed) and the ones after.
function groupMessages(frames, group) {
    return frames.flatMap((f) => f.M ?? []).filter((m) => m.M === "groupMessage" && m.A[0] === group).map((m) => m.A[1]);
}

// A raw legacy WebSocket channel: frames collect in ws.frames; invoke() waits for its result.
async function openWebSocket(c, command, extra = "") {
    const url = `${c.base.replace(/^http/, "ws")}/${command}?${c.query("webSockets")}${extra}`;
    const ws = new WebSocket(url);
    const channel = { ws, frames: [], results: new Map() };
    ws.on("message", (data) => {
        const f = JSON.parse(String(data));
        if (f.I !== undefined) channel.results.set(String(f.I), f);
        else channel.frames.push(f);
    });
    await withTimeout(new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); }), 20000,
        `the legacy WebSocket ${command}`);
    channel.invoke = async (method, ...args) => {
        const id = String(c.nextId++);
        ws.send(JSON.stringify({ H: "chathub", M: method, A: args, I: id }));
        return pollUntil(() => channel.results.get(id), (r) => r !== undefined, `the result of ${method}`);
    };
    return channel;
}

describe("groups without groups tokens", () => {
    // Per transport: join, take the first group message; drop the receive channel; a group
    // message while away; reconnect with the cursor only (no groupsToken); one more after.
    const transports = {
        async webSockets(c) {
            let ch = await openWebSocket(c, "connect");
            await pollUntil(() => ch.frames.length, (n) => n >= 1, "the init frame");
            await c.start("webSockets");
            await ch.invoke("JoinGroup", c.group);
            return {
                frames: () => ch.frames,
                drop: async () => ch.ws.terminate(),
                reconnect: async (cursor) => {
                    const old = ch.frames;
                    ch = await openWebSocket(c, "reconnect", `&messageId=${encodeURIComponent(cursor)}`);
                    ch.frames.unshift(...old);
                },
                close: async () => { await c.abort("webSockets"); ch.ws.terminate(); },
            };
        },
        async serverSentEvents(c) {
            let stream = c.sse();
            await stream.ready;
            await pollUntil(() => stream.frames.length, (n) => n >= 1, "the init frame");
            await c.start("serverSentEvents");
            await c.send("serverSentEvents", "JoinGroup", c.group);
            let old = [];
            return {
                frames: () => old.concat(stream.frames),
                drop: async () => stream.close(),
                reconnect: async (cursor) => {
                    old = old.concat(stream.frames);
                    stream = c.sse("reconnect", `&messageId=${encodeURIComponent(cursor)}`);
                    await stream.ready;
                },
                close: async () => { await c.abort("serverSentEvents"); stream.close(); },
            };
        },
        async longPolling(c) {
            const init = await c.poll("connect");
            await c.start("longPolling");
            await c.send("longPolling", "JoinGroup", c.group);
            const frames = [init];
            let stopped = false, command = "poll", loop;
            const run = () => (async () => {
                while (!stopped) {
                    const r = await c.poll(command, frames[frames.length - 1].C);
                    command = "poll";
                    frames.push(r);
                }
            })();
            loop = run();
            return {
                frames: () => frames,
                // The client stops polling: the held poll ends (at the latest at the poll timeout) and none follows.
                drop: async () => { stopped = true; await withTimeout(loop, 15000, "the held poll to end"); },
                reconnect: async () => { stopped = false; command = "reconnect"; loop = run(); },
                close: async () => { stopped = true; await c.abort("longPolling"); await withTimeout(loop, 15000, "the poll loop"); },
            };
        },
    };

    for (const [transport, open] of Object.entries(transports)) {
        it(`${transport}: a member that reconnects with its cursor only still gets its group's messages; no G is ever sent`, async () => {
            const sender = await Conn.open();
            await sender.poll("connect");
            await sender.start("longPolling");
            const c = await Conn.open();
            c.group = `g-${transport}-${Date.now()}`;
            const member = await open(c);
            const sendToGroup = async (text) => {
                const r = await sender.send("longPolling", "SendToGroup", c.group, text);
                assert.equal(r.E, undefined, `SendToGroup failed: ${JSON.stringify(r)}`);
            };
            await sendToGroup("before");
            await pollUntil(() => groupMessages(member.frames(), c.group), (m) => m.length === 1, "the group message before the drop");
            const cursor = member.frames().filter((f) => f.C).at(-1).C;
            await member.drop();
            await sendToGroup("while away");
            await member.reconnect(cursor);
            await pollUntil(() => groupMessages(member.frames(), c.group), (m) => m.length === 2, "the group message sent while away");
            await sendToGroup("after");
            await pollUntil(() => groupMessages(member.frames(), c.group), (m) => m.length === 3, "the group message after the reconnect");
            assert.deepEqual(groupMessages(member.frames(), c.group), ["before", "while away", "after"]);
            assert.deepEqual(member.frames().filter((f) => f.G !== undefined), [], "no groups token (G) in any frame");
            await member.close();
            await sender.abort("longPolling");
        });
    }
});

describe("declined transports", () => {
    it("foreverFrame: 400 'Protocol error: Unknown transport.', as the original answers a transport it does not serve", async () => {
        const c = await Conn.open();
        const res = await httpRequest("GET", `${BASE}/connect?${c.query("foreverFrame")}&frameId=1&tid=3`);
        assert.deepEqual([res.status, res.body], [400, "Protocol error: Unknown transport."]);
    });

    for (const mode of ["refuse", "off"]) {
        it(`--legacy-websockets ${mode}: the upgrade is refused with 400; negotiate says TryWebSockets ${mode === "refuse"}`, async () => {
            const own = await startRelay(["--hub", `${HUB}=${BACKEND_URL}/chat`, "--legacy-websockets", mode]);
            try {
                const neg = await httpRequest("GET", `${own.url}/signalr/negotiate?clientProtocol=2.1&connectionData=${connectionData}`);
                const json = JSON.parse(neg.body);
                assert.equal(json.TryWebSockets, mode === "refuse");
                const url = `${own.url.replace(/^http/, "ws")}/signalr/connect?transport=webSockets&clientProtocol=2.1` +
                    `&connectionToken=${encodeURIComponent(json.ConnectionToken)}&connectionData=${connectionData}`;
                const status = await new Promise((resolve) => {
                    const ws = new WebSocket(url);
                    ws.on("unexpected-response", (_req, res) => { resolve(res.statusCode); ws.terminate(); });
                    ws.on("open", () => { resolve(101); ws.close(); });
                    ws.on("error", () => {});
                });
                assert.equal(status, 400);
            } finally {
                await own.stop();
            }
        });
    }
});
