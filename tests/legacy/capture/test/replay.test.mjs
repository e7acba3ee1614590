// signalr-replay (tools/replay), the C replayer, against a small fake legacy server on 127.0.0.1
// that plays a hand-written fixture (docs/FIXTURES.md) but batches differently, sends keep-alives,
// or misbehaves in one way at a time. A misbehaviour must fail the replay with a readable diff
// (fixture line, expected vs got) and a non-zero exit status, the rest must pass. The comparison
// rules themselves are unit-tested in tools/replay/test_replay.c (ctest test_replay).
//
// The binary: see replay-bin.mjs.
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { WebSocketServer } from "ws";
import { runReplay } from "./replay-bin.mjs";

// ------------------------------------------------------------------ a whole replay

const line = (o) => JSON.stringify(o);
const frame = (ws, t, dir, value) => line({ type: "ws-frame", ws, t, dir, text: typeof value === "string" ? value : JSON.stringify(value) });
const welcome = { H: "h", M: "welcome", A: ["<backendId:1>"] };
const note = (n) => ({ H: "h", M: "note", A: [n] });

// One legacy connection: negotiate, connect (init frame, welcome), an invocation answered after two
// pushes (recorded in one frame), a dropped socket, a reconnect from the last cursor that replays
// one push, abort.
const FIXTURE = [
    line({ type: "session", format: "signalr-legacy-capture", version: 1, label: "hand-written", upstream: "http://<upstream>" }),
    line({ type: "http-request", id: 1, t: 1, method: "GET", path: "/signalr/negotiate", rawQuery: "clientProtocol=2.1&_=<timestamp>",
        query: [["clientProtocol", "2.1"], ["_", "<timestamp>"]], headers: { "user-agent": "test" }, body: "" }),
    line({ type: "http-response", id: 1, t: 2, tEnd: 2, status: 200, headers: { "content-type": "application/json; charset=UTF-8" },
        body: '{"Url":"/signalr","ConnectionToken":"<connectionToken>","ConnectionId":"<connectionId>","Big":9007199254740993}' }),
    line({ type: "ws-open", ws: 1, t: 3, path: "/signalr/connect", rawQuery: "transport=webSockets&connectionToken=<connectionToken>&tid=<tid>",
        query: [], headers: { "user-agent": "test", origin: "<origin>" } }),
    line({ type: "ws-accepted", ws: 1, t: 4, status: 101 }),
    frame(1, 5, "s2c", '{"C":"<cursor:1.1>","S":1,"M":[]}'),
    frame(1, 6, "s2c", { C: "<cursor:1.2>", M: [welcome] }),
    frame(1, 7, "c2s", { H: "h", M: "Echo", A: ["<backendId:1>"], I: 0 }),
    frame(1, 9, "s2c", { C: "<cursor:1.3>", M: [note(1), note(2)] }),
    frame(1, 10, "s2c", '{"R":"<backendId:1> echoed","I":"0"}'),
    line({ type: "ws-close", ws: 1, t: 11, by: "client", code: 4000, reason: "drop" }),
    line({ type: "ws-open", ws: 2, t: 12, path: "/signalr/reconnect", rawQuery: "transport=webSockets&messageId=<cursor:1.3>&connectionToken=<connectionToken>",
        query: [], headers: {} }),
    line({ type: "ws-accepted", ws: 2, t: 13, status: 101 }),
    frame(2, 14, "s2c", { C: "<cursor:1.4>", M: [note(3)] }),
    line({ type: "http-request", id: 2, t: 15, method: "POST", path: "/signalr/abort", rawQuery: "connectionToken=<connectionToken>", query: [], headers: {}, body: "" }),
    line({ type: "http-response", id: 2, t: 16, tEnd: 16, status: 200, headers: { "content-type": "text/plain" }, body: "" }),
    line({ type: "ws-close", ws: 2, t: 17, by: "server", code: 1000, reason: "" }),
    line({ type: "end", t: 18, placeholders: [] }),
].join("\n") + "\n";

const TOKEN = "tok/1+=&x"; // needs percent-encoding in a query
const BACKEND_ID = "Zb3_-Qx9aaaaaaaaaaaaaa";

