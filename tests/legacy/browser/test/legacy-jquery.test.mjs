// The stock jQuery SignalR 2.4.3 client, in headless Chromium, against a legacy /signalr endpoint
// (the relay) in front of the test backend (tests/backend: ChatHub at /chat, StatusHub at
// /status), or the real ASP.NET SignalR 2.4.1 server (tests/legacy-ref/run-tests.sh, suite jquery,
// with SIGNALR_LEGACY_SERVER=reference). Each test drives the page step by step and asserts here
// what the client saw.
//
// Where the expected values come from: the backend's hub code (what each method returns, sends,
// throws or records), the legacy wire protocol (docs in /work/shared/specs/legacy-signalr.md:
// a null result is left out of the hub result (§6.2), a HubException is {"H":true,"E":<its
// message>} (§6.2), stream items travel as progress messages (§6.3), a reconnect replays what
// the client missed (§7.4)), and what the jQuery client does with those (its source).
import { after, before, test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    Browser, EXPECTED_TRANSPORT, LEGACY_URL, PAGE_MODE, TIMEOUT_MS, VERBOSE, checkEnvironment, probeLegacyServer,
} from "../lib/harness.mjs";
import { pollUntil, uniqueName as unique } from "../../../lib/common.mjs";
import { ECHO_VALUES, bigString } from "../../../lib/values.mjs";

// SIGNALR_LEGACY_SERVER=reference: the server is the real ASP.NET SignalR 2.4.1 server
// (tests/legacy-ref/run-tests.sh) rather than the relay in front of the Core backend. Used only
// where tests/legacy-ref/README.md "Observed differences" lists a reason: row 1 (a hub's
// Context.ConnectionId is the legacy connection id, a GUID shared by every hub of the connection,
// not one Core id per hub) and row 26 (over longPolling the real server answers the /send before
// the client has polled the progress messages, and the client drops those that come after the
// result: the items seen are an in-order prefix).
const REFERENCE = process.env.SIGNALR_LEGACY_SERVER === "reference";
// A Core connection id as ASP.NET Core mints them (the backend's Context.ConnectionId), or the
// 2.x server's GUID against the reference.
const CORE_CONNECTION_ID = REFERENCE ? /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/ : /^[A-Za-z0-9_-]{22}$/;
const CHAT_EVENTS = { chatHub: ["welcome", "broadcast", "groupMessage"] };

let browser = null;
let unavailable = null; // why no test can run, if so

before(async () => {
    try {
        checkEnvironment();
        const negotiate = await probeLegacyServer();
        process.stdout.write(`# legacy endpoint ${LEGACY_URL} (page ${PAGE_MODE}); negotiate: ${JSON.stringify(negotiate)}\n`);
        browser = await Browser.launch();
    } catch (error) {
        unavailable = error;
    }
});

after(async () => {
    await browser?.close();
});

// Runs body(page) on a fresh page; prints the page's console when the test fails. Afterwards no
// client of the page may have reported an error (connection.error) unless options.expectErrors,
// or one options.tolerate(error) accepts.
function scenario(name, body, options = {}) {
    test(name, { timeout: 120000 }, async () => {
        if (unavailable) {
            throw unavailable;
        }
        const page = await browser.openPage();
        let failed = true;
        try {
            await body(page);
            if (!options.expectErrors) {
                const errors = {};
                for (const [client, list] of Object.entries(await page.errors())) {
                    const left = list.filter((error) => !(options.tolerate && options.tolerate(error)));
                    if (left.length > 0) {
                        errors[client] = left;
                    }
                }
                assert.deepStrictEqual(errors, {}, "errors the clients reported (connection.error)");
            }
            failed = false;
        } finally {
            if (failed || VERBOSE) {
                page.printConsole(`page console of '${name}' (jquery ${page.versions.jquery}, signalR ${page.versions.signalR}):`);
            }
            await page.close();
        }
    });
}

async function startOk(page, name) {
    const state = await page.start(name);
    assert.equal(state.failed, undefined, `start of '${name}' failed: ${JSON.stringify(state.failed)}; errors ${JSON.stringify(state.errors)}`);
    assert.equal(state.state, "connected");
    assert.equal(state.transport, EXPECTED_TRANSPORT);
    return state;
}

// A started chat client and the backend connection id from its welcome push.
async function connectChat(page, name, hubs = CHAT_EVENTS) {
    await page.create(name, hubs);
    const state = await startOk(page, name);
    const [welcome] = await page.waitForEvents(name, "chatHub", "welcome", 1);
    assert.equal(welcome.args.length, 1, "welcome has one argument");
    return { state, backendId: welcome.args[0] };
}

