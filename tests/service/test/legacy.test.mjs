// Legacy ASP.NET SignalR 2.x clients in service mode: the stock jQuery client (signalr 2.4.3, in
// headless Chromium through tests/legacy/browser's harness; webSockets unless a test forces a
// transport per page) connects at the relay's /signalr; the relay asks the app's own negotiate (--app-negotiate board=..., ops=...) who the client is, and
// opens its hub connections on the app's server connections with a JSON handshake, exactly as a
// Core JSON client's. Stock @microsoft/signalr clients (JSON and MessagePack) share the hub.
//
// What is expected comes from the app's hub code (tests/service-app/Hubs/Board.cs, OpsHub.cs),
// its test authentication (TestUserAuthHandler: `?user=NAME` is who you are; /ops is
// [Authorize]) and the legacy wire protocol (a stream is progress then the result).
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    APP_URL, LEGACY_APP_PORT, RELAY_URL, connect, waitFor, messages, metrics, pollUntil, stopAll, startApp, stopApp,
} from "../lib.mjs";
import {
    BOARD_EVENTS, LEGACY_TRANSPORTS, invokeOk, legacyClient, useLegacyBrowser, withPage, withPages,
} from "../legacy-browser.mjs";

const T = { timeout: 120000 };

useLegacyBrowser();

test("a legacy client reaches the app's hub: OnConnected, calls, errors, its identity and a Core peer", T, () =>
    withPage(async (page) => {
        let core;
        try {
            const state = await legacyClient(page, "alice", "alice-l");
            // The app's Context.ConnectionId is the legacy connection id, a Core-style one.
            assert.match(state.id, /^[A-Za-z0-9_-]{22}$/);
            const [welcome] = await page.waitForEvents("alice", "board", "welcome", 1);
            assert.deepEqual(welcome.args, [state.id, "alice-l"]);
            assert.equal((await invokeOk(page, "alice", "board", "Add", 2, 3)).value, 5);
            const echoed = { text: "héllo \"x\"", n: 2 ** 53 - 1, list: [1, null, true] };
            assert.deepEqual((await invokeOk(page, "alice", "board", "Echo", echoed)).value, echoed);
            const failure = await page.invoke("alice", "board", "Fail", "no \"way\"");
            assert.equal(failure.ok, false);
            assert.equal(failure.error.message, "no \"way\"");
            const who = (await invokeOk(page, "alice", "board", "WhoAmI")).value;
            assert.equal(who.connectionId, state.id);
            assert.equal(who.userIdentifier, "alice-l");
            // A Core client joins: the legacy client hears OnConnected's Others send, and the
            // Core client reaches it by connection id.
            core = await connect({ user: "core-a" });
            await page.waitForEvents("alice", "board", "joined", 1, core.id);
            await core.connection.invoke("SendToConnection", state.id, "to legacy");
            const [priv] = await page.waitForEvents("alice", "board", "private", 1, core.id);
            assert.deepEqual(priv.args, [core.id, "to legacy"]);
            assert.deepEqual(await page.errors(), {});
        } finally {
            await stopAll(core);
        }
    }));

