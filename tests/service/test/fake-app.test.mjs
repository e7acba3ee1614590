// The relay's server side driven by hand: a fake app server speaks the service protocol on a raw
// WebSocket, so a test controls fragmentation, packing, order and timing exactly (what the real
// SDK does is covered by the other files; tests/service-app/OBSERVED.md is what it sends).
import { test, before } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import WebSocket from "ws";
import { jwt as wireJwt, frame, unframe, ext } from "../wire.mjs";
import { RELAY_URL, SERVICE_KEY, pollUntil, withTimeout } from "../lib.mjs";

const RS = "\x1e";
const WS_URL = RELAY_URL.replace("http", "ws");
const T = { timeout: 30000 };

const jwt = (claims, kind, hub) => wireJwt(SERVICE_KEY, claims, kind, hub);

// A fake app server connection for `hub`, with every message it received in `got`.
async function fakeServer(hub, { handshake = true, serverId = "fake-server" } = {}) {
    const cid = crypto.randomUUID();
    const ws = new WebSocket(`${WS_URL}/server/?hub=${hub}&cid=${cid}`, {
        headers: { Authorization: `Bearer ${jwt({ nameid: serverId }, "server", hub)}` },
    });
    const server = { ws, cid, got: [], closed: null };
    ws.on("message", (data) => server.got.push(...unframe(Buffer.from(data))));
    server.closedPromise = new Promise((resolve) => ws.on("close", (code) => resolve((server.closed = code))));
    await withTimeout(new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); }), 10000, "open");
    if (handshake) {
        ws.send(frame([1, 1, 0, "", 0, {}, false]));
        const [answer] = await waitMsg(server, (m) => m[0] === 2, "the handshake answer");
        assert.deepEqual(answer.slice(0, 2), [2, null]);
    }
    return server;
}

async function waitMsg(server, match, what, timeoutMs = 10000) {
    const found = await pollUntil(async () => server.got.filter(match), (list) => list.length > 0, what, timeoutMs, 20);
    return found;
}

// A server connection that goes silent after its handshake: opened first, judged last (the
// relay drops a connection that sent nothing for 30 s, as the SDK does on its side).
let silent;
let silentSince;
before(async () => {
    silent = await fakeServer("silenthub");
    silentSince = Date.now();
});

test("handshake split across fragments, several messages in one frame, Acks, pings, finack", T, async () => {
    const server = await fakeServer("fakehub", { handshake: false });
    try {
        const hs = frame([1, 1, 0, "", 0, {}, false]);
        server.ws.send(hs.subarray(0, 3), { binary: true, fin: false });
        server.ws.send(hs.subarray(3), { binary: true, fin: true });
        const [answer] = await waitMsg(server, (m) => m[0] === 2, "the handshake answer");
        assert.equal(answer[1], null);
        assert.equal(server.got[0][0], 2, "the handshake answer comes first");
        // Group changes for a connection the relay does not hold: acked NotFound (2), in order.
        server.ws.send(Buffer.concat([frame([18, "nobody", "g", 7, {}]), frame([19, "nobody", null, 8, {}])]));
        const acks = await pollUntil(async () => server.got.filter((m) => m[0] === 20), (l) => l.length === 2, "two acks");
        assert.deepEqual(acks.map((a) => [a[1], a[2]]), [[7, 2], [8, 2]]);
        await waitMsg(server, (m) => m[0] === 3 && m.length === 1, "a [3] keep-alive", 8000);
        server.ws.send(frame([3, "shutdown", "fin:0"]));
        await waitMsg(server, (m) => m[0] === 3 && m[1] === "shutdown" && m[2] === "finack", "finack");
        // A stopping app takes no new clients.
        const token = jwt({ "asrs.s.uid": "late" }, "client", "fakehub");
        const res = await fetch(`${RELAY_URL}/client/negotiate?hub=fakehub&negotiateVersion=1`, {
            method: "POST", headers: { Authorization: `Bearer ${token}` },
        });
        assert.equal(res.status, 503);
    } finally {
        server.ws.terminate();
    }
});

test("an unreadable stream closes the server connection", T, async () => {
    const server = await fakeServer("fakehub2");
    server.ws.send(Buffer.from([0x03, 0xc1, 0xc1, 0xc1]));
    await withTimeout(server.closedPromise, 10000, "the relay to close the connection");
});

