// The relay's logs (--log-format, --log-file): for each format (text, json, logfmt; json at debug too) a relay of its
// own logs to a file while a Core client over WebSockets (raw, with an Authorization header, a
// cookie and an access_token), the stock JS client over long polling (its token in every poll's
// URL) and a legacy client (negotiate, connect, start, an invocation, abort) come and go, and a
// peer sends a hub name with a newline and a quote in it. Then every line of the file parses on
// its own (JSON.parse, a logfmt parser, the text layout), each has a time, a level and a message,
// a connection's lines carry its id (the connectionId / ConnectionId the client was given) and its
// hub, and no token, cookie, Authorization value or message body appears anywhere in the file.
// Last, logrotate's way: the file renamed, SIGHUP, and the next lines go to a new file at the path.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startRelay } from "../../lib/process.mjs";
import {
    BACKEND_URL, RawClient, TIMEOUT_MS, WebSocket, httpRequest, legacyConnectionData, negotiate, pollUntil, signalR,
    withTimeout, wsUrl,
} from "../lib.mjs";

// Values a log must never show: each is unique, so finding it anywhere is a leak.
const SECRET = {
    bearer: "bearerSecret7f3a9c",
    cookie: "cookieSecret51d0e2",
    queryToken: "queryTokenSecret88b1",
    pollToken: "pollTokenSecret2c4d",
    coreBody: "coreBodySecret9e7f",
    legacyBody: "legacyBodySecret6a2b",
};

function relayArgs(format, logFile, level = "info") {
    return ["--hub", `chat=${BACKEND_URL}/chat`, "--hub", `ChatHub=${BACKEND_URL}/chat`,
        "--log-format", format, "--log-file", logFile, "--log-level", level];
}

// One line as { time, level, msg, conn?, hub? }, or an Error naming what does not parse.
const TEXT_LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (error|warn |info |debug) (.*?)(?: conn=(\S+))?(?: hub=(\S+))?$/;
function parseLine(format, line) {
    if (format === "json") return JSON.parse(line);
    if (format === "text") {
        const m = TEXT_LINE.exec(line);
        if (!m) throw new Error("not a text log line");
        return { time: m[1], level: m[2].trim(), msg: m[3], ...(m[4] && { conn: m[4] }), ...(m[5] && { hub: m[5] }) };
    }
    // logfmt: key=value pairs separated by one space; a quoted value may hold \" and \\.
    const out = {};
    const pair = /([a-z]+)=("(?:[^"\\]|\\.)*"|[^ "=]*)(?: |$)/y;
    let m;
    while (pair.lastIndex < line.length && (m = pair.exec(line))) {
        const v = m[2];
        out[m[1]] = v.startsWith('"') ? v.slice(1, -1).replace(/\\(.)/g, "$1") : v;
    }
    if (pair.lastIndex !== line.length || m === null) throw new Error("not a logfmt line");
    return out;
}

function readLines(file) {
    return fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "") : [];
}

function parsedLines(format, file) {
    return readLines(file).map((line) => {
        try {
            return { line, ...parseLine(format, line) };
        } catch (e) {
            throw new Error(`a ${format} line that does not parse (${e.message}): ${JSON.stringify(line)}`);
        }
    });
}

// Waits until the file has a line for which match(entry) holds.
function lineFor(format, file, match, what) {
    return pollUntil(() => parsedLines(format, file).find(match), (e) => e !== undefined, what, 20000, 100);
}

// A Core client by hand: negotiate and WebSocket with every kind of credential, an Echo with a body.
async function coreRawSession(base) {
    const headers = { Authorization: `Bearer ${SECRET.bearer}`, Cookie: `session=${SECRET.cookie}` };
    const n = await negotiate(base, "chat", headers);
    assert.equal(n.status, 200, n.body);
    const query = `id=${encodeURIComponent(n.json.connectionToken)}&access_token=${SECRET.queryToken}`;
    const client = await RawClient.connect(wsUrl(base, "chat", query), { headers });
    assert.equal((await client.handshake()).error, undefined);
    const welcome = await client.next((r) => r.type === 1 && r.target === "welcome", TIMEOUT_MS, "welcome");
    assert.equal(await client.invoke("Echo", [SECRET.coreBody]), SECRET.coreBody);
    client.close();
    return { id: n.json.connectionId, token: n.json.connectionToken, backendId: welcome.arguments[0] };
}

// The stock client over long polling: its access token goes in every request.
async function corePollingSession(base) {
    const conn = new signalR.HubConnectionBuilder()
        .withUrl(`${base}/chat`, { transport: signalR.HttpTransportType.LongPolling, accessTokenFactory: () => SECRET.pollToken })
        .configureLogging(signalR.LogLevel.None).build();
    await withTimeout(conn.start(), TIMEOUT_MS, "long polling start");
    assert.equal(await withTimeout(conn.invoke("Echo", SECRET.coreBody), TIMEOUT_MS, "echo"), SECRET.coreBody);
    const id = conn.connectionId;
    await conn.stop();
    return { id };
}

