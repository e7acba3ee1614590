// Service mode on Server-Sent Events and long polling: stock JS clients negotiate at the app,
// follow its redirect to the relay's /client/ and talk to the hub there on SSE (JSON) or long
// polling (JSON and MessagePack), beside a WebSocket client: calls, a large answer, group sends
// both ways, and the app hearing the client leave. A connection token opens one connection: a
// poll read after the client's DELETE does not open a second one.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { APP_URL, RELAY_URL, connect, waitFor, messages, metrics, pollUntil, stopAll } from "../lib.mjs";

const T = { timeout: 60000 };
const live = async () => (await metrics()).signalr_relay_sessions_active;

for (const [transport, protocol] of [["LongPolling", "json"], ["LongPolling", "messagepack"], ["ServerSentEvents", "json"]]) {
    test(`${transport} (${protocol}) through the relay's /client/: calls, groups, leave`, T, async () => {
        const tag = `${transport}-${protocol}`.toLowerCase();
        const http = await connect({ user: `${tag}-h`, protocol, transport });
        const ws = await connect({ user: `${tag}-w` });
        try {
            assert.equal(await http.connection.invoke("Echo", "über"), "über");
            assert.equal(await http.connection.invoke("Add", 20, 22), 42);
            assert.equal((await http.connection.invoke("Repeat", "ab", 40000)).length, 80000);
            await waitFor(http, (m) => m[0] === "welcome" && m[1] === http.id, "the welcome");
            await http.connection.invoke("AddToGroup", `room-${tag}`);
            await ws.connection.invoke("AddToGroup", `room-${tag}`);
            await ws.connection.invoke("SendToGroup", `room-${tag}`, "from ws");
            await http.connection.invoke("SendToGroup", `room-${tag}`, "from http");
            for (const c of [http, ws])
                for (const text of ["from ws", "from http"])
                    await waitFor(c, (x) => x[0] === "groupMessage" && x[3] === text, `${text} at ${c.user}`);
            assert.equal(messages(http, "groupMessage", "from ws").length, 1);
            await http.connection.stop();
            await waitFor(ws, (m) => m[0] === "left" && m[1] === http.id, "the app hears the client leave");
        } finally {
            await stopAll(http, ws);
        }
        await pollUntil(live, (n) => n === 0, "no session left");
    });
}

// The stock client's stop() aborts its waiting poll and sends DELETE; under load the relay may
// read a poll the client had just sent after that DELETE. Such a late poll once opened a second
// connection under the same id (its token still valid): the app got an OpenConnection whose
// handshake never came, and the session lived until both sides' 15 s handshake timeouts.
// ASP.NET Core answers a request for an ended connection 404, and so must the relay.
test("LongPolling: a poll read after the DELETE opens no second connection (404)", T, async () => {
    const redirect = await (await fetch(`${APP_URL}/board/negotiate?negotiateVersion=1&user=late-poll`, { method: "POST" })).json();
    const query = new URL(redirect.url).searchParams;
    query.set("negotiateVersion", "1");
    const auth = { Authorization: `Bearer ${redirect.accessToken}` };
    const neg = await fetch(`${RELAY_URL}/client/negotiate?${query}`, { method: "POST", headers: auth });
    assert.equal(neg.status, 200);
    const { connectionToken } = await neg.json();
    query.delete("negotiateVersion");
    query.set("id", connectionToken);
    const url = `${RELAY_URL}/client/?${query}`;
    const before = await live();
    const first = await fetch(url, { headers: auth });
    assert.equal(first.status, 200, "the first poll opens the connection");
    await first.arrayBuffer();
    assert.equal(await live(), before + 1);
    const del = await fetch(url, { method: "DELETE", headers: auth });
    assert.equal(del.status, 202);
    await del.arrayBuffer();
    const late = await fetch(url, { headers: auth });
    assert.equal(late.status, 404, `a poll after the DELETE: ${late.status} ${await late.text()}`);
    await pollUntil(live, (n) => n === before, "the connection's session gone");
    const post = await fetch(url, { method: "POST", headers: auth, body: '{"protocol":"json","version":1}\x1e' });
    assert.equal(post.status, 404, "a handshake after the DELETE");
});
