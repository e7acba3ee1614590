// What the relay itself does in service mode: token checks on both sides, the ops hub's
// authorization at the app, and /metrics.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { APP_URL, RELAY_URL, connect, metrics, pollUntil, stopAll, waitFor } from "../lib.mjs";
import { jwt } from "../wire.mjs";

const T = { timeout: 30000 };

function upgradeStatus(url, headers = {}) {
    return new Promise((resolve, reject) => {
        const ws = new WebSocket(url, { headers });
        ws.on("unexpected-response", (req, res) => {
            resolve(res.statusCode);
            req.destroy();
        });
        ws.on("open", () => {
            ws.terminate();
            resolve(101);
        });
        ws.on("error", (e) => reject(e));
    });
}

test("a server connection without a valid token is refused with 401", T, async () => {
    const ws = RELAY_URL.replace("http", "ws");
    assert.equal(await upgradeStatus(`${ws}/server/?hub=board&cid=x`), 401);
    assert.equal(await upgradeStatus(`${ws}/server/?hub=board&cid=x`, { Authorization: "Bearer a.b.c" }), 401);
});

test("client negotiate and connect without a valid token are refused with 401", T, async () => {
    let res = await fetch(`${RELAY_URL}/client/negotiate?hub=board&negotiateVersion=1`, { method: "POST" });
    assert.equal(res.status, 401);
    res = await fetch(`${RELAY_URL}/client/negotiate?hub=board&negotiateVersion=1`, {
        method: "POST", headers: { Authorization: "Bearer nope" },
    });
    assert.equal(res.status, 401);
    const ws = RELAY_URL.replace("http", "ws");
    assert.equal(await upgradeStatus(`${ws}/client/?hub=board&id=x`), 401);
});

test("a client token for one hub does not open another", T, async () => {
    const res = await fetch(`${APP_URL}/board/negotiate?negotiateVersion=1&user=hubhop`, { method: "POST" });
    const body = await res.json();
    const neg = await fetch(`${RELAY_URL}/client/negotiate?hub=opshub&negotiateVersion=1`, {
        method: "POST", headers: { Authorization: `Bearer ${body.accessToken}` },
    });
    assert.equal(neg.status, 401);
});

test("the [Authorize] hub: a user gets in, and its hub key differs from its path", T, async () => {
    const res = await fetch(`${APP_URL}/ops/negotiate?negotiateVersion=1`, { method: "POST" });
    assert.equal(res.status, 401);
    const c = await connect({ user: "ops-user", hub: "ops" });
    try {
        assert.equal(await c.connection.invoke("Ping"), "pong");
    } finally {
        await stopAll(c);
    }
});

test("/metrics counts server connections, clients, groups, memberships and fan-out", T, async () => {
    const a = await connect({ user: "metrics-a", protocol: "messagepack" });
    try {
        const m = await metrics();
        assert.ok(m['signalr_relay_service_server_connections{hub="board"}'] >= 2);
        assert.ok(m['signalr_relay_service_server_connections{hub="opshub"}'] >= 2);
        assert.ok(m['signalr_relay_service_clients{hub="board"}'] >= 1);
        assert.ok(m['signalr_relay_service_clients_by_protocol{hub="board",protocol="messagepack"}'] >= 1);
        assert.ok("signalr_relay_service_slow_client_closes_total" in m);
        await a.connection.invoke("AddToGroup", "metrics-room");
        const after = await metrics();
        assert.ok(after['signalr_relay_service_groups{hub="board"}'] >= 1);
        assert.ok(after['signalr_relay_service_memberships{hub="board"}'] >= 1);
        await a.connection.invoke("SendToGroup", "metrics-room", "counted");
        await pollUntil(metrics, (x) => x.signalr_relay_service_fanout_deliveries_total > m.signalr_relay_service_fanout_deliveries_total,
            "a fan-out delivery to be counted");
    } finally {
        await stopAll(a);
    }
});

test("--app-negotiate: clients that know only the relay negotiate there and follow the app's redirect", T, async () => {
    const a = await connect({ user: "via-relay", appUrl: RELAY_URL, protocol: "messagepack" });
    const b = await connect({ user: "via-app" });
    try {
        const who = await a.connection.invoke("WhoAmI");
        assert.equal(who.userIdentifier, "via-relay");
        assert.equal(who.path, "/board");
        await b.connection.invoke("SendToUser", "via-relay", "found you");
        await waitFor(a, (m) => m[0] === "userMessage" && m[2] === "found you", "the user message");
        /* The app's own refusal comes back as it is: /ops needs a user. */
        const res = await fetch(`${RELAY_URL}/ops/negotiate?negotiateVersion=1`, { method: "POST" });
        assert.equal(res.status, 401);
        const ops = await connect({ user: "ops-via-relay", hub: "ops", appUrl: RELAY_URL });
        assert.equal(await ops.connection.invoke("Ping"), "pong");
        await stopAll(ops);
    } finally {
        await stopAll(a, b);
    }
});

test("key rotation: a server token signed with any configured key is accepted, another key's is not", T, async () => {
    const ws = RELAY_URL.replace("http", "ws");
    const oldKey = process.env.OLD_SERVICE_KEY;
    assert.ok(oldKey, "OLD_SERVICE_KEY is set by scripts/service-tests.sh");
    const url = `${ws}/server/?hub=rotation&cid=c1`;
    assert.equal(await upgradeStatus(url, { Authorization: `Bearer ${jwt(oldKey, { nameid: "s" }, "server", "rotation")}` }), 101);
    assert.equal(await upgradeStatus(url, { Authorization: `Bearer ${jwt("not-a-key", { nameid: "s" }, "server", "rotation")}` }), 401);
    /* The audience names the hub: a token for another hub is refused. */
    assert.equal(await upgradeStatus(url, { Authorization: `Bearer ${jwt(oldKey, { nameid: "s" }, "server", "board")}` }), 401);
});
