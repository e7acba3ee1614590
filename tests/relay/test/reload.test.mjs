// SIGHUP rereads the configuration file without dropping anyone: a hub re-pointed to another
// backend instance, a hub added, a setting changed. The instance taken out drains: its client
// stays until --drain-timeout, then hears a Close that allows reconnecting and comes back on the
// instance that remains. A file with an error is refused with a log line naming its line, and
// the running configuration stays. (The two instances are two URLs of the shared test backend,
// 127.0.0.1 and localhost: what the relay sees as instances are URLs.)
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startRelay } from "../../lib/process.mjs";
import {
    BACKEND_URL, RS, TIMEOUT_MS, WebSocket, connectRaw, httpRequest, pollUntil, stockConnection, stopAll, withTimeout,
} from "../lib.mjs";

const A = `${BACKEND_URL}/chat`;
const B = `${BACKEND_URL.replace("127.0.0.1", "localhost")}/chat`;
const DRAIN_S = 3;

async function instances(relay) {
    const res = await httpRequest("GET", `${relay.url}/metrics`);
    const out = {};
    for (const line of res.body.split("\n")) {
        const m = /^signalr_relay_backend_(active|draining)\{hub="chat",backend="([^"]+)"\} (\d+)$/.exec(line);
        if (m) (out[m[2]] ??= {})[m[1]] = Number(m[3]);
    }
    return out;
}

function logCount(relay, re) {
    return fs.readFileSync(relay.log, "utf8").split("\n").filter((l) => re.test(l)).length;
}

async function reload(relay, re, what) {
    const before = logCount(relay, re);
    process.kill(relay.pid, "SIGHUP");
    await pollUntil(() => logCount(relay, re), (n) => n > before, what);
    return fs.readFileSync(relay.log, "utf8").split("\n").filter((l) => re.test(l)).at(-1);
}

test("SIGHUP: re-pointed and added hubs for new clients, the removed instance drains, a broken file is refused", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "reload.")), "relay.json");
    fs.writeFileSync(file, JSON.stringify({ hubs: { chat: [A] }, "drain-timeout": DRAIN_S }, null, 2));
    const relay = await startRelay(["--config", file]);
    const conns = [];
    try {
        const first = stockConnection(`${relay.url}/chat`, { reconnectDelays: Array(30).fill(500) });
        conns.push(first);
        const reconnected = new Promise((resolve) => first.onreconnected(resolve));
        await withTimeout(first.start(), TIMEOUT_MS, "start");
        assert.equal((await instances(relay))[A].active, 1);
        assert.equal((await httpRequest("POST", `${relay.url}/status/negotiate?negotiateVersion=1`)).status, 404);

        fs.writeFileSync(file, JSON.stringify({ hubs: { chat: [B], status: `${BACKEND_URL}/status` },
            "drain-timeout": DRAIN_S }, null, 2));
        await reload(relay, /configuration reloaded/, "the reload");
        // The established client stays where it is, draining; a new one goes to the new instance.
        const during = await instances(relay);
        assert.deepEqual(during[A], { active: 1, draining: 1 }, JSON.stringify(during));
        assert.match((await httpRequest("GET", `${relay.url}/readyz`)).body,
            new RegExp(`^hub chat: ready .*\n  backend ${B}: up, 0 active links\n  backend ${A}: draining \\(no new clients\\), 1 active link$`, "m"),
            "/readyz lists the draining instance under its hub");
        const second = stockConnection(`${relay.url}/chat`);
        conns.push(second);
        await withTimeout(second.start(), TIMEOUT_MS, "start after the reload");
        assert.equal(await second.invoke("Echo", "new"), "new");
        assert.equal((await instances(relay))[B].active, 1);
        assert.equal((await httpRequest("POST", `${relay.url}/status/negotiate?negotiateVersion=1`)).status, 200,
            "the added hub");
        // After --drain-timeout the drained client reconnects, to the remaining instance.
        await withTimeout(reconnected, DRAIN_S * 1000 + TIMEOUT_MS, "the drained client to reconnect");
        assert.equal(await first.invoke("Echo", "moved"), "moved");
        await pollUntil(() => instances(relay), (m) => m[A] === undefined && m[B]?.active === 2,
            "both clients on the remaining instance");

        // A broken file: refused, naming the line; the running configuration stays.
        fs.writeFileSync(file, `{\n  "hubs": { "chat": ["${B}"] },\n  "keepalive": 5,,\n}\n`);
        const refusal = await reload(relay, /configuration reload refused/, "the refusal");
        assert.match(refusal, /line 3\)/, refusal);
        fs.writeFileSync(file, `{\n  "hubs": { "chat": ["${B}"] },\n  "listen": "127.0.0.1:1",\n  "hubs2": 1\n}\n`);
        const named = await reload(relay, /configuration reload refused/, "the second refusal");
        assert.match(named, /line 4: /, named);
        assert.equal((await httpRequest("POST", `${relay.url}/status/negotiate?negotiateVersion=1`)).status, 200,
            "the hub of the running configuration");
        assert.equal(await second.invoke("Echo", "still"), "still");
    } finally {
        await stopAll(...conns);
        await relay.stop();
    }
});

