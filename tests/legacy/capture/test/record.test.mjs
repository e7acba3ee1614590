// Tests of the recorder itself (not of the relay): a small upstream on 127.0.0.1 answers with
// legacy-shaped messages that carry per-run values, a client talks to it through the recorder,
// and the test checks that every byte passed unchanged and that the file has the documented
// shape with placeholders where the per-run values were (docs/FIXTURES.md).
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import { once } from "node:events";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { Recorder, rewriteStrings } from "../record.mjs";
import { pollUntil } from "../../../lib/common.mjs";

const TOKEN = "tok+en/with=chars";
const CONNECTION_ID = "9a7c7b1e-5e1c-4f5e-b1b7-3f2c9e0a6d11";
const BACKEND_ID = "AbCdEfGhIjKlMnOpQrStUv"; // 22 characters of base64url, as Core mints them

function startUpstream() {
    const server = http.createServer((req, res) => {
        const url = new URL(req.url, "http://x");
        let body = "";
        req.on("data", (c) => { body += c; });
        req.on("end", () => {
            if (url.pathname.endsWith("/negotiate")) {
                res.writeHead(200, { "Content-Type": "application/json; charset=UTF-8" });
                res.end(JSON.stringify({ Url: "/signalr", ConnectionToken: TOKEN, ConnectionId: CONNECTION_ID, ProtocolVersion: "2.0" }));
            } else if (url.pathname.endsWith("/send")) {
                res.writeHead(200, { "Content-Type": "application/json; charset=UTF-8" });
                // Answers with the form body it got, so the test sees what arrived.
                res.end(JSON.stringify({ I: "1", R: body }));
            } else if (url.pathname.endsWith("/connect") && url.searchParams.get("transport") === "serverSentEvents") {
                res.writeHead(200, { "Content-Type": "text/event-stream" });
                res.write("data: initialized\n\n");
                setTimeout(() => res.end('data: {"C":"1","S":1,"M":[]}\n\n'), 20);
            } else {
                res.writeHead(400).end("Protocol error: Unknown transport.");
            }
        });
    });
    const wss = new WebSocketServer({ noServer: true });
    server.on("upgrade", (req, socket, head) => {
        const url = new URL(req.url, "http://x");
        if (url.searchParams.get("connectionToken") !== TOKEN) {
            const text = "The ConnectionId is in the incorrect format.";
            socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Length: ${text.length}\r\nConnection: close\r\n\r\n${text}`);
            return;
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
            if (url.pathname.endsWith("/reconnect")) {
                ws.send(JSON.stringify({ C: "2", M: [{ H: "chathub", M: "seen", A: [url.searchParams.get("messageId")] }] }));
            } else {
                // The cursor "1" collides with the invocation id "1" below: only C may change.
                ws.send('{"C":"1","S":1,"M":[]}');
                ws.send(`{"C":"1","G":"grp-token","M":[{"H":"chathub","M":"welcome","A":["${BACKEND_ID}"]}]}`);
            }
            ws.on("message", (data) => {
                const msg = JSON.parse(data);
                ws.send(`{ "R" : ${JSON.stringify(msg.A)},"I":"${msg.I}" , "x":"caf\u00e9"}`);
                if (msg.M === "close") ws.close(4001, "bye");
            });
        });
    });
    return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

function lines(text) {
    return text.trim().split("\n").map((l) => JSON.parse(l));
}

test("rewriteStrings replaces string values by path and keeps every other byte", () => {
    const text = '{ "C" : "1", "M":[{"I":"1","A":["1", {"C":"1"}]}], "k\\"ey":"v\\u00e9" }';
    const seen = [];
    const out = rewriteStrings(text, (p, v) => {
        seen.push([p.join("/"), v]);
        return p.length === 1 && p[0] === "C" ? "<c>" : null;
    });
    assert.equal(out, '{ "C" : "<c>", "M":[{"I":"1","A":["1", {"C":"1"}]}], "k\\"ey":"v\\u00e9" }');
    assert.deepStrictEqual(seen, [["C", "1"], ["M/0/I", "1"], ["M/0/A/0", "1"], ["M/0/A/1/C", "1"], ['k"ey', "v\u00e9"]]);
});

test("records a WebSocket session with placeholders and forwards bytes unchanged", async () => {
    const upstream = await startUpstream();
    const out = new PassThrough();
    let written = "";
    out.on("data", (c) => { written += c; });
    const recorder = new Recorder({ upstream: `http://127.0.0.1:${upstream.address().port}`, out, label: "self-test" });
    const { port } = await recorder.listen("127.0.0.1", 0);
    const base = `http://127.0.0.1:${port}/signalr`;
    const cd = encodeURIComponent('[{"name":"chathub"}]');
    try {
        const negotiate = await (await fetch(`${base}/negotiate?clientProtocol=2.1&connectionData=${cd}&_=1700000000000`)).json();
        assert.equal(negotiate.ConnectionToken, TOKEN, "the client gets the real token");
        const tok = encodeURIComponent(TOKEN);

        const ws = new WebSocket(`ws://127.0.0.1:${port}/signalr/connect?transport=webSockets&clientProtocol=2.1&connectionToken=${tok}&connectionData=${cd}&tid=3`);
        const received = [];
        ws.on("message", (d) => received.push(d.toString()));
        await once(ws, "open");
        await pollUntil(() => received.length, (n) => n >= 2, "the init frame and the welcome", 10000, 5);
        ws.send(JSON.stringify({ H: "chathub", M: "GetDisconnectInfo", A: [BACKEND_ID], I: 1 }));
        await pollUntil(() => received.length, (n) => n >= 3, "the hub result", 10000, 5);
        assert.equal(received[2], `{ "R" : ["${BACKEND_ID}"],"I":"1" , "x":"caf\u00e9"}`, "bytes pass unchanged");
        ws.send(JSON.stringify({ H: "chathub", M: "close", A: [], I: 2 }));
        const [code, reason] = await once(ws, "close");
        assert.equal(code, 4001, "the server's close code reaches the client");
        assert.equal(reason.toString(), "bye");

        const again = new WebSocket(`ws://127.0.0.1:${port}/signalr/reconnect?transport=webSockets&messageId=1&clientProtocol=2.1&connectionToken=${tok}&connectionData=${cd}&groupsToken=grp-token&tid=7`);
        const [replay] = await once(again, "message");
        assert.deepStrictEqual(JSON.parse(replay.toString()).M[0].A, ["1"], "the server got the real messageId");
        again.close(1000);
        await once(again, "close");

        const bad = new WebSocket(`ws://127.0.0.1:${port}/signalr/connect?transport=webSockets&connectionToken=wrong`);
        const [, response] = await once(bad, "unexpected-response");
        assert.equal(response.statusCode, 400, "a refused upgrade is refused to the client too");

        const send = await (await fetch(`${base}/send?transport=longPolling&clientProtocol=2.1&connectionToken=${tok}`, {
            method: "POST",
            headers: { "Content-Type": "application/x-www-form-urlencoded; charset=UTF-8" },
            body: `data=${encodeURIComponent(JSON.stringify({ H: "chathub", M: "Echo", A: [BACKEND_ID], I: 1 }))}`,
        })).json();
        assert.match(send.R, /^data=%7B/, "the form body arrived as sent");

        const sse = await (await fetch(`${base}/connect?transport=serverSentEvents&clientProtocol=2.1&connectionToken=${tok}&tid=1`)).text();
        assert.equal(sse, 'data: initialized\n\ndata: {"C":"1","S":1,"M":[]}\n\n');
    } finally {
        await recorder.close();
        await new Promise((resolve) => upstream.close(resolve));
    }

    for (const raw of [TOKEN, encodeURIComponent(TOKEN), CONNECTION_ID, "grp-token", "1700000000000"]) {
        assert.ok(!written.includes(raw), `the file still contains ${raw}: ${written.split("\n").filter((l) => l.includes(raw)).join("\n")}`);
    }
    const entries = lines(written);
    assert.deepStrictEqual(entries[0], { type: "session", format: "signalr-legacy-capture", version: 1, label: "self-test", upstream: "http://<upstream>" });
    assert.equal(entries.at(-1).type, "end");
    const times = entries.filter((e) => "t" in e).map((e) => e.t);
    assert.deepStrictEqual(times, [...times].sort((a, b) => a - b), "t never goes back");

    const byType = (type) => entries.filter((e) => e.type === type);
    const negotiateResponse = byType("http-response")[0];
    assert.equal(negotiateResponse.status, 200);
    assert.deepStrictEqual(JSON.parse(negotiateResponse.body),
        { Url: "/signalr", ConnectionToken: "<connectionToken>", ConnectionId: "<connectionId>", ProtocolVersion: "2.0" });
    assert.deepStrictEqual(byType("http-request")[0].query,
        [["clientProtocol", "2.1"], ["connectionData", '[{"name":"chathub"}]'], ["_", "<timestamp>"]]);

    const [open1, open2] = byType("ws-open");
    assert.equal(open1.path, "/signalr/connect");
    assert.deepStrictEqual(open1.query, [["transport", "webSockets"], ["clientProtocol", "2.1"],
        ["connectionToken", "<connectionToken>"], ["connectionData", '[{"name":"chathub"}]'], ["tid", "<tid>"]]);
    assert.equal(open1.rawQuery, `transport=webSockets&clientProtocol=2.1&connectionToken=<connectionToken>&connectionData=${cd}&tid=<tid>`);
    assert.deepStrictEqual(open2.query.find(([k]) => k === "messageId"), ["messageId", "<cursor:1.1>"],
        "the echoed cursor gets the placeholder of the frame it came from");
    assert.deepStrictEqual(open2.query.find(([k]) => k === "groupsToken"), ["groupsToken", "<groupsToken:1.1>"]);

    const frames = byType("ws-frame").filter((f) => f.ws === open1.ws);
    assert.deepStrictEqual(frames.map((f) => [f.dir, f.text]), [
        ["s2c", '{"C":"<cursor:1.1>","S":1,"M":[]}'],
        // A backend's connection id is kept: a server other than the relay has none (--capture masks them).
        ["s2c", `{"C":"<cursor:1.1>","G":"<groupsToken:1.1>","M":[{"H":"chathub","M":"welcome","A":["${BACKEND_ID}"]}]}`],
        ["c2s", `{"H":"chathub","M":"GetDisconnectInfo","A":["${BACKEND_ID}"],"I":1}`],
        ["s2c", `{ "R" : ["${BACKEND_ID}"],"I":"1" , "x":"caf\u00e9"}`],
        ["c2s", '{"H":"chathub","M":"close","A":[],"I":2}'],
        ["s2c", '{ "R" : [],"I":"2" , "x":"caf\u00e9"}'],
    ]);
    assert.deepStrictEqual(byType("ws-close").map((c) => [c.by, c.code, c.reason]),
        [["server", 4001, "bye"], ["client", 1000, ""]]);
    assert.equal(byType("ws-refused")[0].status, 400);

    const sendRequest = byType("http-request").find((r) => r.path === "/signalr/send");
    assert.deepStrictEqual(sendRequest.form, [["data", `{"H":"chathub","M":"Echo","A":["${BACKEND_ID}"],"I":1}`]]);
    const sseResponse = byType("http-response").find((r) => r.headers["content-type"] === "text/event-stream");
    assert.equal(sseResponse.body, 'data: initialized\n\ndata: {"C":"<cursor:1.1>","S":1,"M":[]}\n\n');
    assert.ok(sseResponse.chunks.length >= 2, "an event stream keeps its chunks with their times");
});

test("the command line refuses a non-loopback listen address", async () => {
    const { spawn } = await import("node:child_process");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "record-test-"));
    const child = spawn(process.execPath, [new URL("../record.mjs", import.meta.url).pathname,
        "--listen", "0.0.0.0:0", "--upstream", "http://127.0.0.1:1", "--out", path.join(dir, "x.jsonl")]);
    let stderr = "";
    child.stderr.on("data", (c) => { stderr += c; });
    const [code] = await once(child, "exit");
    assert.equal(code, 2);
    assert.match(stderr, /loopback only/);
});
