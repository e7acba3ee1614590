// A long poll and an SSE stream outlive libwebsockets' own timeouts (20 s for an HTTP request):
// with --long-poll-timeout 25 an empty poll is answered 200 after 25 s, not cut at ~20 s, and an
// event stream open as long still carries messages. The backend's pings do not end long polls
// early either: long polling carries no pings (the ASP.NET Core server sends none on it).
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import { BACKEND_URL, RS, negotiate, httpRequest, withTimeout, disconnectSeenByBackend, metrics, pollUntil } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const HOLD_S = 25;
const HANDSHAKE = `{"protocol":"json","version":1}${RS}`;

test(`a poll and an event stream held for ${HOLD_S} s are answered by the relay's timer, not cut`, { timeout: 90000 }, async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--long-poll-timeout", String(HOLD_S),
        "--keepalive", "60", "--client-timeout", "120"]);
    try {
        const at = (t) => `${relay.url}/chat?id=${encodeURIComponent(t)}`;
        const lp = (await negotiate(relay.url, "chat")).json.connectionToken;
        assert.equal((await httpRequest("GET", at(lp))).status, 200);
        assert.equal((await httpRequest("POST", at(lp), {}, HANDSHAKE)).status, 200);
        let drained = "";
        while (!drained.includes("welcome")) drained += (await httpRequest("GET", at(lp))).body;

        const sse = (await negotiate(relay.url, "chat")).json.connectionToken;
        let stream = "";
        let ended = null;
        const req = http.get(at(sse), { headers: { accept: "text/event-stream" }, agent: false });
        req.on("error", () => {});
        const res = await withTimeout(new Promise((resolve) => req.on("response", resolve)), 10000, "the stream");
        assert.equal(res.statusCode, 200);
        res.setEncoding("utf8");
        res.on("data", (c) => { stream += c; });
        ended = new Promise((resolve) => { res.on("end", () => resolve("ended")); res.on("error", () => resolve("failed")); });
        assert.equal((await httpRequest("POST", at(sse), {}, HANDSHAKE)).status, 200);

        const started = Date.now();
        const empty = await httpRequest("GET", at(lp), {}, null, (HOLD_S + 30) * 1000);
        const held = Date.now() - started;
        assert.deepStrictEqual({ status: empty.status, body: empty.body }, { status: 200, body: "" });
        assert.ok(held >= HOLD_S * 1000 - 100, `answered after ${held} ms`);

        assert.equal((await httpRequest("POST", at(sse), {}, `{"type":1,"invocationId":"9","target":"Echo","arguments":["late"]}${RS}`)).status, 200);
        await withTimeout((async () => { while (!stream.includes('"result":"late"')) await new Promise((r) => setTimeout(r, 50)); })(),
            10000, `the echo on the stream (stream ${await Promise.race([ended, Promise.resolve("open")])})`);
        req.destroy();
        assert.equal((await httpRequest("DELETE", at(lp))).status, 202);
    } finally {
        await relay.stop();
    }
});

test("a client that closes its event stream is gone at once, not at the next keepalive ping", { timeout: 60000 }, async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--keepalive", "60", "--client-timeout", "120"]);
    try {
        const t = (await negotiate(relay.url, "chat")).json.connectionToken;
        const at = `${relay.url}/chat?id=${encodeURIComponent(t)}`;
        let stream = "";
        const req = http.get(at, { headers: { accept: "text/event-stream" }, agent: false });
        req.on("error", () => {});
        const res = await withTimeout(new Promise((resolve) => req.on("response", resolve)), 10000, "the stream");
        res.setEncoding("utf8");
        res.on("data", (c) => { stream += c; });
        res.on("error", () => {});
        assert.equal((await httpRequest("POST", at, {}, HANDSHAKE)).status, 200);
        await withTimeout((async () => { while (!stream.includes("welcome")) await new Promise((r) => setTimeout(r, 50)); })(),
            10000, "the welcome on the stream");
        const records = stream.split("\r\n").filter((l) => l.startsWith("data: ")).flatMap((l) => l.slice(6).split(RS));
        const connectionId = JSON.parse(records.find((r) => r.includes("welcome"))).arguments[0];
        req.destroy();
        // Within the default 10 s wait, far below the 60 s keepalive whose ping would find it.
        const info = await disconnectSeenByBackend(connectionId);
        assert.equal(info.disconnected, true);
        await pollUntil(() => metrics(relay.url), (m) => m.sessions_active === 0 && m.core_streams_open === 0,
            "the session and its stream gone");
    } finally {
        await relay.stop();
    }
});
