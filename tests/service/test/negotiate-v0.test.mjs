// Negotiate v0 on the relay's /client/negotiate: a client that negotiates without
// negotiateVersion=1 gets the v0 shape (connectionId, no connectionToken), as Azure SignalR
// answers it, and connects with that id. The real client here is @microsoft/signalr 3.0.3 (npm
// alias signalr-v3), which predates negotiateVersion: it negotiates at the app, follows the
// SDK's redirect to the relay and sends no version there either.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import WebSocket from "ws";
import { APP_URL, RELAY_URL, withTimeout, TIMEOUT_MS } from "../lib.mjs";

const signalR3 = createRequire(import.meta.url)("signalr-v3");
const T = { timeout: 60000 };

// The app's redirect for a v0 negotiate (no negotiateVersion): the relay URL and client token.
async function appRedirect(query = "") {
    const res = await fetch(`${APP_URL}/board/negotiate${query}`, { method: "POST" });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.ok(body.url && body.accessToken, JSON.stringify(body));
    return body;
}

function relayNegotiateUrl(redirect) {
    const u = new URL(redirect);
    u.pathname = u.pathname.replace(/\/?$/, "/negotiate");
    return u;
}

// Status of a WebSocket upgrade at the relay's /client/ (101 = accepted).
function upgradeStatus(url) {
    return withTimeout(new Promise((resolve) => {
        const ws = new WebSocket(url);
        ws.on("open", () => { ws.terminate(); resolve(101); });
        ws.on("unexpected-response", (_req, res) => { resolve(res.statusCode); res.resume(); });
        ws.on("error", () => resolve(-1));
    }), TIMEOUT_MS, "upgrade answer");
}

test("a negotiate without negotiateVersion gets the v0 shape: connectionId only", T, async () => {
    const { url, accessToken } = await appRedirect();
    const negotiate = relayNegotiateUrl(url);
    assert.equal(negotiate.searchParams.get("negotiateVersion"), null);
    const res = await fetch(negotiate, { method: "POST", headers: { Authorization: `Bearer ${accessToken}` } });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.negotiateVersion, 0);
    assert.match(body.connectionId, /^[A-Za-z0-9_-]{22}$/);
    assert.equal(body.connectionToken, undefined);
    assert.ok(body.availableTransports.some((t) => t.transport === "WebSockets"));
    // The same request with negotiateVersion=1 still gets a token beside the id.
    negotiate.searchParams.set("negotiateVersion", "1");
    const v1 = await (await fetch(negotiate, { method: "POST", headers: { Authorization: `Bearer ${accessToken}` } })).json();
    assert.equal(v1.negotiateVersion, 1);
    assert.ok(v1.connectionToken && v1.connectionToken !== v1.connectionId);
});

test("the v0 id connects only with the token of its own hub and user, and a made-up id does not", T, async () => {
    const { url, accessToken } = await appRedirect();
    const negotiate = relayNegotiateUrl(url);
    const { connectionId } = await (await fetch(negotiate, { method: "POST", headers: { Authorization: `Bearer ${accessToken}` } })).json();
    const ws = (id, token = accessToken) => {
        const u = new URL(url);
        u.protocol = "ws:";
        u.searchParams.set("id", id);
        u.searchParams.set("access_token", token);
        return u.toString();
    };
    const madeUp = connectionId.slice(0, 21) + (connectionId[21] === "A" ? "B" : "A");
    assert.equal(await upgradeStatus(ws(madeUp)), 404);
    assert.equal(await upgradeStatus(ws("AAAAAAAAAAAAAAAAAAAAAA")), 404);
    // Another user's token (the app's test user auth: ?user=) does not go with this id.
    const other = await appRedirect("?user=mallory-v0");
    assert.equal(await upgradeStatus(ws(connectionId, other.accessToken)), 404);
    assert.equal(await upgradeStatus(ws(connectionId)), 101);
});

test("@microsoft/signalr 3.0.3 (negotiate v0) connects through the app and the relay, and its connectionId is the app's", T, async () => {
    const connection = new signalR3.HubConnectionBuilder()
        .withUrl(`${APP_URL}/board?user=v0-user`, { transport: signalR3.HttpTransportType.WebSockets })
        .configureLogging(signalR3.LogLevel.None)
        .build();
    const welcome = new Promise((resolve) => connection.on("welcome", (id, user) => resolve([id, user])));
    try {
        await withTimeout(connection.start(), TIMEOUT_MS, "the 3.0.3 client's start");
        assert.match(connection.connectionId, /^[A-Za-z0-9_-]{22}$/);
        const [welcomeId, welcomeUser] = await withTimeout(welcome, TIMEOUT_MS, "welcome");
        assert.equal(welcomeId, connection.connectionId);
        assert.equal(welcomeUser, "v0-user");
        const me = await connection.invoke("WhoAmI");
        assert.equal(me.connectionId, connection.connectionId);
        assert.equal(await connection.invoke("Echo", "v0 echo"), "v0 echo");
        // Clients.Client(the id the client knows) reaches it.
        const got = new Promise((resolve) => connection.on("private", (from, text) => resolve(text)));
        await connection.invoke("SendToConnection", connection.connectionId, "to my own id");
        assert.equal(await withTimeout(got, TIMEOUT_MS, "private"), "to my own id");
    } finally {
        await connection.stop();
    }
});
