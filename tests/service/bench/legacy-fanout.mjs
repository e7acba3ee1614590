// legacy-fanout.mjs - a group send to many legacy recipients in service mode, measured: COUNT raw
// legacy WebSocket clients (written from the wire protocol, specs/legacy-signalr.md: the stock
// clients would cost more CPU than the relay) join one group of the service app's /board hub
// through the relay's /signalr (the relay asks the app's negotiate, --app-negotiate board=...),
// then one stock Core client sends SENDS group messages (SendToGroup, WINDOW in flight). Reports
// deliveries per second (first send to last receipt) and the relay's CPU per delivery (utime +
// stime of --pid from /proc over the sends).
//   node tests/service/bench/legacy-fanout.mjs --relay http://127.0.0.1:PORT --app http://127.0.0.1:APP \
//        --pid RELAY_PID [--count 1000] [--sends 200] [--window 10]
import fs from "node:fs";
import WebSocket from "ws";
import * as signalR from "@microsoft/signalr";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
    (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const COUNT = Number(args.count || 1000), SENDS = Number(args.sends || 200), WINDOW = Number(args.window || 10);
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

async function legacyClient(i) {
    const neg = await (await fetch(`${BASE}/negotiate?clientProtocol=2.1&connectionData=${CD}&user=lf-${i}`)).json();
    const q = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(neg.ConnectionToken)}&connectionData=${CD}&user=lf-${i}`;
    const ws = new WebSocket(`${BASE.replace(/^http/, "ws")}/connect?${q}`);
    const results = new Map();
    ws.on("message", (data) => {
        const text = data.toString();
        if (text.startsWith('{"I"')) {
            const id = JSON.parse(text).I;
            results.get(id)?.();
            return;
        }
        let at = text.indexOf('"groupMessage"');
        let n = 0;
        while (at >= 0) {
            n++;
            at = text.indexOf('"groupMessage"', at + 14);
        }
        if (n) {
            received += n;
            lastAt = performance.now();
            if (received >= total && onAll) onAll();
        }
    });
    await new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); });
    const start = await (await fetch(`${BASE}/start?${q}`)).json();
    if (start.Response !== "started") throw new Error(`start: ${JSON.stringify(start)}`);
    await new Promise((resolve) => {
        results.set("0", resolve);
        ws.send(JSON.stringify({ H: "board", M: "AddToGroup", A: [GROUP], I: "0" }));
    });
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
await Promise.race([allIn, new Promise((r) => setTimeout(r, 120000))]);
const cpu1 = cpuSeconds(args.pid);
const seconds = (lastAt - t0) / 1000;
console.log(JSON.stringify({
    recipients: COUNT, sends: SENDS, deliveries: received, expected: total, seconds: +seconds.toFixed(3),
    deliveries_per_s: Math.round(received / seconds), relay_cpu_s: +(cpu1 - cpu0).toFixed(3),
    relay_cpu_us_per_delivery: +(((cpu1 - cpu0) * 1e6) / received).toFixed(2),
}));
await sender.stop();
for (const ws of clients) ws.close();
process.exit(received >= total ? 0 : 1);
