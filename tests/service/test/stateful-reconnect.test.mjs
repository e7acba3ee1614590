// Stateful reconnect in service mode (ASP.NET Core 8+, `withStatefulReconnect()`): the relay
// terminates it toward the client, as in proxy mode, and keeps the client's service channel open
// through the gap, so the app sees one connection from start to end.
// - The stock JS client (JSON, MessagePack) negotiates at the app, follows its redirect to the
//   relay and connects its WebSocket through a TCP forwarder (tests/lib/forwarder.mjs), which cuts
//   it mid-stream and holds the client's next connection. Meanwhile another client makes the app
//   send N group messages; then the forwarder lets the client through. Every message arrives
//   exactly once, in order, on the same connection (same connectionId, no close), and the app's
//   OnDisconnectedAsync never ran for it (the app's /test/events).
// - A client that does not come back within --disconnect-timeout (the suite's relay: the default,
//   15 s) ends: the app hears the disconnect, and the client's late WebSocket with the same id gets
//   404 (it closes).
// - The relay's /client/negotiate offers it only when asked.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { forwarder } from "../../lib/forwarder.mjs";
import { APP_URL, RELAY_PORT, TIMEOUT_MS, connect, metrics, pollUntil, signalR, stopAll, withTimeout } from "../lib.mjs";
import { MessagePackHubProtocol } from "@microsoft/signalr-protocol-msgpack";

const T = { timeout: 90000 };
const GAP_MESSAGES = 20;

// A WebSocket class for the stock client that goes to the relay through port `via` (the client
// learns the relay's address from the app's redirect, so the forwarder is put in here).
function webSocketVia(via) {
    return class extends WebSocket {
        constructor(url, protocols, options) {
            const u = new URL(url);
            if (Number(u.port) === RELAY_PORT) u.port = String(via);
            super(u.toString(), protocols, options);
        }
    };
}

// A stateful stock client of the app's board hub whose WebSockets go through `fwd`. Records the
// group messages it gets and its close.
function statefulClient(protocol, fwd) {
    const builder = new signalR.HubConnectionBuilder()
        .withUrl(`${APP_URL}/board`, { transport: signalR.HttpTransportType.WebSockets, WebSocket: webSocketVia(fwd.port) })
        .withStatefulReconnect()
        .configureLogging(signalR.LogLevel.None);
    if (protocol === "messagepack") builder.withHubProtocol(new MessagePackHubProtocol());
    const connection = builder.build();
    const client = { connection, received: [], closed: null };
    connection.on("groupMessage", (group, from, message) => client.received.push(message));
    connection.onclose((e) => { client.closed = e ?? new Error("closed"); });
    client.welcome = new Promise((resolve) => connection.on("welcome", resolve));
    return client;
}

async function appEventsOf(id) {
    const res = await fetch(`${APP_URL}/test/events?hub=board`);
    return (await res.json()).filter((e) => e.connectionId === id).map((e) => e.event);
}

async function appConnected(id) {
    const res = await fetch(`${APP_URL}/test/connections?hub=board`);
    return (await res.json()).some((c) => c.connectionId === id);
}

