// Strict request framing and request size limits at the front door (issue 10, defect 5, and the
// request limits): the same raw bytes go to ASP.NET Core (Kestrel, the test backend) and to the
// relay, and the relay must never read a request in a way a proxy in front of it could read
// differently (request smuggling) or answer one it read only in part:
//   Transfer-Encoding with Content-Length, Content-Length twice, a negative, junk or absurd
//   Content-Length, a Transfer-Encoding other than chunked: 400 and the connection closed;
//   a request line over --max-request-line (8K): 414; headers over --max-request-headers (32K):
//   431; each answered with Connection: close, then closed. So are heads libwebsockets cannot hold
//   (more than its header buffer: 414/431; more fields than its table: 431) and headers that do not
//   arrive within --header-timeout (408): lws closed those without an answer.
// A POST without Content-Length has no body (HTTP/1.1); lws 4.1.6 takes it for a body of unknown
// length and waited for it, so the relay answers it and closes the connection, saying so.
// Every exchange is raw TCP so that the bytes on the wire are exactly these.
import { describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import net from "node:net";
import fs from "node:fs";
import { RELAY_URL, BACKEND_URL, TIMEOUT_MS, httpRequest, metrics, pollUntil, sleep, withTimeout } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

// Sends bytes on a fresh connection and reads until the peer closes it (or TIMEOUT_MS / 2 passes:
// then closed is false; with answerOnly, until the first whole response). Returns { status,
// headers, body, closed, responses } (the first response; responses counts the status lines seen).
// bytes may be an array of pieces: each is written on its own, PIECE_GAP_MS after the last (no
// Nagle), so that they arrive as separate segments (the input's shape, not a synchronisation); a
// number in it is a longer pause.
const PIECE_GAP_MS = 10;
async function writePieces(socket, pieces) {
    for (const piece of pieces) {
        if (socket.destroyed) return;
        if (typeof piece === "number") { await sleep(piece); continue; } // a longer pause, in ms
        socket.write(piece);
        await sleep(PIECE_GAP_MS);
    }
}

// What a raw exchange got: the first answer in `text` (status 0: none), how many answers began,
// and whether the peer closed.
function parseAnswer(text, closed) {
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) return { status: 0, headers: {}, body: "", closed, responses: 0 };
    const head = text.slice(0, end).split("\r\n");
    const headers = {};
    for (const line of head.slice(1)) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers["content-length"] ?? 0);
    return { status: Number(head[0].split(" ")[1]), headers, body: text.slice(end + 4, end + 4 + length), closed,
        responses: (text.match(/^HTTP\/1\.[01] \d{3}/gm) ?? []).length };
}

function exchange(base, bytes, { answerOnly = false } = {}) {
    const { hostname, port } = new URL(base);
    return withTimeout(new Promise((resolve, reject) => {
        const socket = net.connect(Number(port), hostname);
        let data = Buffer.alloc(0);
        let settled = false;
        const finish = (closed) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            socket.destroy();
            resolve(parseAnswer(data.toString("latin1"), closed));
        };
        // the relay or Kestrel keeping the connection open this long (after the last byte) means it
        // is waiting for more
        let timer;
        const wait = () => { if (!settled) timer = setTimeout(() => finish(false), TIMEOUT_MS / 2); };
        socket.setNoDelay(true);
        socket.on("connect", () => (Array.isArray(bytes) ? writePieces(socket, bytes).then(wait) : (socket.write(bytes), wait())));
        socket.on("data", (chunk) => {
            data = Buffer.concat([data, chunk]);
            const text = data.toString("latin1");
            const end = text.indexOf("\r\n\r\n");
            const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1];
            if (answerOnly && end >= 0 && length !== undefined && data.length >= end + 4 + Number(length)) finish(false);
        });
        socket.on("end", () => finish(true));
        socket.on("close", () => finish(true));
        socket.on("error", (e) => (e.code === "ECONNRESET" ? finish(true) : reject(e)));
    }), Array.isArray(bytes) ? TIMEOUT_MS * 2 : TIMEOUT_MS, "raw HTTP exchange");
}

