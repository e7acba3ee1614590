// A client that sends a text frame that is not UTF-8 breaks the WebSocket protocol (RFC 6455
// §8.1). ASP.NET Core answers with close 1007 and nothing else; the relay must do the same, and
// must not blame the backend (it once forwarded the bytes, the backend dropped its link, and the
// client was told the relay had lost the backend, with an invitation to reconnect). Checked
// against the backend itself first, so the expectation is the real server's.
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
        const { code, closeRecords } = await sendNotUtf8(BACKEND_URL);
        assert.equal(code, 1007);
        assert.deepEqual(closeRecords, []);
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
