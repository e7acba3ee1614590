// Stateful reconnect (ASP.NET Core 8+, `withStatefulReconnect()`): the relay terminates it.
// - The stock JS client's TCP connection is cut mid-stream by a forwarder in the test; while the
//   client is away another client makes the hub broadcast N messages and the cut client invokes
//   the hub itself; then its next WebSocket (same id) gets through. Every message must arrive
//   exactly once and in order, on the same connection (same ConnectionId, no close, no new
//   negotiate), and the invocation made during the gap must complete. The same scenario runs
//   straight against the real ASP.NET Core backend (tests/backend allows stateful reconnects), so
//   the relay is held to what the server does (there, a race of the JS client may duplicate the
//   message after the welcome: see dropMidStream).
// - Negotiate offers it only when asked, and not with --stateful-reconnect off.
// - A raw client that never acks shows the buffer bound: the relay stops reading the hub once the
//   unacked bytes pass --stateful-reconnect-buffer, and resumes on the client's Ack.
// - A client that does not come back ends after --disconnect-timeout; a Close frame ends it at once.
// - A second WebSocket for a connection whose first one is still open takes it over.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { forwarder } from "../../lib/forwarder.mjs";
import { startRelay } from "../../lib/process.mjs";
import {
    BACKEND_URL, RS, disconnectSeenByBackend, TIMEOUT_MS, WebSocket, connectStock, httpRequest, metrics,
    pollUntil, signalR, stopAll, withTimeout, wsUrl,
} from "../lib.mjs";
import { MessagePackHubProtocol } from "@microsoft/signalr-protocol-msgpack";

const GAP_MESSAGES = 20;

function statefulConnection(url, protocol) {
    const builder = new signalR.HubConnectionBuilder()
        .withUrl(url, { transport: signalR.HttpTransportType.WebSockets })
        .withStatefulReconnect()
        .configureLogging(signalR.LogLevel.None);
    if (protocol === "messagepack") builder.withHubProtocol(new MessagePackHubProtocol());
    return builder.build();
}

async function dropMidStream(base, protocol, exact) {
    const fwd = await forwarder(Number(new URL(base).port));
    const a = statefulConnection(`${fwd.url}/chat`, protocol);
    const received = [];
    let closed = null;
    a.on("broadcast", (m) => received.push(m));
    a.onclose((e) => { closed = e ?? new Error("closed"); });
    const welcome = new Promise((resolve) => a.on("welcome", resolve));
    let b;
    try {
        await withTimeout(a.start(), TIMEOUT_MS, "stateful client start");
        const idBefore = await withTimeout(welcome, TIMEOUT_MS, "welcome");
        ({ conn: b } = await connectStock(`${base}/chat`, { protocol }));
        const tag = `${protocol}-${Date.now()}`;
        const expected = [];
        for (let i = 0; i < 5; i++) {
            expected.push(`${tag} before ${i}`);
            await b.invoke("Broadcast", expected.at(-1));
        }
        await pollUntil(() => received.length, (n) => n >= 5, "the first 5 broadcasts");

        fwd.cut();
        // The client noticed and is reconnecting: its next connection is held at the forwarder.
        await pollUntil(() => fwd.held() + (closed ? 1 : 0), (n) => n >= 1, "the client's reconnect attempt", 20000);
        assert.equal(closed, null, `the connection closed at the cut: ${closed?.message}`);
        const echo = a.invoke("Echo", `${tag} sent during the gap`);
        for (let i = 0; i < GAP_MESSAGES; i++) {
            expected.push(`${tag} gap ${i}`);
            await b.invoke("Broadcast", expected.at(-1));
        }
        fwd.release();

        assert.equal(await withTimeout(echo, 20000, "the Echo sent during the gap"), `${tag} sent during the gap`);
        expected.push(`${tag} after`);
        await b.invoke("Broadcast", expected.at(-1));
        await pollUntil(() => received.includes(expected.at(-1)), (seen) => seen, "the last broadcast", 20000);
        const got = received.filter((m) => m.startsWith(tag));
        if (exact) {
            assert.deepStrictEqual(got, expected, "every broadcast exactly once, in order");
        } else {
            // The real server: the JS client counts messages only once start()'s handshake promise
            // has resolved, so a push read together with the handshake answer (OnConnectedAsync's)
            // is numbered differently on the two sides and comes twice after the reconnect. The
            // relay holds such pushes back (relay/core_stateful.c) and must be exact.
            const once = got.filter((m, i) => i === 0 || m !== got[i - 1]);
            assert.deepStrictEqual(once, expected, "every broadcast, in order");
            if (once.length !== got.length) console.log(`note: the real server's client saw ${got.length - once.length} duplicate(s)`);
        }
        assert.equal(closed, null, `the connection closed: ${closed?.message}`);
        assert.equal(a.state, signalR.HubConnectionState.Connected);
        assert.equal(a.connectionId, idBefore, "the same connection, not a new one");
        assert.equal(await a.invoke("Echo", "still the same connection"), "still the same connection");
        if (exact) { // the relay counted the drop and the return
            const m = await metrics(base);
            assert.ok(m.core_stateful_resumes_total >= 1, `core_stateful_resumes_total ${m.core_stateful_resumes_total}`);
            assert.equal(m.core_stateful_away, 0);
        }
    } finally {
        await stopAll(a, b);
        await fwd.close();
    }
}

