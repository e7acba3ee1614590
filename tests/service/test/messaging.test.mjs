// Hub calls and sends through service mode with stock clients: the app's negotiate redirects
// them to the relay, which holds them and passes their traffic to and from the app's server
// connections (JSON and MessagePack, bytes as the app wrote them).
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { connect, waitFor, marker, messages, signalR, stopAll } from "../lib.mjs";

const T = { timeout: 30000 };

test("echo and calls through the relay, JSON and MessagePack, a large answer in fragments", T, async () => {
    const a = await connect({ user: "echo-a" });
    const b = await connect({ user: "echo-b", protocol: "messagepack" });
    try {
        assert.deepEqual(await a.connection.invoke("Echo", { x: 1, s: "héllo" }), { x: 1, s: "héllo" });
        assert.equal(await b.connection.invoke("Echo", "hi"), "hi");
        assert.equal(await b.connection.invoke("Add", 2, 3), 5);
        assert.equal(await a.connection.invoke("Add", 40, 2), 42);
        const big = await a.connection.invoke("Repeat", "x", 70000);
        assert.equal(big.length, 70000);
        const bigMp = await b.connection.invoke("Repeat", "yz", 40000);
        assert.equal(bigMp.length, 80000);
        await assert.rejects(a.connection.invoke("Fail", "nope"), /HubException: nope/);
    } finally {
        await stopAll(a, b);
    }
});

test("the welcome the app sends in OnConnectedAsync reaches the client after its handshake", T, async () => {
    const a = await connect({ user: "welcome-a" });
    const b = await connect({ user: "welcome-b", protocol: "messagepack" });
    try {
        await waitFor(a, (m) => m[0] === "welcome" && m[1] === a.id && m[2] === "welcome-a", "a's welcome");
        await waitFor(b, (m) => m[0] === "welcome" && m[1] === b.id && m[2] === "welcome-b", "b's welcome");
        await waitFor(a, (m) => m[0] === "joined" && m[1] === b.id, "a hears b joined");
    } finally {
        await stopAll(a, b);
    }
});

test("Caller and Client(id) reach only that connection", T, async () => {
    const a = await connect({ user: "caller-a" });
    const b = await connect({ user: "caller-b", protocol: "messagepack" });
    try {
        await a.connection.invoke("SendToCaller", "to me");
        await waitFor(a, (m) => m[0] === "private" && m[2] === "to me", "a's own private message");
        await a.connection.invoke("SendToConnection", b.id, "to b");
        await waitFor(b, (m) => m[0] === "private" && m[1] === a.id && m[2] === "to b", "b's private message");
        await b.connection.invoke("SendToConnections", [a.id, b.id], "to both");
        await waitFor(a, (m) => m[0] === "private" && m[2] === "to both", "a gets Clients([a,b])");
        await waitFor(b, (m) => m[0] === "private" && m[2] === "to both", "b gets Clients([a,b])");
        await marker(a, a, b);
        assert.equal(messages(b, "private", "to me").length, 0);
        assert.equal(messages(a, "private", "to b").length, 0);
    } finally {
        await stopAll(a, b);
    }
});

test("All, Others and AllExcept, both protocols", T, async () => {
    const a = await connect({ user: "all-a" });
    const b = await connect({ user: "all-b", protocol: "messagepack" });
    const c = await connect({ user: "all-c" });
    try {
        await a.connection.invoke("SendToAll", "everyone");
        for (const x of [a, b, c]) await waitFor(x, (m) => m[0] === "broadcast" && m[2] === "everyone", "All");
        await a.connection.invoke("SendToOthers", "not me");
        for (const x of [b, c]) await waitFor(x, (m) => m[0] === "broadcast" && m[2] === "not me", "Others");
        await a.connection.invoke("SendToAllExcept", [c.id], "not c");
        for (const x of [a, b]) await waitFor(x, (m) => m[0] === "broadcast" && m[2] === "not c", "AllExcept");
        await marker(a, a, b, c);
        assert.equal(messages(a, "broadcast", "not me").length, 0);
        assert.equal(messages(c, "broadcast", "not c").length, 0);
        for (const x of [a, b, c]) assert.equal(messages(x, "broadcast", "everyone").length, 1);
    } finally {
        await stopAll(a, b, c);
    }
});

test("the app sees the client's identity: user id, claims with long types, query without the tokens", T, async () => {
    const a = await connect({ user: "who-a" });
    try {
        const who = await a.connection.invoke("WhoAmI");
        assert.equal(who.connectionId, a.id);
        assert.equal(who.userIdentifier, "who-a");
        assert.equal(who.isAuthenticated, true);
        assert.equal(who.name, "who-a");
        assert.equal(who.nameIdentifier, "who-a");
        assert.equal(who.query.user[0], "who-a");
        assert.equal(who.query.hub[0], "board");
        assert.ok(!("access_token" in who.query), "access_token must not reach the app");
        assert.ok(!("id" in who.query), "id must not reach the app");
        assert.ok(who.queryString.startsWith("?"));
        assert.equal(who.remoteIp, "127.0.0.1");
    } finally {
        await stopAll(a);
    }
});

test("a streaming method streams through the relay", T, async () => {
    const a = await connect({ user: "stream-a", protocol: "messagepack" });
    try {
        const items = [];
        await new Promise((resolve, reject) => {
            a.connection.stream("Counter", 5, 10).subscribe({
                next: (v) => items.push(v),
                complete: resolve,
                error: reject,
            });
        });
        assert.deepEqual(items, [0, 1, 2, 3, 4]);
    } finally {
        await stopAll(a);
    }
});

test("an upload stream and a client result (ClientInvocation 34) through the relay", T, async () => {
    const a = await connect({ user: "result-a" });
    const b = await connect({ user: "result-b", protocol: "messagepack" });
    try {
        for (const c of [a, b]) c.connection.on("GetAnswer", (question) => `answer to ${question} from ${c.user}`);
        assert.equal(await a.connection.invoke("AskCaller", "q1"), "answer to q1 from result-a");
        assert.equal(await b.connection.invoke("AskCaller", "q2"), "answer to q2 from result-b");
        const subject = new signalR.Subject();
        const sum = b.connection.invoke("Sum", subject);
        for (const n of [1, 2, 3, 4]) subject.next(n);
        subject.complete();
        assert.equal(Number(await sum), 10);
    } finally {
        await stopAll(a, b);
    }
});