// A successful invocation's value (fails the test with the client's error otherwise).
async function call(page, name, hub, method, ...args) {
    const outcome = await page.invoke(name, hub, method, ...args);
    assert.ok(outcome.ok, `${hub}.${method} failed: ${JSON.stringify(outcome.error)}`);
    return outcome;
}

// Counter(count)'s outcome: every item as progress, then completion with no value; against the
// real server over longPolling (difference row 26) an in-order prefix of the items.
function assertCounterOutcome(outcome, count) {
    const items = [...Array(count).keys()];
    if (REFERENCE && EXPECTED_TRANSPORT === "longPolling") {
        assert.deepStrictEqual({ ...outcome, progress: [] }, { ok: true, value: undefined, hasValue: false, progress: [] });
        assert.deepStrictEqual(outcome.progress, items.slice(0, outcome.progress.length),
            "progress is an in-order prefix of the items (difference row 26)");
        return;
    }
    assert.deepStrictEqual(outcome, { ok: true, value: undefined, hasValue: false, progress: items });
}

async function value(page, name, hub, method, ...args) {
    return (await call(page, name, hub, method, ...args)).value;
}

// Asks the backend (through another legacy connection) what it recorded when `backendId` went.
async function disconnectInfo(page, probeName, backendId) {
    return value(page, probeName, "chatHub", "GetDisconnectInfo", backendId);
}

function waitForDisconnect(page, probeName, backendId) {
    return pollUntil(() => disconnectInfo(page, probeName, backendId), (info) => info.disconnected === true,
        `OnDisconnectedAsync for ${backendId} (the backend's record)`, TIMEOUT_MS, 100);
}

function broadcastsAt(events, prefix) {
    return events.filter((e) => typeof e.args[0] === "string" && e.args[0].startsWith(prefix)).map((e) => e.args[0]);
}

scenario("welcome push arrives on connect with the backend's connection id", async (page) => {
    const { state, backendId } = await connectChat(page, "a");
    assert.equal(typeof state.id, "string");
    assert.ok(state.id.length > 0, "negotiate gave a ConnectionId");
    assert.match(backendId, CORE_CONNECTION_ID);
    if (REFERENCE) {
        assert.equal(backendId, state.id, "the 2.x server's hub sees the legacy connection id (difference row 1)");
    }
    // The welcome came from OnConnectedAsync of the very connection that answers WhoAmI.
    const who = await value(page, "a", "chatHub", "WhoAmI");
    assert.equal(who.hub, "chat");
    assert.equal(who.connectionId, backendId);
    // Exactly one welcome: OnConnectedAsync ran once for this legacy connection.
    assert.equal((await page.events("a", "chatHub", "welcome")).length, 1);
});

scenario("ping: the client's /ping request is answered with pong", async (page) => {
    await connectChat(page, "a");
    assert.deepStrictEqual(await page.ping("a"), { ok: true });
});

scenario("Echo returns every JSON value type unchanged", async (page) => {
    await connectChat(page, "a");
    for (const [what, v] of ECHO_VALUES) {
        const outcome = await call(page, "a", "chatHub", "Echo", v);
        assert.deepStrictEqual(outcome, { ok: true, value: v, hasValue: true, progress: [] }, `Echo of ${what}`);
    }
    // null: the hub result leaves a null R out ({"I":"n"}, spec §6.2), so the promise resolves
    // with undefined, as it does against an ASP.NET SignalR 2.x server.
    const nullEcho = await call(page, "a", "chatHub", "Echo", null);
    assert.equal(nullEcho.hasValue, false, `Echo of null: ${JSON.stringify(nullEcho)}`);

    const big = bigString(100 * 1024);
    const echoed = await value(page, "a", "chatHub", "Echo", big);
    assert.equal(typeof echoed, "string", "Echo of 100 KiB: type");
    assert.equal(echoed.length, big.length, "Echo of 100 KiB: length");
    assert.ok(echoed === big, "Echo of 100 KiB: content differs");
});

scenario("EchoMany returns its arguments in order; Add returns the server's sum", async (page) => {
    await connectChat(page, "a");
    assert.deepStrictEqual(await value(page, "a", "chatHub", "EchoMany", "first", 2, { third: [3, "x"] }),
        ["first", 2, { third: [3, "x"] }]);
    assert.deepStrictEqual(await value(page, "a", "chatHub", "EchoMany", null, [], "\u00e9"), [null, [], "\u00e9"]);
    assert.equal(await value(page, "a", "chatHub", "Add", 40, 2), 42);
    assert.equal(await value(page, "a", "chatHub", "Add", -5, 3), -2);
    assert.equal(await value(page, "a", "chatHub", "Add", 2147483646, 1), 2147483647);
});

