// A drop mid-stream over Server-Sent Events and long polling (Core clients, issue 12): the stock JS
// client (withAutomaticReconnect) reaches the hub through a TCP forwarder that cuts its connections
// and holds the next ones while another client makes the hub broadcast; then the network comes back.
// These transports have no stateful reconnect (the clients offer it on WebSockets only), so the
// client comes back as a new connection and what was broadcast while it was away is not its to get.
// The same scenario runs straight against the real ASP.NET Core backend first, and the relay must
// answer it the same way: every broadcast before the drop once and in order, none of the gap's,
// every broadcast after the return once and in order, a new connection id, and the relay's old
// session gone after --disconnect-timeout (no session left behind by a vanished poll or stream).
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { forwarder } from "../../lib/forwarder.mjs";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, TIMEOUT_MS, connectStock, metrics, pollUntil, signalR, stopAll, withTimeout } from "../lib.mjs";
import { MessagePackHubProtocol } from "@microsoft/signalr-protocol-msgpack";

function reconnectingClient(url, transport, protocol) {
    const builder = new signalR.HubConnectionBuilder()
        .withUrl(url, { transport: signalR.HttpTransportType[transport] })
        .withAutomaticReconnect([0, 500, 1000, 2000, 2000, 2000, 2000, 2000])
        .configureLogging(signalR.LogLevel.None);
    if (protocol === "messagepack") builder.withHubProtocol(new MessagePackHubProtocol());
    return builder.build();
}

async function dropMidStream(base, transport, protocol) {
    const fwd = await forwarder(Number(new URL(base).port));
    const a = reconnectingClient(`${fwd.url}/chat`, transport, protocol);
    const received = [];
    const events = [];
    a.on("broadcast", (m) => received.push(m));
    a.onreconnecting(() => events.push("reconnecting"));
    a.onreconnected((id) => events.push(`reconnected ${id}`));
    a.onclose((e) => events.push(`closed ${e?.message ?? ""}`));
    let b;
    try {
        await withTimeout(a.start(), TIMEOUT_MS, `${transport} client start`);
        const idBefore = a.connectionId;
        ({ conn: b } = await connectStock(`${base}/chat`, { protocol }));
        const tag = `${transport}-${protocol}-${Date.now()}`;
        const before = [], gap = [], after = [];
        for (let i = 0; i < 5; i++) {
            before.push(`${tag} before ${i}`);
            await b.invoke("Broadcast", before.at(-1));
        }
        await pollUntil(() => received.length, (n) => n >= before.length, "the broadcasts before the drop", 20000);

        fwd.cut();
        await pollUntil(() => events.length, (n) => n >= 1, "the client noticing the drop", 30000);
        assert.deepEqual(events, ["reconnecting"], "the client reconnects rather than closes");
        for (let i = 0; i < 10; i++) {
            gap.push(`${tag} gap ${i}`);
            await b.invoke("Broadcast", gap.at(-1));
        }
        fwd.release();
        await pollUntil(() => events.length, (n) => n >= 2, "the client's return", 30000);
        assert.match(events[1], /^reconnected /, `after the drop: ${events.join(", ")}`);
        assert.notEqual(a.connectionId, idBefore, "a new connection (no stateful reconnect on this transport)");

        for (let i = 0; i < 5; i++) {
            after.push(`${tag} after ${i}`);
            await b.invoke("Broadcast", after.at(-1));
        }
        await pollUntil(() => received.includes(after.at(-1)), (seen) => seen, "the last broadcast", 20000);
        assert.equal(await a.invoke("Echo", "on the new connection"), "on the new connection");
        const got = received.filter((m) => m.startsWith(tag));
        assert.deepStrictEqual(got, [...before, ...after],
            "before and after the drop: each once, in order; the gap's went to the old connection");
    } finally {
        await stopAll(a, b);
        await fwd.close();
    }
}

for (const [transport, protocol] of [["ServerSentEvents", "json"], ["LongPolling", "json"], ["LongPolling", "messagepack"]]) {
    test(`${transport} (${protocol}): a drop mid-stream, through the relay as directly`, async () => {
        await dropMidStream(BACKEND_URL, transport, protocol); // the real server, for reference
        const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--disconnect-timeout", "3"]);
        try {
            await dropMidStream(relay.url, transport, protocol);
            // The old session's poll or stream vanished with the network: it ends after the
            // disconnect timeout, and the clients' stops leave nothing either.
            await pollUntil(async () => (await metrics(relay.url)).sessions_active, (n) => n === 0,
                "no session left on the relay", 20000);
        } finally {
            await relay.stop();
        }
    });
}