test("a group send reaches exactly its members, legacy on every transport and Core, JSON and MessagePack; leave and disconnect remove them", T, () =>
    withPages(LEGACY_TRANSPORTS, async (pages) => {
        const group = `g-${Date.now()}`;
        const memberships = async () => (await metrics())['signalr_relay_service_memberships{hub="board"}'];
        const base = await memberships();
        let json, pack, outsider, sender;
        try {
            // A member per legacy transport, each in its own page; a legacy outsider on webSockets.
            const members = [];
            for (const [i, page] of pages.entries()) {
                const state = await legacyClient(page, "member", `lm-${LEGACY_TRANSPORTS[i]}`);
                assert.equal(state.transport, LEGACY_TRANSPORTS[i]);
                members.push(state);
            }
            const [wsPage, ssePage, lpPage] = pages;
            await legacyClient(wsPage, "other", "lo");
            json = await connect({ user: "cj" });
            pack = await connect({ user: "cp", protocol: "messagepack" });
            outsider = await connect({ user: "co" });
            sender = await connect({ user: "cs", protocol: "messagepack" });
            for (const page of pages) await invokeOk(page, "member", "board", "AddToGroup", group);
            await json.connection.invoke("AddToGroup", group);
            await pack.connection.invoke("AddToGroup", group);
            assert.equal(await memberships(), base + 5);

            await sender.connection.invoke("SendToGroup", group, "one");
            await sender.connection.invoke("SendToAll", "marker-1"); // after "one", on every client
            for (const page of pages) {
                const [got] = await page.waitForEvents("member", "board", "groupMessage", 1, group);
                assert.deepEqual(got.args, [group, sender.id, "one"]);
            }
            for (const c of [json, pack]) await waitFor(c, (m) => m[0] === "groupMessage" && m[3] === "one", "one");
            await wsPage.waitForEvents("other", "board", "broadcast", 1, sender.id);
            await waitFor(outsider, (m) => m[0] === "broadcast" && m[2] === "marker-1", "marker-1");
            assert.equal((await wsPage.events("other", "board", "groupMessage")).length, 0);
            assert.equal(messages(outsider, "groupMessage", "one").length, 0);
            assert.equal(messages(sender, "groupMessage", "one").length, 0);

            // The webSockets and longPolling members leave, the serverSentEvents one and the JSON
            // one disconnect: only MessagePack's remains.
            for (const page of [wsPage, lpPage]) await invokeOk(page, "member", "board", "RemoveFromGroup", group);
            await ssePage.stop("member");
            await stopAll(json);
            await pollUntil(memberships, (n) => n === base + 1, "the relay's model to hold MessagePack's membership only");
            await sender.connection.invoke("SendToGroup", group, "two");
            await sender.connection.invoke("SendToAll", "marker-2");
            await waitFor(pack, (m) => m[0] === "groupMessage" && m[3] === "two", "two");
            for (const page of [wsPage, lpPage]) {
                await page.waitForEvents("member", "board", "broadcast", 2, sender.id);
                const memberGroup = await page.events("member", "board", "groupMessage");
                assert.deepEqual(memberGroup.map((e) => e.args[2]), ["one"]);
            }

            // The longPolling member, out of the group, sends to it: the Core member hears it.
            await invokeOk(lpPage, "member", "board", "SendToGroup", group, "from legacy");
            await waitFor(pack, (m) => m[0] === "groupMessage" && m[2] === members[2].id && m[3] === "from legacy", "legacy's send");
            for (const page of pages) assert.deepEqual(await page.errors(), {});
        } finally {
            await stopAll(json, pack, outsider, sender);
        }
    }));

test("Clients.User reaches a user's legacy and Core connections alike", T, () =>
    withPage(async (page) => {
        let core, sender;
        try {
            await legacyClient(page, "u1", "uma");
            await legacyClient(page, "u2", "uma");
            core = await connect({ user: "uma", protocol: "messagepack" });
            sender = await connect({ user: "sender-u" });
            const shared = "signalr_relay_legacy_shared_translations_total";
            const before = (await metrics())[shared];
            await sender.connection.invoke("SendToUser", "uma", "hi uma");
            for (const name of ["u1", "u2"]) {
                const [m] = await page.waitForEvents(name, "board", "userMessage", 1, sender.id);
                assert.deepEqual(m.args, [sender.id, "hi uma"]);
            }
            // One send, two legacy recipients: the second took the first's translation.
            assert.ok((await metrics())[shared] > before, `${shared} went from ${before}`);
            await waitFor(core, (m) => m[0] === "userMessage" && m[2] === "hi uma", "the Core connection's");
            const res = await fetch(`${APP_URL}/test/board/user/uma?message=from%20server`, { method: "POST" });
            assert.equal(res.status, 200);
            for (const name of ["u1", "u2"]) await page.waitForEvents(name, "board", "userMessage", 1, "server");
        } finally {
            await stopAll(core, sender);
        }
    }));

test("a streaming hub method called by a legacy client comes as progress, then its completion", T, () =>
    withPage(async (page) => {
        await legacyClient(page, "s", "streamer");
        const outcome = await invokeOk(page, "s", "board", "Counter", 4, 0);
        assert.deepEqual(outcome.progress, [0, 1, 2, 3]);
        assert.equal((await invokeOk(page, "s", "board", "GetStreamStatus")).value, "completed");
    }));

test("the app's [Authorize] refusal at its negotiate is the legacy client's; a known user gets in with its claims", T, async () => {
    await withPage(async (page) => {
        await page.create("anon", { ops: ["opsMessage"] });
        const refused = await page.start("anon");
        assert.ok(refused.failed, "the start of an anonymous client of /ops must fail");
        const data = encodeURIComponent('[{"name":"ops"}]');
        const direct = await fetch(`${RELAY_URL}/signalr/negotiate?clientProtocol=2.1&connectionData=${data}`);
        assert.equal(direct.status, 401);
    });
    await withPage(async (page) => {
        await page.create("admin", { ops: ["opsMessage"] }, { qs: { user: "ada", role: "admin" } });
        const state = await page.start("admin");
        assert.equal(state.failed, undefined, JSON.stringify(state.failed));
        assert.equal((await invokeOk(page, "admin", "ops", "Ping")).value, "pong");
        assert.equal((await invokeOk(page, "admin", "ops", "AdminOnly")).value, "admin ok"); // the role claim, mapped
        const who = (await invokeOk(page, "admin", "ops", "WhoAmI")).value;
        assert.equal(who.userIdentifier, "ada");
        assert.deepEqual(await page.errors(), {});
    });
});

