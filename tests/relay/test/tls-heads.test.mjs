// The TLS listener's handshake and first request head (issue 10): on a plain listener the relay
// reads the first head itself and answers a late head 408 and an oversized one 414/431; on the
// TLS listener lws 4.1.6 decrypts and parses the head, and closed all of these without a word (a
// late head or a silent client after the handshake only at lws' 20 s timeout). Here, against a
// relay with --tls-cert (a certificate made by `openssl`) and --header-timeout 3, with raw TLS
// clients so that the bytes are exactly these:
//   - a handshake that stalls (nothing sent, half a ClientHello, a whole ClientHello and no more)
//     is closed at --header-timeout; one that began is counted with the refused requests and logged;
//   - after the handshake: silence is closed without an answer, a head begun and not finished is
//     answered 408 with a reason, each at --header-timeout;
//   - heads beyond lws' header buffer (60 KB and 200 KB Cookie, 60 KB request line; in one piece
//     and in 100) get 431/414 with a reason, as on the plain listener; a head within the limits in
//     100 pieces is served, and so is the stock client over wss afterwards.
import { test, before, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, TIMEOUT_MS, signalR, WebSocket, pollUntil, sleep, withTimeout } from "../lib.mjs";

const HEADER_TIMEOUT_MS = 3000;
// Closed by the relay's deadline: after it, and well before lws' own 20 s.
const CLOSED_BY_MS = HEADER_TIMEOUT_MS + 6000;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "relay-tls-heads."));
const file = (name) => path.join(dir, name);
let relay = null;
let clientHello = null; // the first flight of a real TLS client, captured

before(async () => {
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", file("key.pem"), "-out", file("cert.pem"), "-days", "2", "-subj", "/CN=127.0.0.1",
        "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: ["ignore", "ignore", "pipe"] });
    relay = await startRelay(["--tls-cert", file("cert.pem"), "--tls-key", file("key.pem"),
        "--header-timeout", String(HEADER_TIMEOUT_MS / 1000), "--hub", `chat=${BACKEND_URL}/chat`],
    { scheme: "https", probe: (url) => tlsExchange(new URL(url).port, `GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n`,
        { answerOnly: true }).then((r) => r.status) });
    clientHello = await captureClientHello();
}, { timeout: 60000 });

after(async () => {
    if (relay) await relay.stop();
    fs.rmSync(dir, { recursive: true, force: true });
});

// What a real TLS client sends first (its ClientHello), read by a plain TCP server.
async function captureClientHello() {
    const server = net.createServer();
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
        return await withTimeout(new Promise((resolve) => {
            server.once("connection", (s) => s.once("data", (d) => { resolve(d); s.destroy(); }));
            tls.connect({ host: "127.0.0.1", port: server.address().port, rejectUnauthorized: false }).on("error", () => {});
        }), TIMEOUT_MS, "a ClientHello");
    } finally {
        server.close();
    }
}

// Raw TCP: sends bytes (or nothing) and waits for the relay to close. { ms, data }.
function tcpUntilClosed(port, bytes) {
    return withTimeout(new Promise((resolve) => {
        const started = Date.now();
        let data = Buffer.alloc(0);
        const s = net.connect(Number(port), "127.0.0.1", () => { if (bytes) s.write(bytes); });
        s.on("data", (d) => { data = Buffer.concat([data, d]); });
        s.on("error", () => {});
        s.on("close", () => resolve({ ms: Date.now() - started, data }));
    }), CLOSED_BY_MS + 10000, "the relay closing the connection");
}

// After a TLS handshake, writes the pieces (strings; a number is a pause in ms) and reads until the
// relay closes the connection (answerOnly: until the first whole answer). { status, reason, ms (from
// the handshake), text }.
function tlsExchange(port, pieces, { answerOnly = false } = {}) {
    return withTimeout(new Promise((resolve, reject) => {
        let text = "";
        let handshakeAt = 0;
        const s = tls.connect({ host: "127.0.0.1", port: Number(port), ca: fs.readFileSync(file("cert.pem")) }, async () => {
            handshakeAt = Date.now();
            for (const piece of Array.isArray(pieces) ? pieces : [pieces]) {
                if (s.destroyed) return;
                if (typeof piece === "number") await sleep(piece);
                else s.write(piece);
            }
        });
        s.setNoDelay(true);
        const finish = () => {
            const end = text.indexOf("\r\n\r\n");
            resolve({ status: end < 0 ? 0 : Number(text.split(" ")[1]), reason: end < 0 ? "" : text.slice(end + 4),
                ms: Date.now() - handshakeAt, text });
        };
        s.on("data", (d) => {
            text += d.toString("latin1");
            const end = text.indexOf("\r\n\r\n");
            const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1];
            if (answerOnly && end >= 0 && length !== undefined && text.length >= end + 4 + Number(length)) {
                finish();
                s.destroy();
            }
        });
        s.on("error", (e) => { if (!handshakeAt) reject(e); });
        s.on("close", finish);
    }), CLOSED_BY_MS + 10000, "the relay closing the TLS connection");
}

