// A backend host name that resolves to two addresses (tests/resolver/dns_server.py, the relay
// pointed at it with --dns-servers): two test backend processes on the same port, one on
// 127.0.0.1 (the shared one) and one on 127.0.0.2. Stock clients spread over both addresses by
// fewest connections, and each works, which it can only if its WebSocket reaches the address its
// negotiate went to. With the 127.0.0.2 process killed, new clients all work: a negotiate the
// dead address refuses is tried on the other one, and that address is left out afterwards.
import { test, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startProcess, startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, connectStock, httpRequest, pollUntil, stopAll } from "../lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const DNS_SERVER = path.resolve(here, "../../resolver/dns_server.py");
const BACKEND_DLL = path.resolve(here, "../../backend/bin/Release/net10.0/signalr-test-backend.dll");
const port = new URL(BACKEND_URL).port;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pair-dns."));
const dns = spawn("python3", [DNS_SERVER, "--zone", JSON.stringify({ "pair.test": { a: ["127.0.0.1", "127.0.0.2"], ttl: 300 } }),
    "--port-file", path.join(dir, "port"), "--parent", String(process.pid)], { stdio: "ignore" });
const dnsPort = await pollUntil(() => (fs.existsSync(path.join(dir, "port")) ? Number(fs.readFileSync(path.join(dir, "port"), "utf8")) : 0),
    (p) => p > 0, "the test DNS server's port", 10000);
const second = await startProcess("dotnet", [BACKEND_DLL, "--urls", `http://127.0.0.2:${port}`], {
    port, ready: `http://127.0.0.2:${port}/health`, name: "signalr-test-backend", timeoutMs: 60000,
    env: { ASPNETCORE_ENVIRONMENT: "Production", Logging__LogLevel__Default: "Warning", DOTNET_NOLOGO: "1" },
});
after(async () => { dns.kill("SIGTERM"); await second.kill("SIGTERM"); });

async function addresses(relay) {
    const res = await httpRequest("GET", `${relay.url}/metrics`);
    const out = {};
    for (const line of res.body.split("\n")) {
        const m = /^signalr_relay_backend_address_active\{hub="chat",backend="[^"]+",address="([^"]+)"\} (\d+)$/.exec(line);
        if (m) out[m[1]] = Number(m[2]);
    }
    return out;
}

test("one name, two addresses: clients spread over both and stick; a dead address is skipped", async () => {
    const relay = await startRelay(["--dns-servers", `127.0.0.1:${dnsPort}`, "--hub", `chat=http://pair.test:${port}/chat`]);
    const conns = [];
    try {
        for (let i = 0; i < 4; i++) {
            const { conn } = await connectStock(`${relay.url}/chat`);
            conns.push(conn);
            assert.equal(await conn.invoke("Echo", `client ${i}`), `client ${i}`);
        }
        assert.deepEqual(await addresses(relay), { "127.0.0.1": 2, "127.0.0.2": 2 });
        await second.kill("SIGKILL");
        await pollUntil(() => addresses(relay), (a) => a["127.0.0.2"] === 0, "the dead address's links gone");
        for (let i = 0; i < 4; i++) {
            const { conn } = await connectStock(`${relay.url}/chat`);
            conns.push(conn);
            assert.equal(await conn.invoke("Echo", `after ${i}`), `after ${i}`);
        }
        const after = await addresses(relay);
        assert.equal(after["127.0.0.2"], 0, JSON.stringify(after));
    } finally {
        await stopAll(...conns);
        await relay.stop();
    }
});
