// hold-groups.mjs - one stock client (@microsoft/signalr) of the service app's /bench hub that
// puts itself into COUNT groups (JoinGroups(prefix, count): every add is acknowledged by the
// relay), so the relay's hub holds that many groups; scripts/bench's service disconnect
// scenario measures other clients' disconnects beside it, then this one's.
//   node tests/service/bench/hold-groups.mjs --app http://127.0.0.1:PORT --count 100000 [--prefix h]
// Prints {"ready":COUNT,"ms":...} when it is in every group; on a line "stop" on stdin (or stdin
// closing) it stops the connection and prints {"stopped":true}, then exits.
import readline from "node:readline";
import * as signalR from "@microsoft/signalr";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) =>
    (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const count = Number(args.count || 1000);
if (!args.app || !(count > 0)) {
    console.error("usage: hold-groups.mjs --app URL --count N [--prefix P]");
    process.exit(2);
}
const connection = new signalR.HubConnectionBuilder()
    .withUrl(`${args.app}/bench`, { transport: signalR.HttpTransportType.WebSockets })
    .configureLogging(signalR.LogLevel.Warning)
    .build();
connection.serverTimeoutInMilliseconds = 600000;
await connection.start();
const t0 = Date.now();
const joined = await connection.invoke("JoinGroups", args.prefix || "h", count);
console.log(JSON.stringify({ ready: joined, ms: Date.now() - t0 }));
let stopping = false;
async function stop() {
    if (stopping) return;
    stopping = true;
    await connection.stop();
    console.log(JSON.stringify({ stopped: true }));
    process.exit(0);
}
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => { if (line.trim() === "stop") stop(); });
rl.on("close", stop);