// On one connection: a request the relay answers and keeps the connection for (GET /signalr/ping;
// Kestrel: GET /health), then `second` once that answer is whole. Returns what exchange does for
// the answer to `second` (status 0: the connection closed without one).
function keptAlive(base, second) {
    const { hostname, port } = new URL(base);
    const first = `GET ${base === BACKEND_URL ? "/health" : "/signalr/ping"} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`;
    return withTimeout(new Promise((resolve, reject) => {
        const socket = net.connect(Number(port), hostname);
        socket.setNoDelay(true);
        let data = Buffer.alloc(0);
        let firstLength = -1; // bytes of the first answer, once whole
        let settled = false;
        const finish = (closed) => {
            if (settled) return;
            settled = true;
            socket.destroy();
            if (firstLength < 0) return resolve({ ...parseAnswer("", closed), first: false });
            resolve({ ...parseAnswer(data.toString("latin1").slice(firstLength), closed), first: true });
        };
        socket.on("connect", () => socket.write(first));
        socket.on("data", (chunk) => {
            data = Buffer.concat([data, chunk]);
            if (firstLength >= 0) return;
            const text = data.toString("latin1");
            const end = text.indexOf("\r\n\r\n");
            const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1];
            if (end < 0 || length === undefined || data.length < end + 4 + Number(length)) return;
            firstLength = end + 4 + Number(length);
            if (Array.isArray(second)) writePieces(socket, second);
            else socket.write(second);
        });
        socket.on("end", () => finish(true));
        socket.on("close", () => finish(true));
        socket.on("error", (e) => (e.code === "ECONNRESET" || e.code === "EPIPE" ? finish(true) : reject(e)));
    }), TIMEOUT_MS * 2, "kept-alive HTTP exchange");
}

const negotiateHead = (base, headers) =>
    `POST /chat/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: ${new URL(base).host}\r\n${headers}`;

// What both Kestrel and the relay must answer with 400 and a close.
const refusedByBoth = {
    "Content-Length twice (the same value)": "Content-Length: 0\r\nContent-Length: 0\r\n\r\n",
    "Content-Length twice (different values)": "Content-Length: 0\r\nContent-Length: 5\r\n\r\nhello",
    "a negative Content-Length": "Content-Length: -1\r\n\r\n",
    "an absurd Content-Length": "Content-Length: 99999999999999999999999\r\n\r\n",
    "a Content-Length that is not a number": "Content-Length: 1x\r\n\r\n",
    "a Transfer-Encoding other than chunked": "Transfer-Encoding: gzip\r\n\r\n",
    "an empty Content-Length": "Content-Length:\r\n\r\n",
};

// What both serve: white space around the value is not part of it (HTTP's OWS).
const servedByBoth = {
    "Content-Length with a space after the value": "Content-Length: 0 \r\nConnection: close\r\n\r\n",
    "Content-Length after a tab": "Content-Length:\t0\r\nConnection: close\r\n\r\n",
    "Content-Length with leading zeros": "Content-Length: 00\r\nConnection: close\r\n\r\n",
};

async function assertRefused(res, status, what) {
    assert.equal(res.status, status, `${what}: ${res.status} ${res.body}`);
    assert.equal(res.headers.connection, "close", `${what}: the answer says Connection: close`);
    assert.equal(res.closed, true, `${what}: the connection is closed after the answer`);
    assert.equal(res.responses, 1, `${what}: one answer, nothing read after it`);
}

