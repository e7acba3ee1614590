// Users live in the relay's hub model (asrs.s.uid of the client token): Clients.User reaches
// every connection of that user, wherever it is bound.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { APP_URL, connect, waitFor, marker, messages, stopAll } from "../lib.mjs";

const T = { timeout: 30000 };

test("a user with three connections gets Clients.User on all three", T, async () => {
    const carol = [];
    let other, sender;
    try {
        for (const protocol of ["json", "messagepack", "json"]) carol.push(await connect({ user: "carol-3", protocol }));
        other = await connect({ user: "dave-3" });
        sender = await connect({ user: "sender-3", protocol: "messagepack" });
        await sender.connection.invoke("SendToUser", "carol-3", "hi carol");
        for (const c of carol)
            await waitFor(c, (m) => m[0] === "userMessage" && m[1] === sender.id && m[2] === "hi carol", "carol's message");
        await sender.connection.invoke("SendToUsers", ["carol-3", "dave-3"], "hi both");
        for (const c of [...carol, other]) await waitFor(c, (m) => m[0] === "userMessage" && m[2] === "hi both", "Users");
        const res = await fetch(`${APP_URL}/test/board/user/carol-3?message=from%20server`, { method: "POST" });
        assert.equal(res.status, 200);
        for (const c of carol) await waitFor(c, (m) => m[0] === "userMessage" && m[2] === "from server", "IHubContext User");
        await marker(sender, other, sender, ...carol);
        assert.equal(messages(other, "userMessage", "hi carol").length, 0);
        assert.equal(messages(sender, "userMessage", "hi carol").length, 0);
        for (const c of carol) assert.equal(messages(c, "userMessage", "hi both").length, 1);
    } finally {
        await stopAll(...carol, other, sender);
    }
});