async function dropMidStream(protocol) {
    const fwd = await forwarder(RELAY_PORT);
    const a = statefulClient(protocol, fwd);
    let b;
    try {
        await withTimeout(a.connection.start(), TIMEOUT_MS, "stateful client start");
        const id = await withTimeout(a.welcome, TIMEOUT_MS, "welcome");
        assert.equal(a.connection.connectionId, id, "the app's Context.ConnectionId is the client's id");
        const resumesBefore = (await metrics()).signalr_relay_core_stateful_resumes_total ?? 0;
        const tag = `stateful-${protocol}-${Date.now()}`;
        await a.connection.invoke("AddToGroup", tag);
        b = await connect({ protocol });
        const expected = [];
        for (let i = 0; i < 5; i++) {
            expected.push(`${tag} before ${i}`);
            await b.connection.invoke("SendToGroup", tag, expected.at(-1));
        }
        await pollUntil(() => a.received.length, (n) => n >= 5, "the first 5 group messages");

        fwd.cut();
        // The client noticed and is reconnecting: its next connection is held at the forwarder.
        await pollUntil(() => fwd.held() + (a.closed ? 1 : 0), (n) => n >= 1, "the client's reconnect attempt", 20000);
        assert.equal(a.closed, null, `the connection closed at the cut: ${a.closed?.message}`);
        for (let i = 0; i < GAP_MESSAGES; i++) {
            expected.push(`${tag} gap ${i}`);
            await b.connection.invoke("SendToGroup", tag, expected.at(-1));
        }
        // The app still has the connection: no OnDisconnectedAsync during the gap.
        assert.deepStrictEqual(await appEventsOf(id), ["connected"], "the app's events for the client during the gap");
        assert.ok(await appConnected(id), "the app still lists the client during the gap");
        fwd.release();

        expected.push(`${tag} after`);
        await b.connection.invoke("SendToGroup", tag, expected.at(-1));
        await pollUntil(() => a.received.includes(expected.at(-1)), (seen) => seen, "the last group message", 20000);
        const got = a.received.filter((m) => m.startsWith(tag));
        assert.deepStrictEqual(got, expected, "every group message exactly once, in order");
        assert.equal(a.closed, null, `the connection closed: ${a.closed?.message}`);
        assert.equal(a.connection.state, signalR.HubConnectionState.Connected);
        assert.equal(a.connection.connectionId, id, "the same connection, not a new one");
        assert.equal(await a.connection.invoke("Echo", "still the same connection"), "still the same connection");
        assert.deepStrictEqual(await appEventsOf(id), ["connected"], "the app's events for the client after the gap");
        const m = await metrics();
        assert.ok(m.signalr_relay_core_stateful_resumes_total > resumesBefore,
            `signalr_relay_core_stateful_resumes_total ${m.signalr_relay_core_stateful_resumes_total}`);
        // A stop is a goodbye (a Close frame), not a drop: the app hears it at once, not after --disconnect-timeout.
        await a.connection.stop();
        await pollUntil(() => appEventsOf(id), (events) => events.includes("disconnected"),
            "the app's OnDisconnectedAsync once the client stopped", 10000, 100);
    } finally {
        await stopAll(a, b);
        await fwd.close();
    }
}

for (const protocol of ["json", "messagepack"]) {
    test(`stateful reconnect (${protocol}): a drop mid-stream loses nothing and the app sees no disconnect`, T,
        () => dropMidStream(protocol));
}

test("stateful reconnect: a client away past --disconnect-timeout ends, and its late WebSocket gets 404", T, async () => {
    const fwd = await forwarder(RELAY_PORT);
    const a = statefulClient("json", fwd);
    try {
        await withTimeout(a.connection.start(), TIMEOUT_MS, "stateful client start");
        const id = await withTimeout(a.welcome, TIMEOUT_MS, "welcome");
        fwd.cut();
        await pollUntil(() => fwd.held() + (a.closed ? 1 : 0), (n) => n >= 1, "the client's reconnect attempt", 20000);
        assert.equal(a.closed, null, `the connection closed at the cut: ${a.closed?.message}`);
        // The suite's relay keeps the session for its --disconnect-timeout (15 s), then closes it at the app.
        await pollUntil(() => appEventsOf(id), (events) => events.includes("disconnected"),
            "the app's OnDisconnectedAsync after --disconnect-timeout", 45000, 250);
        assert.deepStrictEqual(await appEventsOf(id), ["connected", "disconnected"]);
        fwd.release(); // the held WebSocket reaches the relay now: that connection is gone
        await pollUntil(() => a.closed, (closed) => closed !== null, "the client to close", 20000);
        assert.equal(a.connection.state, signalR.HubConnectionState.Disconnected);
    } finally {
        await stopAll(a);
        await fwd.close();
    }
});

test("stateful reconnect: the relay's /client/negotiate offers it only when asked", T, async () => {
    const redirect = await (await fetch(`${APP_URL}/board/negotiate?negotiateVersion=1`, { method: "POST" })).json();
    assert.ok(redirect.url && redirect.accessToken, `the app redirects: ${JSON.stringify(redirect)}`);
    // As the stock client does: negotiate at the redirect URL, its query kept, with these parameters.
    const ask = async (stateful) => {
        const url = new URL(redirect.url);
        url.pathname = url.pathname.replace(/\/?$/, "/negotiate");
        url.searchParams.set("negotiateVersion", "1");
        if (stateful === null) url.searchParams.delete("useStatefulReconnect");
        else url.searchParams.set("useStatefulReconnect", stateful);
        const res = await fetch(url, { method: "POST", headers: { Authorization: `Bearer ${redirect.accessToken}` } });
        assert.equal(res.status, 200, `${url}`);
        return res.json();
    };
    assert.equal((await ask("true")).useStatefulReconnect, true);
    assert.equal((await ask("True")).useStatefulReconnect, true);
    assert.equal((await ask(null)).useStatefulReconnect, undefined);
    assert.equal((await ask("false")).useStatefulReconnect, undefined);
});