scenario("a void method completes with no result", async (page) => {
    await connectChat(page, "a");
    const outcome = await call(page, "a", "chatHub", "VoidMethod");
    assert.deepStrictEqual(outcome, { ok: true, value: undefined, hasValue: false, progress: [] });
});

scenario("HubException: the error is a hub exception carrying the backend's message", async (page) => {
    await connectChat(page, "a");
    for (const message of ["custom failure 42", "quote \" backslash \\ \u00fcn\u00efc\u00f6de \u{1F4A5} HubException: inner"]) {
        const outcome = await page.invoke("a", "chatHub", "ThrowHubException", message);
        assert.equal(outcome.ok, false, `ThrowHubException(${message}) did not fail`);
        // jQuery: source "HubException" when the result has "H":true; data = D (none from Core).
        assert.deepStrictEqual(
            { message: outcome.error.message, source: outcome.error.source, data: outcome.error.data },
            { message, source: "HubException", data: undefined });
    }
    // The connection survives failed invocations.
    assert.equal(await value(page, "a", "chatHub", "Add", 1, 1), 2);
});

// Without detailed errors the text of any other exception never leaves the server: the 2.x
// server's text, hub and method as the client wrote them (tests/legacy-ref: the real server's).
const THROW_OTHER_TEXTS = ["There was an error invoking Hub method 'chathub.ThrowOther'."];

scenario("another exception gives a plain error with the production text", async (page) => {
    await connectChat(page, "a");
    const outcome = await page.invoke("a", "chatHub", "ThrowOther");
    assert.equal(outcome.ok, false, "ThrowOther did not fail");
    assert.equal(outcome.error.source, "Exception", `not a HubException: ${JSON.stringify(outcome.error)}`);
    assert.ok(THROW_OTHER_TEXTS.includes(outcome.error.message), `unexpected text: ${JSON.stringify(outcome.error.message)}`);
    assert.ok(!outcome.error.message.includes("must not reach"), "the exception's own text leaked");
    assert.equal(await value(page, "a", "chatHub", "Add", 2, 3), 5);
});

scenario("Broadcast reaches two connections, each message once and in order", async (page) => {
    await connectChat(page, "a");
    await connectChat(page, "b");
    const tag = unique("bc");
    const sent = [`${tag}-1`, `${tag}-2`, `${tag}-3`];
    for (const m of sent) {
        const outcome = await call(page, "a", "chatHub", "Broadcast", m);
        assert.equal(outcome.hasValue, false, "Broadcast returns no value");
    }
    for (const who of ["a", "b"]) {
        await page.waitForEvents(who, "chatHub", "broadcast", 1, sent[2]);
        assert.deepStrictEqual(broadcastsAt(await page.events(who, "chatHub", "broadcast"), tag), sent, `broadcasts at ${who}`);
    }
});

scenario("groups: JoinGroup, SendToGroup, LeaveGroup, nothing after leaving", async (page) => {
    await connectChat(page, "sender");
    await connectChat(page, "member");
    const group = unique("group");
    await call(page, "member", "chatHub", "JoinGroup", group);
    await call(page, "sender", "chatHub", "SendToGroup", group, "first");
    const [first] = await page.waitForEvents("member", "chatHub", "groupMessage", 1, group);
    assert.deepStrictEqual(first.args, [group, "first"]);

    await call(page, "member", "chatHub", "LeaveGroup", group);
    await call(page, "sender", "chatHub", "SendToGroup", group, "after-leave");
    // A broadcast sent after that reaches the member through the same backend connection and the
    // same legacy message stream, so once it is there a wrongly delivered group message would be too.
    const marker = unique("marker");
    await call(page, "sender", "chatHub", "Broadcast", marker);
    await page.waitForEvents("member", "chatHub", "broadcast", 1, marker);

    const atMember = (await page.events("member", "chatHub", "groupMessage")).map((e) => e.args);
    assert.deepStrictEqual(atMember, [[group, "first"]]);
    assert.deepStrictEqual(await page.events("sender", "chatHub", "groupMessage"), [], "the sender never joined");
});

