// stateful-never-acks.mjs - the relay's RSS while a stateful-reconnect client (useStatefulReconnect,
// handshake version 2) that reads everything and never acks is sent N broadcasts of ~1 KB, and
// how much of them reached it: the relay must stop at --stateful-reconnect-buffer (plus one hub
// message) and its RSS stay flat. With "plain", the same client without stateful reconnect, for
// comparison (it gets everything).
//   node tests/relay/bench/stateful-never-acks.mjs http://127.0.0.1:PORT RELAY_PID [N=5000] [plain]
// Start the relay (a release build) in front of tests/backend (hub chat).
import fs from "node:fs";
import WebSocket from "ws";
import * as signalR from "@microsoft/signalr";
const base = process.argv[2], pid = Number(process.argv[3]), N = Number(process.argv[4] || 5000), ask = process.argv[5] !== "plain";
const RS = "\x1e";
if (!base || !pid) {
    console.error("usage: stateful-never-acks.mjs http://HOST:PORT RELAY_PID [N] [plain]");
    process.exit(2);
}
const rss = () => Number(/^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const n = await (await fetch(`${base}/chat/negotiate?negotiateVersion=1${ask ? "&useStatefulReconnect=true" : ""}`, { method: "POST" })).json();
const ws = new WebSocket(`${base.replace("http", "ws")}/chat?id=${n.connectionToken}`);
let bytes = 0;
ws.on("message", (d) => { bytes += d.length; });
await new Promise((r) => ws.once("open", r));
ws.send(`{"protocol":"json","version":${ask ? 2 : 1}}${RS}`);
const sender = new signalR.HubConnectionBuilder().withUrl(`${base}/chat`, { transport: 1 }).configureLogging(signalR.LogLevel.None).build();
await sender.start();
const before = rss();
const text = "x".repeat(1000);
for (let i = 0; i < N; i++) { sender.send("Broadcast", `${i} ${text}`); if (i % 300 === 299) await new Promise((r) => setTimeout(r, 50)); }
for (let t = 0; t < 20; t++) { await new Promise((r) => setTimeout(r, 500)); }
console.log(`stateful=${ask} relay RSS before ${before} kB, after ${rss()} kB; the never-acking client got ${bytes} bytes of ${N} x ~1 KB`);
ws.terminate(); await sender.stop(); process.exit(0);
