// --capture DIR: client sessions recorded by the relay (docs/FIXTURES.md, "signalr-capture" v2),
// each on a relay of its own started here (RELAY_BIN) in front of backend A:
//   Core JSON       the stock @microsoft/signalr client over WebSockets, Server-Sent Events and
//                   long polling: one file per connection with the contract's lines, and none of
//                   the values the test saw (connection token, connection id, access token, cookie)
//                   in clear, also where the hub sends the client's headers back (WhoAmI,
//                   RequestDetails)
//   Core MessagePack the stock client with the MessagePack protocol: binary frames as base64
//   legacy          a legacy connection driven by hand (negotiate, WebSocket connect, start, a call,
//                   abort): cursors as <cursor:1.K>, the token and ids masked; the same over
//                   serverSentEvents and longPolling (the stream's pieces, /send form posts)
//   bodies none     --capture-bodies none: frames and bodies as <body:N bytes>
//   sampling        --capture-sample 0 records nothing, 1 (above) every connection
//   file cap        --capture-max-file: the file ends with "truncated":true, the traffic goes on
//   directory cap   --capture-max-dir: new connections are skipped and counted in /metrics
// Each relay must exit 0 on SIGTERM with a clean sanitizer log; the files are read after that
// (a file is complete once its session ended; at the latest the relay's shutdown ends it).
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { MessagePackHubProtocol } from "@microsoft/signalr-protocol-msgpack";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, TIMEOUT_MS, WebSocket, httpRequest, metrics, msgpackDecode, signalR, withTimeout } from "../lib.mjs";

const HUBS = ["--hub", `chat=${BACKEND_URL}/chat`, "--hub", `chatHub=${BACKEND_URL}/chat`];
const ACCESS_TOKEN = "capture-test-access-token-Zq81xV";
const COOKIE = "sid=capture-test-cookie-Wm42pL";

// Starts a relay with --capture into a fresh directory, runs body(relay, dir), stops the relay
// and returns the capture files, each { name, text, lines } with every line parsed.
async function withCapture(args, body, { prefill = null } = {}) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "relay-capture-"));
    if (prefill) fs.writeFileSync(path.join(dir, "prefill.bin"), prefill);
    const relay = await startRelay([...HUBS, "--capture", dir, ...args]);
    let result;
    try {
        result = await body(relay, dir);
    } finally {
        await relay.stop();
    }
    const files = fs.readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort().map((name) => {
        const text = fs.readFileSync(path.join(dir, name), "utf8");
        const lines = text.split("\n").filter(Boolean).map((line, i) => {
            try {
                return JSON.parse(line);
            } catch (err) {
                throw new Error(`${name} line ${i + 1} is not JSON: ${err.message}: ${line.slice(0, 200)}`);
            }
        });
        return { name, text, lines };
    });
    return { dir, files, result };
}

// A stock Core client that remembers every negotiate answer it got (the values to look for).
function stockClient(url, transport, protocol) {
    const negotiated = [];
    class Spy extends signalR.DefaultHttpClient {
        async send(request) {
            const response = await super.send(request);
            if (request.url.includes("/negotiate")) negotiated.push(JSON.parse(response.content));
            return response;
        }
    }
    const builder = new signalR.HubConnectionBuilder()
        .withUrl(url, {
            transport: signalR.HttpTransportType[transport],
            accessTokenFactory: () => ACCESS_TOKEN,
            headers: { Cookie: COOKIE },
            httpClient: new Spy(signalR.NullLogger.instance),
        })
        .configureLogging(signalR.LogLevel.None);
    if (protocol === "messagepack") builder.withHubProtocol(new MessagePackHubProtocol());
    return { conn: builder.build(), negotiated };
}

// Echo(text); with `echoes`, also the hub's WhoAmI and RequestDetails, which send the client's
// Authorization and Cookie headers back in their results: the capture must mask them there too.
async function echoSession(url, transport, protocol, text, { echoes = false } = {}) {
    const { conn, negotiated } = stockClient(url, transport, protocol);
    await withTimeout(conn.start(), TIMEOUT_MS, `start ${transport}`);
    try {
        assert.equal(await withTimeout(conn.invoke("Echo", text), TIMEOUT_MS, "Echo"), text);
        if (echoes) {
            const who = await withTimeout(conn.invoke("WhoAmI"), TIMEOUT_MS, "WhoAmI");
            assert.ok(`${who.authorization} ${who.accessToken}`.includes(ACCESS_TOKEN), `the hub saw the token: ${JSON.stringify(who)}`);
            const details = await withTimeout(conn.invoke("RequestDetails"), TIMEOUT_MS, "RequestDetails");
            assert.equal(details.cookie, COOKIE, "the hub saw the cookie");
        }
    } finally {
        await conn.stop();
    }
    return negotiated[0];
}

