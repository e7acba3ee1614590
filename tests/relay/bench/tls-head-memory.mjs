// tls-head-memory.mjs - the relay's RSS growth per TLS connection held in its head phase: N
// connections that finish the TLS handshake and then send PARTIAL bytes of a head that never ends
// (0: nothing), held until the relay's --header-timeout (start it with a long one); prints the
// growth per connection. lws gives each such connection its header buffer (relay/tls_head.h).
//   node tests/relay/bench/tls-head-memory.mjs PORT RELAY_PID [N=500] [PARTIAL=0]
// e.g. signalr-relay --listen 127.0.0.1:PORT --tls-cert c.pem --tls-key k.pem --header-timeout 60
//      --hub chat=http://127.0.0.1:1/chat   (a release build; any certificate: it is not checked)
import fs from "node:fs";
import tls from "node:tls";

const [port, pid, count = "500", partial = "0"] = process.argv.slice(2);
if (!port || !pid) {
    console.error("usage: tls-head-memory.mjs PORT RELAY_PID [N] [PARTIAL]");
    process.exit(2);
}
const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const settle = () => new Promise((resolve) => setTimeout(resolve, 2000));
const open = () => new Promise((resolve, reject) => {
    const s = tls.connect({ host: "127.0.0.1", port: Number(port), rejectUnauthorized: false }, () => {
        if (Number(partial)) s.write(`GET /metrics HTTP/1.1\r\nHost: x\r\nCookie: ${"c".repeat(Number(partial))}`);
        resolve(s);
    });
    s.on("error", reject);
});

const before = rssKiB();
const held = [];
for (let i = 0; i < Number(count); i++) held.push(await open());
await settle();
const after = rssKiB();
console.log(`${count} TLS connections, ${partial} bytes of head each: RSS ${before} -> ${after} KiB, ` +
    `${((after - before) / Number(count)).toFixed(1)} KiB per connection`);
for (const s of held) s.destroy();
