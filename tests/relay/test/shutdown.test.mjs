// 12. SIGTERM under load: the "doomed" relay is stopped while sessions in every state are open:
// stock clients (JSON, MessagePack), raw ones mid-handshake and idle after it, one whose reading is
// paused with data queued toward it, a skip-negotiation client, and an unused negotiate token.
// Every client past its handshake that reads must get a Close with allowReconnect: true before its
// socket closes (stock clients: the Close their protocol parsed, and the error text they report;
// one with automatic reconnect starts reconnecting, which it only does when the Close allows it;
// raw clients: the Close record itself). The one exception is the client that had stopped
// reading: its Close waits behind data it had not read, which may outlast the relay's 2 s drain
// (see below). The client still
// in its handshake must see its socket close, the backend must see every session end, and the
// relay must exit by itself (scripts/relay-tests.sh then checks its exit status 0 and its
// sanitizer log: leaks of any of these states would show there).
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import * as signalR from "@microsoft/signalr";
import { JsonHubProtocol } from "@microsoft/signalr";
import { MessagePackHubProtocol } from "@microsoft/signalr-protocol-msgpack";
import {
    DOOMED_RELAY_URL, DOOMED_RELAY_PID, TIMEOUT_MS, RawClient, connectRaw, connectStock, disconnectSeenByBackend,
    metrics, negotiate, pollUntil, stopAll, withTimeout, wsUrl,
} from "../lib.mjs";

// A stock client whose hub protocol also records every message it parsed (`seen`), so that the
// Close the relay sent is checked as it came, not only through the error text the client reports.
async function connectRecorded(url, protocol) {
    const inner = protocol === "messagepack" ? new MessagePackHubProtocol() : new JsonHubProtocol();
    const seen = [];
    const recording = {
        name: inner.name, version: inner.version, transferFormat: inner.transferFormat,
        parseMessages(input, logger) {
            const messages = inner.parseMessages(input, logger);
            seen.push(...messages);
            return messages;
        },
        writeMessage: (message) => inner.writeMessage(message),
    };
    const conn = new signalR.HubConnectionBuilder()
        .withUrl(url, { transport: signalR.HttpTransportType.WebSockets })
        .withHubProtocol(recording)
        .configureLogging(signalR.LogLevel.None)
        .build();
    const welcome = new Promise((resolve) => conn.on("welcome", (id) => resolve(id)));
    await withTimeout(conn.start(), TIMEOUT_MS, `start ${url} (${protocol})`);
    return { conn, connectionId: await withTimeout(welcome, TIMEOUT_MS, "welcome"), seen };
}

// The relay is this suite's parent shell's child: after exiting it stays a zombie until reaped.
function exited(pid) {
    try {
        return /^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    } catch {
        return true;
    }
}