function assertContractLines(file, door) {
    const { lines, name } = file;
    assert.match(name, new RegExp(`^${door}-\\d{8}T\\d{6}\\.\\d{3}Z-\\d+\\.jsonl$`), "file name");
    assert.deepEqual({ ...lines[0], label: undefined, upstream: undefined, start: undefined },
        { type: "session", format: "signalr-capture", version: 2, door, label: undefined, upstream: undefined, start: undefined });
    // start: the Unix time of t=0 (files of one relay merge by start + t), around when the test ran.
    assert.ok(Number.isInteger(lines[0].start) && Math.abs(lines[0].start - Date.now()) < 3600e3, `start ${lines[0].start}`);
    const end = lines.at(-1);
    assert.equal(end.type, "end", `${name}: the last line is the end line`);
    assert.ok(Array.isArray(end.placeholders), "end lists its placeholders");
    // A line is written when its event is complete: a response (or a stream) when it ended, at
    // tEnd, with t when its headers went out.
    let last = 0;
    for (const line of lines.slice(1)) {
        assert.equal(typeof line.t, "number", `${name}: ${line.type} has t`);
        const at = line.tEnd ?? line.t;
        assert.ok(at >= last, `${name}: times never decrease (${line.type} at ${at} after ${last})`);
        last = at;
    }
    for (const used of new Set(file.text.match(/<(connectionToken|connectionId|accessToken|cursor|groupsToken|backendId)[^>"]*>/g) ?? []))
        assert.ok(end.placeholders.includes(used), `${name}: ${used} is listed in the end line`);
}

function assertNoneInClear(file, values) {
    for (const [what, value] of Object.entries(values)) {
        if (value) assert.ok(!file.text.includes(value), `${file.name} holds the ${what} in clear`);
    }
}

function wsFrames(file, dir) {
    return file.lines.filter((l) => l.type === "ws-frame" && l.dir === dir);
}

test("Core JSON over WebSockets, Server-Sent Events and long polling: one complete, masked file per connection", async () => {
    const { files, result } = await withCapture([], async (relay) => {
        const seen = [];
        for (const transport of ["WebSockets", "ServerSentEvents", "LongPolling"])
            seen.push(await echoSession(`${relay.url}/chat`, transport, "json", `capture json ${transport}`, { echoes: true }));
        // A line longer than the relay's scratch buffer for lines (8 KiB).
        await echoSession(`${relay.url}/chat`, "WebSockets", "json", `long ${"y".repeat(20000)}`);
        return seen;
    });
    assert.equal(files.length, 4, `one file per connection: ${files.map((f) => f.name)}`);
    const long = files.pop();
    assertContractLines(long, "core");
    assert.equal(wsFrames(long, "s2c").filter((f) => f.text.includes(`"result":"long ${"y".repeat(20000)}"`)).length, 1);
    files.forEach((file, i) => {
        assertContractLines(file, "core");
        const negotiated = result[i];
        assertNoneInClear(file, {
            "connection token": negotiated.connectionToken, "connection id": negotiated.connectionId,
            "access token": ACCESS_TOKEN, cookie: COOKIE.split("=")[1],
        });
        const [request, response] = file.lines.slice(1, 3);
        assert.equal(request.type, "http-request");
        assert.equal(request.path, "/chat/negotiate");
        assert.equal(request.headers.authorization, "<authorization>");
        assert.equal(request.headers.cookie, "<cookie>");
        assert.equal(response.type, "http-response");
        const body = JSON.parse(response.body);
        assert.equal(body.connectionToken, "<connectionToken>");
        assert.equal(body.connectionId, "<connectionId>");
    });
    const [ws, sse, lp] = files;
    const open = ws.lines.find((l) => l.type === "ws-open");
    assert.equal(open.rawQuery, "id=<connectionToken>");
    assert.ok(ws.lines.some((l) => l.type === "ws-accepted" && l.ws === open.ws && l.status === 101));
    assert.equal(wsFrames(ws, "c2s")[0].text, '{"protocol":"json","version":1}\x1e', "the handshake is the first c2s frame");
    const records = wsFrames(ws, "s2c").flatMap((f) => f.text.split("\x1e").filter(Boolean).map((r) => JSON.parse(r)));
    assert.ok(records.some((r) => r.type === 3 && r.result === "capture json WebSockets"), "the Echo's completion");
    assert.ok(ws.lines.some((l) => l.type === "ws-close"), "the close");
    const stream = sse.lines.find((l) => l.type === "http-response" && l.headers["content-type"] === "text/event-stream");
    assert.ok(stream?.chunks?.some((c) => c.data.includes("capture json ServerSentEvents")), "the event stream's pieces");
    assert.ok(sse.lines.some((l) => l.type === "http-request" && l.rawQuery.includes("access_token=<accessToken>")),
        "the event stream's access_token");
    const polls = lp.lines.filter((l) => l.type === "http-response" && l.body?.includes("capture json LongPolling"));
    assert.equal(polls.length, 1, "the poll that carried the completion");
    assert.ok(lp.lines.some((l) => l.type === "http-request" && l.method === "DELETE"), "the DELETE that ended it");
});

test("Core MessagePack over WebSockets: binary frames as base64 records", async () => {
    const { files, result } = await withCapture([], (relay) =>
        echoSession(`${relay.url}/chat`, "WebSockets", "messagepack", "capture msgpack"));
    assert.equal(files.length, 1);
    const [file] = files;
    assertContractLines(file, "core");
    assertNoneInClear(file, { "connection token": result.connectionToken, "access token": ACCESS_TOKEN, cookie: COOKIE.split("=")[1] });
    assert.equal(wsFrames(file, "c2s")[0].text, '{"protocol":"messagepack","version":1}\x1e');
    const decoded = [];
    const binary = wsFrames(file, "s2c").filter((f) => f.binary).map((f) => Buffer.from(f.binary, "base64"));
    assert.equal(binary[0].subarray(0, 3).toString("latin1"), "{}\x1e", "the handshake answer (JSON) first");
    binary[0] = binary[0].subarray(3); // the hub may send its first records in the same frame
    for (let bytes of binary) {
        while (bytes.length) { // VarInt length prefix, then one MessagePack record
            let len = 0, shift = 0, i = 0;
            for (;; i++) { len |= (bytes[i] & 0x7f) << shift; shift += 7; if (!(bytes[i] & 0x80)) break; }
            decoded.push(msgpackDecode(bytes.subarray(i + 1, i + 1 + len)));
            bytes = bytes.subarray(i + 1 + len);
        }
    }
    assert.ok(decoded.some((r) => r[0] === 3 && r.at(-1) === "capture msgpack"), `the Echo's completion in ${JSON.stringify(decoded)}`);
});

// --- legacy, by hand

const CONNECTION_DATA = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));

function nextFrame(ws, match, what) {
    return withTimeout(new Promise((resolve) => {
        const on = (data) => {
            const frame = JSON.parse(data.toString("utf8"));
            if (match(frame)) {
                ws.off("message", on);
                resolve(frame);
            }
        };
        ws.on("message", on);
    }), TIMEOUT_MS, what);
}

// A legacy connection over WebSockets: negotiate, connect, start, the welcome push.
async function legacyOpen(base) {
    const neg = await httpRequest("GET", `${base}/signalr/negotiate?clientProtocol=2.1&connectionData=${CONNECTION_DATA}&_=1700000000000`);
    assert.equal(neg.status, 200, neg.body);
    const { ConnectionToken, ConnectionId } = JSON.parse(neg.body);
    const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(ConnectionToken)}&connectionData=${CONNECTION_DATA}`;
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/signalr/connect?${query}&tid=3`);
    const init = nextFrame(ws, (f) => f.S === 1, "the init frame");
    await init;
    const start = await httpRequest("GET", `${base}/signalr/start?${query}`);
    assert.equal(start.status, 200, start.body);
    const welcome = await nextFrame(ws, (f) => f.M?.some((m) => m.M === "welcome"), "the welcome broadcast");
    return { base, ws, query, ConnectionToken, ConnectionId, backendId: welcome.M.find((m) => m.M === "welcome").A[0], calls: 0 };
}

