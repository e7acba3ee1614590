// What the real ASP.NET SignalR 2.4.1 server (tests/legacy-ref, on Mono) answers to raw HTTP
// requests: the observations of lib/observe.mjs, asserted. These are the facts the relay's legacy
// endpoint is judged by (README.md has the table of where the relay differs).
//   SIGNALR_LEGACY_REF_URL=http://127.0.0.1:PORT/signalr node --test test/
// (run-tests.sh starts the server and sets it). Each test has its own timeout.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cases, Endpoint } from "../lib/observe.mjs";

const url = process.env.SIGNALR_LEGACY_REF_URL;
if (!url) throw new Error("set SIGNALR_LEGACY_REF_URL to the reference server's /signalr URL (run-tests.sh does)");
const ep = new Endpoint(url);
const T = { timeout: 20000 };
const observe = (name) => cases[name](ep);

test("negotiate: status, content type, every field and its value", T, async () => {
    const o = await observe("negotiate clientProtocol=2.1");
    assert.equal(o.status, 200);
    assert.equal(o.type, "application/json; charset=UTF-8");
    assert.equal(o.nosniff, "nosniff");
    assert.deepEqual(o.keys, ["Url", "ConnectionToken", "ConnectionId", "KeepAliveTimeout", "DisconnectTimeout",
        "ConnectionTimeout", "TryWebSockets", "ProtocolVersion", "TransportConnectTimeout", "LongPollDelay"]);
    assert.equal(o.Url, "/signalr");
    assert.equal(o.ConnectionId, "<guid>");
    assert.equal(o.KeepAliveTimeout, 20);
    assert.equal(o.DisconnectTimeout, 30);
    assert.equal(o.ConnectionTimeout, 110);
    // false only because this host cannot accept WebSockets (run with --try-websockets: true)
    assert.equal(o.TryWebSockets, false);
    assert.equal(o.ProtocolVersion, "2.0");
    assert.equal(o.TransportConnectTimeout, 5);
    assert.equal(o.LongPollDelay, 0);
});

test("negotiate: ProtocolVersion echoes 1.2..2.0, caps at 2.0, 1.2 when missing or not a number", T, async () => {
    assert.deepEqual(await observe("negotiate ProtocolVersion per clientProtocol"), {
        "1.2": "1.2", "1.3": "1.3", "1.4": "1.4", "1.5": "1.5", "2.0": "2.0", "2.1": "2.0", "3.0": "2.0",
        "abc": "1.2", "(none)": "1.2",
    });
});

test("negotiate: without connectionData 200; unknown hub 500 with an empty body; hub names case-insensitive", T, async () => {
    assert.deepEqual(await observe("negotiate without connectionData"), { status: 200, body: "<negotiate json>" });
    assert.deepEqual(await observe("negotiate unknown hub"), { status: 500, type: null, body: "" });
    assert.deepEqual(await observe("negotiate hub name casing (ChatHub, CHATHUB)"), { ChatHub: 200, CHATHUB: 200 });
});

test("negotiate: an [Authorize] hub answers 401 (empty body) unless the request is authenticated", T, async () => {
    assert.deepEqual(await observe("negotiate SecureHub ([Authorize]) without and with token"),
        { without: "401 ", good: 200, bad: "401 " });
});

test("errors: bad token, missing token, unknown or missing transport: 400 with SignalR's texts", T, async () => {
    assert.deepEqual(await observe("connect with a bad connectionToken"),
        { status: 400, type: null, body: "The ConnectionId is in the incorrect format." });
    assert.deepEqual(await observe("connect without connectionToken"),
        { status: 400, type: null, body: "Protocol error: Missing connection token." });
    assert.deepEqual(await observe("connect with an unknown transport"),
        { status: 400, type: null, body: "Protocol error: Unknown transport." });
    assert.deepEqual(await observe("connect without transport"),
        { status: 400, type: null, body: "Protocol error: Unknown transport." });
});

