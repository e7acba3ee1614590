// legacy-fanout.mjs - a group send to many legacy recipients in service mode, measured: COUNT raw
// legacy WebSocket clients (written from the wire protocol, specs/legacy-signalr.md: the stock
// clients would cost more CPU than the relay) join one group of the service app's /board hub
// through the relay's /signalr (the relay asks the app's negotiate, --app-negotiate board=...),
// then one stock Core client sends SENDS group messages (SendToGroup, WINDOW in flight). Reports
// deliveries per second (first send to last receipt) and the relay's CPU per delivery (utime +
// stime of --pid from /proc over the sends).
// Every recipient records which sends it got (the send number is in the message), so a shortfall
// is reported per recipient: how many missed anything, which sends, whether their socket closed
// (code and reason) and the relay's /metrics counters that moved during the run. After the last
// send is acknowledged the bench waits until every delivery arrived or nothing arrived for
// --quiet seconds (default 30), so late deliveries are counted rather than cut off.
//   node tests/service/bench/legacy-fanout.mjs --relay http://127.0.0.1:PORT --app http://127.0.0.1:APP \
//        --pid RELAY_PID [--count 1000] [--sends 200] [--window 10] [--quiet 30]
import fs from "node:fs";
import WebSocket from "ws";
import * as signalR from "@microsoft/signalr";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
    (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const COUNT = Number(args.count || 1000), SENDS = Number(args.sends || 200), WINDOW = Number(args.window || 10);
const QUIET_MS = Number(args.quiet || 30) * 1000;
if (!args.relay || !args.app || !args.pid) {
    console.error("usage: legacy-fanout.mjs --relay URL --app URL --pid RELAY_PID [--count N] [--sends N] [--window N]");
    process.exit(2);
}
const BASE = `${args.relay.replace(/\/+$/, "")}/signalr`;
const CD = encodeURIComponent(JSON.stringify([{ name: "board" }]));
const GROUP = `lfan-${Date.now()}`;
const TICK = 100; // USER_HZ (getconf CLK_TCK) on Linux

function cpuSeconds(pid) {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICK; // utime, stime
}

let received = 0;
let lastAt = 0;
let onAll = null;
const total = COUNT * SENDS;
const recipients = []; // per client: { got: Uint8Array(SENDS) counts, closed: null | {code, reason, at} }
let duplicates = 0;
let failedJoins = 0; // AddToGroup calls the hub answered with an error (tried again)
const JOIN_ATTEMPTS = 5;
let foreign = 0; // groupMessage frames whose send number could not be read

async function metrics() {
    const text = await (await fetch(`${args.relay.replace(/\/+$/, "")}/metrics`)).text();
    const out = {};
    for (const line of text.split("\n")) {
        const m = /^(signalr_relay_[a-z_]+(?:\{[^}]*\})?) (\d+)$/.exec(line);
        if (m) out[m[1]] = Number(m[2]);
    }
    return out;
}

/* Counts the group messages of one legacy frame ({"C":..,"M":[{"H","M","A":[group, from, "mN"]}]}). */
function countFrame(rec, text) {
    let frame;
    try {
        frame = JSON.parse(text);
    } catch {
        foreign++;
        return 0;
    }
    let n = 0;
    for (const e of Array.isArray(frame.M) ? frame.M : []) {
        if (e.M !== "groupMessage") continue;
        n++;
        const k = Number(/^m(\d+)$/.exec(e.A?.[2] ?? "")?.[1]);
        if (!Number.isInteger(k) || k >= SENDS) foreign++;
        else if (rec.got[k]++ > 0) duplicates++;
    }
    return n;
}

/* A setup step that never ends fails the run with its name instead of hanging it. */
function bounded(promise, what, ms = 60000) {
    let timer;
    return Promise.race([promise, new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
    })]).finally(() => clearTimeout(timer));
}