async function refusedTotal() {
    const r = await tlsExchange(relay.port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", { answerOnly: true });
    assert.equal(r.status, 200, r.text.slice(0, 200));
    return Number(/^signalr_relay_requests_refused_total (\d+)$/m.exec(r.reason)[1]);
}

const logOf = () => fs.readFileSync(relay.log, "utf8");

test("a stalled TLS handshake is closed at --header-timeout; one that began is counted and logged", async () => {
    const before = await refusedTotal();
    const linesBefore = logOf().split("\n").filter((l) => l.includes("TLS handshake did not complete")).length;
    const [nothing, half, whole] = await Promise.all([
        tcpUntilClosed(relay.port, null),
        tcpUntilClosed(relay.port, clientHello.subarray(0, clientHello.length >> 1)),
        tcpUntilClosed(relay.port, clientHello),
    ]);
    for (const [what, r] of Object.entries({ nothing, half, whole })) {
        assert.ok(r.ms >= HEADER_TIMEOUT_MS - 500 && r.ms < CLOSED_BY_MS, `${what}: closed after ${r.ms} ms`);
    }
    assert.equal(nothing.data.length, 0);
    assert.ok(whole.data.length > 0, "the relay answered the ClientHello");
    // the two that began a handshake count as refused requests, with a log line each
    await pollUntil(refusedTotal, (n) => n === before + 2, "requests_refused_total + 2", TIMEOUT_MS, 200);
    const lines = logOf().split("\n").filter((l) => l.includes("closed a connection from 127.0.0.1 without an answer: " +
        "the TLS handshake did not complete within the relay's --header-timeout."));
    assert.equal(lines.length - linesBefore, 2, lines.join("\n"));
});

test("after the TLS handshake: silence is closed without an answer, a late head gets 408 with a reason", async () => {
    const [silent, late, trickled] = await Promise.all([
        tlsExchange(relay.port, []),
        tlsExchange(relay.port, "GET /metrics HTTP/1.1\r\nHost: x\r\n"),
        tlsExchange(relay.port, ["GET /metr", 700, "ics HTTP/1.1\r\n", 700, "Host: x\r\n", 700, "Accept: */*\r\n"]),
    ]);
    assert.equal(silent.text, "", "nothing was sent: nothing to answer");
    assert.ok(silent.ms < CLOSED_BY_MS, `silent: closed after ${silent.ms} ms`);
    for (const r of [late, trickled]) {
        assert.equal(r.status, 408, r.text);
        assert.match(r.text, /\r\nconnection: close\r\n/i);
        assert.equal(r.reason, "Request Timeout: the request headers did not arrive within the relay's --header-timeout.");
        assert.ok(r.ms >= HEADER_TIMEOUT_MS - 500 && r.ms < CLOSED_BY_MS, `closed after ${r.ms} ms`);
    }
});

test("heads beyond libwebsockets' header buffer over TLS: 431 / 414 with a reason, in one piece or in 100", async () => {
    const cookie = (n) => `GET /metrics HTTP/1.1\r\nHost: x\r\nCookie: a=${"b".repeat(n)}\r\n\r\n`;
    const line = (n) => `GET /chat/negotiate?x=${"y".repeat(n)} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const inPieces = (text, count) => {
        const size = Math.ceil(text.length / count);
        return Array.from({ length: count }, (_, i) => [text.slice(i * size, (i + 1) * size), 5]).flat();
    };
    const cases = [
        ["a 60 KB Cookie", cookie(60000), 431], ["a 200 KB Cookie", cookie(200000), 431],
        ["a 60 KB request line", line(60000), 414], ["a 60 KB Cookie in 100 pieces", inPieces(cookie(60000), 100), 431],
    ];
    const results = await Promise.all(cases.map(([, bytes]) => tlsExchange(relay.port, bytes)));
    cases.forEach(([what, , status], i) => {
        const r = results[i];
        assert.equal(r.status, status, `${what}: ${r.text.slice(0, 300)}`);
        assert.match(r.reason, status === 414 ? /^URI Too Long: / : /^Request Header Fields Too Large: /, what);
        assert.ok(r.ms < CLOSED_BY_MS, `${what}: closed after ${r.ms} ms`);
    });
    // A head within the limits, 20 KB in 100 pieces, is served.
    const ok = await tlsExchange(relay.port, inPieces(`GET /metrics HTTP/1.1\r\nHost: x\r\nReferer: ${"r".repeat(20000)}\r\n` +
        `\r\n`, 100), { answerOnly: true });
    assert.equal(ok.status, 200, ok.text.slice(0, 300));
    // A 36 KB head within the limits written with 10 KB more: the record that takes what arrived past
    // the limit holds the head's end, so it is served (lws' reading, stopped before it, resumes).
    const crossing = await tlsExchange(relay.port, `GET /metrics HTTP/1.1\r\nHost: x\r\nReferer: ${"r".repeat(28000)}\r\n` +
        `X-Pad: ${"p".repeat(8000)}\r\n\r\n${"G".repeat(10000)}`, { answerOnly: true });
    assert.equal(crossing.status, 200, crossing.text.slice(0, 300));
});

// A kept-alive TLS connection: the first request, then (once its answer is whole) the pieces of the
// next one; reads until the relay closes. { first, status, reason, ms (from the first answer) }.
function tlsKeptAlive(port, pieces) {
    return withTimeout(new Promise((resolve) => {
        let text = "";
        let first = 0;
        let answeredAt = 0;
        const s = tls.connect({ host: "127.0.0.1", port: Number(port), ca: fs.readFileSync(file("cert.pem")) },
            () => s.write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
        s.setNoDelay(true);
        s.on("data", async (d) => {
            text += d.toString("latin1");
            if (first) return;
            const end = text.indexOf("\r\n\r\n");
            const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1];
            if (end < 0 || length === undefined || text.length < end + 4 + Number(length)) return;
            first = Number(text.split(" ")[1]);
            text = text.slice(end + 4 + Number(length));
            answeredAt = Date.now();
            for (const piece of pieces) {
                if (s.destroyed) return;
                if (typeof piece === "number") await sleep(piece);
                else s.write(piece);
            }
        });
        s.on("error", () => {});
        s.on("close", () => {
            const end = text.indexOf("\r\n\r\n");
            resolve({ first, status: end < 0 ? 0 : Number(text.split(" ")[1]), reason: end < 0 ? "" : text.slice(end + 4),
                ms: Date.now() - answeredAt, text });
        });
    }), CLOSED_BY_MS + 10000, "the relay closing the kept-alive TLS connection");
}

test("the next head on a kept-alive TLS connection: late 408, 60 KB Cookie 431, 60 KB request line 414", async () => {
    const [late, cookie, line] = await Promise.all([
        tlsKeptAlive(relay.port, ["GET /metrics HTTP/1.1\r\nHost: x\r\n"]),
        tlsKeptAlive(relay.port, [`GET /metrics HTTP/1.1\r\nHost: x\r\nCookie: a=${"b".repeat(60000)}\r\n\r\n`]),
        tlsKeptAlive(relay.port, [`GET /metrics?x=${"y".repeat(60000)} HTTP/1.1\r\nHost: x\r\n\r\n`]),
    ]);
    for (const r of [late, cookie, line]) assert.equal(r.first, 200);
    assert.equal(late.status, 408, late.text);
    assert.equal(late.reason, "Request Timeout: the request headers did not arrive within the relay's --header-timeout.");
    assert.ok(late.ms >= HEADER_TIMEOUT_MS - 500 && late.ms < CLOSED_BY_MS, `late: closed after ${late.ms} ms`);
    assert.equal(cookie.status, 431, cookie.text.slice(0, 300));
    assert.match(cookie.reason, /^Request Header Fields Too Large: /);
    assert.equal(line.status, 414, line.text.slice(0, 300));
    assert.match(line.reason, /^URI Too Long: /);
});

test("the stock client still negotiates and invokes over wss", async () => {
    const ca = fs.readFileSync(file("cert.pem"));
    class TrustingWebSocket extends WebSocket {
        constructor(address, protocols, options) { super(address, protocols, { ...options, ca }); }
    }
    const conn = new signalR.HubConnectionBuilder()
        .withUrl(`${relay.url}/chat`, { transport: signalR.HttpTransportType.WebSockets, skipNegotiation: true,
            WebSocket: TrustingWebSocket })
        .configureLogging(signalR.LogLevel.None).build();
    await withTimeout(conn.start(), TIMEOUT_MS, "wss connection");
    try {
        assert.equal(await conn.invoke("Echo", "over tls"), "over tls");
    } finally {
        await conn.stop();
    }
});