async function legacyEcho(conn, value) {
    const id = conn.calls++;
    const result = nextFrame(conn.ws, (f) => f.I === String(id), "the Echo's result");
    conn.ws.send(JSON.stringify({ H: "chathub", M: "Echo", A: [value], I: id }));
    assert.equal((await result).R, value);
}

async function legacyAbort(conn) {
    const closed = new Promise((resolve) => conn.ws.on("close", resolve));
    assert.equal((await httpRequest("POST", `${conn.base}/signalr/abort?${conn.query}`)).status, 200);
    await withTimeout(closed, TIMEOUT_MS, "the socket's close after /abort");
}

async function legacySession(base) {
    const conn = await legacyOpen(base);
    await legacyEcho(conn, "capture legacy");
    await legacyAbort(conn);
    return { ConnectionToken: conn.ConnectionToken, ConnectionId: conn.ConnectionId, backendId: conn.backendId };
}

test("legacy over WebSockets: negotiate to abort in one file, tokens, ids and cursors masked", async () => {
    const { files, result } = await withCapture([], (relay) => legacySession(relay.url));
    assert.equal(files.length, 1, `${files.map((f) => f.name)}`);
    const [file] = files;
    assertContractLines(file, "legacy");
    assertNoneInClear(file, { "connection token": result.ConnectionToken, "connection id": result.ConnectionId,
        "backend connection id": result.backendId });
    const types = file.lines.map((l) => l.type);
    for (const t of ["http-request", "http-response", "ws-open", "ws-accepted", "ws-frame", "ws-close", "end"])
        assert.ok(types.includes(t), `a ${t} line`);
    const open = file.lines.find((l) => l.type === "ws-open");
    assert.equal(open.path, "/signalr/connect");
    assert.ok(open.query.some(([k, v]) => k === "connectionToken" && v === "<connectionToken>"));
    assert.ok(open.query.some(([k, v]) => k === "tid" && v === "<tid>"));
    const negotiate = file.lines.find((l) => l.type === "http-request");
    assert.ok(negotiate.query.some(([k, v]) => k === "_" && v === "<timestamp>"));
    const s2c = wsFrames(file, "s2c").map((f) => JSON.parse(f.text));
    assert.equal(s2c[0].C, "<cursor:1.1>");
    assert.equal(s2c[0].S, 1);
    assert.ok(s2c.some((f) => f.R === "capture legacy" && f.I === "0"), "the Echo's result");
    assert.ok(s2c.some((f) => f.M?.some((m) => m.M === "welcome" && m.A[0] === "<backendId:1>")), "the backend id masked");
    const abort = file.lines.find((l) => l.type === "http-request" && l.path === "/signalr/abort");
    assert.ok(abort, "the /abort");
    // The relay closes the socket when /abort ends the connection: recorded then, before the abort's
    // answer, so a client close that crosses it (jQuery's stop closes its socket and posts /abort at
    // once) is second in the file, the order a replay that posts /abort first sees.
    const close = file.lines.findIndex((l) => l.type === "ws-close");
    const answer = file.lines.findIndex((l) => l.type === "http-response" && l.id === abort.id);
    assert.deepEqual({ ...file.lines[close], t: 0, ws: 0 }, { type: "ws-close", t: 0, ws: 0, by: "server", code: 1000, reason: "" });
    assert.ok(close < answer, `the close (line ${close + 1}) before the abort's answer (line ${answer + 1})`);
    assert.deepEqual(file.lines.at(-1).placeholders.slice(0, 2), ["<connectionToken>", "<connectionId>"]);
});

