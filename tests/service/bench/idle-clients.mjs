// idle-clients.mjs - the relay's memory per idle Core client in service mode, the relay alone:
// a fake app server (two server connections of hub "benchhub", answering each client's
// handshake) and N raw WebSocket clients that negotiate at /client/negotiate with a token minted
// here, connect, shake hands and stay idle. Prints the relay's RSS growth per client.
//   node tests/service/bench/idle-clients.mjs --relay http://127.0.0.1:PORT --pid RELAY_PID --key KEY [--clients 2000]
// Start the relay (a release build) with --service-key KEY and enough descriptors (ulimit -n).
import fs from "node:fs";
import crypto from "node:crypto";
import WebSocket from "ws";
import { jwt, frame, unframe, ext } from "../wire.mjs";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
    (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const relay = args.relay, pid = Number(args.pid), key = args.key, count = Number(args.clients || 2000);
if (!relay || !pid || !key) {
    console.error("usage: idle-clients.mjs --relay URL --pid PID --key KEY [--clients N]");
    process.exit(2);
}
const hub = "benchhub";
const ws = relay.replace("http", "ws");
const RS = "\x1e";

function rssKiB() {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return Number(m[1]);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function fakeServer() {
    const socket = new WebSocket(`${ws}/server/?hub=${hub}&cid=${crypto.randomUUID()}`, {
        headers: { Authorization: `Bearer ${jwt(key, { nameid: "bench-server" }, "server", hub)}` },
    });
    await new Promise((resolve, reject) => { socket.on("open", resolve); socket.on("error", reject); });
    socket.on("message", (data) => {
        for (const m of unframe(Buffer.from(data)))
            if (m[0] === 6 && Buffer.from(m[2]).toString().includes('"protocol"'))
                socket.send(frame([6, m[1], Buffer.from(`{}${RS}`), ext([[5, 1]])]));
    });
    socket.send(frame([1, 1, 0, "", 0, {}, false]));
    const ping = setInterval(() => socket.send(frame([3])), 5000);
    return { socket, ping };
}

async function client(i) {
    const token = jwt(key, { "asrs.s.uid": `u${i}`, nameid: `u${i}` }, "client", hub);
    const res = await fetch(`${relay}/client/negotiate?hub=${hub}&negotiateVersion=1`, {
        method: "POST", headers: { Authorization: `Bearer ${token}` },
    });
    const { connectionToken } = await res.json();
    const socket = new WebSocket(`${ws}/client/?hub=${hub}&id=${encodeURIComponent(connectionToken)}&access_token=${token}`);
    await new Promise((resolve, reject) => {
        socket.on("open", () => socket.send(`{"protocol":"json","version":1}${RS}`));
        socket.once("message", resolve);
        socket.on("error", reject);
    });
    return socket;
}

const servers = [await fakeServer(), await fakeServer()];
await sleep(500);
const before = rssKiB();
const clients = [];
for (let i = 0; i < count; i += 50) {
    const batch = [];
    for (let j = i; j < Math.min(count, i + 50); j++) batch.push(client(j));
    clients.push(...(await Promise.all(batch)));
}
await sleep(2000);
const after = rssKiB();
console.log(`service mode, ${count} idle Core clients (relay only, fake app server): relay RSS ${before} -> ${after} KiB, ` +
    `${(((after - before) * 1024) / count).toFixed(0)} bytes per client`);
for (const c of clients) c.terminate();
for (const s of servers) {
    clearInterval(s.ping);
    s.socket.terminate();
}