test("JSONP off: 403 empty; no CORS: OPTIONS is served as a plain negotiate, no Allow-Origin", T, async () => {
    assert.deepEqual(await observe("JSONP callback, OPTIONS preflight, POST negotiate, cross-origin GET"), {
        jsonp: "403 null ",
        options: "200 <negotiate json>",
        post: "200 <negotiate json>",
        crossOriginAllowOrigin: null,
    });
});

test("paths: anything unknown under /signalr is 400 Unknown transport; outside it 404", T, async () => {
    assert.deepEqual(await observe("unknown path under /signalr"), {
        "/nothing": "400 null nosniff Protocol error: Unknown transport.",
        "/negotiate/extra": "400 null nosniff Protocol error: Unknown transport.",
        "/": "400 null nosniff Protocol error: Unknown transport.",
    });
    assert.deepEqual(await observe("path outside /signalr"), { status: 404, type: null, body: "" });
});

test("serverSentEvents: initialized, the init message with S:1, the OnConnected push, a broadcast", T, async () => {
    const o = await observe("serverSentEvents connect, start, send, push");
    assert.equal(o.status, 200);
    assert.equal(o.type, "text/event-stream");
    assert.deepEqual(o.frames, [
        "initialized",
        '{"C":"d-<hex8>-K,N|K,N|K,N","S":1,"M":[]}',
        '{"C":"d-<hex8>-K,N|K,N|K,N","M":[{"H":"ChatHub","M":"welcome","A":["<connectionId>"]}]}',
        '{"C":"d-<hex8>-K,N|K,N|K,N","M":[{"H":"ChatHub","M":"broadcast","A":["sse-hello"]}]}',
    ]);
    assert.equal(o.start, '200 application/json; charset=UTF-8 { "Response": "started" }');
    assert.equal(o.send, '200 {"I":"0"}');
});

test("longPolling: connect answers the init message at once; polls carry the pushes", T, async () => {
    assert.deepEqual(await observe("longPolling connect, start, send, poll"), {
        connect: '200 application/json; charset=UTF-8 {"C":"d-<hex8>-K,N|K,N|K,N","S":1,"M":[]}',
        start: '200 { "Response": "started" }',
        firstPoll: '200 {"C":"d-<hex8>-K,N|K,N|K,N","M":[{"H":"ChatHub","M":"welcome","A":["<connectionId>"]}]}',
        send: '200 {"I":"0"}',
        secondPoll: '200 {"C":"d-<hex8>-K,N|K,N|K,N","M":[{"H":"ChatHub","M":"broadcast","A":["lp-hello"]}]}',
    });
});

test("longPolling: a poll with nothing to deliver is held (not answered within 3 s)", T, async () => {
    const o = await observe("longPolling poll held with nothing to send");
    assert.equal(o.answeredWithin3s, false);
    // Headers and a single space may come first (after ~1.5 s), never JSON.
    assert.ok(o.bodyAfter3s === '""' || o.bodyAfter3s === '" "', o.bodyAfter3s);
});

test("foreverFrame is served: HTML prelude, then <script>r(c, …)</script> per message", T, async () => {
    const o = await observe("foreverFrame connect");
    assert.equal(o.status, 200);
    assert.equal(o.type, "text/html; charset=UTF-8");
    assert.equal(o.prelude, "HTML prelude reaching window.parent");
    assert.equal(o.scripts[0], '{"C":"d-<hex8>-K,N|K,N|K,N","S":1,"M":[]}');
});