scenario("two hubs on one connection: chatHub and statusHub both work", async (page) => {
    const { state, backendId: chatId } = await connectChat(page, "a",
        { chatHub: ["welcome", "broadcast"], statusHub: ["status"] });
    assert.deepStrictEqual(JSON.parse(state.connectionData).map((h) => h.name).sort(), ["chathub", "statushub"]);
    const [pushed] = await page.waitForEvents("a", "statusHub", "status", 1);
    assert.equal(pushed.args.length, 1);
    const statusId = pushed.args[0].connectionId;
    assert.equal(pushed.args[0].hub, "status");
    assert.match(statusId, CORE_CONNECTION_ID);
    if (REFERENCE) {
        assert.equal(statusId, chatId, "the 2.x server's hubs share the legacy connection id (difference row 1)");
        assert.equal(statusId, state.id);
    } else {
        assert.notEqual(statusId, chatId, "each backend hub has its own connection");
    }

    // Calls to both hubs in flight at once: each answer must reach its own call.
    const [sum, echoed, status, chatWho, statusWho] = await Promise.all([
        value(page, "a", "chatHub", "Add", 20, 22),
        value(page, "a", "statusHub", "Echo", { a: [1, "b"] }),
        value(page, "a", "statusHub", "GetStatus"),
        value(page, "a", "chatHub", "WhoAmI"),
        value(page, "a", "statusHub", "WhoAmI"),
    ]);
    assert.equal(sum, 42);
    assert.deepStrictEqual(echoed, { a: [1, "b"] });
    assert.equal(status.hub, "status");
    assert.equal(status.connectionId, statusId);
    assert.ok(Number.isInteger(status.connected) && status.connected >= 1, `connected=${status.connected}`);
    assert.equal(chatWho.hub, "chat");
    assert.equal(chatWho.connectionId, chatId);
    assert.equal(statusWho.hub, "status");
    assert.equal(statusWho.connectionId, statusId);
    // One welcome and one status push: each hub's OnConnectedAsync ran once.
    assert.equal((await page.events("a", "chatHub", "welcome")).length, 1);
    assert.equal((await page.events("a", "statusHub", "status")).length, 1);
});

scenario("streaming method Counter: every item as progress, then completion", async (page) => {
    await connectChat(page, "a");
    assertCounterOutcome(await call(page, "a", "chatHub", "Counter", 5, 20), 5);
    // The backend's own record: the stream ran to its end (not cancelled).
    assert.equal(await value(page, "a", "chatHub", "GetStreamStatus"), "completed");
});

scenario("stop(): the backend runs OnDisconnectedAsync without error", async (page) => {
    const { backendId } = await connectChat(page, "gone");
    await connectChat(page, "probe");
    assert.deepStrictEqual(await disconnectInfo(page, "probe", backendId), { disconnected: false, hub: null, error: null });
    const stopped = await page.stop("gone");
    assert.equal(stopped.state, "disconnected");
    const info = await waitForDisconnect(page, "probe", backendId);
    assert.deepStrictEqual(info, { disconnected: true, hub: "chat", error: null });
});

scenario("reconnect: a dropped socket comes back and nothing broadcast meanwhile is lost or doubled", async (page) => {
    const { state: before, backendId } = await connectChat(page, "a");
    await connectChat(page, "b");
    const tag = unique("rc");
    const sent = [];
    async function broadcast(label) {
        const m = `${tag}-${label}`;
        sent.push(m);
        await call(page, "b", "chatHub", "Broadcast", m);
        return m;
    }

    await broadcast("before-1");
    const lastBefore = await broadcast("before-2");
    await page.waitForEvents("a", "chatHub", "broadcast", 1, lastBefore);

    // Drop a's socket from the client side (close code 4000, no /abort): to the server this is a
    // lost transport, not a stop. The client reconnects after its reconnectDelay.
    const drop = await page.dropSocket("a", 4000, "legacy test: simulated drop");
    assert.ok(drop.dropped, "a had a live socket");
    for (let i = 1; i <= 5; i++) {
        await broadcast(`away-${i}`);
    }
    const whileAway = await page.state("a");
    assert.equal(whileAway.counts.reconnected, 0,
        "the client came back before the 'away' broadcasts were sent; the test did not test a gap");

    const back = await page.waitForCount("a", "reconnected", 1, 20000);
    assert.equal(back.state, "connected");
    assert.equal(back.id, before.id, "same legacy connection after the reconnect");
    assert.equal(back.counts.reconnecting, 1);

    await broadcast("after-1");
    const last = await broadcast("after-2");
    await page.waitForEvents("a", "chatHub", "broadcast", 1, last);
    // A duplicate of an earlier message would come before the live ones; a duplicate of after-1
    // would come before after-2, which travels behind it on the same stream.
    assert.deepStrictEqual(broadcastsAt(await page.events("a", "chatHub", "broadcast"), tag), sent);

    // The backend connection survived: no second welcome, same id, no OnDisconnectedAsync, and
    // calls work again (the jQuery client restarts its invocation ids at 0 after a reconnect).
    assert.equal((await page.events("a", "chatHub", "welcome")).length, 1, "OnConnectedAsync ran again");
    assert.equal((await value(page, "a", "chatHub", "WhoAmI")).connectionId, backendId);
    assert.equal(await value(page, "a", "chatHub", "Add", 7, 8), 15);
    assert.deepStrictEqual(await disconnectInfo(page, "b", backendId), { disconnected: false, hub: null, error: null });
}, {
    // Over longPolling the jQuery client itself reports the aborted poll ("An error occurred using
    // longPolling. Status = lostConnection") before it reconnects: that one error is the drop.
    tolerate: (error) => EXPECTED_TRANSPORT === "longPolling" && error.transport === "longPolling" &&
        error.source?.statusText === "lostConnection",
});

