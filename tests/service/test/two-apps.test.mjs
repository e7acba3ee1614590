// Two processes of the app serve the same hub: the relay spreads new clients over the server
// connections of both, and a send from either process reaches clients bound to both.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { APP_URL, connect, waitFor, marker, messages, pollUntil, startApp, stopAll, stopApp } from "../lib.mjs";

test("two app processes: clients spread over both, group and user sends from either reach all", { timeout: 90000 }, async () => {
    const second = await startApp();
    const clients = [];
    try {
        for (let i = 0; i < 6; i++)
            clients.push(await connect({ user: i < 3 ? "two-x" : `two-${i}`, protocol: i % 2 ? "messagepack" : "json",
                appUrl: i % 2 ? second.url : APP_URL }));
        const seen = async (url) => (await (await fetch(`${url}/test/connections?hub=board`)).json()).map((c) => c.connectionId);
        const [onFirst, onSecond] = await Promise.all([seen(APP_URL), seen(second.url)]);
        const ids = clients.map((c) => c.id);
        assert.ok(ids.some((id) => onFirst.includes(id)), "some clients are bound to the first app");
        assert.ok(ids.some((id) => onSecond.includes(id)), "some clients are bound to the second app");
        for (const c of clients) await c.connection.invoke("AddToGroup", "both-apps");
        /* From outside a hub call, on each process in turn: every member gets each send once. */
        for (const [url, text] of [[APP_URL, "from the first"], [second.url, "from the second"]]) {
            const res = await fetch(`${url}/test/board/group/both-apps?message=${encodeURIComponent(text)}`, { method: "POST" });
            assert.equal(res.status, 200);
            for (const c of clients) await waitFor(c, (m) => m[0] === "groupMessage" && m[3] === text, `"${text}"`);
        }
        await clients[5].connection.invoke("SendToUser", "two-x", "to x");
        for (const c of clients.slice(0, 3)) await waitFor(c, (m) => m[0] === "userMessage" && m[2] === "to x", "the user's message");
        await marker(APP_URL, ...clients);
        await marker(second.url, ...clients);
        await marker(clients[5], ...clients.slice(3));
        for (const c of clients) {
            assert.equal(messages(c, "groupMessage", "from the first").length, 1);
            assert.equal(messages(c, "groupMessage", "from the second").length, 1);
        }
        for (const c of clients.slice(3)) assert.equal(messages(c, "userMessage", "to x").length, 0);
    } finally {
        await stopAll(...clients);
        await stopApp(second);
    }
});
