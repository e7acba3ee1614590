// What a backend hub sends in OnConnectedAsync reaches a legacy client only after its /start has
// been answered, as the original server delivers OnConnected's messages (spec legacy-signalr.md
// §1.7): clients such as signalr-no-jquery drop what arrives before. The backend's ChatHub sends
// "welcome" to the caller in OnConnectedAsync, before it handles any invocation, so an Add sent
// before /start orders the two: its result must come first, the welcome only after /start.
import { describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { LegacyClient, legacyConnectionData, legacyNegotiate } from "../lib.mjs";

const isWelcome = (f) => Array.isArray(f.M) && f.M.some((m) => m.M === "welcome");

describe("legacy OnConnected pushes", () => {
    it("wait for /start: an invocation answered before it comes back without the welcome", async () => {
        const c = await LegacyClient.open();
        const init = await c.next((f) => f.S === 1, "init frame");
        assert.deepEqual(init.M, []);
        const result = await c.invoke("chathub", "Add", [40, 2], 0); // the backend ran OnConnectedAsync before this
        assert.equal(result.R, 42);
        assert.deepEqual(c.frames.filter(isWelcome), [], "welcome sent before /start was answered");
        const start = await c.start();
        assert.deepEqual([start.status, JSON.parse(start.body)], [200, { Response: "started" }]);
        const welcome = await c.next(isWelcome, "welcome after start");
        assert.equal(welcome.M.length, 1);
        assert.deepEqual([welcome.M[0].H, welcome.M[0].M], ["ChatHub", "welcome"]);
        // Delivered once, with a cursor a reconnect can resume from.
        assert.equal(c.frames.filter(isWelcome).length, 1);
        assert.equal(c.cursor, welcome.C);
        await c.abort();
    });

    it("go out at once to a client of protocol 1.2, which sends no /start (spec §1.4)", async () => {
        const neg = await legacyNegotiate(["chathub"], "1.2");
        assert.equal(neg.json.ProtocolVersion, "1.2");
        const c = new LegacyClient();
        c.query = `transport=webSockets&clientProtocol=1.2&connectionToken=${encodeURIComponent(neg.json.ConnectionToken)}` +
            `&connectionData=${legacyConnectionData("chathub")}`;
        await c.attach("connect", "");
        const welcome = await c.next(isWelcome, "welcome without /start");
        assert.deepEqual([welcome.M[0].H, welcome.M[0].M], ["ChatHub", "welcome"]);
        await c.abort();
    });
});