test("SIGTERM with sessions in every state: clients closed, backend sessions ended, relay exits", async () => {
    const url = `${DOOMED_RELAY_URL}/chat`;
    const stock = [await connectRecorded(url, "json"), await connectRecorded(url, "messagepack")];
    const stockClosed = stock.map(({ conn }) => new Promise((resolve) => conn.onclose((e) => resolve(e ?? null))));
    const reconnecting = await connectStock(url, { reconnectDelays: [60000] });
    const reconnectingStarted = new Promise((resolve) => {
        reconnecting.conn.onreconnecting((e) => resolve({ kind: "reconnecting", error: e ?? null }));
        reconnecting.conn.onclose((e) => resolve({ kind: "close", error: e ?? null }));
    });
    const idle = await connectRaw({ base: DOOMED_RELAY_URL });
    const skip = await connectRaw({ base: DOOMED_RELAY_URL, skipNegotiation: true });
    const paused = await connectRaw({ base: DOOMED_RELAY_URL });
    paused.client.ws._socket.pause();
    for (let i = 0; i < 16; i++) paused.client.startInvoke("Echo", ["p".repeat(512 * 1024)]);
    const midHandshake = await RawClient.connect(wsUrl(DOOMED_RELAY_URL, "chat"));
    midHandshake.sendText('{"protocol":"json",');
    const token = await negotiate(DOOMED_RELAY_URL, "chat");
    assert.equal(token.status, 200);
    await pollUntil(() => metrics(DOOMED_RELAY_URL), (m) => m.flow_control_pauses_total > 0, "a paused session", 20000);
    const before = await metrics(DOOMED_RELAY_URL);
    assert.equal(before.sessions_active, 7);
    assert.equal(before.negotiations_pending, 1);

    process.kill(DOOMED_RELAY_PID, "SIGTERM");
    // The paused client reads again at once: its Close is queued behind the data it had not
    // read, and a client that reads while the relay shuts down must get it too.
    paused.client.ws._socket.resume();
    await pollUntil(() => exited(DOOMED_RELAY_PID), (gone) => gone, "the relay to exit", 20000, 100);

    const raws = [idle.client, skip.client, paused.client, midHandshake];
    for (const client of raws) await client.waitClosed(10000);
    const errors = await withTimeout(Promise.all(stockClosed), 10000, "stock clients' onclose");
    console.log(`# stock clients' onclose: ${errors.map((e) => e?.message ?? "no error").join(" | ")}; ` +
        `raw close codes: ${raws.map((c) => c.closeInfo.code).join(", ")}; ` +
        `Close records: ${JSON.stringify(raws.flatMap((c) => c.records.filter((r) => r.type === 7)))}`);
    // A goodbye, not a dropped socket: a Close with allowReconnect before the socket closes, so
    // clients reconnect (to another relay instance, behind a load balancer).
    for (const e of errors) assert.match(e?.message ?? "", /The relay is shutting down\.$/);
    for (const [i, { seen }] of stock.entries()) {
        const closes = seen.filter((m) => m.type === signalR.MessageType.Close);
        assert.equal(closes.length, 1, `stock client ${i}: one Close, got ${JSON.stringify(closes)}`);
        assert.equal(closes[0].allowReconnect, true, `stock client ${i}: Close ${JSON.stringify(closes[0])}`);
        assert.match(closes[0].error ?? "", /The relay is shutting down\.$/, `stock client ${i}: Close error`);
    }
    const rc = await withTimeout(reconnectingStarted, 10000, "the reconnecting client's onreconnecting");
    assert.equal(rc.kind, "reconnecting", `a Close without allowReconnect ends in onclose: ${rc.error?.message}`);
    assert.match(rc.error?.message ?? "", /The relay is shutting down\.$/);
    for (const [name, client] of [["idle", idle.client], ["skip-negotiation", skip.client]]) {
        const closes = client.records.filter((r) => r.type === 7);
        assert.equal(closes.length, 1, `${name} client: one Close record, got ${JSON.stringify(closes)}`);
        assert.equal(closes[0].allowReconnect, true, `${name} client: Close ${JSON.stringify(closes[0])}`);
        assert.match(closes[0].error ?? "", /The relay is shutting down\.$/, `${name} client: Close error`);
    }
    // The paused client's Close cannot be required: it had stopped reading, so the Close waits
    // behind up to 8 MB it had not read, and the relay drains for at most 2 s (relay.c, drain());
    // through an ASan build on a shared machine the backlog does not always get through in time,
    // and then the socket just closes (a relay may not wait forever for a client that does not
    // read). Whatever did arrive must be the completions in call order, and a Close, if it came,
    // must allow reconnecting.
    const pausedCloses = paused.client.records.filter((r) => r.type === 7);
    const pausedDone = paused.client.records.filter((r) => r.type === 3).map((r) => r.invocationId);
    assert.deepStrictEqual(pausedDone, pausedDone.map((_, i) => String(i + 1)), "the paused client's completions in order");
    assert.ok(pausedCloses.length <= 1, JSON.stringify(pausedCloses));
    // (Calls whose answers were still at the backend when it stopped reading get none, as with a
    // server that shuts down: the client fails them when the connection closes.)
    if (pausedCloses.length === 1) {
        assert.equal(pausedCloses[0].allowReconnect, true, `paused client: Close ${JSON.stringify(pausedCloses[0])}`);
    }
    console.log(`# paused client: ${pausedDone.length} of 16 completions, ${pausedCloses.length ? "then the Close" : "no Close (drain window over)"}`);
    for (const { connectionId } of [...stock, reconnecting, idle, skip, paused]) {
        const info = await disconnectSeenByBackend(connectionId, 10000);
        assert.equal(info.hub, "chat");
    }
    await stopAll(...stock.map((s) => s.conn), reconnecting.conn);
});
