// Backend host names are resolved off the event loop: with a DNS server that answers one name
// slowly (tests/resolver/dns_server.py, which the relay is pointed at with --dns-servers, since
// /etc/hosts and /etc/resolv.conf are not the tests' to change), a negotiate for the hub behind that
// name waits for its answer, and meanwhile a stock client of another hub (another name, answered at
// once) connects and calls, and /metrics answers. The relay once called the system resolver inside
// lws' connect, so every client of the process waited for the slow answer. Then the slow name is
// cached: no more questions reach the server for a second negotiate and a stock client. A client that
// leaves while its backend's name is being resolved leaves nothing behind.
import { test, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import tls from "node:tls";
import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startRelay } from "../../lib/process.mjs";
import {
    BACKEND_URL, RS, RawClient, closeServer, connectStock, freePort, httpRequest, listen, metrics, negotiate, pollUntil,
    sleep, stopAll, wsUrl, withTimeout,
} from "../lib.mjs";

const DNS_SERVER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../resolver/dns_server.py");
const SLOW_MS = 3000; // longer than a stock connect takes, even under load; under the resolver's 5 s lookup timeout
const backendPort = new URL(BACKEND_URL).port;

// dns_server.py on a free port; resolves with { port, questions() , stop() }.
async function startDns(zone) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "slow-dns."));
    const portFile = path.join(dir, "port"), logFile = path.join(dir, "questions.log");
    const child = spawn("python3", [DNS_SERVER, "--zone", JSON.stringify(zone), "--port-file", portFile,
        "--log", logFile, "--parent", String(process.pid)], { stdio: "ignore" });
    const port = await pollUntil(() => (fs.existsSync(portFile) ? Number(fs.readFileSync(portFile, "utf8")) : 0),
        (p) => p > 0, "the test DNS server's port", 10000);
    const questions = (name) => (fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8") : "")
        .split("\n").filter((l) => l.startsWith(`${name} `)).length;
    return { port, questions, stop: () => child.kill("SIGTERM") };
}

const dns = await startDns({
    "fast.test": { a: ["127.0.0.1"], ttl: 300 },
    "slow.test": { a: ["127.0.0.1"], ttl: 300, delay_ms: SLOW_MS },
    "gone.test": { a: ["127.0.0.1"], ttl: 300, never: true },
    "fd0.test": { a: ["127.0.0.1"], ttl: 300, delay_ms: 1500 },
    "fd1.test": { a: ["127.0.0.1"], ttl: 300, delay_ms: 1500 },
    "fd2.test": { a: ["127.0.0.1"], ttl: 300, delay_ms: 1500 },
});
after(() => dns.stop());

test("a slow DNS answer for one hub's backend holds up no other client", async () => {
    const relay = await startRelay(["--dns-servers", `127.0.0.1:${dns.port}`, "--backend-timeout", "60",
        "--hub", `fast=http://fast.test:${backendPort}/chat`, "--hub", `slow=http://slow.test:${backendPort}/chat`]);
    const conns = [];
    try {
        let slowDone = null;
        const started = Date.now();
        const slow = httpRequest("POST", `${relay.url}/slow/negotiate?negotiateVersion=1`, {}, null, 60000)
            .then((r) => { slowDone = Date.now(); return r; });
        await pollUntil(() => dns.questions("slow.test"), (n) => n >= 1, "the relay to ask for slow.test");
        // While that answer is on its way: a whole stock connection to the other hub, a call, /metrics.
        const { conn } = await connectStock(`${relay.url}/fast/`);
        conns.push(conn);
        assert.equal(await withTimeout(conn.invoke("Echo", "meanwhile"), 10000, "Echo"), "meanwhile");
        assert.equal(typeof (await metrics(relay.url)).sessions_active, "number");
        assert.equal(slowDone, null, `the slow negotiate finished after ${slowDone - started} ms, before the other client`);
        const res = await slow;
        assert.equal(res.status, 200, res.body);
        assert.ok(slowDone - started >= SLOW_MS - 500, `the slow negotiate answered after ${slowDone - started} ms`);
        // Cached now: another negotiate and a stock client need no question (c-ares may have
        // asked more than once for the first answer: it retransmits after its own timeout).
        const asked = dns.questions("slow.test");
        assert.equal((await httpRequest("POST", `${relay.url}/slow/negotiate?negotiateVersion=1`)).status, 200);
        const { conn: slowConn } = await connectStock(`${relay.url}/slow/`);
        conns.push(slowConn);
        assert.equal(await slowConn.invoke("Echo", "cached"), "cached");
        assert.equal(dns.questions("slow.test"), asked, "slow.test asked again although cached");
    } finally {
        await stopAll(...conns);
        await relay.stop();
    }
});

test("a client that leaves while its backend's name is resolved leaves nothing behind", async () => {
    const relay = await startRelay(["--dns-servers", `127.0.0.1:${dns.port}`, "--hub", `gone=http://gone.test:${backendPort}/chat`]);
    try {
        const client = await RawClient.connect(wsUrl(relay.url, "gone"));
        client.sendText(JSON.stringify({ protocol: "json", version: 1 }) + RS);
        await pollUntil(() => dns.questions("gone.test"), (n) => n >= 1, "the relay to ask for gone.test");
        assert.equal((await metrics(relay.url)).sessions_active, 1);
        client.terminate();
        await pollUntil(() => metrics(relay.url), (m) => m.sessions_active === 0 && m.backend_links_active === 0 &&
            m.timers_armed === 0, "the session, its pending backend request and their timers gone");
    } finally {
        await relay.stop(); // exit 0 and a clean sanitizer log: the cancelled lookup leaked nothing
    }
});