// Two connections: b names a's backend id (a hub call about another connection, as the reconnect
// scenarios' GetDisconnectInfo): b's file writes it as a's placeholder, the relay-wide one, so the
// two files replay together (tests/legacy/capture/merge.mjs); it is in clear in neither file.
test("legacy: a backend id another connection names is that id's placeholder in its file too", async () => {
    const { files, result } = await withCapture([], async (relay) => {
        const a = await legacyOpen(relay.url);
        const b = await legacyOpen(relay.url);
        await legacyEcho(b, a.backendId);
        await legacyEcho(b, `about ${a.backendId}`);
        await legacyAbort(b);
        await legacyAbort(a);
        return [a, b];
    });
    assert.equal(files.length, 2, `${files.map((f) => f.name)}`);
    const [fileA, fileB] = files.sort((x, y) => x.lines[0].start - y.lines[0].start);
    for (const file of files) assertNoneInClear(file, { "a's backend id": result[0].backendId, "b's backend id": result[1].backendId });
    const welcome = (file) => wsFrames(file, "s2c").map((f) => JSON.parse(f.text)).find((f) => f.M?.some((m) => m.M === "welcome")).M[0].A[0];
    assert.equal(welcome(fileA), "<backendId:1>");
    assert.equal(welcome(fileB), "<backendId:2>");
    assert.deepEqual(wsFrames(fileB, "c2s").map((f) => JSON.parse(f.text).A[0]), ["<backendId:1>", "about <backendId:1>"]);
    assert.ok(wsFrames(fileB, "s2c").some((f) => JSON.parse(f.text).R === "about <backendId:1>"), "the Echo's answer");
    assert.ok(fileB.lines.at(-1).placeholders.includes("<backendId:1>"), "listed in b's end line");
});