// A raw client of hub `hub` with a token minted here, as the app's negotiate would.
async function rawClient(hub, user, extraClaims = {}) {
    const token = jwt({ "asrs.s.uid": user, nameid: user, role: "admin", ...extraClaims }, "client", hub);
    const neg = await fetch(`${RELAY_URL}/client/negotiate?hub=${hub}&negotiateVersion=1`, {
        method: "POST", headers: { Authorization: `Bearer ${token}` },
    });
    assert.equal(neg.status, 200);
    const { connectionId, connectionToken } = await neg.json();
    const ws = new WebSocket(`${WS_URL}/client/?hub=${hub}&id=${connectionToken}&app=x&access_token=${token}`);
    const client = { ws, id: connectionId, frames: [], closed: null };
    ws.on("message", (data) => client.frames.push(data.toString()));
    client.closedPromise = new Promise((resolve) => ws.on("close", (code) => resolve((client.closed = code))));
    await withTimeout(new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); }), 10000, "open");
    return client;
}

test("OpenConnection carries claims, headers and query; what the app sends before its handshake answer follows it", T, async () => {
    const server = await fakeServer("fakehub3");
    const client = await rawClient("fakehub3", "zoe");
    try {
        client.ws.send(`{"protocol":"json","version":1}${RS}`);
        const [open] = await waitMsg(server, (m) => m[0] === 4, "OpenConnection");
        assert.equal(open[1], client.id);
        const claims = open[2];
        assert.equal(claims["asrs.s.uid"], "zoe");
        assert.equal(claims["http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier"], "zoe");
        assert.equal(claims["http://schemas.microsoft.com/ws/2008/06/identity/claims/role"], "admin");
        assert.ok(open[3]["X-Forwarded-For"][0].startsWith("127.0.0.1"));
        assert.ok(!("authorization" in open[3]) && !("Authorization" in open[3]));
        assert.equal(open[4], "?hub=fakehub3&app=x");
        assert.equal(open[5].get ? open[5].get(3) : open[5][3], "json");
        const [data] = await waitMsg(server, (m) => m[0] === 6 && m[1] === client.id, "the client's handshake");
        assert.equal(Buffer.from(data[2]).toString(), `{"protocol":"json","version":1}${RS}`);
        // The app's welcome and a broadcast before its handshake answer, all in one frame.
        const welcome = `{"type":1,"target":"welcome","arguments":[]}${RS}`;
        const hello = `{"type":1,"target":"hello","arguments":[]}${RS}`;
        server.ws.send(Buffer.concat([
            frame([7, [client.id], { json: Buffer.from(welcome) }, {}]),
            frame([10, [], { json: Buffer.from(hello), messagepack: Buffer.from([1]) }, {}]),
            frame([6, client.id, Buffer.from(`{}${RS}`), ext([[5, 1]])]),
            frame([6, "unknown-connection-id1", Buffer.from(hello), ext([[5, 2]])]),
        ]));
        await pollUntil(async () => client.frames.join(""), (t) => t.includes("hello"), "the held messages");
        assert.deepEqual(client.frames.slice(0, 3), [`{}${RS}`, welcome, hello]);
        // The client's own messages go to the app as ConnectionData; the app ends it with CloseConnection.
        client.ws.send(`{"type":6}${RS}`);
        await waitMsg(server, (m) => m[0] === 6 && m[1] === client.id && Buffer.from(m[2]).toString() === `{"type":6}${RS}`, "the client's ping");
        server.ws.send(Buffer.concat([
            frame([6, client.id, Buffer.from(`{"type":7}${RS}`), ext([[5, 4]])]),
            frame([5, client.id, "", {}, {}]),
        ]));
        await withTimeout(client.closedPromise, 10000, "the client to be closed");
        assert.equal(client.frames[client.frames.length - 1], `{"type":7}${RS}`);
    } finally {
        client.ws.terminate();
        server.ws.terminate();
    }
});

