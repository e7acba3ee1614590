// 19. A message size limit per direction: --max-client-message-size (what clients send) and
// --max-hub-message-size (what backend links and app server connections send), each defaulting to
// --max-message-size. A relay of its own with 16K from clients and 64K from hubs: a client message
// over 16K closes that client with the Close the one-limit case gives; an answer of 32K from the hub
// (over the client limit, under the hub's) reaches the client whole; one of 100K closes it.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, connectRaw } from "../lib.mjs";

test("--max-client-message-size and --max-hub-message-size: each direction its own limit", async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--max-client-message-size", "16K",
        "--max-hub-message-size", "64K"]);
    const clients = [];
    try {
        const open = async () => { const { client } = await connectRaw({ base: relay.url }); clients.push(client); return client; };

        const a = await open();
        const small = "s".repeat(10 * 1024);
        assert.equal(await a.invoke("Echo", [small]), small, "10K each way: under both limits");
        assert.equal(await a.invoke("Repeat", ["h", 32 * 1024]), "h".repeat(32 * 1024),
            "32K from the hub: over the client limit, under the hub's");

        const b = await open();
        b.startInvoke("Echo", ["c".repeat(20 * 1024)]);
        const close = await b.next((r) => r.type === 7, 10000, "a Close record (client message over 16K)");
        assert.match(close.error, /maximum message size/);
        assert.equal(close.allowReconnect, true);
        assert.equal((await b.waitClosed(10000)).code, 1000);

        const c = await open();
        c.startInvoke("Repeat", ["h", 100 * 1024]);
        const hubClose = await c.next((r) => r.type === 7, 10000, "a Close record (hub message over 64K)");
        assert.ok(hubClose.error.startsWith("Connection closed with an error."), hubClose.error);
        assert.equal((await c.waitClosed(10000)).code, 1000);

        assert.equal(await a.invoke("Echo", ["still served"]), "still served");
    } finally {
        for (const c of clients) c.close();
        await relay.stop();
    }
});
