// TLS: the relay's own listener (--tls-cert/--tls-key) and https backends (--backend-ca), with a
// CA and certificates made by `openssl` here, a test backend of its own serving plain HTTP and
// HTTPS (Kestrel, with a certificate from that CA), and real clients: the stock @microsoft/signalr
// client (trusting the CA through NODE_EXTRA_CA_CERTS in a child process, as an operator would,
// or through a `ws` constructor given the CA), raw TLS handshakes, and SIGHUP reloads.
import { test, before, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { fileURLToPath } from "node:url";
import { startProcess, startRelay } from "../../lib/process.mjs";
import {
    signalR, WebSocket, RawClient, negotiate, wsUrl, withTimeout, pollUntil, freePort, connectStock, stopAll,
    httpRequest, TIMEOUT_MS,
} from "../lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const relayTestsDir = path.resolve(here, "..");
const BACKEND_DLL = path.resolve(here, "../../backend/bin/Release/net10.0/signalr-test-backend.dll");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "relay-tls."));
const file = (name) => path.join(dir, name);

// ------------------------------------------------------------------------------- certificates

function openssl(...args) {
    execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

// A CA (ca.pem, ca.key) and, signed by it or by an intermediate, certificates for 127.0.0.1
// (name.pem, name.key).
function makeCa(name) {
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", `${name}.key`, "-out", `${name}.pem`, "-days", "2", "-subj", `/CN=signalr-relay test ${name}`);
}

const SERVER_EXT = "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";
const INTERMEDIATE_EXT = "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n";

function makeCert(name, ca, ext = SERVER_EXT, key = ["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]) {
    fs.writeFileSync(file(`${name}.ext`), ext);
    openssl("req", "-newkey", ...key, "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
    openssl("x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.pem`, "-CAkey", `${ca}.key`, "-CAcreateserial",
        "-out", `${name}.pem`, "-days", "2", "-extfile", `${name}.ext`);
}

const fingerprintOf = (pemFile) => new crypto.X509Certificate(fs.readFileSync(pemFile)).fingerprint256;

// ------------------------------------------------------------------------------------ clients

// One TLS handshake with the relay: { protocol, alpn, fingerprint, socket } or the error.
function tlsConnect(port, options = {}) {
    return new Promise((resolve, reject) => {
        const socket = tls.connect({ host: "127.0.0.1", port, ca: fs.readFileSync(file("ca.pem")), ...options });
        const timer = setTimeout(() => { socket.destroy(); reject(new Error("TLS handshake: no answer")); }, TIMEOUT_MS);
        socket.once("secureConnect", () => {
            clearTimeout(timer);
            resolve({ protocol: socket.getProtocol(), alpn: socket.alpnProtocol,
                fingerprint: socket.getPeerCertificate().fingerprint256, socket });
        });
        socket.once("error", (e) => { clearTimeout(timer); reject(e); });
    });
}

async function servedFingerprint(port) {
    const { fingerprint, socket } = await tlsConnect(port);
    socket.destroy();
    return fingerprint;
}

// GET/POST over https trusting the test CA: { status, body }.
function httpsRequest(method, url) {
    return new Promise((resolve, reject) => {
        const req = https.request(url, { method, ca: fs.readFileSync(file("ca.pem")), agent: false, timeout: TIMEOUT_MS },
            (res) => {
                const chunks = [];
                res.on("data", (c) => chunks.push(c));
                res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
            });
        req.on("timeout", () => req.destroy(new Error(`${method} ${url}: no answer`)));
        req.on("error", reject);
        req.end();
    });
}

// The stock client in a child process, trusting what NODE_EXTRA_CA_CERTS names (or nothing):
// negotiate, WebSockets, Echo in JSON and MessagePack. Resolves with its one line of JSON output.
const CHILD_CLIENT = `
import * as signalR from "@microsoft/signalr";
import { MessagePackHubProtocol } from "@microsoft/signalr-protocol-msgpack";
const out = { echoes: [] };
try {
    for (const protocol of [new signalR.JsonHubProtocol(), new MessagePackHubProtocol()]) {
        const conn = new signalR.HubConnectionBuilder().withUrl(process.argv[1])
            .withHubProtocol(protocol).configureLogging(signalR.LogLevel.None).build();
        await conn.start();
        out.transport = conn.connection.transport.constructor.name;
        out.echoes.push(await conn.invoke("Echo", "over tls " + protocol.name));
        await conn.stop();
    }
} catch (e) {
    out.error = String(e && e.message || e);
    // The client's text is "fetch failed"; the same request shows why.
    out.cause = await fetch(process.argv[1] + "/negotiate?negotiateVersion=1", { method: "POST" })
        .then((r) => "answered " + r.status, (f) => String(f.cause && (f.cause.code || f.cause.message)));
}
console.log(JSON.stringify(out));
`;

function childClient(url, env) {
    return new Promise((resolve, reject) => {
        execFile(process.execPath, ["--input-type=module", "-e", CHILD_CLIENT, url],
            { cwd: relayTestsDir, env: { ...process.env, NODE_EXTRA_CA_CERTS: "", ...env }, timeout: 60000 },
            (err, stdout, stderr) => {
                const line = stdout.trim().split("\n").pop();
                try { resolve(JSON.parse(line)); } catch { reject(new Error(`child client: ${err?.message}\n${stdout}\n${stderr}`)); }
            });
    });
}

// The stock client in this process over wss without negotiation (url: https://...): the `ws`
// constructor it uses gets the test CA.
function wssConnection(url) {
    const ca = fs.readFileSync(file("ca.pem"));
    class TrustingWebSocket extends WebSocket {
        constructor(address, protocols, options) { super(address, protocols, { ...options, ca }); }
    }
    return new signalR.HubConnectionBuilder()
        .withUrl(url, { transport: signalR.HttpTransportType.WebSockets, skipNegotiation: true, WebSocket: TrustingWebSocket })
        .configureLogging(signalR.LogLevel.None).build();
}

const logOf = (proc) => fs.readFileSync(proc.log, "utf8");

async function logShows(proc, pattern, what) {
    await pollUntil(async () => pattern.test(logOf(proc)), (v) => v, what, 20000, 100);
}

// ---------------------------------------------------------------------------- the processes

let backend = null;  // the test backend: http on backend.port, https on backendTlsPort
let backendTlsPort = 0;
let front = null;    // relay with --tls-cert live.pem in front of the backend's plain HTTP
let trusting = null; // plain relay, hub over https with --backend-ca ca.pem
let doubting = null; // plain relay, same hub, no --backend-ca (the system store)
let misnamed = null; // an https server whose certificate (from the CA) names another host

before(async () => {
    makeCa("ca");
    makeCert("one", "ca");
    makeCert("inter", "ca", INTERMEDIATE_EXT);
    makeCert("two", "inter"); // served with its chain: two-chain.pem is two.pem, then inter.pem
    fs.writeFileSync(file("two-chain.pem"), fs.readFileSync(file("two.pem")) + fs.readFileSync(file("inter.pem")));
    makeCert("three", "ca");
    makeCert("rsa", "ca", SERVER_EXT, ["rsa:2048"]);
    makeCert("backend", "ca");
    makeCert("elsewhere", "ca", SERVER_EXT.replace("IP:127.0.0.1,DNS:localhost", "DNS:elsewhere.test"));
    misnamed = https.createServer({ key: fs.readFileSync(file("elsewhere.key")), cert: fs.readFileSync(file("elsewhere.pem")) },
        (req, res) => res.end("{}"));
    await new Promise((resolve) => misnamed.listen(0, "127.0.0.1", resolve));
    fs.copyFileSync(file("one.pem"), file("live.pem"));
    fs.copyFileSync(file("one.key"), file("live.key"));

    const httpPort = await freePort();
    backendTlsPort = await freePort();
    backend = await startProcess("dotnet", [BACKEND_DLL,
        "--urls", `http://127.0.0.1:${httpPort};https://127.0.0.1:${backendTlsPort}`,
        `--Kestrel:Certificates:Default:Path=${file("backend.pem")}`,
        `--Kestrel:Certificates:Default:KeyPath=${file("backend.key")}`,
    ], { port: httpPort, ready: "/health", name: "tls-backend", timeoutMs: 90000,
        env: { ASPNETCORE_ENVIRONMENT: "Production", Logging__LogLevel__Default: "Warning" } });

    const probe = (url) => httpsRequest("GET", url).then((r) => r.status);
    [front, trusting, doubting] = await Promise.all([
        startRelay(["--tls-cert", file("live.pem"), "--tls-key", file("live.key"),
            "--hub", `chat=http://127.0.0.1:${httpPort}/chat`], { scheme: "https", probe }),
        startRelay(["--backend-ca", file("ca.pem"), "--hub", `chat=https://127.0.0.1:${backendTlsPort}/chat`,
            "--hub", `wchat=wss://127.0.0.1:${backendTlsPort}/chat`,
            "--hub", `misnamed=https://127.0.0.1:${misnamed.address().port}/chat`]),
        startRelay(["--hub", `chat=https://127.0.0.1:${backendTlsPort}/chat`]),
    ]);
}, { timeout: 180000 });

after(async () => {
    const results = await Promise.allSettled([front, trusting, doubting].filter(Boolean).map((r) => r.stop()));
    misnamed?.close();
    if (backend) backend.kill("SIGTERM");
    if (backend) await backend.exited;
    fs.rmSync(dir, { recursive: true, force: true });
    for (const r of results) if (r.status === "rejected") throw r.reason;
});

// ------------------------------------------------------------------------------- front door

test("the listener speaks TLS 1.2 and 1.3 with the configured certificate, HTTP/1.1 over ALPN", async () => {
    for (const version of ["TLSv1.2", "TLSv1.3"]) {
        const c = await tlsConnect(front.port, { minVersion: version, maxVersion: version, ALPNProtocols: ["h2", "http/1.1"] });
        c.socket.destroy();
        assert.equal(c.protocol, version);
        assert.equal(c.alpn, "http/1.1", "h2 must not be chosen: the relay serves HTTP/1.1");
        assert.equal(c.fingerprint, fingerprintOf(file("one.pem")));
    }
    const metrics = await httpsRequest("GET", `${front.url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /signalr_relay_sessions_active/);
});

test("TLS 1.1 is refused by the relay (the same client handshake succeeds with a server that allows it)", async () => {
    const old = { minVersion: "TLSv1.1", maxVersion: "TLSv1.1", ciphers: "DEFAULT@SECLEVEL=0" };
    // Control: this client really offers TLS 1.1, and a server allowing it completes the handshake.
    const server = tls.createServer({ key: fs.readFileSync(file("one.key")), cert: fs.readFileSync(file("one.pem")),
        minVersion: "TLSv1.1", ciphers: "DEFAULT@SECLEVEL=0" }, (s) => s.end());
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
        const c = await tlsConnect(server.address().port, old);
        c.socket.destroy();
        assert.equal(c.protocol, "TLSv1.1");
    } finally {
        server.close();
    }
    const refused = await tlsConnect(front.port, old).then((c) => { c.socket.destroy(); return null; }, (e) => e);
    assert.ok(refused instanceof Error, "the relay completed a TLS 1.1 handshake");
    assert.match(`${refused.code} ${refused.message}`, /protocol version|PROTOCOL_VERSION/i);
});

test("a client's TLS 1.2 renegotiation is refused (OpenSSL 3's default, kept)", async () => {
    const c = await tlsConnect(front.port, { maxVersion: "TLSv1.2" });
    const refused = await withTimeout(new Promise((resolve) => {
        c.socket.once("error", resolve);
        c.socket.renegotiate({}, (err) => resolve(err ?? null));
    }), TIMEOUT_MS, "the answer to a renegotiation");
    c.socket.destroy();
    assert.ok(refused instanceof Error, "the relay renegotiated");
    assert.match(`${refused.code} ${refused.message}`, /RENEGOTIATION/i);
});

test("plain HTTP on the TLS listener gets no HTTP answer", async () => {
    const res = await httpRequest("GET", `http://127.0.0.1:${front.port}/metrics`, {}, null, 5000).then((r) => r, (e) => e);
    assert.ok(res instanceof Error, `plain HTTP was answered: ${res.status}`);
});

test("the stock client negotiates and invokes over https/wss, trusting the CA through NODE_EXTRA_CA_CERTS", async () => {
    const ok = await childClient(`${front.url}/chat`, { NODE_EXTRA_CA_CERTS: file("ca.pem") });
    assert.equal(ok.error, undefined, ok.error);
    assert.equal(ok.transport, "WebSocketTransport");
    assert.deepEqual(ok.echoes, ["over tls json", "over tls messagepack"]);
    // Without the CA the same client refuses the relay's certificate: the chain is checked.
    const refused = await childClient(`${front.url}/chat`, {});
    assert.match(refused.error ?? "", /negotiation/, JSON.stringify(refused));
    assert.match(refused.cause ?? "", /UNABLE_TO_VERIFY|CERT/, JSON.stringify(refused));
});

test("a legacy (ASP.NET SignalR 2.x) connection over https/wss: negotiate, connect, start, invoke", async () => {
    const data = encodeURIComponent(JSON.stringify([{ name: "chat" }]));
    const base = `${front.url}/signalr`;
    const neg = await httpsRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${data}`);
    assert.equal(neg.status, 200, neg.body);
    const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}` +
        `&connectionData=${data}`;
    const ws = new WebSocket(`${base.replace(/^https/, "wss")}/connect?${query}`, { ca: fs.readFileSync(file("ca.pem")) });
    const frames = [];
    const arrived = (match, what) => pollUntil(async () => frames.find(match), (f) => f !== undefined, what);
    ws.on("message", (d) => frames.push(JSON.parse(d.toString("utf8"))));
    try {
        await withTimeout(new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); }),
            TIMEOUT_MS, "wss /connect");
        await arrived((f) => f.S === 1, "the init frame");
        const started = await httpsRequest("GET", `${base}/start?${query}`);
        assert.equal(started.status, 200, started.body);
        assert.deepEqual(JSON.parse(started.body), { Response: "started" });
        ws.send(JSON.stringify({ H: "chat", M: "Echo", A: ["legacy over tls"], I: 0 }));
        const result = await arrived((f) => f.I === "0", "the Echo result");
        assert.equal(result.R, "legacy over tls", JSON.stringify(result));
    } finally {
        ws.close();
    }
});

test("SIGHUP: open connections keep working, new ones get the new certificate; a bad file is refused", async () => {
    const one = fingerprintOf(file("one.pem"));
    const two = fingerprintOf(file("two.pem"));
    assert.equal(await servedFingerprint(front.port), one);
    const open = wssConnection(`${front.url}/chat`);
    await withTimeout(open.start(), TIMEOUT_MS, "wss connection");
    assert.equal(await open.invoke("Echo", "before"), "before");

    fs.copyFileSync(file("two-chain.pem"), file("live.pem"));
    fs.copyFileSync(file("two.key"), file("live.key"));
    process.kill(front.pid, "SIGHUP");
    await pollUntil(() => servedFingerprint(front.port), (f) => f === two, "the new certificate on new connections", 20000);
    // Clients trust the root CA only: the intermediate must come from the relay (the chain file).
    assert.match(logOf(front), new RegExp(`tls: reloaded: new connections get .*live\\.pem .*1 chain certificate\\), SHA-256 ${two}`));
    assert.equal(open.state, signalR.HubConnectionState.Connected, "the open connection was dropped");
    assert.equal(await open.invoke("Echo", "after"), "after");
    const fresh = wssConnection(`${front.url}/chat`);
    await withTimeout(fresh.start(), TIMEOUT_MS, "wss connection after the reload");
    assert.equal(await fresh.invoke("Echo", "fresh"), "fresh");

    const inter = fs.readFileSync(file("inter.pem"), "utf8");
    // A certificate file that is not PEM: refused, the current certificate stays.
    fs.writeFileSync(file("live.pem"), "not a certificate\n");
    process.kill(front.pid, "SIGHUP");
    await logShows(front, /tls: reload refused, .*'.*live\.pem' holds no PEM certificate/, "the refusal of a broken file");
    assert.equal(await servedFingerprint(front.port), two);
    // A chain that does not chain (the root CA where the intermediate belongs) is served as it is,
    // with a warning naming the problem; the next reload puts the right chain back.
    fs.writeFileSync(file("live.pem"), fs.readFileSync(file("two.pem"), "utf8") + fs.readFileSync(file("ca.pem"), "utf8"));
    process.kill(front.pid, "SIGHUP");
    await logShows(front, /tls: chain certificate 1 in .*live\.pem did not issue the one before it/, "the chain order warning");
    fs.copyFileSync(file("two-chain.pem"), file("live.pem"));
    process.kill(front.pid, "SIGHUP");
    // (Same certificate: the reload shows as the third "reloaded" line. Each SIGHUP waits for
    // its effect before the next, since signals sent close together may be taken as one.)
    await pollUntil(async () => logOf(front).match(/tls: reloaded: /g)?.length ?? 0, (n) => n === 3, "the right chain back", 20000);
    // A chain caught half-written (the intermediate cut short): refused, not served as a shorter chain.
    fs.writeFileSync(file("live.pem"), fs.readFileSync(file("two.pem"), "utf8") + inter.slice(0, inter.length / 2));
    process.kill(front.pid, "SIGHUP");
    await logShows(front, /tls: reload refused, .*live\.pem': chain certificate 1 cannot be read/, "the refusal of a cut chain");
    assert.equal(await servedFingerprint(front.port), two);
    // A key that is not the certificate's: refused too.
    fs.copyFileSync(file("three.pem"), file("live.pem"));
    process.kill(front.pid, "SIGHUP");
    await logShows(front, /tls: reload refused, .*does not belong to the certificate/, "the refusal of a mismatched key");
    assert.equal(await servedFingerprint(front.port), two);
    assert.equal(await open.invoke("Echo", "still"), "still");
    assert.equal(await fresh.invoke("Echo", "still"), "still");

    // Another key type (ECDSA to RSA, as a renewal may do): only the new certificate is served,
    // whatever signature algorithms the client prefers (OpenSSL keeps one certificate per key
    // type in a context, so the old ECDSA one must not linger).
    fs.copyFileSync(file("rsa.pem"), file("live.pem"));
    fs.copyFileSync(file("rsa.key"), file("live.key"));
    process.kill(front.pid, "SIGHUP");
    const rsa = fingerprintOf(file("rsa.pem"));
    await logShows(front, new RegExp(`SHA-256 ${rsa}`), "the reload of the RSA certificate");
    for (const sigalgs of ["ecdsa_secp256r1_sha256:rsa_pss_rsae_sha256", "rsa_pss_rsae_sha256"]) {
        for (const version of ["TLSv1.2", "TLSv1.3"]) {
            const c = await tlsConnect(front.port, { sigalgs, minVersion: version, maxVersion: version });
            c.socket.destroy();
            assert.equal(c.fingerprint, rsa, `${version}, client sigalgs ${sigalgs}`);
        }
    }
    assert.equal(await open.invoke("Echo", "rsa"), "rsa");
    await stopAll(open, fresh);

    // /metrics: the served certificate's expiry, 4 reloads done (chain, wrong chain, chain again,
    // RSA) and 3 refused.
    const m = (await httpsRequest("GET", `${front.url}/metrics`)).body;
    const expiry = Date.parse(new crypto.X509Certificate(fs.readFileSync(file("rsa.pem"))).validTo) / 1000;
    assert.match(m, new RegExp(`^signalr_relay_tls_certificate_not_after_seconds ${expiry}$`, "m"));
    assert.match(m, /^signalr_relay_tls_reloads_total 4$/m);
    assert.match(m, /^signalr_relay_tls_reload_failures_total 3$/m);
});

test("a bad --tls-cert, --tls-key or --backend-ca stops the relay at start with a clear error", () => {
    const run = (...args) => {
        try {
            execFileSync(process.env.RELAY_BIN, ["--listen", "127.0.0.1:0", "--hub", "chat=http://127.0.0.1:1/chat", ...args],
                { stdio: ["ignore", "pipe", "pipe"], timeout: 30000,
                    env: { ...process.env, ASAN_OPTIONS: "detect_leaks=1:exitcode=23" } });
            return { status: 0, text: "" };
        } catch (e) {
            return { status: e.status, text: `${e.stdout}${e.stderr}` };
        }
    };
    const cases = [
        [["--tls-cert", file("missing.pem")], /cannot serve --tls-cert: cannot open '.*missing\.pem': No such file/],
        [["--tls-cert", file("one.pem"), "--tls-key", file("two.key")], /does not belong to the certificate/],
        [["--tls-cert", file("one.pem")], /holds no unencrypted PEM private key/],
        [["--tls-key", file("one.key")], /--tls-key needs --tls-cert/],
        [["--backend-ca", file("one.csr")], /--backend-ca '.*one\.csr' holds no PEM certificate/],
    ];
    for (const [args, pattern] of cases) {
        const r = run(...args);
        assert.equal(r.status, 1, `${args.join(" ")}: exit status ${r.status}\n${r.text}`);
        assert.match(r.text, pattern, args.join(" "));
    }
});

// ------------------------------------------------------------------------------- backends

test("an https/wss backend signed by the --backend-ca CA: the stock client works through the relay", async () => {
    for (const hub of ["chat", "wchat"]) {
        const { conn } = await connectStock(`${trusting.url}/${hub}`);
        try {
            assert.equal(await conn.invoke("Echo", `through ${hub}`), `through ${hub}`);
        } finally {
            await stopAll(conn);
        }
    }
});

test("an https backend whose CA the relay does not trust: negotiate 502, a handshake error and a legacy negotiate 502 naming the failure", async () => {
    const cause = "TLS verification of the backend's certificate failed: unable to get local issuer certificate";
    const res = await negotiate(doubting.url, "chat");
    assert.equal(res.status, 502, res.body);
    assert.ok(res.body.startsWith(`The backend hub 'chat' cannot be trusted: ${cause}`), res.body);
    assert.match(logOf(doubting), /negotiate: backend for hub chat refused: TLS verification/);

    const client = await RawClient.connect(wsUrl(doubting.url, "chat"));
    try {
        const answer = await client.handshake();
        assert.ok(String(answer.error).startsWith(`The relay could not connect to the backend hub 'chat': ${cause}`),
            JSON.stringify(answer));
    } finally {
        client.close();
    }
    const failed = await connectStock(`${doubting.url}/chat`).then(() => null, (e) => e);
    assert.ok(failed instanceof Error, "the stock client connected through an untrusted backend");
    assert.match(failed.message, /502/);

    // A legacy client: its negotiate asks the hub's backend first (relay/legacy_authorize.c) and
    // fails with the same reason.
    const data = encodeURIComponent(JSON.stringify([{ name: "chat" }]));
    const neg = await httpRequest("GET", `${doubting.url}/signalr/negotiate?clientProtocol=2.1&connectionData=${data}`);
    assert.equal(neg.status, 502, neg.body);
    assert.ok(neg.body.includes(`hub 'chat'`) && neg.body.includes(cause), neg.body);
});

test("an https backend whose certificate (from the trusted CA) names another host: 502 naming the mismatch", async () => {
    const res = await negotiate(trusting.url, "misnamed");
    assert.equal(res.status, 502, res.body);
    assert.ok(res.body.startsWith("The backend hub 'misnamed' cannot be trusted: TLS verification of the backend's " +
        "certificate failed: IP address mismatch (the certificate does not name the host of the hub URL)"), res.body);
});
