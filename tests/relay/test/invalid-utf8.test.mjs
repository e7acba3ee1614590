// A client that sends a text frame that is not UTF-8 breaks the WebSocket protocol (RFC 6455
// §8.1). ASP.NET Core answers with close 1007 and nothing else; the relay must do the same, and
// must not blame the backend (it once forwarded the bytes, the backend dropped its link, and the
// client was told the relay had lost the backend, with an invitation to reconnect). Checked
// against the backend itself first, so the expectation is the real server's.
//
// What Kestrel sends is not the same every time: it always ends the connection, and its close
// frame says 1007, but it may reset the TCP connection before that frame reaches the client (a
// raw socket that does not answer the close saw a close frame 1007 then FIN or RST in 49 of 60
// tries, and an RST with no frame at all in 11; `ws` reports the latter as 1006). So the direct control accepts 1006
// as "ended without a frame", never anything else or a Close message, and tries again until it
// has seen the server's 1007 once. The relay's answer is checked strictly: always 1007.
import { describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { BACKEND_URL, RELAY_URL, LegacyClient, connectRaw, metrics, withTimeout, TIMEOUT_MS } from "../lib.mjs";

const NOT_UTF8 = Buffer.from([0x7b, 0x22, 0x61, 0xff, 0xfe, 0x22, 0x7d, 0x1e]); // {"a\xff\xfe"} + RS

async function sendNotUtf8(base) {
    const { client } = await connectRaw({ base });
    client.ws.send(NOT_UTF8, { binary: false });
    const closed = await client.waitClosed(TIMEOUT_MS);
    const closeRecords = client.records.filter((r) => r.type === 7);
    return { code: closed.code, closeRecords };
}

describe("a text frame that is not UTF-8", () => {
    it("Core, straight to ASP.NET Core: close 1007, no Close message", async () => {
        const codes = [];
        for (let attempt = 0; attempt < 20 && !codes.includes(1007); attempt++) {
            const { code, closeRecords } = await sendNotUtf8(BACKEND_URL);
            assert.ok(code === 1007 || code === 1006, `close ${code}: the server ends the connection with 1007 or a reset`);
            assert.deepEqual(closeRecords, []);
            codes.push(code);
        }
        assert.ok(codes.includes(1007), `the server's close frame says 1007 (got ${codes.join(", ")})`);
    });

    it("Core, through the relay: the same, counted as a protocol error", async () => {
        const before = await metrics();
        const { code, closeRecords } = await sendNotUtf8(RELAY_URL);
        assert.equal(code, 1007);
        assert.deepEqual(closeRecords, [], "no Close message (and so no allowReconnect) for a client's own fault");
        assert.ok((await metrics()).protocol_errors_total > before.protocol_errors_total);
    });

    it("legacy, through the relay: close 1007", async () => {
        const c = await LegacyClient.open(["chathub"]);
        c.ws.send(NOT_UTF8.subarray(0, 7), { binary: false });
        assert.equal(await withTimeout(c.closed, TIMEOUT_MS, "the socket to close"), 1007);
    });
});