test("the backend request goes to the resolved address with the name in its Host header", async () => {
    const requests = [];
    const raw = net.createServer((socket) => {
        let data = "";
        socket.on("error", () => {});
        socket.on("data", (d) => {
            data += d.toString("latin1");
            if (!/\r\n\r\n/.test(data)) return;
            requests.push(data);
            socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        });
    });
    const port = await listen(raw);
    const relay = await startRelay(["--dns-servers", `127.0.0.1:${dns.port}`, "--hub", `named=http://fast.test:${port}/chat`]);
    try {
        const res = await httpRequest("POST", `${relay.url}/named/negotiate?negotiateVersion=1`);
        assert.equal(res.status, 404, res.body);
        assert.equal(requests.length, 1);
        assert.match(requests[0], /^POST \/chat\/negotiate\?negotiateVersion=1 HTTP\/1\.1\r\n/);
        assert.match(requests[0], new RegExp(`\r\nhost: fast\\.test:${port}\r\n`, "i"), requests[0]);
    } finally {
        await relay.stop();
        await closeServer(raw);
    }
});

test("a TLS backend named by host name gets that name as the TLS server name (SNI)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sni."));
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=fast.test", "-days", "1",
        "-keyout", path.join(dir, "key.pem"), "-out", path.join(dir, "cert.pem")], { stdio: "ignore" });
    const names = [];
    const server = tls.createServer({
        key: fs.readFileSync(path.join(dir, "key.pem")), cert: fs.readFileSync(path.join(dir, "cert.pem")),
        SNICallback: (name, cb) => { names.push(name); cb(null, null); },
    }, (socket) => socket.destroy());
    server.on("tlsClientError", () => {});
    const port = await listen(server);
    const relay = await startRelay(["--dns-servers", `127.0.0.1:${dns.port}`, "--hub", `secure=https://fast.test:${port}/chat`]);
    try {
        // The relay does not trust this self-signed certificate: the negotiate fails (502, naming
        // the TLS failure), after the ClientHello the test server saw.
        const res = await httpRequest("POST", `${relay.url}/secure/negotiate?negotiateVersion=1`);
        assert.equal(res.status, 502, res.body);
        assert.match(res.body, /cannot be trusted/);
        assert.deepEqual(names, ["fast.test"]);
    } finally {
        await relay.stop();
        await closeServer(server);
    }
});

// The connects that wait for a lookup all start when its answer comes, inside the resolver's
// callback: at the descriptor limit lws fails (and destroys) some of them there, outside any
// call of their owners (relay/backend_conn.c conn_resolved). Each round a fresh name, so every
// negotiate of the round waits for the same slow answer; the relay must answer each one, keep
// running and exit clean (the fd-limit test does the same for connects started at once).
test("connects started by a DNS answer at the descriptor limit: every negotiate answered, clean exit", async () => {
    const bin = process.env.RELAY_BIN;
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const logPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "relay-dns-fd-")), "relay.log");
    const log = fs.openSync(logPath, "w");
    const hubs = [0, 1, 2].map((i) => `--hub fd${i}=http://fd${i}.test:${backendPort}/chat`).join(" ");
    const relay = spawn("bash", ["-c", `ulimit -n 44 && exec "$RELAY_BIN" --listen 127.0.0.1:${port} --probe-interval 0 ` +
        `--dns-servers 127.0.0.1:${dns.port} ${hubs}`], { stdio: ["ignore", log, log], env: { ...process.env, RELAY_BIN: bin } });
    const exited = new Promise((resolve) => relay.on("exit", (code, signal) => resolve({ code, signal })));
    try {
        await pollUntil(() => httpRequest("GET", `${base}/metrics`).catch(() => ({ status: 0 })),
            (r) => r.status === 200, "the relay to start", 20000, 200);
        const statuses = {};
        for (let round = 0; round < 3; round++) {
            const ask = () => negotiate(base, `fd${round}`).then((r) => r.status, (e) => `error: ${e.message}`);
            // The first one's lookup under way (c-ares has its socket), the others join it.
            const first = ask();
            await pollUntil(() => dns.questions(`fd${round}.test`), (n) => n >= 1, `the lookup of fd${round}.test`);
            const answers = await Promise.all([first, ...Array.from({ length: 59 }, ask)]);
            for (const a of answers) statuses[a] = (statuses[a] || 0) + 1;
            assert.equal(relay.exitCode, null, `the relay died; statuses ${JSON.stringify(statuses)}; log ${logPath}`);
        }
        console.log(`# negotiate answers at ulimit -n 44 after a slow lookup: ${JSON.stringify(statuses)}`);
        for (const st of Object.keys(statuses))
            assert.ok(st === "200" || st === "503", `every negotiate answered 200 or 503: ${JSON.stringify(statuses)}`);
        assert.ok(statuses["503"] > 0, "no connect failed: the limit was not reached");
        assert.ok(fs.readFileSync(logPath, "utf8").includes("the backend connection could not be started"),
            "no connect started by the DNS answer failed");
        await sleep(500);
        assert.equal((await httpRequest("GET", `${base}/metrics`)).status, 200, "the relay still answers");
    } finally {
        relay.kill("SIGTERM");
        const { code, signal } = await exited;
        fs.closeSync(log);
        const text = fs.readFileSync(logPath, "utf8");
        assert.ok(!/Sanitizer|runtime error/.test(text), `sanitizer report in ${logPath}`);
        assert.deepEqual({ code, signal }, { code: 0, signal: null }, `relay exit; log ${logPath}`);
    }
});
