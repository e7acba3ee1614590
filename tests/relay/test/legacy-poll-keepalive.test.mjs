// A held legacy long poll is kept alive as the original server keeps it (tests/legacy-ref,
// `longPolling poll held with nothing to send`; a raw poll held 35 s against the real 2.4.1 server
// got its 200 head and ' ' after 8.5 s, then ' ' every 10 s, its KeepAlive): the relay writes the
// head (no length, Connection: close) and a space once the poll has been held --legacy-keepalive,
// then a space every interval; the answer, a message or the poll timeout's empty frame, is the rest
// of that body, which clients parse as JSON after the spaces.
import { after, before, describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import { BACKEND_URL, LEGACY_FORM as FORM, httpRequest, legacyLongPollingConnection, pollUntil, withTimeout } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const KEEPALIVE_S = 1;
const POLL_TIMEOUT_S = 4;
let relay, BASE;

before(async () => {
    relay = await startRelay(["--hub", `ChatHub=${BACKEND_URL}/chat`, "--legacy-keepalive", String(KEEPALIVE_S),
        "--legacy-poll-timeout", String(POLL_TIMEOUT_S)]);
    BASE = `${relay.url}/signalr`;
});
after(async () => {
    await relay?.stop();
});

async function connection() {
    const { q, connect } = await legacyLongPollingConnection(BASE);
    const first = await httpRequest("POST", `${BASE}/poll?${q}`, FORM, `messageId=${encodeURIComponent(JSON.parse(connect.body).C)}`);
    assert.equal(first.status, 200, first.body); // OnConnected's welcome
    return { q, cursor: JSON.parse(first.body).C };
}

// A poll whose pieces are recorded as they come: { headers, chunks: [{ at, text }], done }.
function heldPoll(q, cursor) {
    const poll = { chunks: [], started: Date.now() };
    poll.done = new Promise((resolve, reject) => {
        const req = http.request(`${BASE}/poll?${q}`, { method: "POST", agent: false, headers: FORM }, (res) => {
            poll.status = res.statusCode;
            poll.headers = res.headers;
            res.setEncoding("utf8");
            res.on("data", (text) => poll.chunks.push({ at: Date.now() - poll.started, text }));
            res.on("end", () => resolve(poll.chunks.map((c) => c.text).join("")));
            res.on("error", reject);
        });
        req.on("error", reject);
        req.end(`messageId=${encodeURIComponent(cursor)}`);
    });
    return poll;
}

const spaces = (poll) => poll.chunks.map((c) => c.text).join("").split("").filter((ch) => ch === " ").length;

describe("a held legacy long poll", () => {
    it("gets its head and a space each --legacy-keepalive, then the message as the rest of the body", async () => {
        const { q, cursor } = await connection();
        const poll = heldPoll(q, cursor);
        await pollUntil(() => spaces(poll), (n) => n >= 2, "two keep-alive spaces in the held poll", 15000);
        assert.equal(poll.status, 200);
        assert.equal(poll.headers["content-type"], "application/json; charset=UTF-8");
        assert.equal(poll.headers["content-length"], undefined);
        assert.equal(poll.headers.connection, "close");
        assert.ok(poll.chunks[0].at >= KEEPALIVE_S * 1000 * 0.8, `first piece after ${poll.chunks[0].at} ms`);
        const data = `data=${encodeURIComponent(JSON.stringify({ H: "chathub", M: "Broadcast", A: ["after-spaces"], I: 0 }))}`;
        const send = await httpRequest("POST", `${BASE}/send?${q}`, FORM, data);
        assert.equal(send.status, 200, send.body);
        const body = await withTimeout(poll.done, 10000, "the held poll's answer");
        assert.match(body, /^ {2,}\{/);
        const frame = JSON.parse(body);
        assert.deepEqual(frame.M, [{ H: "ChatHub", M: "broadcast", A: ["after-spaces"] }]);
        await httpRequest("POST", `${BASE}/abort?${q}`, FORM, "");
    });

    it("answered by --legacy-poll-timeout after its spaces: the empty frame ends the body", async () => {
        const { q, cursor } = await connection();
        const poll = heldPoll(q, cursor);
        const body = await withTimeout(poll.done, 20000, "the poll timeout's answer");
        assert.match(body, /^ +\{/);
        const frame = JSON.parse(body);
        assert.deepEqual(frame.M, []);
        assert.ok(frame.C, body);
        // The connection goes on: the next poll with the new cursor is held again.
        const next = heldPoll(q, frame.C);
        await pollUntil(() => spaces(next), (n) => n >= 1, "a space in the next held poll", 15000);
        await httpRequest("POST", `${BASE}/abort?${q}`, FORM, "");
        await withTimeout(next.done, 10000, "the poll ended by /abort");
    });

    // The relay holds a /send result until the client has polled the progress pushed before it (the
    // stock clients forget an invocation once its result is in; README row 26 of tests/legacy-ref).
    // A client that does not poll again (a session recorded against the real server, which answers
    // at once, and replayed; a client that is stopping) gets it after its LongPollDelay and 2 s,
    // not when the connection ends (--legacy-disconnect-timeout, 30 s here).
    it("a /send held for progress nobody polls is answered after the grace, not at the disconnect timeout", async () => {
        const { q, cursor } = await connection();
        const poll = heldPoll(q, cursor); // takes the first progress message, then no poll follows
        const data = `data=${encodeURIComponent(JSON.stringify({ H: "chathub", M: "Counter", A: [3, 10], I: 0 }))}`;
        const started = Date.now();
        const send = await withTimeout(httpRequest("POST", `${BASE}/send?${q}`, FORM, data, 60000), 15000,
            "the /send of Counter(3) with no poll after the first");
        assert.equal(send.status, 200, send.body);
        assert.deepEqual(JSON.parse(send.body), { I: "0" });
        assert.ok(Date.now() - started < 15000);
        const first = JSON.parse(await withTimeout(poll.done, 10000, "the held poll"));
        assert.equal(first.M[0].P.D, 0, JSON.stringify(first));
        await httpRequest("POST", `${BASE}/abort?${q}`, FORM, "");
    });
});

