// join-storm.mjs - how long a group join takes while the relay ends many legacy clients at once
// (issue 11: joins took > 10 s under a disconnect storm of 1,000 clients), and where the time goes.
// Raw legacy WebSocket clients (wire protocol, as legacy-fanout.mjs) of the service app's /board
// hub through the relay's /signalr:
//   LISTENERS stay connected (each hears the app's OnDisconnected "left" send to Others);
//   DROPPERS join a group, then their sockets go without /abort: the relay ends all of them at
//   once when --legacy-disconnect-timeout (+5 s) is up, the app runs OnDisconnectedAsync for each
//   and sends "left" to every other client (DROPPERS x LISTENERS deliveries).
// From the drop on, one legacy probe and one Core probe (stock @microsoft/signalr) call
// AddToGroupTimed in turn (the app's Groups.AddToGroupAsync, which the relay must ack; the app
// says when its hub method began and how long the ack took, so each join splits into: to the
// app, the relay's ack as the app waited for it, and back to the client), and
// every 250 ms the relay's CPU (/proc/PID/stat) and the time /metrics takes to answer (the relay's
// event loop: a busy loop answers late) are sampled. The probes and the sampler run in a worker
// thread of their own, so that the main thread's work (reading a million "left" frames) does not
// delay them. Prints one JSON line: join latencies,
// /metrics latencies and relay CPU share in the storm window, and when the "left" sends arrived.
//   node tests/service/bench/join-storm.mjs --relay URL --app URL --pid RELAY_PID
//        [--droppers 1000] [--listeners 1000] [--quiet 10]
import fs from "node:fs";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import WebSocket from "ws";
import * as signalR from "@microsoft/signalr";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
    (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
if (!args.relay || !args.app || !args.pid) {
    console.error("usage: join-storm.mjs --relay URL --app URL --pid RELAY_PID [--droppers N] [--listeners N] [--quiet S]");
    process.exit(2);
}
const DROPPERS = Number(args.droppers ?? 1000), LISTENERS = Number(args.listeners ?? 1000);
const QUIET_MS = Number(args.quiet ?? 10) * 1000;
const RELAY = args.relay.replace(/\/+$/, "");
const BASE = `${RELAY}/signalr`;
const CD = encodeURIComponent(JSON.stringify([{ name: "board" }]));
const GROUP = `storm-${Date.now()}`;
const TICK = 100; // USER_HZ

const cpuSeconds = () => {
    const f = fs.readFileSync(`/proc/${args.pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) / TICK;
};

function bounded(promise, what, ms = 60000) {
    let timer;
    return Promise.race([promise, new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
    })]).finally(() => clearTimeout(timer));
}

let left = 0, leftFirst = 0, leftLast = 0;

// A GET's JSON; a kept-alive socket the relay closed meanwhile ("fetch failed") is tried again.
async function getJson(url) {
    for (let attempt = 0; ; attempt++) {
        try {
            return await (await fetch(url)).json();
        } catch (e) {
            if (attempt === 2 || !/fetch failed/.test(String(e.message))) throw e;
        }
    }
}

// A raw legacy client: {ws, id, call(method, ...args) -> result}.
async function legacyClient(name) {
    const neg = await bounded(getJson(`${BASE}/negotiate?clientProtocol=2.1&connectionData=${CD}&user=${name}`), `${name}: negotiate`);
    const q = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(neg.ConnectionToken)}&connectionData=${CD}&user=${name}`;
    const ws = new WebSocket(`${BASE.replace(/^http/, "ws")}/connect?${q}`);
    const results = new Map();
    let next = 0;
    ws.on("message", (data) => {
        const text = data.toString();
        if (!text.startsWith('{"C"')) { // a hub result ({"I"..} or {"R"..,"I"..}), not a push
            const r = JSON.parse(text);
            if (r.I !== undefined) results.get(r.I)?.(r);
            return;
        }
        const n = text.split('"M":"left"').length - 1;
        if (n) {
            const now = performance.now();
            if (!left) leftFirst = now;
            left += n;
            leftLast = now;
        }
    });
    await bounded(new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); }), `${name}: open`);
    const start = await bounded(getJson(`${BASE}/start?${q}`), `${name}: start`);
    if (start.Response !== "started") throw new Error(`${name}: start ${JSON.stringify(start)}`);
    const call = (method, ...a) => new Promise((resolve) => {
        const id = `${next++}`;
        results.set(id, resolve);
        ws.send(JSON.stringify({ H: "board", M: method, A: a, I: id }));
    });
    return { ws, id: neg.ConnectionId, call };
}

async function many(count, prefix) {
    const out = [];
    for (let i = 0; i < count; i += 50) {
        const batch = [];
        for (let k = i; k < Math.min(count, i + 50); k++) batch.push(legacyClient(`${prefix}-${k}`));
        out.push(...(await Promise.all(batch)));
    }
    return out;
}

const pct = (list, p) => {
    if (!list.length) return null;
    const s = [...list].sort((a, b) => a - b);
    return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]);
};