async function legacyClient(i) {
    const neg = await bounded((async () => (await fetch(`${BASE}/negotiate?clientProtocol=2.1&connectionData=${CD}&user=lf-${i}`)).json())(),
        `recipient ${i}: negotiate`);
    const q = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(neg.ConnectionToken)}&connectionData=${CD}&user=lf-${i}`;
    const ws = new WebSocket(`${BASE.replace(/^http/, "ws")}/connect?${q}`);
    const rec = { index: i, id: neg.ConnectionId, got: new Uint8Array(SENDS), closed: null };
    recipients.push(rec);
    ws.on("close", (code, reason) => { rec.closed = { code, reason: reason.toString(), at: performance.now() }; });
    const results = new Map();
    ws.on("message", (data) => {
        const text = data.toString();
        if (text.startsWith('{"I"')) {
            const result = JSON.parse(text);
            results.get(result.I)?.(result);
            return;
        }
        const n = text.includes('"groupMessage"') ? countFrame(rec, text) : 0;
        if (n) {
            received += n;
            lastAt = performance.now();
            if (received >= total && onAll) onAll();
        }
    });
    await bounded(new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); }),
        `recipient ${i} (${neg.ConnectionId}): WebSocket open`);
    const start = await bounded((async () => (await fetch(`${BASE}/start?${q}`)).json())(),
        `recipient ${i} (${neg.ConnectionId}): start`);
    if (start.Response !== "started") throw new Error(`start: ${JSON.stringify(start)}`);
    /* A failed join (the hub's error result, e.g. the app's JoinGroupWithAck timed out while the
     * app and relay were busy with another run's disconnect storm) is no member: it would miss
     * every send. The join is tried again (joining twice is harmless); still failing ends the run. */
    for (let attempt = 0; ; attempt++) {
        const joined = await bounded(new Promise((resolve) => {
            results.set(`${attempt}`, resolve);
            ws.send(JSON.stringify({ H: "board", M: "AddToGroup", A: [GROUP], I: `${attempt}` }));
        }), `recipient ${i} (${neg.ConnectionId}): AddToGroup`);
        if (!joined.E) break;
        failedJoins++;
        if (attempt === JOIN_ATTEMPTS - 1)
            throw new Error(`recipient ${i} (${neg.ConnectionId}): AddToGroup failed ${JOIN_ATTEMPTS} times: ${joined.E}`);
    }
    return ws;
}

const clients = [];
for (let i = 0; i < COUNT; i += 50) {
    const batch = [];
    for (let k = i; k < Math.min(COUNT, i + 50); k++) batch.push(legacyClient(k));
    clients.push(...(await Promise.all(batch)));
}
const sender = new signalR.HubConnectionBuilder().withUrl(`${args.app}/board?user=lf-sender`)
    .configureLogging(signalR.LogLevel.Warning).build();
await sender.start();
const allIn = new Promise((resolve) => { onAll = resolve; });
const metrics0 = await metrics();
const cpu0 = cpuSeconds(args.pid);
const t0 = performance.now();
let next = 0;
async function worker() {
    while (next < SENDS) {
        const n = next++;
        await sender.invoke("SendToGroup", GROUP, `m${n}`);
    }
}
await Promise.all(Array.from({ length: WINDOW }, worker));
const sentAt = performance.now();
/* Late deliveries count: wait while they still arrive (no fixed cut-off). */
async function quiet() {
    while (received < total) {
        const seen = received;
        await new Promise((r) => setTimeout(r, 1000));
        if (received === seen && performance.now() - Math.max(lastAt, sentAt) >= QUIET_MS) return;
    }
}
await Promise.race([allIn, quiet()]);
const cpu1 = cpuSeconds(args.pid);
const metrics1 = await metrics();
const seconds = (lastAt - t0) / 1000;
console.log(JSON.stringify({
    recipients: COUNT, sends: SENDS, deliveries: received, expected: total, seconds: +seconds.toFixed(3),
    deliveries_per_s: Math.round(received / seconds), relay_cpu_s: +(cpu1 - cpu0).toFixed(3),
    relay_cpu_us_per_delivery: +(((cpu1 - cpu0) * 1e6) / received).toFixed(2),
    duplicates, foreign, failed_joins: failedJoins,
}));
if (received < total || duplicates || foreign) {
    const short = recipients.filter((r) => r.got.some((c) => c === 0));
    const closed = recipients.filter((r) => r.closed);
    const describe = (r) => {
        const missed = [];
        r.got.forEach((c, k) => { if (!c) missed.push(k); });
        const runs = [];
        for (const k of missed) {
            const last = runs[runs.length - 1];
            if (last && last[1] === k - 1) last[1] = k;
            else runs.push([k, k]);
        }
        return {
            recipient: r.index, connectionId: r.id, missed: missed.length,
            sends: runs.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(","),
            closed: r.closed ? { code: r.closed.code, reason: r.closed.reason, after_first_send_s: +((r.closed.at - t0) / 1000).toFixed(1) } : null,
        };
    };
    const moved = {};
    for (const [k, v] of Object.entries(metrics1))
        if (v !== (metrics0[k] ?? 0)) moved[k] = v - (metrics0[k] ?? 0);
    console.log(JSON.stringify({
        recipients_short: short.length, recipients_closed: closed.length,
        closed_and_short: short.filter((r) => r.closed).length,
        first: short.slice(0, 20).map(describe), metrics_moved: moved,
    }, null, 1));
}
await sender.stop();
for (const ws of clients) ws.close();
process.exit(received >= total ? 0 : 1);