test("killing the app closes its legacy clients with an error, as its Core ones", T, () =>
    withPage(async (page) => {
        assert.ok(LEGACY_APP_PORT, "LEGACY_APP_PORT is not set: run through scripts/service-tests.sh");
        // Sticky: its clients are bound to this app's server connections, not the suite's app's.
        const app = await startApp({ StickyMode: "Required" }, LEGACY_APP_PORT);
        let core;
        try {
            const state = await legacyClient(page, "k", "kill-l", { lboard: BOARD_EVENTS });
            await page.waitForEvents("k", "lboard", "welcome", 1, state.id);
            assert.equal((await invokeOk(page, "k", "lboard", "Add", 40, 2)).value, 42);
            core = await connect({ user: "kill-c", appUrl: app.url, reconnect: true });
            app.proc.kill("SIGKILL");
            await waitFor(core, (e) => e[0] === "reconnecting" || e[0] === "close", "the Core client's end", "events");
            const ended = await page.waitForCount("k", "disconnected", 1, 60000);
            assert.equal(ended.state, "disconnected");
            const errors = (await page.errors()).k || [];
            assert.ok(errors.some((e) => /lboard/.test(JSON.stringify(e))),
                `the client must hear that its hub went: ${JSON.stringify(errors)}`);
        } finally {
            await stopAll(core);
            await stopApp(app, "SIGKILL");
        }
    }));

// The transport the harness forces (SIGNALR_LEGACY_TRANSPORT, default webSockets): over
// longPolling the jQuery client itself reports the aborted poll of a drop.
const dropError = (e) => e.transport === "longPolling" && e.source?.statusText === "lostConnection";

test("a dropped legacy socket comes back: what the app sent meanwhile arrives once, in order, on the same app connection", T, () =>
    withPage(async (page) => {
        let sender;
        try {
            const before = await legacyClient(page, "r", "rc-l");
            await page.waitForEvents("r", "board", "welcome", 1, before.id);
            sender = await connect({ user: "rc-sender" });
            const tag = `rc-${Date.now()}`;
            const sent = [];
            const broadcast = async (label) => {
                sent.push(`${tag}-${label}`);
                await sender.connection.invoke("SendToAll", `${tag}-${label}`);
            };
            await broadcast("before");
            await page.waitForEvents("r", "board", "broadcast", 1, sender.id);
            const drop = await page.dropSocket("r", 4000, "service legacy test: simulated drop");
            assert.ok(drop.dropped, "r had a live socket");
            for (let i = 1; i <= 3; i++) await broadcast(`away-${i}`);
            assert.equal((await page.state("r")).counts.reconnected, 0, "came back before the gap was made");
            const back = await page.waitForCount("r", "reconnected", 1, 30000);
            assert.equal(back.id, before.id);
            await broadcast("after");
            await page.waitForEvents("r", "board", "broadcast", sent.length, sender.id);
            const got = (await page.events("r", "board", "broadcast")).map((e) => e.args[1]).filter((m) => m.startsWith(tag));
            assert.deepEqual(got, sent);
            // The app's connection lived on: one welcome, no OnDisconnected for it.
            assert.equal((await page.events("r", "board", "welcome")).length, 1);
            const events = await sender.connection.invoke("GetEvents", before.id);
            assert.deepEqual(events.map((e) => e.event), ["connected"]);
            assert.equal((await invokeOk(page, "r", "board", "Add", 7, 8)).value, 15);
            const left = Object.values(await page.errors()).flat().filter((e) => !dropError(e));
            assert.deepEqual(left, []);
        } finally {
            await stopAll(sender);
        }
    }));

test("two of the app's hubs on one legacy connection: each has the client's identity, pushes and calls of both", T, () =>
    withPage(async (page) => {
        const state = await legacyClient(page, "two", "two-hubs", { board: BOARD_EVENTS, ops: ["opsMessage"] });
        await page.waitForEvents("two", "board", "welcome", 1, state.id);
        const [board, ops] = await Promise.all([
            invokeOk(page, "two", "board", "WhoAmI"), invokeOk(page, "two", "ops", "WhoAmI"),
        ]);
        assert.deepEqual([board.value.hub, board.value.connectionId, board.value.userIdentifier], ["board", state.id, "two-hubs"]);
        // The SDK keeps one table of connection ids for all of an app's hubs: the second hub knows
        // the client by an id of its own (as every hub does in proxy mode).
        assert.deepEqual([ops.value.hub, ops.value.userIdentifier], ["ops", "two-hubs"]);
        assert.match(ops.value.connectionId, /^[A-Za-z0-9_-]{22}$/);
        assert.notEqual(ops.value.connectionId, state.id);
        await invokeOk(page, "two", "ops", "Notify", "to all ops");
        const [m] = await page.waitForEvents("two", "ops", "opsMessage", 1, "two-hubs");
        assert.deepEqual(m.args, ["two-hubs", "to all ops"]);
        assert.deepEqual(await page.errors(), {});
    }));