// ---- the worker: probes and sampler, from the drop until told to stop ----
async function probeWorker() {
    const probe = await legacyClient("js-probe");
    const core = new signalR.HubConnectionBuilder().withUrl(`${args.app}/board?user=js-core-probe`)
        .configureLogging(signalR.LogLevel.Warning).build();
    for (const m of ["welcome", "joined", "left"]) core.on(m, () => {});
    await core.start();
    let done = false;
    parentPort.on("message", (m) => { if (m === "stop") done = true; });
    parentPort.postMessage({ ready: true });
    const t0 = await new Promise((resolve) => parentPort.once("message", (m) => resolve(m.t0)));
    const at = () => Math.round(performance.timeOrigin + performance.now() - t0);
    const samples = [], joins = [];
    const sampler = (async () => {
        let lastCpu = cpuSeconds(), lastT = performance.now();
        while (!done) {
            const s0 = performance.now();
            await fetch(`${RELAY}/metrics`).then((r) => r.text()).catch(() => "");
            const metricsMs = performance.now() - s0;
            await new Promise((r) => setTimeout(r, 250));
            const c = cpuSeconds(), now = performance.now();
            samples.push({ t: at(), cpu_share: +((c - lastCpu) / ((now - lastT) / 1000)).toFixed(2), metrics_ms: Math.round(metricsMs) });
            lastCpu = c;
            lastT = now;
        }
    })();
    const prober = (async () => {
        for (let k = 0; !done; k++) {
            const kind = k % 2 ? "core" : "legacy";
            const s0 = performance.now(), t = at(), sent = Date.now();
            let error = null, timed = null;
            try {
                if (kind === "legacy") {
                    const r = await bounded(probe.call("AddToGroupTimed", `${GROUP}-p${k}`), "legacy probe AddToGroup", 120000);
                    error = r.E ?? null;
                    timed = r.R ?? null;
                } else {
                    timed = await bounded(core.invoke("AddToGroupTimed", `${GROUP}-p${k}`), "core probe AddToGroup", 120000);
                }
            } catch (e) {
                error = String(e.message || e);
            }
            const ms = Math.round(performance.now() - s0);
            // [began, ackMs] from the app (same machine clock): to the app, the ack, back.
            const split = Array.isArray(timed) ? { to_app: timed[0] - sent, ack: timed[1], back: sent + ms - timed[0] - timed[1] } : null;
            joins.push({ t, kind, ms, error, ...split });
            await new Promise((r) => setTimeout(r, 200));
        }
    })();
    await Promise.all([sampler, prober]);
    await core.stop();
    probe.ws.close();
    parentPort.postMessage({ joins, samples });
}

if (!isMainThread) {
    await probeWorker();
} else {
const listeners = await many(LISTENERS, "js-l");
const droppers = await many(DROPPERS, "js-d");
for (let i = 0; i < droppers.length; i += 100)
    await Promise.all(droppers.slice(i, i + 100).map((d) => d.call("AddToGroup", GROUP)));
const worker = new Worker(new URL(import.meta.url), { argv: process.argv.slice(2) });
await new Promise((resolve) => worker.once("message", resolve)); // its probes are connected
const gotProbes = new Promise((resolve) => worker.on("message", (m) => m.joins && resolve(m)));
left = 0;

const t0 = performance.now();
worker.postMessage({ t0: performance.timeOrigin + t0 });
for (const d of droppers) d.ws.terminate(); // the socket goes, no /abort, no close frame
const cpu0 = cpuSeconds();
// Until every "left" arrived, or none for QUIET_MS once some did (or 90 s without any).
const expected = DROPPERS * LISTENERS; // the probe hears them too, in its own thread
for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    if (!LISTENERS && performance.now() - t0 >= 30000) break; // the closes alone: 30 s watched
    if (LISTENERS && left >= expected) break;
    const since = performance.now() - (left ? leftLast : t0);
    if (since >= (left ? QUIET_MS : 90000)) break;
}
await new Promise((r) => setTimeout(r, 2000));
worker.postMessage("stop");
const { joins, samples } = await gotProbes;
const cpu1 = cpuSeconds();
// The storm window: from the first "left" to the last.
// Without listeners there is no "left": the window is 9 s .. 30 s after the drop (the closes come at ~10 s).
const inStorm = (t) => (LISTENERS ? left && t >= leftFirst - t0 - 1000 && t <= leftLast - t0 : t >= 9000 && t <= 30000);
const stormJoins = joins.filter((j) => inStorm(j.t));
const stormSamples = samples.filter((s) => inStorm(s.t));
const summary = (list) => ({ n: list.length, p50: pct(list, 50), p90: pct(list, 90), max: list.length ? Math.max(...list) : null });
console.log(JSON.stringify({
    droppers: DROPPERS, listeners: LISTENERS, left_deliveries: left, left_expected: expected,
    left_first_s: left ? +((leftFirst - t0) / 1000).toFixed(1) : null, left_last_s: left ? +((leftLast - t0) / 1000).toFixed(1) : null,
    relay_cpu_s: +(cpu1 - cpu0).toFixed(2),
    storm: {
        join_ms_legacy: summary(stormJoins.filter((j) => j.kind === "legacy").map((j) => j.ms)),
        join_ms_core: summary(stormJoins.filter((j) => j.kind === "core").map((j) => j.ms)),
        join_errors: stormJoins.filter((j) => j.error).map((j) => j.error).slice(0, 3),
        // The slowest join of each kind, split: client -> relay -> app, the app's wait for the
        // relay's Ack, app -> relay -> client (ms).
        slowest: ["legacy", "core"].map((kind) => stormJoins.filter((j) => j.kind === kind)
            .sort((a, b) => b.ms - a.ms)[0]).filter(Boolean)
            .map(({ kind, ms, to_app, ack, back }) => ({ kind, ms, to_app, ack, back })),
        metrics_ms: summary(stormSamples.map((s) => s.metrics_ms)),
        relay_cpu_share: summary(stormSamples.map((s) => s.cpu_share * 100)),
    },
    before_storm: { join_ms: summary(joins.filter((j) => !inStorm(j.t) && j.t < (LISTENERS ? leftFirst - t0 : 9000)).map((j) => j.ms)) },
}));
if (args.trace) fs.writeFileSync(args.trace, JSON.stringify({ joins, samples }, null, 1));
for (const c of listeners) c.ws.close();
process.exit(0);
}
