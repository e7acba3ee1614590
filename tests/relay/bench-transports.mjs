// bench-transports.mjs - Core transports through the relay, side by side: WebSockets, Server-Sent
// Events and long polling (stock @microsoft/signalr clients in this node process, JSON).
//
//   node tests/relay/bench-transports.mjs RELAY_URL RELAY_PID [clients=20] [seconds=10] [idle=200] [transports]
//
// transports: a comma list (default WebSockets,ServerSentEvents,LongPolling). The idle figure is
// taken first, and is cleanest on a fresh relay per transport (freed memory of an earlier run is
// reused and hides growth): scripts/bench-transports.sh does that.
//
// Per transport: `clients` connections each invoke Echo back to back for `seconds`: messages per
// second (completed invocations, all clients) and the p50/p99 round trip; then `idle` idle
// connections of that transport are opened and the relay's RSS grows by (after - before) / idle per
// client (VmRSS from /proc, after the connections settle). The client side is node, which limits
// the rates: the figures compare the transports, they are not the relay's ceiling.
// Not a test: it passes nothing and fails only when a connection cannot be made.
import fs from "node:fs";
import * as signalR from "@microsoft/signalr";

const [relayUrl, relayPid, clients = "20", seconds = "10", idle = "200",
    transports = "WebSockets,ServerSentEvents,LongPolling"] = process.argv.slice(2);
if (!relayUrl || !relayPid) {
    console.error("usage: node tests/relay/bench-transports.mjs RELAY_URL RELAY_PID [clients] [seconds] [idle]");
    process.exit(2);
}

const rss = () => Number(/^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${relayPid}/status`, "utf8"))[1]) * 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function connection(transport) {
    return new signalR.HubConnectionBuilder()
        .withUrl(`${relayUrl}/chat`, { transport: signalR.HttpTransportType[transport] })
        .configureLogging(signalR.LogLevel.None)
        .build();
}

async function open(transport, n) {
    const conns = [];
    for (let i = 0; i < n; i += 20) {
        const batch = Array.from({ length: Math.min(20, n - i) }, () => connection(transport));
        await Promise.all(batch.map((c) => c.start()));
        conns.push(...batch);
    }
    return conns;
}

async function throughput(transport) {
    const conns = await open(transport, Number(clients));
    const latencies = [];
    const end = Date.now() + Number(seconds) * 1000;
    await Promise.all(conns.map(async (c) => {
        while (Date.now() < end) {
            const t0 = process.hrtime.bigint();
            await c.invoke("Echo", "x");
            latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
    }));
    await Promise.all(conns.map((c) => c.stop()));
    latencies.sort((a, b) => a - b);
    const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))];
    return { rate: latencies.length / Number(seconds), p50: q(0.5), p99: q(0.99) };
}

async function idleCost(transport) {
    const warm = await open(transport, 20); // the relay's first allocations (pools, tables) are not per client
    await Promise.all(warm.map((c) => c.stop()));
    await sleep(2000);
    const before = rss();
    const conns = await open(transport, Number(idle));
    await sleep(3000);
    const after = rss();
    await Promise.all(conns.map((c) => c.stop()));
    return (after - before) / Number(idle);
}

console.log(`relay ${relayUrl} (pid ${relayPid}); ${clients} clients x ${seconds} s of Echo; ${idle} idle clients`);
console.log("transport         msg/s    p50 ms   p99 ms   RSS per idle client");
for (const transport of transports.split(",")) {
    const bytes = await idleCost(transport);
    const t = await throughput(transport);
    console.log(`${transport.padEnd(16)} ${t.rate.toFixed(0).padStart(6)} ${t.p50.toFixed(2).padStart(9)} ` +
        `${t.p99.toFixed(2).padStart(8)}   ${(bytes / 1024).toFixed(1)} KiB`);
}
process.exit(0);
