// Service mode on Server-Sent Events and long polling: stock JS clients negotiate at the app,
// follow its redirect to the relay's /client/ and talk to the hub there on SSE (JSON) or long
// polling (JSON and MessagePack), beside a WebSocket client: calls, a large answer, group sends
// both ways, and the app hearing the client leave.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { connect, waitFor, messages, metrics, pollUntil, stopAll } from "../lib.mjs";

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