for (const protocol of ["json", "messagepack"]) {
    test(`stateful reconnect (${protocol}): a drop mid-stream loses nothing, through the relay as directly`, async () => {
        const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--disconnect-timeout", "30"]);
        try {
            await dropMidStream(BACKEND_URL, protocol, false); // the real server, for reference
            await dropMidStream(relay.url, protocol, true);
        } finally {
            await relay.stop();
        }
    });
}

test("stateful reconnect: offered only when asked and allowed (--stateful-reconnect off)", async () => {
    const on = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`]);
    const off = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--stateful-reconnect", "off"]);
    try {
        const ask = async (base, query) => JSON.parse((await httpRequest("POST",
            `${base}/chat/negotiate?negotiateVersion=1${query}`)).body);
        assert.equal((await ask(on.url, "&useStatefulReconnect=true")).useStatefulReconnect, true);
        assert.equal((await ask(on.url, "&useStatefulReconnect=True")).useStatefulReconnect, true);
        assert.equal((await ask(on.url, "")).useStatefulReconnect, undefined);
        assert.equal((await ask(on.url, "&useStatefulReconnect=false")).useStatefulReconnect, undefined);
        assert.equal((await ask(off.url, "&useStatefulReconnect=true")).useStatefulReconnect, undefined);
        // What the real server answers, for comparison.
        assert.equal((await ask(BACKEND_URL, "&useStatefulReconnect=true")).useStatefulReconnect, true);
        assert.equal((await ask(BACKEND_URL, "")).useStatefulReconnect, undefined);
    } finally {
        await on.stop();
        await off.stop();
    }
});

// A raw stateful JSON client (negotiate with useStatefulReconnect, handshake version 2) that reads
// everything and acks nothing until told to.
async function rawStateful(base, token = null) {
    const resumed = token !== null; // the same connection's next WebSocket: no handshake
    if (!token) {
        const n = JSON.parse((await httpRequest("POST", `${base}/chat/negotiate?negotiateVersion=1&useStatefulReconnect=true`)).body);
        assert.equal(n.useStatefulReconnect, true);
        token = n.connectionToken;
    }
    const ws = new WebSocket(wsUrl(base, "chat", `id=${encodeURIComponent(token)}`), { perMessageDeflate: false });
    const messages = [];
    let bytes = 0, last = 0;
    let handshake = resumed;
    const closed = new Promise((resolve) => ws.once("close", (code) => resolve(code)));
    ws.on("message", (data) => {
        let text = Buffer.from(data).toString("utf8");
        if (!handshake) {
            handshake = true;
            text = text.slice(text.indexOf(RS) + 1);
        }
        last = Buffer.byteLength(text);
        bytes += last;
        for (const r of text.split(RS).filter(Boolean)) messages.push(JSON.parse(r));
    });
    await withTimeout(new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); }), TIMEOUT_MS, "open");
    if (!resumed) ws.send(`{"protocol":"json","version":2}${RS}`);
    return { ws, token, closed, messages, bytes: () => bytes, lastSize: () => last, ack: (id) => ws.send(`{"type":8,"sequenceId":${id}}${RS}`) };
}

test("stateful reconnect: a client that never acks holds at most the buffer bound; its Ack lets the rest through", async () => {
    const BOUND = 16 * 1024;
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--stateful-reconnect-buffer", String(BOUND)]);
    let sender;
    const client = await rawStateful(relay.url);
    try {
        ({ conn: sender } = await connectStock(`${relay.url}/chat`));
        const numbered = () => client.messages.filter((m) => m.type >= 1 && m.type <= 5);
        await pollUntil(() => numbered().length, (n) => n >= 1, "the welcome");
        const pausesBefore = (await metrics(relay.url)).flow_control_pauses_total;
        const TOTAL = 300, text = "x".repeat(1000);
        for (let i = 0; i < TOTAL; i++) sender.send("Broadcast", `${i} ${text}`); // fire and forget: the hub may wait
        // The relay keeps at most BOUND unacked bytes (plus the message that crossed it), then stops reading the hub.
        await pollUntil(() => metrics(relay.url), (m) => m.flow_control_pauses_total > pausesBefore, "the hub link paused");
        const seenAtPause = client.bytes();
        await new Promise((r) => setTimeout(r, 1500)); // nothing more may come while nothing is acked
        assert.equal(client.bytes(), seenAtPause, "nothing arrives while the buffer is full and unacked");
        // The hub batches records into WebSocket messages: the last one may cross the bound, as one
        // message may cross ASP.NET Core's (it checks before writing), but everything before it fits.
        assert.ok(seenAtPause - client.lastSize() <= BOUND,
            `received ${seenAtPause} unacked bytes (the last message ${client.lastSize()}); the bound is ${BOUND}`);
        assert.ok(numbered().length < TOTAL, "the hub link waits: not everything arrived unacked");
        // Acking what arrived lets the rest through, in order, each once; keep acking as it comes.
        await pollUntil(() => { client.ack(numbered().length); return numbered().length; }, (n) => n >= TOTAL + 1,
            `all ${TOTAL} broadcasts after acking`, 30000, 200);
        const got = numbered().filter((m) => m.target === "broadcast").map((m) => Number(m.arguments[0].split(" ")[0]));
        assert.deepStrictEqual(got, [...Array(TOTAL).keys()]);
    } finally {
        client.ws.terminate();
        await stopAll(sender);
        await relay.stop();
    }
});

test("stateful reconnect: a client that does not come back ends after --disconnect-timeout; one that says goodbye ends at once", async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--disconnect-timeout", "3"]);
    try {
        // Dropped without a Close frame: the backend link stays for the disconnect timeout, then goes.
        const dropped = await rawStateful(relay.url);
        const welcome = await pollUntil(() => dropped.messages.find((m) => m.target === "welcome"), Boolean, "the welcome");
        const droppedId = welcome.arguments[0];
        const droppedAt = Date.now();
        dropped.ws.terminate();
        await pollUntil(() => metrics(relay.url), (m) => m.core_stateful_away === 1, "the session waiting for its client");
        await disconnectSeenByBackend(droppedId, 30000);
        const waited = Date.now() - droppedAt;
        assert.ok(waited >= 2500, `the backend link ended ${waited} ms after the drop, before the 3 s disconnect timeout`);
        await pollUntil(() => metrics(relay.url), (m) => m.core_stateful_away === 0 && m.sessions_active === 0, "the session gone");

        // A WebSocket Close frame (without a Close message: the stock clients send one on stop(), which
        // the hub answers by closing) is a goodbye: no waiting, far under this second relay's 30 s.
        const patient = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--disconnect-timeout", "30"]);
        try {
            const leaving = await rawStateful(patient.url);
            const hello = await pollUntil(() => leaving.messages.find((m) => m.target === "welcome"), Boolean, "the welcome");
            leaving.ws.close(1000);
            await disconnectSeenByBackend(hello.arguments[0], 15000);
            assert.equal((await metrics(patient.url)).core_stateful_away, 0);
        } finally {
            await patient.stop();
        }
    } finally {
        await relay.stop();
    }
});

// A second WebSocket naming a connection whose first one is still open (the client saw a drop the
// server did not): the relay takes it and drops the first, then the second gets Sequence and
// carries the connection on. That is what ASP.NET Core's HttpConnectionDispatcher means to do (it
// cancels the previous WebSocket and resends on the new one); run against tests/backend, the
// cancelled WebSocket closes with 1000, which ends the whole connection, and the new one gets 404:
// the client loses it. The relay keeps it.
test("stateful reconnect: a second WebSocket for a connection still open takes it over", async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`]);
    let first, second, sender;
    try {
        first = await rawStateful(relay.url);
        const hello = await pollUntil(() => first.messages.find((m) => m.target === "welcome"), Boolean, "the welcome");
        second = await rawStateful(relay.url, first.token);
        await withTimeout(first.closed, TIMEOUT_MS, "the first WebSocket closed");
        const seq = await pollUntil(() => second.messages.find((m) => m.type === 9), Boolean, "a Sequence on the second");
        assert.ok(seq.sequenceId >= 1 && seq.sequenceId <= 2, `Sequence ${seq.sequenceId}`);
        second.ws.send(`{"type":9,"sequenceId":1}${RS}`);
        ({ conn: sender } = await connectStock(`${relay.url}/chat`));
        const text = `takeover ${Date.now()}`;
        await sender.invoke("Broadcast", text);
        await pollUntil(() => second.messages.some((m) => m.target === "broadcast" && m.arguments[0] === text), Boolean,
            "the broadcast on the second WebSocket");
        second.ws.send(`{"type":1,"invocationId":"1","target":"WhoAmI","arguments":[]}${RS}`);
        const who = await pollUntil(() => second.messages.find((m) => m.type === 3 && m.invocationId === "1"), Boolean, "WhoAmI");
        assert.equal(who.result.connectionId, hello.arguments[0], "the same connection on the backend");
    } finally {
        first?.ws.terminate();
        second?.ws.terminate();
        await stopAll(sender);
        await relay.stop();
    }
});