test("send: results, hub errors, and how the server treats odd requests", T, async () => {
    assert.deepEqual(await observe("send results and errors"), {
        "Add(40,2) I=0": '200 {"R":42,"I":"0"}',
        'I as string "7"': '200 {"R":3,"I":"7"}',
        "VoidMethod": '200 {"I":"1"}',
        "Echo(null)": '200 {"I":"2"}',
        "ThrowHubException": '200 {"I":"3","H":true,"E":"no way"}',
        "ThrowOther": `200 {"I":"4","E":"There was an error invoking Hub method 'chathub.ThrowOther'."}`,
        "unknown method": `200 {"I":"5","E":"There was an error invoking Hub method 'chathub.Nope'."}`,
        "wrong argument count": `200 {"I":"6","E":"There was an error invoking Hub method 'chathub.Add'."}`,
        "wrong argument type": `200 {"I":"7","E":"There was an error invoking Hub method 'chathub.Add'."}`,
        "hub ChatHub (other casing)": '200 {"R":2,"I":"8"}',
        "hub not in connectionData (statushub)": '200 {"R":"s","I":"9"}',
        "unknown hub": "500 ",
        "method name casing (add)": '200 {"R":4,"I":"11"}',
        "A missing": '200 {"I":"12"}',
        "data not JSON": "500 ",
        "no data field": "500 ",
        "GET /send": '200 {"R":3,"I":"13"}',
    });
});

test("send and poll after abort: the send still runs; the poll is held", T, async () => {
    assert.deepEqual(await observe("send and poll after abort"),
        { sendAfterAbort: '200 {"R":3,"I":"0"}', pollAfterAbort: "held (nothing within 3 s)" });
});

test("Counter with IProgress<int>: one P message per item on the stream, the result without R", T, async () => {
    assert.deepEqual(await observe("Counter progress over serverSentEvents"), {
        send: '200 {"I":"0"}',
        progress: [0, 1, 2].map((d) => JSON.stringify({ I: "P|0", P: { I: "0", D: d } })),
    });
});

test("ping, abort (twice, POST then GET), the generated hubs script", T, async () => {
    assert.deepEqual(await observe("ping, abort, hubs script"), {
        ping: '200 application/json; charset=UTF-8 { "Response": "pong" }',
        abort: '200 text/plain ""',
        "abort again (GET)": '200 ""',
        hubs: "200 application/javascript; charset=UTF-8 proxy script with chatHub",
    });
});

test("start: before connect and twice, always started", T, async () => {
    assert.deepEqual(await observe("start before connect, start twice"), {
        "start before connect": '200 { "Response": "started" }',
        start: '200 { "Response": "started" }',
        "start again": '200 { "Response": "started" }',
    });
});

test("reconnect over serverSentEvents with the last cursor: what was sent meanwhile, once", T, async () => {
    assert.deepEqual(await observe("reconnect serverSentEvents with messageId"), {
        status: 200,
        frames: ["initialized",
            '{"C":"d-<hex8>-K,N|K,N|K,N","M":[{"H":"ChatHub","M":"broadcast","A":["while-away"]}]}'],
    });
});

test("hub layer over serverSentEvents: results, error texts, pushes with the server's hub name", T, async () => {
    assert.deepEqual(await observe("hub layer: results, errors, pushes (WebSockets if offered, else SSE)"), {
        transport: "serverSentEvents",
        cursor: "d-<hex8>-K,N|K,N|K,N",
        // "H" is the server's hub name (the class name), not the client's spelling "chathub"
        pushes: [
            '{"H":"ChatHub","M":"welcome","A":["<guid>"]}',
            '{"I":"P|7","P":{"I":"7","D":0}}',
            '{"I":"P|7","P":{"I":"7","D":1}}',
        ],
        0: '{"R":42,"I":"0"}',
        1: `{"I":"1","E":"There was an error invoking Hub method 'chathub.Nope'."}`,
        2: `{"I":"2","E":"There was an error invoking Hub method 'chathub.ThrowOther'."}`,
        3: `{"I":"3","E":"There was an error invoking Hub method 'chathub.Add'."}`,
        4: '{"I":"4","H":true,"E":"no way"}',
        5: '{"R":"s","I":"5"}',
        6: '{"R":4,"I":"6"}',
        7: '{"I":"7"}',
    });
});

test("webSockets over plain HTTP: SignalR's own 400", T, async () => {
    assert.deepEqual(await observe("webSockets connect over plain HTTP (no upgrade)"),
        { status: 400, body: "Not a valid web socket request." });
});