// serverSentEvents (the stream read until the init frame) or longPolling (connect, then a poll),
// /start, one /send form post answered with the hub result, /abort.
async function legacyHttpSession(base, transport) {
    const neg = await httpRequest("GET", `${base}/signalr/negotiate?clientProtocol=2.1&connectionData=${CONNECTION_DATA}`);
    const { ConnectionToken, ConnectionId } = JSON.parse(neg.body);
    const query = `transport=${transport}&clientProtocol=2.1&connectionToken=${encodeURIComponent(ConnectionToken)}&connectionData=${CONNECTION_DATA}`;
    const formType = { "content-type": "application/x-www-form-urlencoded; charset=UTF-8" };
    let stream = null;
    if (transport === "serverSentEvents") {
        stream = new AbortController();
        const res = await fetch(`${base}/signalr/connect?${query}`, { signal: stream.signal });
        const reader = res.body.getReader();
        let seen = "";
        while (!seen.includes('"S":1')) seen += new TextDecoder().decode((await withTimeout(reader.read(), TIMEOUT_MS, "the init frame")).value);
    } else {
        assert.match((await httpRequest("POST", `${base}/signalr/connect?${query}`, formType, "")).body, /"S":1/);
    }
    assert.equal((await httpRequest("GET", `${base}/signalr/start?${query}`)).status, 200);
    const call = `data=${encodeURIComponent(JSON.stringify({ H: "chathub", M: "Echo", A: [`capture ${transport}`], I: 0 }))}`;
    // The .NET client (2.4.2) posts its /send form without a Content-Type; jQuery with one.
    const sent = await httpRequest("POST", `${base}/signalr/send?${query}`, transport === "serverSentEvents" ? {} : formType, call);
    assert.equal(JSON.parse(sent.body).R, `capture ${transport}`);
    assert.equal((await httpRequest("POST", `${base}/signalr/abort?${query}`, formType, "")).status, 200);
    stream?.abort();
    return { ConnectionToken, ConnectionId };
}