// Legacy (ASP.NET SignalR 2.x) clients see the reloaded hub set too: a hub added by a reload can be
// negotiated, connected and started at once, and one removed is refused as the original refuses an
// unknown hub (negotiate 500, no body); a connection established on the removed hub keeps its link
// (it still invokes) until --drain-timeout ends it with an error frame, as Core clients are drained.
// The legacy hub table was fixed at start: added hubs reached legacy clients only after a restart.
function legacyApi(relay) {
    const base = `${relay.url}/signalr`;
    const data = (hub) => encodeURIComponent(JSON.stringify([{ name: hub }]));
    return {
        negotiate: (hub) => httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${data(hub)}`),
        async open(hub) {
            const neg = await this.negotiate(hub);
            assert.equal(neg.status, 200, `negotiate ${hub}: ${neg.body}`);
            const query = `transport=webSockets&clientProtocol=2.1&connectionToken=` +
                `${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}&connectionData=${data(hub)}`;
            const ws = new WebSocket(`${base.replace(/^http/, "ws")}/connect?${query}`);
            const frames = [];
            const waiters = [];
            const closed = new Promise((resolve) => ws.on("close", resolve));
            ws.on("error", () => {});
            ws.on("message", (d) => {
                frames.push(JSON.parse(d.toString("utf8")));
                for (const w of waiters.splice(0)) w();
            });
            await withTimeout(new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); }),
                TIMEOUT_MS, `legacy connect to ${hub}`);
            const next = (match, what, ms = TIMEOUT_MS) => withTimeout(new Promise((resolve) => {
                const look = () => { const f = frames.find(match); if (f) resolve(f); else waiters.push(look); };
                look();
            }), ms, what);
            const start = await httpRequest("GET", `${base}/start?${query}`);
            return {
                ws, start, closed, next,
                invoke: (method, args, id) => {
                    ws.send(JSON.stringify({ H: hub, M: method, A: args, I: String(id) }));
                    return next((f) => f.I === String(id), `result ${id} from ${hub}`);
                },
            };
        },
    };
}

test("SIGHUP: legacy clients get added hubs and are refused removed ones; a removed hub's connection drains", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "reload.")), "relay.json");
    fs.writeFileSync(file, JSON.stringify({ hubs: { chat: [A] }, "drain-timeout": DRAIN_S }, null, 2));
    const relay = await startRelay(["--config", file]);
    const legacy = legacyApi(relay);
    const open = [];
    try {
        const old = await legacy.open("chat");
        open.push(old);
        assert.equal(old.start.status, 200, old.start.body);
        assert.equal((await old.invoke("Echo", ["before"], 1)).R, "before");
        assert.deepEqual(await legacy.negotiate("status").then((r) => [r.status, r.body]), [500, ""], "not served yet");

        fs.writeFileSync(file, JSON.stringify({ hubs: { status: `${BACKEND_URL}/status` }, "drain-timeout": DRAIN_S }, null, 2));
        await reload(relay, /configuration reloaded/, "the reload");
        const added = await legacy.open("status");
        open.push(added);
        assert.equal(added.start.status, 200, `the added hub: ${added.start.body}`);
        assert.equal((await added.invoke("Echo", ["added"], 1)).R, "added");
        assert.deepEqual(await legacy.negotiate("chat").then((r) => [r.status, r.body]), [500, ""],
            "the removed hub is refused as unknown");
        // The connection on the removed hub keeps its link for now, then drains.
        assert.equal((await old.invoke("Echo", ["after"], 2)).R, "after");
        const ended = await old.next((f) => f.E !== undefined, "the drained connection's error frame",
            DRAIN_S * 1000 + TIMEOUT_MS);
        assert.match(ended.E, /backend hub 'chat'/);
        assert.equal((await added.invoke("Echo", ["still"], 2)).R, "still", "the other connection is untouched");
    } finally {
        for (const c of open) c.ws.terminate();
        await relay.stop();
    }
});

// Limits and timeouts are read where they are used, not kept per connection (docs/CONFIG.md
// "Signals"): after a reload that lowers --max-message-size and --keepalive, a new connection and
// an established one both get pings at the new interval and are closed for a message the old limit
// allowed; the reload itself closes nobody. Pings: a raw client, which never pings, so only the
// relay's keep-alive (and the backend's own, forwarded) reach it; the old keep-alive timer of the
// established connection still fires at its old time, so the rhythm is judged from its second ping.
const OLD_KEEPALIVE_S = 6;
const NEW_KEEPALIVE_S = 1;
// Above the new interval by 3 s of scheduling slack on a loaded 2-core machine, below the old one.
const NEW_GAP_BOUND_MS = NEW_KEEPALIVE_S * 1000 + 3000;

async function pingGaps(client, count) {
    const at = [];
    for (let i = 0; i < count; i++)
        at.push((await client.next((r) => r.type === 6, OLD_KEEPALIVE_S * 1000 + TIMEOUT_MS, `ping ${i + 1}`)).at);
    return at.slice(1).map((t, i) => t - at[i]);
}

async function refusedAsTooLarge(client, text) {
    client.sendText(JSON.stringify({ type: 1, invocationId: "big", target: "Echo", arguments: [text] }) + RS);
    const close = await client.next((r) => r.type === 7, TIMEOUT_MS, "a Close record");
    assert.match(close.error, /maximum message size/, close.error);
    await client.waitClosed();
}

test("SIGHUP: a lowered --max-message-size and --keepalive reach new and established connections; nobody is closed by it", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "reload.")), "relay.json");
    const write = (max, keepalive) => fs.writeFileSync(file, JSON.stringify({ hubs: { chat: [A] },
        "max-message-size": max, keepalive }, null, 2));
    write("256K", OLD_KEEPALIVE_S);
    const relay = await startRelay(["--config", file]);
    const open = [];
    try {
        const established = (await connectRaw({ base: relay.url })).client;
        open.push(established);
        const big = "x".repeat(32 * 1024);
        assert.equal(await established.invoke("Echo", [big]), big, "32 KB under the 256 KB limit");

        write("16K", NEW_KEEPALIVE_S);
        await reload(relay, /configuration reloaded/, "the reload");
        assert.equal(await established.invoke("Echo", ["after"]), "after", "the reload closed nothing");
        assert.equal(established.closeInfo, null);
        // The established connection follows the new keep-alive: pings a second apart, not six.
        const oldGaps = await pingGaps(established, 4);
        for (const gap of oldGaps.slice(1))
            assert.ok(gap < NEW_GAP_BOUND_MS, `established: gaps ${oldGaps} ms, bound ${NEW_GAP_BOUND_MS}`);
        // A new connection: the new interval too.
        const fresh = (await connectRaw({ base: relay.url })).client;
        open.push(fresh);
        const newGaps = await pingGaps(fresh, 3);
        for (const gap of newGaps)
            assert.ok(gap < NEW_GAP_BOUND_MS, `new: gaps ${newGaps} ms, bound ${NEW_GAP_BOUND_MS}`);
        // The new limit: a 32 KB message now closes the new connection and the established one.
        await refusedAsTooLarge(fresh, big);
        await refusedAsTooLarge(established, big);
    } finally {
        for (const c of open) c.terminate();
        await relay.stop();
    }
});
