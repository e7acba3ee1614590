// idle-connections.mjs - the relay's RSS growth per idle proxied Core WebSocket, plain (ws://) or
// over TLS (wss://, trusting the CA in CA_FILE): 50 warm-up connections, then N more, each
// shaking hands and waiting for ChatHub's "welcome" push, then idle; prints the growth per
// connection between the two.
//   node tests/relay/bench/idle-connections.mjs ws[s]://127.0.0.1:PORT/chat RELAY_PID [N=1000] [CA_FILE]
// Start the relay (a release build) in front of tests/backend with enough descriptors (ulimit -n).
import fs from "node:fs";
import WebSocket from "ws";

const [url, pid, count = "1000", ca] = process.argv.slice(2);
if (!url || !pid) {
    console.error("usage: idle-connections.mjs ws[s]://HOST:PORT/chat RELAY_PID [N] [CA_FILE]");
    process.exit(2);
}
const n = Number(count);
const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const options = ca ? { ca: fs.readFileSync(ca) } : {};
const open = () => new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    const timer = setTimeout(() => reject(new Error("no welcome in 30 s")), 30000);
    ws.on("open", () => ws.send('{"protocol":"json","version":1}\x1e'));
    ws.on("message", (d) => { if (d.toString().includes("welcome")) { clearTimeout(timer); resolve(ws); } });
    ws.on("error", reject);
});
const batch = async (k) => Promise.all(Array.from({ length: k }, open));
const settle = () => new Promise((resolve) => setTimeout(resolve, 3000));

const warm = await batch(50);
await settle();
const before = rssKiB();
const held = [];
for (let i = 0; i < n; i += 50) held.push(...await batch(Math.min(50, n - i)));
await settle();
const after = rssKiB();
console.log(`${url}: ${n} idle connections, relay RSS +${after - before} KiB, ${((after - before) / n).toFixed(2)} KiB each`);
for (const ws of [...warm, ...held]) ws.terminate();
