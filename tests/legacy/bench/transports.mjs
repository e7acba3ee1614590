#!/usr/bin/env node
// Legacy transports through the relay, measured side by side (for the note in README / the report):
//  1. pushes: one WebSocket client calls ChatHub.Broadcast as fast as a window of WINDOW calls in
//     flight allows; one receiver per transport (webSockets, serverSentEvents, longPolling) gets
//     every broadcast. Reported per receiver: messages per second and p50/p99 latency (call sent ->
//     push received), over MESSAGES broadcasts.
//  2. idle cost: IDLE clients per transport connected and started, then idle (a held poll, an open
//     stream, an open socket); the relay's RSS growth divided by IDLE.
// Raw HTTP and WebSocket clients written from the wire protocol (specs/legacy-signalr.md), not the
// stock clients: the stock clients cost more CPU than the relay and would measure themselves.
//
//   node tests/legacy/bench/transports.mjs --relay http://127.0.0.1:8080 --pid <relay pid> [--messages 5000] [--idle 200]
//   node tests/legacy/bench/transports.mjs --relay ... --pid ... --idle 500 --idle-only longPolling   (fresh relay each)
import fs from "node:fs";
import http from "node:http";
import { parseArgs } from "node:util";
import { WebSocket } from "ws";

const { values: opts } = parseArgs({
    options: {
        relay: { type: "string" }, pid: { type: "string" }, messages: { type: "string", default: "5000" },
        window: { type: "string", default: "20" }, idle: { type: "string", default: "200" },
        "idle-only": { type: "string" }, // one transport's idle cost only (a fresh relay per transport is fairer:
                                          // RSS does not shrink when clients leave, so later runs reuse pages)
    },
});
if (!opts.relay || !opts.pid) {
    console.error("usage: transports.mjs --relay http://127.0.0.1:8080 --pid <relay pid> [--messages N] [--idle N]");
    process.exit(2);
}
const BASE = `${opts.relay.replace(/\/+$/, "")}/signalr`;
const MESSAGES = Number(opts.messages), WINDOW = Number(opts.window), IDLE = Number(opts.idle);
const CD = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

function request(method, url, body = "", { timeoutMs = 150000 } = {}) {
    return new Promise((resolve, reject) => {
        const req = http.request(url, { method, agent, timeout: timeoutMs,
            headers: { "content-type": "application/x-www-form-urlencoded; charset=UTF-8", "content-length": Buffer.byteLength(body) } },
        (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
        });
        req.on("timeout", () => req.destroy(new Error(`${url}: timeout`)));
        req.on("error", reject);
        req.end(body);
    });
}

class Client {
    constructor(transport) {
        this.transport = transport;
        this.onPush = () => {};
        this.stopped = false;
    }

    async open() {
        const neg = JSON.parse((await request("GET", `${BASE}/negotiate?clientProtocol=2.1&connectionData=${CD}`)).body);
        this.q = `transport=${this.transport}&clientProtocol=2.1&connectionToken=${encodeURIComponent(neg.ConnectionToken)}&connectionData=${CD}`;
        if (this.transport === "webSockets") await this.openSocket();
        else if (this.transport === "serverSentEvents") await this.openStream();
        else this.cursor = JSON.parse((await request("POST", `${BASE}/connect?${this.q}`)).body).C;
        const start = await request("GET", `${BASE}/start?${this.q}`);
        if (start.status !== 200) throw new Error(`start: ${start.status} ${start.body}`);
        if (this.transport === "longPolling") this.pollLoop();
    }

    frame(text) {
        const f = JSON.parse(text);
        if (f.I !== undefined && this.results) {
            const done = this.results.get(f.I);
            this.results.delete(f.I);
            done?.(f);
        }
        for (const m of f.M ?? []) this.onPush(m);
    }

    openSocket() {
        return new Promise((resolve, reject) => {
            this.ws = new WebSocket(`${BASE.replace(/^http/, "ws")}/connect?${this.q}`, { perMessageDeflate: false });
            this.results = new Map();
            this.ws.on("message", (data) => {
                const text = data.toString("utf8");
                if (text.includes('"S":1')) resolve();
                this.frame(text);
            });
            this.ws.on("error", reject);
        });
    }

