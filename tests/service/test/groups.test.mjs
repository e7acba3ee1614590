// Groups live in the relay's hub model: the app's Groups.Add/Remove arrive as 18/19 (acked by
// the relay), its group sends as 13/14, and the relay delivers each to the members itself.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { APP_URL, connect, waitFor, marker, messages, metrics, pollUntil, stopAll } from "../lib.mjs";

const T = { timeout: 30000 };
const memberships = async () => (await metrics())['signalr_relay_service_memberships{hub="board"}'] ?? 0;

test("a group send reaches exactly its members, whatever their protocol", T, async () => {
    const m1 = await connect({ user: "g1-a" });
    const m2 = await connect({ user: "g1-b", protocol: "messagepack" });
    const out = await connect({ user: "g1-c" });
    try {
        await m1.connection.invoke("AddToGroup", "room-1");
        await m2.connection.invoke("AddToGroup", "room-1");
        await m2.connection.invoke("AddToGroup", "room-1"); /* joining twice changes nothing */
        await out.connection.invoke("SendToGroup", "room-1", "hello room");
        for (const m of [m1, m2])
            await waitFor(m, (x) => x[0] === "groupMessage" && x[1] === "room-1" && x[3] === "hello room", "the group message");
        await marker(out, out, m1, m2);
        assert.equal(messages(out, "groupMessage", "hello room").length, 0);
        assert.equal(messages(m1, "groupMessage", "hello room").length, 1);
        assert.equal(messages(m2, "groupMessage", "hello room").length, 1);
    } finally {
        await stopAll(m1, m2, out);
    }
});

test("leaving and disconnecting remove members", T, async () => {
    /* The earlier tests' clients have stopped; the relay may still be closing their sockets. */
    const before = await pollUntil(memberships, (n) => n === 0, "no memberships left from earlier tests");
    const m1 = await connect({ user: "g2-a" });
    const m2 = await connect({ user: "g2-b", protocol: "messagepack" });
    const m3 = await connect({ user: "g2-c" });
    try {
        for (const m of [m1, m2, m3]) await m.connection.invoke("AddToGroup", "room-2");
        assert.equal(await memberships(), before + 3);
        await m2.connection.invoke("RemoveFromGroup", "room-2");
        await m3.connection.stop();
        await pollUntil(memberships, (n) => n === before + 1, "the memberships to drop to one");
        await m1.connection.invoke("SendToGroup", "room-2", "who is left");
        await waitFor(m1, (x) => x[0] === "groupMessage" && x[3] === "who is left", "m1's own group message");
        await marker(m1, m2);
        assert.equal(messages(m2, "groupMessage", "who is left").length, 0);
        /* m3 had stopped before the send: nothing can reach it, and no marker either. */
        assert.equal(messages(m3, "groupMessage", "who is left").length, 0);
    } finally {
        await stopAll(m1, m2, m3);
    }
    await pollUntil(memberships, (n) => n === before, "the memberships to go back to what they were");
});

test("Groups delivers once per connection; GroupExcept and OthersInGroup exclude", T, async () => {
    const a = await connect({ user: "g3-a" });
    const b = await connect({ user: "g3-b", protocol: "messagepack" });
    const c = await connect({ user: "g3-c" });
    try {
        for (const g of ["red", "blue"]) await a.connection.invoke("AddToGroup", g);
        await b.connection.invoke("AddToGroup", "blue");
        await c.connection.invoke("AddToGroup", "red");
        await c.connection.invoke("SendToGroups", ["red", "blue"], "both groups");
        for (const x of [a, b, c]) await waitFor(x, (m) => m[0] === "groupMessage" && m[3] === "both groups", "Groups");
        await a.connection.invoke("SendToGroupExcept", "red", [c.id], "red but c");
        await waitFor(a, (m) => m[0] === "groupMessage" && m[3] === "red but c", "GroupExcept");
        await a.connection.invoke("SendToOthersInGroup", "blue", "blue but me");
        await waitFor(b, (m) => m[0] === "groupMessage" && m[3] === "blue but me", "OthersInGroup");
        await marker(c, a);
        await marker(a, a, b, c);
        assert.equal(messages(a, "groupMessage", "both groups").length, 1);
        assert.equal(messages(c, "groupMessage", "red but c").length, 0);
        assert.equal(messages(b, "groupMessage", "red but c").length, 0);
        assert.equal(messages(a, "groupMessage", "blue but me").length, 0);
    } finally {
        await stopAll(a, b, c);
    }
});

test("group changes and sends from outside a hub call (IHubContext) reach clients on any server connection", T, async () => {
    const clients = [];
    try {
        for (let i = 0; i < 4; i++) clients.push(await connect({ user: `g4-${i}`, protocol: i % 2 ? "messagepack" : "json" }));
        for (const c of clients.slice(0, 3)) {
            const res = await fetch(`${APP_URL}/test/board/group/outside/${c.id}`, { method: "PUT" });
            assert.equal(res.status, 200);
        }
        const res = await fetch(`${APP_URL}/test/board/group/outside?message=from%20outside`, { method: "POST" });
        assert.equal(res.status, 200);
        for (const c of clients.slice(0, 3))
            await waitFor(c, (m) => m[0] === "groupMessage" && m[2] === "server" && m[3] === "from outside", "the group send");
        await marker(APP_URL, clients[3]);
        assert.equal(messages(clients[3], "groupMessage", "from outside").length, 0);
    } finally {
        await stopAll(...clients);
    }
});
