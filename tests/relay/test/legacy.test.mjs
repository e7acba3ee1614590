// The relay's legacy endpoint (/signalr) where a real legacy server's behaviour is specified but no
// stock client shows it: the original's validation order and texts, the negotiate version echo,
// a start that fails when a backend hub is unreachable, a client result the legacy client cannot
// give, a reconnect the relay cannot honour, a dead socket found by WebSocket pings, and the
// disconnect timeout after which the backend runs OnDisconnectedAsync. Raw HTTP and WebSockets,
// so each test sees exactly what the relay sent.
import { describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { LEGACY_BASE, LegacyClient, legacyConnectionData, legacyNegotiate, WebSocket, httpRequest, pollUntil, withTimeout, disconnectSeenByBackend, TIMEOUT_MS } from "../lib.mjs";
import { tcpState } from "../../lib/common.mjs";

const LEGACY_KEEPALIVE_MS = Math.round(Number(process.env.RELAY_LEGACY_KEEPALIVE_S) * 1000);
const LEGACY_DISCONNECT_MS = Math.round(Number(process.env.RELAY_LEGACY_DISCONNECT_S) * 1000);
const BASE = LEGACY_BASE;
const connectionData = legacyConnectionData;
const negotiate = legacyNegotiate;

describe("legacy endpoint", () => {
    it("validates in the original's order, with its texts", async () => {
        const neg = await negotiate(["chathub"]);
        const token = encodeURIComponent(neg.json.ConnectionToken);
        const jsonp = await httpRequest("GET", `${BASE}/start?transport=webSockets&connectionToken=${token}&callback=f`);
        assert.equal(jsonp.status, 403);
        const noTransport = await httpRequest("GET", `${BASE}/start?connectionToken=${token}`);
        assert.deepEqual([noTransport.status, noTransport.body], [400, "Protocol error: Unknown transport."]);
        const noToken = await httpRequest("GET", `${BASE}/start?transport=webSockets`);
        assert.deepEqual([noToken.status, noToken.body], [400, "Protocol error: Missing connection token."]);
        // A token with one character changed is refused, as the original refuses a tampered token.
        const raw = neg.json.ConnectionToken;
        const tampered = raw.slice(0, 10) + (raw[10] === "A" ? "B" : "A") + raw.slice(11);
        const bad = await httpRequest("GET", `${BASE}/start?transport=webSockets&connectionToken=${encodeURIComponent(tampered)}`);
        assert.deepEqual([bad.status, bad.body], [400, "The ConnectionId is in the incorrect format."]);
        const notUpgrade = await httpRequest("GET", `${BASE}/connect?transport=webSockets&connectionToken=${token}`);
        assert.deepEqual([notUpgrade.status, notUpgrade.body], [400, "Not a valid web socket request."]);
        assert.equal(bad.headers["x-content-type-options"], "nosniff");
    });

    it("negotiate echoes the clamped protocol version and refuses unknown hubs", async () => {
        assert.equal((await negotiate(["chathub"], "1.4")).json.ProtocolVersion, "1.4");
        assert.equal((await negotiate(["chathub"], "2.1")).json.ProtocolVersion, "2.0");
        const keys = Object.keys((await negotiate(["ChatHub"])).json);
        assert.deepEqual(keys, ["Url", "ConnectionToken", "ConnectionId", "KeepAliveTimeout", "DisconnectTimeout",
            "ConnectionTimeout", "TryWebSockets", "ProtocolVersion", "TransportConnectTimeout", "LongPollDelay"]);
        const unknown = await negotiate(["nope"]);
        assert.deepEqual([unknown.status, unknown.body], [500, ""]); // as the original: nothing said
        const ping = await httpRequest("GET", `${BASE}/ping`);
        assert.deepEqual([ping.status, JSON.parse(ping.body)], [200, { Response: "pong" }]);
    });

    it("start fails, naming the hub, when a listed backend hub is unreachable", async () => {
        const c = await LegacyClient.open(["dead"]);
        const init = await c.next((f) => f.S === 1, "init frame");
        assert.deepEqual(init.M, []);
        const start = await c.start();
        assert.equal(start.status, 502); // the backend refused the connection
        assert.match(start.body, /backend hub 'dead'/);
        await c.abort();
    });

    it("answers a client-result request for the legacy client, and the backend gets an error at once", async () => {
        const c = await LegacyClient.open();
        assert.equal((await c.start()).status, 200);
        const result = await c.invoke("chathub", "AskClient", [], 0);
        assert.equal(result.H, true); // the backend's HubException, carrying the relay's refusal
        assert.match(result.E, /legacy ASP\.NET SignalR client/);
        await c.abort();
    });

    it("a backend hub that ends the connection mid-session ends the legacy connection with an E frame", async () => {
        const c = await LegacyClient.open();
        assert.equal((await c.start()).status, 200);
        c.ws.send(JSON.stringify({ H: "chathub", M: "AbortMe", A: [], I: 0 })); // Context.Abort() on the backend
        const frame = await c.next((f) => f.E !== undefined, "E frame");
        assert.match(frame.E, /backend hub 'chatHub'/i);
        assert.equal(await withTimeout(c.closed, TIMEOUT_MS, "close"), 1000);
    });

    it("a reconnect the relay cannot replay tells the client to start over", async () => {
        const c = await LegacyClient.open();
        assert.equal((await c.start()).status, 200);
        await c.abort();
        await c.closed;
        // Whatever the cursor says, even that nothing was seen yet (a client aborted before any push).
        const seenNothing = c.cursor.replace(/-[0-9a-f]+$/, "-0");
        await c.attach("reconnect", `&messageId=${encodeURIComponent(seenNothing)}`);
        const first = await c.next((f) => f.E !== undefined, "E frame (cursor 0)");
        assert.match(first.E, /start a new connection/);
        await withTimeout(c.closed, TIMEOUT_MS, "close");
        // The same (valid) token, but the connection is gone: an E frame, then the socket closes.
        await c.attach("reconnect", `&messageId=${encodeURIComponent(c.cursor)}`);
        const frame = await c.next((f) => f.E !== undefined, "E frame");
        assert.match(frame.E, /start a new connection/);
        assert.equal(await withTimeout(c.closed, TIMEOUT_MS, "close"), 1000);
    });

    it("finds a dead socket with WebSocket pings, keeps the connection for a reconnect, and replays", async () => {
        const c = await LegacyClient.open();
        assert.equal((await c.start()).status, 200);
        const welcome = await c.next((f) => f.M && f.M.some((m) => m.M === "welcome"), "welcome");
        const backendId = welcome.M.find((m) => m.M === "welcome").A[0];
        const cursor = c.cursor;
        const alive = await LegacyClient.open(); // answers pings (its WebSocket stack does) all along
        assert.equal((await alive.start()).status, 200);
        let aliveClosed = false;
        alive.closed.then(() => { aliveClosed = true; });
        const localPort = c.ws._socket.localPort;
        c.ws._socket.pause(); // no pongs, no reads: to the relay the client has vanished
        // The relay gives up after three silent keep-alive intervals and closes the socket; the
        // kernel shows that (CLOSE_WAIT, or the connection gone) although the client reads nothing.
        await pollUntil(() => tcpState(localPort), (state) => state !== "ESTABLISHED",
            "the relay to drop the silent socket", 3 * LEGACY_KEEPALIVE_MS + TIMEOUT_MS, 100);
        c.ws._socket.resume(); // now the client sees what the relay did meanwhile
        const code = await withTimeout(c.closed, TIMEOUT_MS, "the relay closing a dead socket");
        assert.notEqual(code, 1000); // dropped, not ended: the connection waits for a reconnect
        assert.equal(aliveClosed, false, "a client that answers pings must stay connected");
        await alive.abort();
        // Back within the disconnect timeout: same backend connection, nothing missed.
        await c.attach("reconnect", `&messageId=${encodeURIComponent(cursor)}`);
        const echo = await c.invoke("chathub", "WhoAmI", [], 1);
        assert.equal(echo.R.connectionId, backendId);
        await c.abort();
    });

    it("after the disconnect timeout the backend runs OnDisconnectedAsync", async () => {
        const c = await LegacyClient.open();
        assert.equal((await c.start()).status, 200);
        const who = await c.invoke("chathub", "WhoAmI", [], 0);
        c.ws.terminate(); // gone without /abort
        // DisconnectTimeout + the original's 5 s transport threshold, then the links close.
        const info = await disconnectSeenByBackend(who.R.connectionId, LEGACY_DISCONNECT_MS + 5000 + TIMEOUT_MS);
        assert.equal(info.disconnected, true);
        assert.equal(info.error, null);
    });
});