// A legacy client by hand: negotiate, /connect, /start, an invocation, /abort.
async function legacySession(base) {
    const data = legacyConnectionData("chathub");
    const neg = await httpRequest("GET", `${base}/signalr/negotiate?clientProtocol=2.1&connectionData=${data}`,
        { Cookie: `session=${SECRET.cookie}` });
    assert.equal(neg.status, 200, neg.body);
    const { ConnectionToken: token, ConnectionId: id } = JSON.parse(neg.body);
    const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(token)}&connectionData=${data}`;
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/signalr/connect?${query}`, { headers: { Cookie: `session=${SECRET.cookie}` } });
    const frames = [];
    const waiters = [];
    ws.on("message", (d) => {
        frames.push(JSON.parse(d.toString("utf8")));
        for (const w of waiters.splice(0)) w();
    });
    const frame = (match, what) => pollUntil(async () => frames.find(match), (f) => f !== undefined, what, TIMEOUT_MS, 50);
    await withTimeout(new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); }), TIMEOUT_MS, "legacy connect");
    assert.equal((await httpRequest("GET", `${base}/signalr/start?${query}`)).status, 200);
    ws.send(JSON.stringify({ H: "chathub", M: "Echo", A: [SECRET.legacyBody], I: "0" }));
    assert.equal((await frame((f) => f.I === "0", "legacy Echo result")).R, SECRET.legacyBody);
    assert.equal((await httpRequest("POST", `${base}/signalr/abort?${query}`)).status, 200);
    ws.close();
    return { id, token };
}

// The default level in each format, and debug once (libwebsockets' notices included, through the relay's log).
for (const [format, level] of [["text", "info"], ["json", "info"], ["logfmt", "info"], ["json", "debug"]]) {
    test(`--log-format ${format}, --log-level ${level}: every line parses, a connection's lines carry its id and hub, no secret is logged`, async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), `logs-${format}.`));
        const logFile = path.join(dir, "relay.log");
        const relay = await startRelay(relayArgs(format, logFile, level));
        try {
            const raw = await coreRawSession(relay.url);
            const polling = await corePollingSession(relay.url);
            const legacy = await legacySession(relay.url);
            // A peer's hub name with a newline, a quote and an escape sequence: logged, on one line.
            const evil = encodeURIComponent(JSON.stringify([{ name: "no\nsuch\"hub\x1b[31m" }]));
            assert.equal((await httpRequest("GET", `${relay.url}/signalr/negotiate?clientProtocol=2.1&connectionData=${evil}`)).status, 500);

            const closed = (id, msg) => (e) => e.conn === id && e.msg === msg;
            await lineFor(format, logFile, closed(raw.id, "session: closed"), "the raw Core session's closing line");
            await lineFor(format, logFile, closed(polling.id, "session: closed"), "the long-polling session's closing line");
            await lineFor(format, logFile, closed(legacy.id, "legacy: connection ended"), "the legacy session's end line");
            await lineFor(format, logFile, (e) => e.msg.includes("Hub could not be resolved"), "the unknown hub's line");

            const entries = parsedLines(format, logFile);
            for (const e of entries) {
                assert.match(e.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, e.line);
                assert.ok(["error", "warn", "info", "debug"].includes(e.level), e.line);
                assert.ok(typeof e.msg === "string" && e.msg.length > 0, e.line);
            }
            const of = (id) => entries.filter((e) => e.conn === id);
            for (const [who, id, hub, first] of [["raw Core", raw.id, "chat", "session: connected, hub channel open"],
                ["long polling", polling.id, "chat", "session: connected, hub channel open"],
                ["legacy", legacy.id, "ChatHub", "legacy: connected"]]) {
                const lines = of(id);
                assert.deepEqual(lines.map((e) => e.msg).filter((m) => m === first), [first], `${who}: ${JSON.stringify(lines)}`);
                assert.ok(lines.every((e) => e.hub === hub), `${who}: every line names hub ${hub}: ${JSON.stringify(lines)}`);
            }
            // The raw Core client's id is the connectionId of its negotiate (the backend's, passed on).
            assert.equal(raw.id, raw.backendId);
            const unknown = entries.find((e) => e.msg.includes("Hub could not be resolved"));
            assert.ok(unknown.msg.includes("no\\x0asuch\"hub\\x1b[31m"), unknown.line);

            const text = fs.readFileSync(logFile, "utf8");
            const secrets = { ...SECRET, coreToken: raw.token, legacyToken: legacy.token,
                legacyTokenEncoded: encodeURIComponent(legacy.token) };
            for (const [name, value] of Object.entries(secrets)) {
                assert.ok(!text.includes(value), `the log holds the ${name} (${value}):\n${text}`);
            }
        } finally {
            await relay.stop();
        }
    });
}

test("--log-file: renamed away and SIGHUP, the next lines go to a new file at the path (logrotate's create + HUP)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "logs-rotate."));
    const logFile = path.join(dir, "relay.log");
    const rotated = `${logFile}.1`;
    const relay = await startRelay(relayArgs("json", logFile));
    try {
        await lineFor("json", logFile, (e) => e.msg.startsWith("relay: listening on"), "the start lines");
        fs.renameSync(logFile, rotated);
        const before = await coreRawSession(relay.url);
        await lineFor("json", rotated, (e) => e.conn === before.id && e.msg === "session: closed", "a session's lines in the moved file");
        assert.ok(!fs.existsSync(logFile), "nothing made a new file before SIGHUP");
        process.kill(relay.pid, "SIGHUP");
        await lineFor("json", logFile, (e) => e.msg.startsWith("relay: configuration reloaded"), "the reload's line in a new file");
        const after = await coreRawSession(relay.url);
        await lineFor("json", logFile, (e) => e.conn === after.id && e.msg === "session: closed", "the next session's lines in the new file");
        assert.ok(!parsedLines("json", rotated).some((e) => e.conn === after.id || e.msg.startsWith("relay: configuration reloaded")),
            "nothing after the HUP went to the moved file");
        assert.ok(!parsedLines("json", logFile).some((e) => e.conn === before.id), "nothing before the HUP is in the new file");
    } finally {
        await relay.stop();
    }
});