test("legacy over serverSentEvents and longPolling: the stream's pieces, form posts, masked", async () => {
    const { files, result } = await withCapture([], async (relay) => [
        await legacyHttpSession(relay.url, "serverSentEvents"), await legacyHttpSession(relay.url, "longPolling")]);
    assert.equal(files.length, 2, `${files.map((f) => f.name)}`);
    files.forEach((file, i) => {
        assertContractLines(file, "legacy");
        assertNoneInClear(file, { "connection token": result[i].ConnectionToken, "connection id": result[i].ConnectionId });
        const send = file.lines.find((l) => l.type === "http-request" && l.path === "/signalr/send");
        assert.deepEqual(send.form[0][0], "data");
        assert.equal(JSON.parse(send.form[0][1]).M, "Echo");
        const answer = file.lines.find((l) => l.type === "http-response" && l.id === send.id);
        assert.ok(JSON.parse(answer.body).R.startsWith("capture "), "the /send answered with the hub result");
    });
    const stream = files[0].lines.find((l) => l.type === "http-response" && l.headers["content-type"] === "text/event-stream");
    assert.ok(stream.chunks.some((c) => c.data.startsWith('data: {"C":"<cursor:1.1>","S":1')), "the init frame on the stream");
    const connect = files[1].lines.find((l) => l.type === "http-response" && l.body?.includes('"S":1'));
    assert.match(connect.body, /^\{"C":"<cursor:1\.1>","S":1/, "the long-polling connect answer");
});

test("--capture-bodies none: frames and bodies as their sizes, negotiate answers still masked", async () => {
    const { files } = await withCapture(["--capture-bodies", "none"], async (relay) => {
        await echoSession(`${relay.url}/chat`, "WebSockets", "json", "secret payload 1");
        await echoSession(`${relay.url}/chat`, "LongPolling", "json", "secret payload 2");
    });
    assert.equal(files.length, 2);
    for (const file of files) {
        assertContractLines(file, "core");
        assert.ok(!file.text.includes("secret payload"), `${file.name} holds a message body`);
        const negotiate = JSON.parse(file.lines[2].body);
        assert.equal(negotiate.connectionToken, "<connectionToken>", "the negotiate answer is kept, masked");
    }
    const frames = wsFrames(files[0], "c2s").concat(wsFrames(files[0], "s2c"));
    assert.ok(frames.length >= 4);
    for (const f of frames) assert.match(f.text, /^<body:\d+ bytes>$/);
    assert.equal(wsFrames(files[0], "c2s")[0].text, `<body:${'{"protocol":"json","version":1}\x1e'.length} bytes>`);
    const posts = files[1].lines.filter((l) => l.type === "http-request" && l.method === "POST" && l.path === "/chat");
    assert.ok(posts.length >= 2 && posts.every((l) => /^<body:\d+ bytes>$/.test(l.body)), "the POSTs' bodies as sizes");
});

test("--capture-sample 0 records no connection", async () => {
    const { files } = await withCapture(["--capture-sample", "0"], async (relay) => {
        await echoSession(`${relay.url}/chat`, "WebSockets", "json", "not recorded");
        await legacySession(relay.url);
        assert.equal((await metrics(relay.url)).capture_files_total, 0);
    });
    assert.deepEqual(files.map((f) => f.name), []);
});

test("--capture-max-file: the file ends marked truncated, the session goes on", async () => {
    const big = "x".repeat(3000);
    const { files } = await withCapture(["--capture-max-file", "8K"], async (relay) => {
        const { conn } = stockClient(`${relay.url}/chat`, "WebSockets", "json");
        await withTimeout(conn.start(), TIMEOUT_MS, "start");
        try {
            for (let i = 0; i < 6; i++)
                assert.equal(await withTimeout(conn.invoke("Echo", `${i}${big}`), TIMEOUT_MS, "Echo"), `${i}${big}`);
        } finally {
            await conn.stop();
        }
        assert.equal((await metrics(relay.url)).capture_truncated_total, 1);
    });
    assert.equal(files.length, 1);
    const [file] = files;
    const end = file.lines.at(-1);
    assert.equal(end.type, "end");
    assert.equal(end.truncated, true);
    assert.equal(file.lines.filter((l) => l.type === "end").length, 1, "one end line");
    const bytesBeforeEnd = Buffer.byteLength(file.text) - Buffer.byteLength(JSON.stringify(end)) - 1;
    assert.ok(bytesBeforeEnd <= 8192, `the lines before the end line fit the cap (${bytesBeforeEnd} bytes)`);
});

test("--capture-max-dir: new connections are skipped and counted once the directory is full", async () => {
    const { files } = await withCapture(["--capture-max-dir", "4K"], async (relay) => {
        await echoSession(`${relay.url}/chat`, "WebSockets", "json", "skipped 1");
        await echoSession(`${relay.url}/chat`, "LongPolling", "json", "skipped 2");
        const m = await metrics(relay.url);
        assert.match(m.response.body, /^signalr_relay_capture_skipped_total\{reason="dir_full"\} 2$/m);
        assert.equal(m.capture_files_total, 0);
    }, { prefill: Buffer.alloc(5000, 1) });
    assert.deepEqual(files.map((f) => f.name), []);
});