describe("request framing", () => {
    for (const [what, rest] of Object.entries(refusedByBoth)) {
        it(`${what}: 400 and closed, as Kestrel`, async () => {
            await assertRefused(await exchange(BACKEND_URL, negotiateHead(BACKEND_URL, rest)), 400, `Kestrel, ${what}`);
            const before = (await metrics()).requests_refused_total;
            await assertRefused(await exchange(RELAY_URL, negotiateHead(RELAY_URL, rest)), 400, `relay, ${what}`);
            assert.equal((await metrics()).requests_refused_total, before + 1, "the refusal is counted");
        });
    }

    for (const [what, rest] of Object.entries(servedByBoth)) {
        it(`${what}: served, as by Kestrel`, async () => {
            assert.equal((await exchange(BACKEND_URL, negotiateHead(BACKEND_URL, rest))).status, 200, "Kestrel");
            const res = await exchange(RELAY_URL, negotiateHead(RELAY_URL, rest));
            assert.equal(res.status, 200, res.body);
        });
    }

    // A body framed by the length here would leave "0\r\n\r\n"'s last bytes, or a smuggled request, to be
    // read as the next request. Kestrel frames it by the chunked encoding and closes the connection after
    // its answer (RFC 9112 6.3 allows either); the relay, which reads no chunked bodies, refuses it.
    it("Transfer-Encoding with Content-Length: never framed by the length (relay 400, Kestrel chunked), closed", async () => {
        const smuggled = "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        const direct = await exchange(BACKEND_URL, negotiateHead(BACKEND_URL, smuggled));
        assert.equal(direct.closed, true, "Kestrel closes the connection");
        assert.equal(direct.headers.connection, "close");
        await assertRefused(await exchange(RELAY_URL, negotiateHead(RELAY_URL, smuggled)), 400, "relay, CL + TE");
    });

    it("a WebSocket upgrade with Transfer-Encoding and Content-Length: 400 and closed", async () => {
        const { host } = new URL(RELAY_URL);
        const req = `GET /chat HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
            "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        await assertRefused(await exchange(RELAY_URL, req), 400, "relay, upgrade with CL + TE");
    });

    it("a POST negotiate without Content-Length is answered (200, as Kestrel) and the connection closed", async () => {
        const direct = await exchange(BACKEND_URL, negotiateHead(BACKEND_URL, "\r\n"), { answerOnly: true });
        assert.equal(direct.status, 200);
        const res = await exchange(RELAY_URL, negotiateHead(RELAY_URL, "\r\n"));
        assert.equal(res.status, 200, res.body);
        assert.ok(JSON.parse(res.body).connectionToken, res.body);
        assert.equal(res.headers.connection, "close");
        assert.equal(res.closed, true, "the relay closes the connection instead of waiting for a body");
    });

    it("a chunked POST negotiate is answered (200, as Kestrel) and the connection closed", async () => {
        const chunked = "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        assert.equal((await exchange(BACKEND_URL, negotiateHead(BACKEND_URL, chunked), { answerOnly: true })).status, 200);
        const res = await exchange(RELAY_URL, negotiateHead(RELAY_URL, chunked));
        assert.equal(res.status, 200, res.body);
        assert.equal(res.headers.connection, "close");
        assert.equal(res.closed, true);
    });
});

describe("request size limits", () => {
    const get = (base, target, headers = "") => `GET ${target} HTTP/1.1\r\nHost: ${new URL(base).host}\r\n${headers}\r\n`;

    for (const length of [10000, 20000]) {
        it(`a request line of ${length} bytes: 414 and closed, as Kestrel`, async () => {
            const target = `/chat/negotiate?pad=${"a".repeat(length)}`;
            await assertRefused(await exchange(BACKEND_URL, get(BACKEND_URL, target)), 414, "Kestrel");
            await assertRefused(await exchange(RELAY_URL, get(RELAY_URL, target)), 414, "relay");
        });
    }

    it("a 40 KB Cookie header: 431 and closed, as Kestrel", async () => {
        const cookie = `Cookie: c=${"b".repeat(40000)}\r\n`;
        await assertRefused(await exchange(BACKEND_URL, get(BACKEND_URL, "/chat/negotiate", cookie)), 431, "Kestrel");
        await assertRefused(await exchange(RELAY_URL, get(RELAY_URL, "/chat/negotiate", cookie)), 431, "relay");
    });

    // A Cookie (or Authorization, ...) the relay cannot pass on whole to the backend would have been
    // dropped (the backend then saw no cookie: another user, or none); it is refused instead.
    it("a 10 KB Cookie, which the relay cannot pass on whole to the backend: 431 with a reason (not dropped)", async () => {
        const target = "/chat/negotiate?negotiateVersion=1";
        const req = (base) => `POST ${target} HTTP/1.1\r\nHost: ${new URL(base).host}\r\nCookie: c=${"b".repeat(10000)}\r\n` +
            "Content-Length: 0\r\n\r\n";
        assert.equal((await exchange(BACKEND_URL, req(BACKEND_URL), { answerOnly: true })).status, 200, "Kestrel serves it");
        const res = await exchange(RELAY_URL, req(RELAY_URL));
        await assertRefused(res, 431, "relay, 10 KB cookie");
        assert.match(res.body, /passes on to the backend/);
    });

    it("a 20 KB Referer header and a 7 KB request line are within the limits, as for Kestrel", async () => {
        const cookie = `Referer: http://x/${"b".repeat(20000)}\r\n`;
        const target = `/signalr/ping?pad=${"a".repeat(7000)}`;
        const req = (base) => `GET ${target} HTTP/1.1\r\nHost: ${new URL(base).host}\r\n${cookie}Connection: close\r\n\r\n`;
        assert.equal((await exchange(BACKEND_URL, req(BACKEND_URL).replace("/signalr/ping", "/health"))).status, 200);
        const res = await exchange(RELAY_URL, req(RELAY_URL));
        assert.equal(res.status, 200, res.body);
    });

    // Heads libwebsockets 4.1.6 cannot hold: it closed these connections without an answer (status 0
    // here). The relay reads each connection's first head itself and answers them (relay/request_head.c).
    it("a 60 KB Cookie header, more than libwebsockets' header buffer: 431 and closed, as Kestrel", async () => {
        const cookie = `Cookie: c=${"b".repeat(60000)}\r\n`;
        await assertRefused(await exchange(BACKEND_URL, get(BACKEND_URL, "/chat/negotiate", cookie)), 431, "Kestrel");
        const before = (await metrics()).requests_refused_total;
        await assertRefused(await exchange(RELAY_URL, get(RELAY_URL, "/chat/negotiate", cookie)), 431, "relay");
        assert.equal((await metrics()).requests_refused_total, before + 1, "the refusal is counted");
    });

    it("a 60 KB request line, more than libwebsockets' header buffer: 414 and closed, as Kestrel", async () => {
        const target = `/chat/negotiate?pad=${"a".repeat(60000)}`;
        await assertRefused(await exchange(BACKEND_URL, get(BACKEND_URL, target)), 414, "Kestrel");
        await assertRefused(await exchange(RELAY_URL, get(RELAY_URL, target)), 414, "relay");
    });

    // A head that arrives in more pieces than the relay looks at one by one (64) went to lws as it
    // was, and lws closed an oversized one without an answer; the relay now keeps looking (on a
    // clock) until it is whole or too large. 100 pieces, 10 ms apart.
    const pieces = (text, n) => Array.from({ length: n }, (_, i) => text.slice(Math.floor(i * text.length / n),
        Math.floor((i + 1) * text.length / n)));
    it("a 60 KB Cookie header in 100 pieces: 431 and closed, as Kestrel", async () => {
        const cookie = `Cookie: c=${"b".repeat(60000)}\r\n`;
        await assertRefused(await exchange(BACKEND_URL, pieces(get(BACKEND_URL, "/chat/negotiate", cookie), 100)), 431, "Kestrel");
        const before = (await metrics()).requests_refused_total;
        await assertRefused(await exchange(RELAY_URL, pieces(get(RELAY_URL, "/chat/negotiate", cookie), 100)), 431, "relay");
        assert.equal((await metrics()).requests_refused_total, before + 1, "the refusal is counted");
    });

    it("a head within the limits in 100 pieces is served, as by Kestrel", async () => {
        const referer = `Referer: http://x/${"b".repeat(6000)}\r\nConnection: close\r\n`;
        assert.equal((await exchange(BACKEND_URL, pieces(get(BACKEND_URL, "/health", referer), 100))).status, 200, "Kestrel");
        const res = await exchange(RELAY_URL, pieces(get(RELAY_URL, "/signalr/ping", referer), 100));
        assert.equal(res.status, 200, res.body);
    });

    // A kept-alive connection's later heads went to lws directly, which closed those it could not hold
    // without an answer (status 0 here); the relay now reads them first too (relay/next_head.c).
    it("the second request on a kept-alive connection with a 60 KB Cookie: 431 and closed, as Kestrel", async () => {
        const second = (base) => get(base, "/chat/negotiate", `Cookie: c=${"b".repeat(60000)}\r\n`);
        await assertRefused(await keptAlive(BACKEND_URL, second(BACKEND_URL)), 431, "Kestrel");
        const before = (await metrics()).requests_refused_total;
        await assertRefused(await keptAlive(RELAY_URL, second(RELAY_URL)), 431, "relay");
        assert.equal((await metrics()).requests_refused_total, before + 1, "the refusal is counted");
    });

    it("the second request on a kept-alive connection with a 60 KB request line: 414 and closed, as Kestrel", async () => {
        const second = (base) => get(base, `/chat/negotiate?pad=${"a".repeat(60000)}`);
        await assertRefused(await keptAlive(BACKEND_URL, second(BACKEND_URL)), 414, "Kestrel");
        await assertRefused(await keptAlive(RELAY_URL, second(RELAY_URL)), 414, "relay");
    });

    it("the second request on a kept-alive connection with 92 known headers: 431 with a reason", async () => {
        const headers = Array.from({ length: 92 }, (_, i) => `Accept-Language: x${i}\r\n`).join("");
        const res = await keptAlive(RELAY_URL, get(RELAY_URL, "/signalr/ping", headers));
        await assertRefused(res, 431, "relay, 92 known headers");
        assert.match(res.body, /more query arguments and headers than the relay reads/);
    });

    it("the second request on a kept-alive connection, within the limits and in 100 pieces, is served", async () => {
        const referer = `Referer: http://x/${"b".repeat(6000)}\r\nConnection: close\r\n`;
        const res = await keptAlive(RELAY_URL, pieces(get(RELAY_URL, "/signalr/ping", referer), 100));
        assert.equal(res.status, 200, res.body);
        assert.equal(res.closed, true);
    });

    // lws keeps the path, each query argument and each header it knows by name in one table of 95
    // entries: 90 arguments (with Host and Connection) fit, 91 do not. Kestrel serves both; the relay
    // serves what lws holds and answers the rest 431 with a reason.
    it("more query arguments than libwebsockets' header table holds: 431 with a reason (Kestrel serves it)", async () => {
        const args = (n) => Array.from({ length: n }, (_, i) => `a${i}=1`).join("&");
        const req = (base, n, path) => get(base, `${path}?${args(n)}`, "Connection: close\r\n");
        assert.equal((await exchange(BACKEND_URL, req(BACKEND_URL, 91, "/health"))).status, 200, "Kestrel serves 91");
        assert.equal((await exchange(RELAY_URL, req(RELAY_URL, 90, "/signalr/ping"))).status, 200, "the relay serves 90");
        const res = await exchange(RELAY_URL, req(RELAY_URL, 91, "/signalr/ping"));
        await assertRefused(res, 431, "relay, 91 arguments");
        assert.match(res.body, /more query arguments and headers than the relay reads/);
        const headers = Array.from({ length: 92 }, (_, i) => `Accept-Language: x${i}\r\n`).join("");
        await assertRefused(await exchange(RELAY_URL, get(RELAY_URL, "/signalr/ping", headers)), 431, "relay, 92 known headers");
    });

    // lws 4.1.6 writes the relay's own request to a backend into 2048 bytes and cut longer ones: the
    // backend then read a cut request line (Kestrel: 400). The relay refuses such a query instead.
    it("a negotiate query too long to pass on whole to the backend: 414 with a reason (not a cut request)", async () => {
        const target = `/chat/negotiate?negotiateVersion=1&pad=${"a".repeat(3000)}`;
        const req = (base) => `POST ${target} HTTP/1.1\r\nHost: ${new URL(base).host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;
        assert.equal((await exchange(BACKEND_URL, req(BACKEND_URL))).status, 200, "Kestrel serves it");
        const res = await exchange(RELAY_URL, req(RELAY_URL));
        assert.equal(res.status, 414, res.body);
        assert.match(res.body, /too long .* backend/);
        const shorter = `/chat/negotiate?negotiateVersion=1&pad=${"a".repeat(1500)}`;
        const ok = await exchange(RELAY_URL, req(RELAY_URL).replace(target, shorter));
        assert.equal(ok.status, 200, ok.body);
    });
});

describe("request limits from the flags", () => {
    // A body the relay reads (a Core POST of messages, a legacy /send) that stops arriving waited
    // under libwebsockets' own 20 s and was then closed without an answer; it is on the wheel now:
    // no byte for --header-timeout, 408 with a reason (Kestrel answers a body that arrives too
    // slowly with 408 too: MinRequestBodyDataRate). A slow body that keeps coming is read.
    it("a request body that stops arriving: 408 after --header-timeout, closed; one that keeps coming is served", async () => {
        const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--header-timeout", "1"]);
        try {
            const { host } = new URL(relay.url);
            const post = (target, body) => `POST ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
                `Content-Length: ${body.length}\r\n\r\n`;
            const body = "data=" + "x".repeat(95);
            // a Core session on Server-Sent Events, so that its POST reads a body (an unknown id is 404 at once)
            const { connectionToken } = JSON.parse((await httpRequest("POST", `${relay.url}/chat/negotiate?negotiateVersion=1`)).body);
            const sse = net.connect(Number(new URL(relay.url).port), "127.0.0.1");
            sse.on("error", () => {});
            const streaming = new Promise((resolve) => sse.once("data", resolve));
            sse.write(`GET /chat?id=${encodeURIComponent(connectionToken)} HTTP/1.1\r\nHost: ${host}\r\nAccept: text/event-stream\r\n\r\n`);
            await withTimeout(streaming, TIMEOUT_MS, "the event stream's head");
            const coreTarget = `/chat?id=${encodeURIComponent(connectionToken)}`;
            for (const target of [coreTarget, "/signalr/send?transport=serverSentEvents&connectionToken=x"]) {
                const started = Date.now();
                const res = await exchange(relay.url, post(target, body) + body.slice(0, 10));
                await assertRefused(res, 408, `${target}, half a body`);
                assert.match(res.body, /request body stopped arriving/);
                assert.ok(Date.now() - started >= 900, `${target}: answered after ${Date.now() - started} ms, before the timeout`);
            }
            // the whole body in four pieces, 300 ms apart (each within the 1 s): read, and answered by the route
            const slow = [post("/signalr/send?transport=serverSentEvents&connectionToken=x", body), body.slice(0, 30),
                body.slice(30, 60), body.slice(60)];
            const res = await exchange(relay.url, slow.flatMap((piece) => [piece, 300]));
            assert.notEqual(res.status, 408, res.body);
            assert.ok(res.status >= 400 && res.status < 500, `the route's own answer: ${res.status} ${res.body}`);
            assert.equal((await metrics(relay.url)).requests_refused_total, 2);
            sse.destroy();
        } finally {
            await relay.stop();
        }
    });

    it("--max-request-line, --max-request-headers and --header-timeout: 414, 431, a close; refusals logged at most 10 a window", async () => {
        const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--max-request-line", "2K",
            "--max-request-headers", "4K", "--header-timeout", "1"]);
        try {
            const { host } = new URL(relay.url);
            const get = (target, headers = "") => `GET ${target} HTTP/1.1\r\nHost: ${host}\r\n${headers}\r\n`;
            await assertRefused(await exchange(relay.url, get(`/chat?pad=${"a".repeat(3000)}`)), 414, "3K target");
            const within = await exchange(relay.url, get(`/signalr/ping?pad=${"a".repeat(1500)}`, "Connection: close\r\n"));
            assert.equal(within.status, 200, "a 1.5K target is within 2K");
            await assertRefused(await exchange(relay.url, get("/chat", `Cookie: c=${"b".repeat(6000)}\r\n`)), 431, "6K cookie");

            // headers that never end: 408 once the header timeout has passed (as Kestrel, whose
            // RequestHeadersTimeout is 30 s), then the connection is closed; libwebsockets closed it
            // without an answer
            const started = Date.now();
            const slow = await exchange(relay.url, `GET /signalr/ping HTTP/1.1\r\nHost: ${host}\r\nX-Slow: 1\r\n`);
            await assertRefused(slow, 408, "headers that never end");
            assert.ok(Date.now() - started >= 900, `closed after ${Date.now() - started} ms, before the timeout`);
            // a connection that sends nothing is closed without a word, as Kestrel does
            const idle = await exchange(relay.url, "");
            assert.deepEqual([idle.status, idle.closed], [0, true], "an idle connection is closed without an answer");
            // the same on a kept-alive connection's second request (lws closed it without an answer)
            const slowSecond = await keptAlive(relay.url, `GET /signalr/ping HTTP/1.1\r\nHost: ${host}\r\nX-Slow: 1\r\n`);
            await assertRefused(slowSecond, 408, "a second request's headers that never end");
            assert.match(slowSecond.body, /Request Timeout/);
            const idleSecond = await keptAlive(relay.url, "");
            assert.deepEqual([idleSecond.first, idleSecond.status, idleSecond.closed], [true, 0, true],
                "an idle kept-alive connection is closed without an answer");

            // a burst of refusals: every one counted, at most 10 logged in one window
            for (let i = 0; i < 13; i++)
                await assertRefused(await exchange(relay.url, get("/chat", "Content-Length: -1\r\n")), 400, `refusal ${i}`);
            const m = await metrics(relay.url);
            assert.equal(m.requests_refused_total, 17);
            const lines = await pollUntil(() => fs.readFileSync(relay.log, "utf8").split("\n").filter((l) => l.includes("refused a request")),
                (l) => l.length >= 10, "refusal log lines");
            assert.equal(lines.length, 10, lines.join("\n"));
            assert.match(lines[0], /refused a request from 127\.0\.0\.1 with 414/);
        } finally {
            await relay.stop();
        }
    });
});