test("a client whose server connection goes is closed with allowReconnect; the app hears CloseConnection when a client leaves", T, async () => {
    const server = await fakeServer("fakehub4");
    const a = await rawClient("fakehub4", "amy");
    const b = await rawClient("fakehub4", "ben");
    try {
        for (const c of [a, b]) c.ws.send(`{"protocol":"json","version":1}${RS}`);
        for (const c of [a, b]) {
            await waitMsg(server, (m) => m[0] === 4 && m[1] === c.id, "OpenConnection");
            server.ws.send(frame([6, c.id, Buffer.from(`{}${RS}`), ext([[5, 1]])]));
            await pollUntil(async () => c.frames.length, (n) => n > 0, "the handshake answer");
        }
        a.ws.close();
        const [close] = await waitMsg(server, (m) => m[0] === 5 && m[1] === a.id, "CloseConnection for a");
        assert.ok(close[2] === null || close[2] === "");
        server.ws.terminate();
        await withTimeout(b.closedPromise, 10000, "b to be closed");
        const last = JSON.parse(b.frames[b.frames.length - 1].replace(RS, ""));
        assert.equal(last.type, 7);
        assert.equal(last.allowReconnect, true);
    } finally {
        a.ws.terminate();
        b.ws.terminate();
        server.ws.terminate();
    }
});

test("a client result asked by another app server: the owner hears the 34, the asker the 35, or a 36 if the client leaves; sticky binding", T, async () => {
    const one = await fakeServer("fakehub5", { serverId: "srv-one" });
    const two = await fakeServer("fakehub5", { serverId: "srv-two" });
    const client = await rawClient("fakehub5", "ida", { "asrs.s.sn": "srv-two", "asrs.s.ssticky": "Required" });
    try {
        client.ws.send(`{"protocol":"json","version":1}${RS}`);
        await waitMsg(two, (m) => m[0] === 4 && m[1] === client.id, "OpenConnection on the sticky server");
        assert.equal(one.got.filter((m) => m[0] === 4).length, 0);
        two.ws.send(frame([6, client.id, Buffer.from(`{}${RS}`), ext([[5, 1]])]));
        const invocation = `{"type":1,"invocationId":"inv-1","target":"GetAnswer","arguments":["q"]}${RS}`;
        one.ws.send(frame([34, "inv-1", client.id, "srv-one", { json: Buffer.from(invocation) }, {}]));
        await pollUntil(async () => client.frames.join(""), (t) => t.includes("inv-1"), "the invocation at the client");
        const [fwd] = await waitMsg(two, (m) => m[0] === 34 && m[1] === "inv-1", "the 34 at the owner");
        assert.equal(fwd[3], "srv-one");
        const completion = `{"type":3,"invocationId":"inv-1","result":"42"}${RS}`;
        two.ws.send(frame([35, "inv-1", client.id, "srv-one", "json", Buffer.from(completion), ext([[3, "json"]])]));
        const [back] = await waitMsg(one, (m) => m[0] === 35 && m[1] === "inv-1", "the 35 at the asker");
        assert.equal(Buffer.from(back[5]).toString(), completion);
        // A result still asked when the client leaves: the asker hears an ErrorCompletion (36).
        const second = `{"type":1,"invocationId":"inv-2","target":"GetAnswer","arguments":["q"]}${RS}`;
        one.ws.send(frame([34, "inv-2", client.id, "srv-one", { json: Buffer.from(second) }, {}]));
        await pollUntil(async () => client.frames.join(""), (t) => t.includes("inv-2"), "the second invocation");
        client.ws.close();
        const [error] = await waitMsg(one, (m) => m[0] === 36 && m[1] === "inv-2", "the 36 at the asker");
        assert.equal(error[2], client.id);
        assert.match(error[4], /disconnected/);
        assert.equal(one.got.filter((m) => m[0] === 36 && m[1] === "inv-1").length, 0);
    } finally {
        client.ws.terminate();
        one.ws.terminate();
        two.ws.terminate();
    }
});

test("a server connection silent for 30 s is closed, after 30 s of [3] pings", { timeout: 60000 }, async () => {
    const code = await withTimeout(silent.closedPromise, 45000, "the relay to close the silent connection");
    const after = Date.now() - silentSince;
    assert.ok(after >= 29000 && after < 40000, `closed after ${after} ms`);
    assert.equal(code, 1001);
    const pings = silent.got.filter((m) => m[0] === 3 && m.length === 1).length;
    assert.ok(pings >= 5, `${pings} pings in 30 s`);
});
