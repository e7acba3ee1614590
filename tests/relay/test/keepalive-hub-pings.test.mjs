// The hub's keep-alive Pings and the relay's own (--keepalive) run on two clocks: ASP.NET Core
// pings a client once nothing was sent to it for its KeepAliveInterval (checked once a second),
// the relay once nothing was sent for --keepalive. With both at 15 s the relay's Ping comes first
// and the hub's follows a moment later, so a quiet client got two Pings an interval (9,000 idle
// service-mode clients: 13,106 Ping frames in 15 s instead of 9,000), each a send() of the relay's.
// A hub Ping that comes within half an interval of the relay's own is therefore not forwarded;
// one that comes after anything else is. The backend here is a raw TCP server that sends its
// Pings when the test says so: right after the client saw the relay's Ping, then after a message.
import { test, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import net from "node:net";
import { RS, RawClient, listen, closeServer, pollUntil, wsUrl } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

// The relay's interval: its first Ping comes after 5.4-6 s (up to 10 % early), and a hub Ping is
// dropped only within 3 s of it, which leaves a loaded machine seconds for the round trip.
const KEEPALIVE_S = 6;
const NEGOTIATE_BODY = JSON.stringify({ negotiateVersion: 1, connectionId: "ping-id", connectionToken: "ping-token",
    availableTransports: [{ transport: "WebSockets", transferFormats: ["Text", "Binary"] }] });

function textFrame(text) {
    const payload = Buffer.from(text);
    return Buffer.concat([Buffer.from([0x81, payload.length]), payload]); // unmasked, < 126 bytes
}

const links = []; // the backend sockets, upgraded
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
        links.push(socket);
    });
});
after(async () => {
    for (const s of links) s.destroy();
    await closeServer(backend);
});

const HUB_PING = textFrame(`{"type":6}${RS}`);
const marker = (n) => textFrame(JSON.stringify({ type: 1, target: "marker", arguments: [n] }) + RS);

test("a hub Ping right after the relay's own is not forwarded; one after other traffic is", async () => {
    const port = await listen(backend);
    const relay = await startRelay(["--hub", `pings=http://127.0.0.1:${port}/chat`, "--keepalive", String(KEEPALIVE_S)]);
    let client = null;
    try {
        client = await RawClient.connect(wsUrl(relay.url, "pings"));
        const answer = await client.handshake(1, "json", 20000);
        assert.equal(answer.error, undefined, JSON.stringify(answer));
        const link = await pollUntil(() => links.at(-1), (s) => s !== undefined, "the backend link", 20000);

        // Nothing comes from the hub: the first Ping is the relay's own.
        const own = await client.next((r) => r.type === 6, KEEPALIVE_S * 1000 + 20000, "the relay's own Ping");
        link.write(HUB_PING); // the hub's, a moment later: the client has one already
        link.write(marker(1));
        const first = await client.next((r) => r.type === 1, 20000, "marker 1");
        const between = client.records.filter((r) => r.type === 6 && r.at <= first.at);
        assert.deepEqual(between, [], `a Ping came ${between.map((r) => r.at - own.at)} ms after the relay's own`);

        // After a message of the hub's, its Ping is the client's next sign of life: forwarded.
        link.write(HUB_PING);
        link.write(marker(2));
        const second = await client.next((r) => r.type === 1, 20000, "marker 2");
        const forwarded = client.records.filter((r) => r.type === 6 && r.at <= second.at);
        assert.equal(forwarded.length, 1, "the hub's Ping after marker 1 reached the client");
    } finally {
        client?.terminate();
        await relay.stop();
    }
});