// A legacy server that plays its part of FIXTURE, with cursors "c-<messages so far>". `how`
// changes one thing:
//   batched    init and welcome in one frame (any batching is allowed: spec §5.1)
//   split      the two pushes in two frames
//   keepalives {} between frames (allowed)
//   noInit     no "S":1 init frame, the welcome alone
//   numberId   the hub result's I as a number
//   rounded    the negotiate's Big through a double
//   noReplay   the reconnect replays nothing
//   swapped    the two pushes in the other order
//   sameCursor the pushes' frame with the welcome frame's cursor
//   wrongClose the server closes the reconnected socket with 1011
//   changedByte one byte of the hub result's text differs
//   otherIds   another connection token and backend id (what placeholders stand for)
// Several at once: joined with "+" ("swapped+changedByte").
async function fakeServer(how) {
    const hows = how.split("+");
    const is = (k) => hows.includes(k);
    const token = is("otherIds") ? "other-token-2" : TOKEN, backendId = is("otherIds") ? "Qq9_otherBackendIdxxxx" : BACKEND_ID;
    const seen = { messageId: null, token: null, origin: null, echoArg: null };
    let live = null;
    const httpServer = http.createServer((req, res) => {
        const url = new URL(req.url, "http://x");
        if (url.pathname === "/signalr/negotiate") {
            const big = is("rounded") ? "9007199254740992" : "9007199254740993";
            res.writeHead(200, { "content-type": "application/json; charset=UTF-8" });
            res.end(`{"Url":"/signalr","ConnectionToken":${JSON.stringify(token)},"ConnectionId":"cid-1","Big":${big}}`);
        } else if (url.pathname === "/signalr/abort") {
            res.writeHead(200, { "content-type": "text/plain" }).end();
            setTimeout(() => live?.close(is("wrongClose") ? 1011 : 1000), 20);
        } else {
            res.writeHead(404).end();
        }
    });
    const wss = new WebSocketServer({ noServer: true });
    httpServer.on("upgrade", (req, socket, head) => {
        const url = new URL(req.url, "http://x");
        seen.token = url.searchParams.get("connectionToken");
        if (url.pathname === "/signalr/connect") seen.origin = req.headers.origin ?? null;
        wss.handleUpgrade(req, socket, head, (ws) => {
            live = ws;
            const send = (v) => ws.send(typeof v === "string" ? v : JSON.stringify(v));
            const w = { H: "h", M: "welcome", A: [backendId] };
            if (url.pathname === "/signalr/connect") {
                if (is("batched")) {
                    send({ C: "c-1", S: 1, M: [w] });
                } else if (is("noInit")) {
                    send({ C: "c-1", M: [w] });
                } else {
                    send({ C: "c-0", S: 1, M: [] });
                    if (is("keepalives")) send("{}");
                    send({ C: "c-1", M: [w] });
                }
                ws.on("message", (data) => {
                    const msg = JSON.parse(data.toString());
                    seen.echoArg = msg.A[0];
                    const notes = is("swapped") ? [note(2), note(1)] : [note(1), note(2)];
                    if (is("split")) {
                        send({ C: "c-2", M: [notes[0]] });
                        send({ C: "c-3", M: [notes[1]] });
                    } else {
                        if (is("keepalives")) send("{}");
                        send({ C: is("sameCursor") ? "c-1" : "c-3", M: notes });
                    }
                    const echoed = is("changedByte") ? "echoeD" : "echoed";
                    send(is("numberId") ? `{"R":"${msg.A[0]} ${echoed}","I":0}` : `{"R":"${msg.A[0]} ${echoed}","I":"0"}`);
                });
            } else {
                seen.messageId = url.searchParams.get("messageId");
                if (!is("noReplay")) send({ C: "c-4", M: [note(3)] });
            }
        });
    });
    await new Promise((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
    return {
        target: `http://127.0.0.1:${httpServer.address().port}`,
        seen,
        close: async () => {
            for (const c of wss.clients) c.terminate();
            await new Promise((resolve) => httpServer.close(resolve));
        },
    };
}

// One replay of `text` against the fake server: the outcome as the tool reports it.
async function replayAgainst(how, text = FIXTURE) {
    const server = await fakeServer(how);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signalr-replay-test-"));
    const file = path.join(dir, "fixture.jsonl");
    fs.writeFileSync(file, text);
    try {
        // A frame from the local fake server may take long on a loaded machine: 10 s, except where
        // the timeout is the expected outcome (a server that never sends the replay).
        const timeoutMs = how === "noReplay" ? 1500 : 10000;
        const run = await runReplay(["check", "--target", server.target, "--timeout", String(timeoutMs), "--grace", "100",
            "--verbose", file]);
        const failLine = run.stdout.split("\n").findIndex((l) => l.startsWith("FAIL "));
        const bindings = new Map([...run.stderr.matchAll(/^ {2}(<[^>]+>) = (.*)$/gm)].map((m) => [m[1], m[2]]));
        const keepAlives = Number((/(\d+) keep-alives left out/.exec(run.stderr) ?? [0, -1])[1]);
        const result = {
            ok: run.code === 0, code: run.code, stdout: run.stdout,
            failure: failLine >= 0 ? run.stdout.split("\n")[failLine + 1].trim() : null,
            bindings, keepAlives,
        };
        return { result, seen: server.seen, target: server.target };
    } finally {
        await server.close();
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

for (const how of ["as recorded", "batched", "split", "keepalives"]) {
    test(`a server that answers like the recording passes (${how})`, async () => {
        const { result, seen, target } = await replayAgainst(how);
        assert.equal(result.failure, null, result.stdout);
        assert.ok(result.ok);
        assert.match(result.stdout, /replay: 1 passed, 0 failed/);
        // This run's values went where the placeholders were: the token (percent-encoded in the
        // query, decoded by the server), the backend id learned from the welcome, the cursor of
        // the frame that ended with the second push (however the pushes were batched), the origin.
        assert.equal(seen.token, TOKEN);
        assert.equal(seen.echoArg, BACKEND_ID);
        assert.equal(seen.messageId, "c-3");
        assert.equal(seen.origin, target);
        assert.equal(result.bindings.get("<cursor:1.3>"), "c-3");
        assert.equal(result.keepAlives, how === "keepalives" ? 2 : 0);
    });
}

const BROKEN = {
    noInit: /line 6: .*expected a frame with \{"S":1\} here/,
    numberId: /line 10: .*\$\.I: expected string "0", got number 0/,
    rounded: /line 3: .*\$\.Big: expected 9007199254740993, got 9007199254740992/,
    noReplay: /timed out .* waiting for line 14: ws 2 s2c/,
    swapped: /line 9: .*\$\.M\[\]\.A\[0\]: expected 1, got 2/,
    sameCursor: /<cursor:1.3>: "c-1" is already <cursor:1.2>/,
    wrongClose: /line 17: .*close 1011 "", recorded 1000/,
    changedByte: /line 10: .*expected "<backendId:1> echoed", got "Zb3_-Qx9aaaaaaaaaaaaaa echoeD"/,
};

for (const [how, why] of Object.entries(BROKEN)) {
    test(`a server that differs fails the replay (${how})`, async () => {
        const { result } = await replayAgainst(how);
        assert.equal(result.ok, false);
        assert.equal(result.code, 1);
        assert.match(result.stdout, /^FAIL .*fixture\.jsonl/m);
        assert.match(result.failure, why);
    });
}

test("a fixture that cannot be read is a usage error (exit 2), not a difference", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signalr-replay-test-"));
    try {
        const v2 = path.join(dir, "v2.jsonl"), cut = path.join(dir, "cut.jsonl");
        fs.writeFileSync(v2, FIXTURE.replace('"version":1', '"version":2'));
        fs.writeFileSync(cut, FIXTURE.split("\n").slice(0, -2).join("\n"));
        let run = await runReplay(["check", "--target", "http://127.0.0.1:9", v2]);
        assert.equal(run.code, 2);
        assert.match(run.stderr, /format version 2/);
        run = await runReplay(["check", "--target", "http://127.0.0.1:9", cut]);
        assert.equal(run.code, 2);
        assert.match(run.stderr, /no end line/);
        run = await runReplay(["check", "--target", "http://10.1.2.3:80", v2]);
        assert.equal(run.code, 2);
        assert.match(run.stderr, /loopback/);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

async function withFixtureFile(fn, text = FIXTURE) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signalr-replay-test-"));
    const file = path.join(dir, "fixture.jsonl");
    fs.writeFileSync(file, text);
    try {
        return await fn(file);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

test("ab: the two live sessions compared with each other, every point where they differ", async () => {
    const hows = ["as recorded", "batched", "changedByte", "changedByte+otherIds", "numberId", "swapped+changedByte"];
    const servers = await Promise.all(hows.map((how) => fakeServer(how)));
    const [good, rebatched, changed, changedOtherIds, numberId, twoChanges] = servers.map((s) => s.target);
    const points = (stdout) => [...stdout.matchAll(/^ {5}(line \d+|beyond the recording):$/gm)].map((m) => m[1]);
    try {
        await withFixtureFile(async (file) => {
            // Identical (batching differs: left out): the same.
            let run = await runReplay(["ab", "--a", good, "--b", rebatched, "--grace", "100", file]);
            assert.equal(run.code, 0, run.stdout + run.stderr);
            assert.match(run.stdout, /^same .*fixture\.jsonl: a and b answer alike \(as recorded\)$/m);
            assert.match(run.stdout, /ab: 1 same, 0 differ/);
            // One answer differs: exactly that point, each side's account of it.
            run = await runReplay(["ab", "--a", good, "--b", changed, "--grace", "100", file]);
            assert.equal(run.code, 1, run.stdout + run.stderr);
            assert.match(run.stdout, /^DIFF .*fixture\.jsonl: a \(.*\) and b \(.*\) differ at 1 point$/m);
            assert.deepEqual(points(run.stdout), ["line 10"], run.stdout);
            assert.match(run.stdout, /^ {7}a: as recorded$/m);
            assert.match(run.stdout, /^ {7}b: line 10: .*got "<backendId:1> echoeD"/m);
            assert.match(run.stdout, /ab: 0 same, 1 differ/);
            // A differs from the recording but equals B (with other ids: placeholders bound per side): the same.
            run = await runReplay(["ab", "--a", changed, "--b", changedOtherIds, "--grace", "100", file]);
            assert.equal(run.code, 0, run.stdout + run.stderr);
            assert.match(run.stdout, /^same .*: a and b answer alike \(both differ from the recording the same way at 1 point\)$/m);
            // Two differences on one side: the run goes on past the first, both are reported.
            run = await runReplay(["ab", "--a", good, "--b", twoChanges, "--grace", "100", file]);
            assert.equal(run.code, 1, run.stdout + run.stderr);
            assert.deepEqual(points(run.stdout), ["line 9", "line 10"], run.stdout);
            assert.match(run.stdout, /differ at 2 points$/m);
            // At the same event, differently: "echoeD" vs a numeric invocation id.
            run = await runReplay(["ab", "--a", changed, "--b", numberId, "--grace", "100", file]);
            assert.equal(run.code, 1, run.stdout + run.stderr);
            assert.deepEqual(points(run.stdout), ["line 10"], run.stdout);
            assert.match(run.stdout, /^ {7}a: line 10: .*echoeD/m);
            assert.match(run.stdout, /^ {7}b: line 10: /m);
        });
    } finally {
        for (const s of servers) await s.close();
    }
});

test("load: the sessions played and checked, latency reported as signalr-loadgen does", async () => {
    const server = await fakeServer("split");
    try {
        await withFixtureFile(async (file) => {
            const run = await runReplay(["load", "--target", server.target, "--copies", "1", "--speed", "0", "--grace", "100", file]);
            assert.equal(run.code, 0, run.stdout + run.stderr);
            const report = JSON.parse(run.stdout.trim().split("\n").pop());
            assert.equal(report.mode, "load");
            assert.equal(report.sessions, 1);
            assert.equal(report.sessions_failed, 0);
            assert.equal(report.sockets, 2);
            assert.ok(report.answers >= 6, JSON.stringify(report));
            for (const k of ["count", "mean", "min", "p50", "p90", "p99", "p999", "max"]) {
                assert.equal(typeof report.latency_us[k], "number", k);
            }
            assert.equal(report.latency_us.count, report.answers);
            assert.match(run.stderr, /^ {2}latency +n=\d+ p50=\d+ p90=\d+ p99=\d+ p99\.9=\d+ max=\d+ us$/m);
        });
    } finally {
        await server.close();
    }
});

// ------------------------------------------------------------------ serverSentEvents and longPolling

const SESSION = line({ type: "session", format: "signalr-legacy-capture", version: 1, label: "hand-written", upstream: "http://<upstream>" });
const NEGOTIATE = [
    line({ type: "http-request", id: 1, t: 1, method: "GET", path: "/signalr/negotiate", rawQuery: "clientProtocol=2.1", query: [], headers: {}, body: "" }),
    line({ type: "http-response", id: 1, t: 2, tEnd: 2, status: 200, headers: { "content-type": "application/json; charset=UTF-8" },
        body: '{"Url":"/signalr","ConnectionToken":"<connectionToken>","ConnectionId":"<connectionId>"}' }),
];
const sse = (v) => `data: ${typeof v === "string" ? v : JSON.stringify(v)}\n\n`;
// An event stream (init, then two pushes after a /send), the /send's result, the stream cut by the client.
const SSE_FIXTURE = [
    SESSION, ...NEGOTIATE,
    line({ type: "http-request", id: 2, t: 3, method: "GET", path: "/signalr/connect", rawQuery: "transport=serverSentEvents&connectionToken=<connectionToken>", query: [], headers: {}, body: "" }),
    line({ type: "http-request", id: 3, t: 5, method: "POST", path: "/signalr/send", rawQuery: "transport=serverSentEvents&connectionToken=<connectionToken>", query: [],
        headers: { "content-type": "application/x-www-form-urlencoded; charset=UTF-8" }, body: "data=%7B%22I%22%3A%220%22%7D", form: [["data", '{"I":"0"}']] }),
    line({ type: "http-response", id: 3, t: 6, tEnd: 6, status: 200, headers: { "content-type": "application/json; charset=UTF-8" }, body: '{"I":"0","R":"ok"}' }),
    line({ type: "http-response", id: 2, t: 3, tEnd: 8, status: 200, cut: "client", headers: { "content-type": "text/event-stream" },
        chunks: [{ t: 3, data: sse("initialized") }, { t: 4, data: sse({ C: "<cursor:1.1>", S: 1, M: [] }) }, { t: 7, data: sse({ C: "<cursor:1.2>", M: [note(1), note(2)] }) }],
        body: "" }),
    line({ type: "end", t: 9, placeholders: [] }),
].join("\n") + "\n";
// A long poll answered with the two pushes.
const LP_FIXTURE = [
    SESSION, ...NEGOTIATE,
    line({ type: "http-request", id: 2, t: 3, method: "GET", path: "/signalr/connect", rawQuery: "transport=longPolling&connectionToken=<connectionToken>", query: [], headers: {}, body: "" }),
    line({ type: "http-response", id: 2, t: 4, tEnd: 4, status: 200, headers: { "content-type": "application/json; charset=UTF-8" }, body: '{"C":"<cursor:1.1>","S":1,"M":[]}' }),
    line({ type: "http-request", id: 3, t: 5, method: "POST", path: "/signalr/poll", rawQuery: "transport=longPolling&connectionToken=<connectionToken>&messageId=<cursor:1.1>", query: [], headers: {}, body: "" }),
    line({ type: "http-response", id: 3, t: 6, tEnd: 6, status: 200, headers: { "content-type": "application/json; charset=UTF-8" },
        body: JSON.stringify({ C: "<cursor:1.2>", M: [note(1), note(2)] }) }),
    line({ type: "end", t: 9, placeholders: [] }),
].join("\n") + "\n";

// A legacy server over serverSentEvents and longPolling; `how`:
//   split       the two pushes in two events / two poll answers (the replay polls again)
//   keepalives  data: {} events between (SSE)
//   changedByte one byte of the second push differs
//   swapped     the pushes in the other order
async function fakeHttpServer(how) {
    const seen = { polls: [] };
    let stream = null;
    const notes = how === "swapped" ? [note(2), note(1)] : how === "changedByte" ? [note(1), { ...note(2), A: [3] }] : [note(1), note(2)];
    const json = (res, v) => res.writeHead(200, { "content-type": "application/json; charset=UTF-8" }).end(JSON.stringify(v));
    const server = http.createServer((req, res) => {
        const url = new URL(req.url, "http://x");
        if (url.pathname === "/signalr/negotiate") return json(res, { Url: "/signalr", ConnectionToken: TOKEN, ConnectionId: "cid-1" });
        if (url.pathname === "/signalr/connect" && url.searchParams.get("transport") === "serverSentEvents") {
            res.writeHead(200, { "content-type": "text/event-stream" });
            res.write(sse("initialized"));
            if (how === "keepalives") res.write(sse("{}"));
            res.write(sse({ C: "c-0", S: 1, M: [] }));
            stream = res;
            return undefined;
        }
        if (url.pathname === "/signalr/connect") return json(res, { C: "c-0", S: 1, M: [] });
        if (url.pathname === "/signalr/send") {
            json(res, { I: "0", R: "ok" });
            if (how === "split") {
                stream.write(sse({ C: "c-1", M: [notes[0]] }));
                stream.write(sse({ C: "c-2", M: [notes[1]] }));
            } else {
                if (how === "keepalives") stream.write(sse("{}"));
                stream.write(sse({ C: "c-2", M: notes }));
            }
            return undefined;
        }
        if (url.pathname === "/signalr/poll") {
            const from = url.searchParams.get("messageId");
            seen.polls.push(from);
            if (how === "split") return json(res, from === "c-0" ? { C: "c-1", M: [notes[0]] } : { C: "c-2", M: [notes[1]] });
            return json(res, { C: "c-2", M: notes });
        }
        return res.writeHead(404).end();
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
        target: `http://127.0.0.1:${server.address().port}`, seen,
        close: async () => {
            stream?.destroy();
            server.closeAllConnections?.();
            await new Promise((resolve) => server.close(resolve));
        },
    };
}

async function replayHttp(how, text) {
    const server = await fakeHttpServer(how);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signalr-replay-test-"));
    const file = path.join(dir, "fixture.jsonl");
    fs.writeFileSync(file, text);
    try {
        const run = await runReplay(["check", "--target", server.target, "--timeout", "10000", "--grace", "100", file]);
        return { run, seen: server.seen };
    } finally {
        await server.close();
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

for (const [transport, text] of [["serverSentEvents", SSE_FIXTURE], ["longPolling", LP_FIXTURE]]) {
    const passing = transport === "serverSentEvents" ? ["as recorded", "split", "keepalives"] : ["as recorded", "split"];
    for (const how of passing) {
        test(`${transport}: a server that answers like the recording passes (${how})`, async () => {
            const { run, seen } = await replayHttp(how, text);
            assert.equal(run.code, 0, run.stdout + run.stderr);
            // Long polling, split: the replay polled again from the cursor the first answer reached.
            if (transport === "longPolling") assert.deepEqual(seen.polls, how === "split" ? ["c-0", "c-1"] : ["c-0"]);
        });
    }
    const broken = transport === "serverSentEvents"
        ? { changedByte: /line 7: event 3 of stream 2: .*\$\.M\[1\]\.A\[0\]: expected 2, got 3/, swapped: /line 7: event 3 of stream 2: .*\$\.M\[0\]\.A\[0\]: expected 1, got 2/ }
        : { changedByte: /line 7: response 3 \(200\) to POST \/signalr\/poll: body: \$\.M\[1\]\.A\[0\]: expected 2, got 3/, swapped: /line 7: .*\$\.M\[0\]\.A\[0\]: expected 1, got 2/ };
    for (const [how, why] of Object.entries(broken)) {
        test(`${transport}: a server that differs fails the replay (${how})`, async () => {
            const { run } = await replayHttp(how, text);
            assert.equal(run.code, 1, run.stdout + run.stderr);
            assert.match(run.stdout, why);
        });
    }
}

// ------------------------------------------------------------------ a refused upgrade

const REFUSED_FIXTURE = [
    SESSION, ...NEGOTIATE,
    line({ type: "ws-open", ws: 1, t: 3, path: "/signalr/connect", rawQuery: "transport=webSockets&connectionToken=<connectionToken>", query: [], headers: {} }),
    line({ type: "ws-refused", ws: 1, t: 4, status: 400, body: "WebSockets refused" }),
    line({ type: "end", t: 5, placeholders: [] }),
].join("\n") + "\n";

// how: "as recorded" (400 and the text), "otherText", "accepted" (a 101).
async function refusingServer(how) {
    const server = http.createServer((req, res) => {
        res.writeHead(200, { "content-type": "application/json; charset=UTF-8" })
            .end(JSON.stringify({ Url: "/signalr", ConnectionToken: TOKEN, ConnectionId: "cid-1" }));
    });
    const wss = new WebSocketServer({ noServer: true });
    server.on("upgrade", (req, socket, head) => {
        if (how === "accepted") return wss.handleUpgrade(req, socket, head, () => {});
        const body = how === "otherText" ? "no" : "WebSockets refused";
        socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
        return undefined;
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
        target: `http://127.0.0.1:${server.address().port}`,
        close: async () => {
            for (const c of wss.clients) c.terminate();
            server.closeAllConnections?.();
            await new Promise((resolve) => server.close(resolve));
        },
    };
}

for (const [how, expect] of [["as recorded", null], ["otherText", /line 5: ws-refused ws 1: refusal body: expected "WebSockets refused", got "no"/],
    ["accepted", /line 4: WebSocket 1 \/signalr\/connect: accepted, recorded refused/]]) {
    test(`a refused upgrade: ${how}`, async () => {
        const server = await refusingServer(how);
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signalr-replay-test-"));
        const file = path.join(dir, "fixture.jsonl");
        fs.writeFileSync(file, REFUSED_FIXTURE);
        try {
            const run = await runReplay(["check", "--target", server.target, "--grace", "100", file]);
            if (!expect) {
                assert.equal(run.code, 0, run.stdout + run.stderr);
            } else {
                assert.equal(run.code, 1, run.stdout + run.stderr);
                assert.match(run.stdout, expect);
            }
        } finally {
            await server.close();
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
}

// ------------------------------------------------------------------ a long poll and the client's /abort

// A long poll held when the client sends /abort, answered then with nothing (as the relay does).
const LP_ABORT_FIXTURE = [
    SESSION, ...NEGOTIATE,
    line({ type: "http-request", id: 2, t: 3, method: "GET", path: "/signalr/connect", rawQuery: "transport=longPolling&connectionToken=<connectionToken>", query: [], headers: {}, body: "" }),
    line({ type: "http-response", id: 2, t: 4, tEnd: 4, status: 200, headers: { "content-type": "application/json; charset=UTF-8" }, body: '{"C":"<cursor:1.1>","S":1,"M":[]}' }),
    line({ type: "http-request", id: 3, t: 5, method: "POST", path: "/signalr/poll", rawQuery: "transport=longPolling&connectionToken=<connectionToken>&messageId=<cursor:1.1>", query: [], headers: {}, body: "" }),
    line({ type: "http-request", id: 4, t: 6, method: "POST", path: "/signalr/abort", rawQuery: "transport=longPolling&connectionToken=<connectionToken>", query: [], headers: {}, body: "" }),
    line({ type: "http-response", id: 4, t: 7, tEnd: 7, status: 200, headers: { "content-type": "text/plain" }, body: "" }),
    line({ type: "http-response", id: 3, t: 8, tEnd: 8, status: 200, headers: { "content-type": "application/json; charset=UTF-8" }, body: '{"C":"<cursor:1.1>","M":[]}' }),
    line({ type: "end", t: 9, placeholders: [] }),
].join("\n") + "\n";
const LOST = "The connection was lost for too long to replay its messages; start a new connection.";

// A legacy long-polling server whose /abort ends the connection: the held poll is answered then
// (how: "foreign", with another load copy's push and a later cursor; "moved", with no message but
// a cursor other copies' pushes moved on; "lost", with the error a poll that reached the relay
// after the /abort gets), and every later poll with that error.
async function abortingServer(how) {
    let held = null;
    return longPollingServer({
        poll: (url, res, json) => {
            if (held) return json(res, { E: LOST });
            held = res;
            return undefined;
        },
        abort: (json) => json(held, how === "foreign" ? { C: "c-5", M: [note("another copy's")] } : how === "moved" ? { C: "c-5", M: [] } : { E: LOST }),
    });
}

// A fake legacy long-polling server: negotiate and connect answered as a relay answers them, each
// poll and /abort as the test says (poll(url, res, json) answers or holds res; abort(json) runs
// before the /abort's own 200). seen.polls counts the polls.
async function longPollingServer({ poll, abort = () => {} }) {
    const seen = { polls: 0 };
    const json = (res, v) => res.writeHead(200, { "content-type": "application/json; charset=UTF-8" }).end(JSON.stringify(v));
    const server = http.createServer((req, res) => {
        const url = new URL(req.url, "http://x");
        if (url.pathname === "/signalr/negotiate") return json(res, { Url: "/signalr", ConnectionToken: TOKEN, ConnectionId: "cid-1" });
        if (url.pathname === "/signalr/connect") return json(res, { C: "c-0", S: 1, M: [] });
        if (url.pathname === "/signalr/poll") {
            seen.polls++;
            return poll(url, res, json);
        }
        if (url.pathname === "/signalr/abort") {
            abort(json);
            return res.writeHead(200, { "content-type": "text/plain" }).end();
        }
        return res.writeHead(404).end();
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return {
        target: `http://127.0.0.1:${server.address().port}`, seen,
        close: async () => {
            server.closeAllConnections?.();
            await new Promise((resolve) => server.close(resolve));
        },
    };
}

// Under load (docs/FIXTURES.md, "load") a poll answered with other copies' pushes only was sent
// again even after the client's /abort: it reached a connection that was gone, and the session
// failed with the relay's "lost for too long" (6 to 9 of 36 legacy sessions at --copies 3). A
// real client polls no more once it sent /abort; a poll and the /abort racing is the end.
for (const [how, mode] of [["foreign", "load"], ["moved", "load"], ["lost", "load"], ["lost", "check"]]) {
    test(`longPolling ${mode}: the poll answered after the client's /abort is the last (${how})`, async () => {
        const server = await abortingServer(how);
        try {
            await withFixtureFile(async (file) => {
                const args = mode === "load" ? ["load", "--copies", "1", "--speed", "0"] : ["check"];
                const run = await runReplay([...args, "--target", server.target, "--grace", "100", file]);
                assert.equal(run.code, 0, run.stdout + run.stderr);
                assert.equal(server.seen.polls, 1, "no poll after the /abort");
            }, LP_ABORT_FIXTURE);
        } finally {
            await server.close();
        }
    });
}

// Under load a poll answered with other copies' pushes only is sent again from the cursor that
// answer reached, as the client polls next. It went from the recorded cursor again: each answer
// brought back everything since, the relay saw the client acknowledge nothing, and a bigger answer
// bound the recorded cursors later than the client's (a reconnect then missed its first messages).
test("longPolling load: a poll answered with other copies' pushes only is sent again from the cursor it reached", async () => {
    const seen = [];
    const server = await longPollingServer({
        poll: (url, res, json) => {
            const from = url.searchParams.get("messageId");
            seen.push(from);
            if (from === "c-0") return json(res, { C: "c-5", M: [note("another copy's")] });
            if (from === "c-5") return json(res, { C: "c-7", M: [note(1), note(2)] });
            return json(res, { C: "c-9", M: [note("another copy's"), note(1), note(2)] });
        },
    });
    try {
        await withFixtureFile(async (file) => {
            const run = await runReplay(["load", "--copies", "1", "--speed", "0", "--target", server.target, "--grace", "100", file]);
            assert.equal(run.code, 0, run.stdout + run.stderr);
            assert.deepEqual(seen, ["c-0", "c-5"]);
        }, LP_FIXTURE);
    } finally {
        await server.close();
    }
});

// Copies of one fixture push the same texts: another copy's message may come before this copy's
// earlier one. Each recorded message keeps the first match after the previous one kept (the
// answer's order); it kept the first anywhere, which swapped them (a reconnect's replay under
// load: "expected away-1, got away-2").
test("longPolling load: another copy's same message before this copy's earlier one is left out, the order kept", async () => {
    const server = await longPollingServer({ poll: (url, res, json) => json(res, { C: "c-3", M: [note(2), note(1), note(2)] }) });
    try {
        await withFixtureFile(async (file) => {
            const run = await runReplay(["load", "--copies", "1", "--speed", "0", "--target", server.target, "--grace", "100", file]);
            assert.equal(run.code, 0, run.stdout + run.stderr);
            assert.equal(JSON.parse(run.stdout.trim().split("\n").pop()).foreign_pushes, 1);
        }, LP_FIXTURE);
    } finally {
        await server.close();
    }
});