// Legacy pages pass an access token in the query string (connection.qs): the relay carries it to
// the backend hub, whose [Authorize] accepts only the test token.
scenario("SecureHub: the test token in the query string (connection.qs)", async (page) => {
    await page.create("s", { secureHub: ["noop"] }, { qs: { access_token: "good-token" } });
    await startOk(page, "s");
    const who = await value(page, "s", "secureHub", "WhoAmI");
    assert.equal(who.hub, "secure");
    assert.equal(who.user, "good-user", `the token was not accepted: ${JSON.stringify(who)}`);
    assert.equal(who.accessToken, "good-token");
    assert.deepStrictEqual(await value(page, "s", "secureHub", "Echo", [1, "a"]), [1, "a"]);
});

scenario("SecureHub: a bad token or none, start fails", async (page) => {
    for (const [name, options] of [["bad", { qs: { access_token: "bad-token" } }], ["none", {}]]) {
        await page.create(name, { secureHub: ["noop"] }, options);
        const state = await page.start(name);
        assert.ok(state.failed, `start with ${name} token succeeded: ${JSON.stringify(state)}`);
        assert.notEqual(state.state, "connected");
    }
}, { expectErrors: true });

scenario("a cookie the page sets reaches the backend with the client's requests", async (page) => {
    const session = unique("c");
    await page.setCookie(`session=${session}`);
    const { backendId } = await connectChat(page, "a");
    assert.equal((await value(page, "a", "chatHub", "WhoAmI")).connectionId, backendId);
    const { cookie } = await value(page, "a", "chatHub", "RequestDetails");
    assert.ok((cookie ?? "").split("; ").includes(`session=${session}`), `the backend saw Cookie ${JSON.stringify(cookie)}`);
});

// One connection's whole life in one scenario, with small payloads only: what
// scripts/capture-legacy-fixtures.sh records as fixtures/legacy/jquery-*-session.jsonl (selected by
// the name prefix "fixture session"). Expected values: the backend's hub code and spec §6.2/§6.3.
scenario("fixture session: Echo of several types, HubException, broadcast, Counter progress, ping, stop", async (page) => {
    await connectChat(page, "a");
    const values = ["hello", "h\u00e9llo \u65e5\u672c \u{1F389}", 42, -7, Number.MAX_SAFE_INTEGER, 3.141592653589793,
        true, [1, "two", null, [3]], { name: "n", inner: { deep: [null, false] } }];
    for (const v of values) {
        assert.deepStrictEqual(await call(page, "a", "chatHub", "Echo", v),
            { ok: true, value: v, hasValue: true, progress: [] }, `Echo of ${JSON.stringify(v)}`);
    }
    assert.equal((await call(page, "a", "chatHub", "Echo", null)).hasValue, false, "Echo of null leaves R out");
    assert.equal(await value(page, "a", "chatHub", "Add", 40, 2), 42);

    const failure = await page.invoke("a", "chatHub", "ThrowHubException", "fixture failure \"q\"");
    assert.equal(failure.ok, false, "ThrowHubException did not fail");
    assert.equal(failure.error.source, "HubException");
    assert.equal(failure.error.message, "fixture failure \"q\"");

    await call(page, "a", "chatHub", "Broadcast", "fixture broadcast");
    const [received] = await page.waitForEvents("a", "chatHub", "broadcast", 1, "fixture broadcast");
    assert.deepStrictEqual(received.args, ["fixture broadcast"]);

    assertCounterOutcome(await call(page, "a", "chatHub", "Counter", 3, 10), 3);
    assert.deepStrictEqual(await page.ping("a"), { ok: true });

    const stopped = await page.stop("a");
    assert.equal(stopped.state, "disconnected");
});
