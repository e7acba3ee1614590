// The hub's keep-alive Pings and the relay's own (--keepalive) run on two clocks: ASP.NET Core
// pings a client once nothing was sent to it for its KeepAliveInterval (checked once a second),
// the relay once nothing was sent for --keepalive. With both at 15 s the relay's Ping comes first
// and the hub's follows a moment later, so a quiet client got two Pings an interval (9,000 idle
// service-mode clients: 13,106 Ping frames in 15 s instead of 9,000), each a send() of the relay's.
// And a service-mode app pings every client once it sent that client nothing itself for its
// interval, which a Clients.All or group send is not, as far as the app knows: while messages
// flow, every client got the app's Ping each interval besides them. So a hub Ping that comes
// within half an interval of the relay's last write to the client (its own Ping or a message) is
// not forwarded; one after a longer silence is. The backend here is a raw TCP server that sends
// its Pings when the test says so.
import { test, describe, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import net from "node:net";
import { RS, RawClient, listen, closeServer, pollUntil, wsUrl } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

// The relay's interval: its first Ping comes after 5.4-6 s (up to 10 % early), and a hub Ping is
// dropped only within 3 s of it, which leaves a loaded machine seconds for the round trip.
const KEEPALIVE_S = 6;
const LONG_KEEPALIVE_S = 20;
const QUIET_MS = 12000;
const NEGOTIATE_BODY = JSON.stringify({ negotiateVersion: 1, connectionId: "ping-id", connectionToken: "ping-token",
    availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] });

function textFrame(text) {
    const payload = Buffer.from(text);
    return Buffer.concat([Buffer.from([0x81, payload.length]), payload]); // unmasked, < 126 bytes
}

const links = []; // the backend sockets, upgraded: { path, socket }
const backend = net.createServer((socket) => {
    socket.on("error", () => {});
    let data = Buffer.alloc(0);
    let upgraded = false;
    socket.on("data", (d) => {
        if (upgraded) return; // the client's handshake and anything after it: not needed here
        data = Buffer.concat([data, d]);
        const text = data.toString("latin1");
        if (text.indexOf("\r\n\r\n") < 0) return;
        if (!/\r\nupgrade: *websocket/i.test(text)) {
            socket.end(text.startsWith("POST ")
                ? `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${NEGOTIATE_BODY.length}\r\n\r\n${NEGOTIATE_BODY}`
                : "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            return;
        }
        const key = /\r\nsec-websocket-key: *([^\r]+)\r\n/i.exec(text)[1].trim();
        const accept = crypto.createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
        socket.write(textFrame(`{}${RS}`)); // the hub's handshake answer
        upgraded = true;
        links.push({ path: text.split(" ")[1].split("?")[0], socket });
    });
});
after(async () => {
    for (const l of links) l.socket.destroy();
    await closeServer(backend);
});

const HUB_PING = textFrame(`{"type":6}${RS}`);
const marker = (n) => textFrame(JSON.stringify({ type: 1, target: "marker", arguments: [n] }) + RS);

// The backend link the relay opened for the hub at `path`.
const linkFor = (path) => pollUntil(() => links.find((l) => l.path === path)?.socket, (s) => s !== undefined,
    `the backend link for ${path}`, 20000);

async function withClient(keepaliveS, path, run) {
    const port = await listen(backend);
    const relay = await startRelay(["--hub", `pings=http://127.0.0.1:${port}${path}`, "--keepalive", String(keepaliveS)]);
    let client = null;
    try {
        client = await RawClient.connect(wsUrl(relay.url, "pings"));
        const answer = await client.handshake(1, "json", 20000);
        assert.equal(answer.error, undefined, JSON.stringify(answer));
        await run(client, await linkFor(path));
    } finally {
        client?.terminate();
        await relay.stop();
    }
}

const pingsUpTo = (client, record) => client.records.filter((r) => r.type === 6 && r.at <= record.at);

describe("the hub's Pings and the relay's keepalive", { concurrency: true }, () => {
    test("a hub Ping within half an interval of the relay's last write is not forwarded", async () => {
        await withClient(KEEPALIVE_S, "/chat", async (client, link) => {
            // Nothing comes from the hub: the first Ping is the relay's own.
            const own = await client.next((r) => r.type === 6, KEEPALIVE_S * 1000 + 20000, "the relay's own Ping");
            link.write(HUB_PING); // the hub's, a moment later: the client has one already
            link.write(marker(1));
            const first = await client.next((r) => r.type === 1, 20000, "marker 1");
            const between = pingsUpTo(client, first);
            assert.deepEqual(between, [], `a Ping came ${between.map((r) => r.at - own.at)} ms after the relay's own`);

            // Right after a message of the hub's, its Ping tells the client nothing new either.
            link.write(HUB_PING);
            link.write(marker(2));
            const second = await client.next((r) => r.type === 1, 20000, "marker 2");
            const after2 = pingsUpTo(client, second);
            assert.deepEqual(after2, [], `a Ping came ${after2.map((r) => r.at - first.at)} ms after marker 1`);

            // The client is still pinged: the relay's own Ping, an interval after its last write.
            const next = await client.next((r) => r.type === 6, KEEPALIVE_S * 1000 + 20000, "the relay's next Ping");
            assert.ok(next.at - second.at >= KEEPALIVE_S * 1000 * 0.5, `the relay pinged ${next.at - second.at} ms after marker 2`);
        });
    });

    // A relay whose interval is long beside the hub's: after half of it without a write, the
    // hub's Ping reaches the client (it may be the client's only sign of life before its
    // server timeout). Sent 12 s after the handshake answer: past half of 20 s, 8 s before the
    // relay's own Ping is due, which leaves a loaded machine time for the round trip.
    test("a hub Ping after half an interval of silence is forwarded", async () => {
        await withClient(LONG_KEEPALIVE_S, "/quiet", async (client, link) => {
            await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
            link.write(HUB_PING);
            link.write(marker(3));
            const third = await client.next((r) => r.type === 1, 20000, "marker 3");
            const forwarded = pingsUpTo(client, third);
            assert.equal(forwarded.length, 1, "the hub's Ping reached the client before marker 3");
            assert.ok(third.at - forwarded[0].at < (LONG_KEEPALIVE_S * 1000 - QUIET_MS) / 2,
                "the Ping came with marker 3 (the hub's), not as the relay's own long before it");
        });
    });
});