    openStream() {
        return new Promise((resolve, reject) => {
            const req = http.get(`${BASE}/connect?${this.q}`, { agent: false, headers: { accept: "text/event-stream" } }, (res) => {
                let pending = "";
                res.setEncoding("utf8");
                res.on("data", (chunk) => {
                    pending += chunk;
                    let end;
                    while ((end = pending.indexOf("\n\n")) >= 0) {
                        const data = pending.slice(6, end);
                        pending = pending.slice(end + 2);
                        if (data === "initialized") continue;
                        if (data.includes('"S":1')) resolve();
                        this.frame(data);
                    }
                });
            });
            req.on("error", reject);
            this.req = req;
        });
    }

    async pollLoop() {
        while (!this.stopped) {
            const res = await request("POST", `${BASE}/poll?${this.q}`, `messageId=${encodeURIComponent(this.cursor)}`).catch(() => null);
            if (!res || this.stopped) break;
            const f = JSON.parse(res.body);
            this.cursor = f.C;
            for (const m of f.M ?? []) this.onPush(m);
        }
    }

    invoke(method, args, id) {
        const text = JSON.stringify({ H: "chathub", M: method, A: args, I: String(id) });
        if (this.ws) return new Promise((resolve) => { this.results.set(String(id), resolve); this.ws.send(text); });
        return request("POST", `${BASE}/send?${this.q}`, `data=${encodeURIComponent(text)}`).then((r) => JSON.parse(r.body));
    }

    async close() {
        this.stopped = true;
        await request("POST", `${BASE}/abort?${this.q}`).catch(() => {});
        this.ws?.terminate();
        this.req?.destroy();
    }
}

function rssKiB(pid) {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]);
}

function percentile(sorted, p) {
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function pushes() {
    const sender = new Client("webSockets");
    await sender.open();
    const receivers = [];
    for (const t of ["webSockets", "serverSentEvents", "longPolling"]) {
        const r = new Client(t);
        r.sent = new Map();
        r.latencies = [];
        r.got = 0;
        await r.open();
        receivers.push(r);
    }
    const tag = `bench-${process.pid}-${Date.now()}`;
    const sentAt = new Map();
    let allDone;
    const finished = new Promise((resolve) => { allDone = resolve; });
    for (const r of receivers) {
        r.onPush = (m) => {
            if (m.M !== "broadcast" || typeof m.A?.[0] !== "string" || !m.A[0].startsWith(tag)) return;
            const n = Number(m.A[0].slice(tag.length + 1));
            r.latencies.push(performance.now() - sentAt.get(n));
            if (++r.got === MESSAGES) r.end = performance.now();
            if (receivers.every((x) => x.got === MESSAGES)) allDone();
        };
    }
    const started = performance.now();
    let next = 0;
    async function lane() {
        while (next < MESSAGES) {
            const n = next++;
            sentAt.set(n, performance.now());
            await sender.invoke("Broadcast", [`${tag}-${n}`], n);
        }
    }
    await Promise.all(Array.from({ length: WINDOW }, lane));
    await Promise.race([finished, new Promise((_, reject) => setTimeout(() => reject(new Error("pushes did not all arrive in 120 s")), 120000))]);
    const rows = receivers.map((r) => {
        const sorted = r.latencies.sort((a, b) => a - b);
        return { transport: r.transport, messages: r.got, perSecond: Math.round(r.got / ((r.end - started) / 1000)),
            p50ms: Number(percentile(sorted, 0.5).toFixed(2)), p99ms: Number(percentile(sorted, 0.99).toFixed(2)) };
    });
    for (const c of [sender, ...receivers]) await c.close();
    return rows;
}

async function idle(transport) {
    const before = rssKiB(opts.pid);
    const clients = [];
    for (let i = 0; i < IDLE; i++) {
        const c = new Client(transport);
        await c.open();
        clients.push(c);
    }
    await new Promise((r) => setTimeout(r, 3000)); // settle: the last polls held, every link open
    const after = rssKiB(opts.pid);
    for (const c of clients) await c.close();
    return { transport, clients: IDLE, relayRssKiB: after - before, perClientKiB: Number(((after - before) / IDLE).toFixed(2)) };
}

if (!opts["idle-only"]) {
    const push = await pushes();
    console.log(`pushes through the relay (${MESSAGES} broadcasts, ${WINDOW} calls in flight, sender on webSockets):`);
    console.table(push);
}
const idleRows = [];
for (const t of opts["idle-only"] ? [opts["idle-only"]] : ["webSockets", "serverSentEvents", "longPolling"]) {
    idleRows.push(await idle(t));
    await new Promise((r) => setTimeout(r, 2000));
}
console.log(`relay RSS per idle legacy client (${IDLE} clients per transport, each also holding its backend link):`);
console.table(idleRows);
agent.destroy();
process.exit(0);
