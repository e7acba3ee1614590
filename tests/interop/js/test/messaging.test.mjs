// Server-initiated sends to several connections: Clients.All and Clients.Group, including that
// nothing is delivered to a connection after it left the group.
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import { connectChat, nextEvent, recordEvents, stopAll, uniqueName } from "../lib.mjs";

test("Broadcast reaches both connections", async () => {
    const a = await connectChat();
    const b = await connectChat();
    try {
        const message = uniqueName("broadcast");
        const atA = nextEvent(a.conn, "broadcast", (m) => m === message);
        const atB = nextEvent(b.conn, "broadcast", (m) => m === message);
        await a.conn.invoke("Broadcast", message);
        assert.deepStrictEqual(await atA, [message]);
        assert.deepStrictEqual(await atB, [message]);
    } finally {
        await stopAll(a.conn, b.conn);
    }
});

test("groups: join, send, leave, and no delivery after leave", async () => {
    const sender = await connectChat();
    const member = await connectChat();
    try {
        const group = uniqueName("group");
        const atSender = recordEvents(sender.conn, "groupMessage");
        const atMember = recordEvents(member.conn, "groupMessage");

        await member.conn.invoke("JoinGroup", group);
        const first = nextEvent(member.conn, "groupMessage", (g, m) => g === group && m === "first");
        await sender.conn.invoke("SendToGroup", group, "first");
        assert.deepStrictEqual(await first, [group, "first"]);

        await member.conn.invoke("LeaveGroup", group);
        await sender.conn.invoke("SendToGroup", group, "after-leave");
        // SendToGroup has completed, so anything for `member` is already queued on its
        // connection ahead of the answer to this call: once it returns, nothing else can come.
        assert.equal(await member.conn.invoke("Echo", "sync"), "sync");

        assert.deepStrictEqual(atMember, [[group, "first"]]);
        assert.deepStrictEqual(atSender, [], "the sender never joined the group");
    } finally {
        await stopAll(sender.conn, member.conn);
    }
});
