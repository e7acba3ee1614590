// 3. A client that vanishes without a Close frame (its TCP connection just ends): the relay must
// notice, end the backend link, and the backend must run OnDisconnectedAsync promptly, as it
// would for a direct connection; the relay's session count returns to what it was.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { RELAY_URL, BACKEND_URL, connectRaw, disconnectSeenByBackend, metrics, pollUntil, settledMetrics } from "../lib.mjs";

// Promptly: far under the client timeout and keep-alive a relay without TCP close detection would
// need (30 s by default), with room for a shared machine.
const PROMPTLY_MS = 8000;

// Connects a raw client through `base`, drops its socket, and returns what the backend recorded
// and how long it took.
async function dropAndAsk(base, skipNegotiation) {
    const { client, connectionId } = await connectRaw({ base, skipNegotiation });
    assert.equal(await client.invoke("Echo", ["before the drop"]), "before the drop");
    const droppedAt = Date.now();
    client.terminate(); // socket destroyed: no Close frame, no Close message
    const info = await disconnectSeenByBackend(connectionId, PROMPTLY_MS);
    return { info, ms: Date.now() - droppedAt };
}

for (const skipNegotiation of [false, true]) {
    test(`dropped TCP connection (${skipNegotiation ? "skip negotiation" : "negotiated"}): OnDisconnectedAsync runs promptly, sessions_active returns`, async () => {
        const before = await settledMetrics();
        const direct = await dropAndAsk(BACKEND_URL, skipNegotiation);
        const relayed = await dropAndAsk(RELAY_URL, skipNegotiation);
        assert.ok(relayed.ms < PROMPTLY_MS, `took ${relayed.ms} ms`);
        assert.equal(relayed.info.hub, "chat");
        // What the hub's OnDisconnectedAsync gets must be what a direct drop gives it.
        assert.deepStrictEqual(relayed.info, direct.info,
            `through the relay the backend saw ${JSON.stringify(relayed.info)}, directly ${JSON.stringify(direct.info)}`);
        await pollUntil(() => metrics(),
            (m) => m.sessions_active === before.sessions_active && m.backend_links_active === before.backend_links_active,
            "sessions_active and backend_links_active back to their earlier values", PROMPTLY_MS);
    });
}
