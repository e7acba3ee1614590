// Service mode: a legacy client invokes a hub it did not list in its connectionData. The original
// ASP.NET SignalR 2.x server (and the relay in proxy mode) lets a client invoke any hub it knows by
// name; pushes of such a hub do not reach it (it is not subscribed). In service mode the relay
// must first learn who the client is on that hub: it asks the app's own negotiate for the hub
// (--app-negotiate ops=...), with the headers and query of the client's connect, holds the
// invocations meanwhile, then opens the hub connection with the claims of the app's token, or
// answers every held invocation with the app's refusal as a legacy hub error.
//
// The client is the stock jQuery client in Chromium, forced to each legacy transport in turn
// (webSockets, serverSentEvents, longPolling: the calls go on /send there and their results come
// in the /send's answer). The jQuery client lists only hubs with a handler: `ops: []` makes a
// proxy for /ops without listing it. The app's /ops hub is [Authorize] (TestUserAuthHandler:
// ?user=NAME, &role=R), /board is anonymous. The stock legacy .NET client's side of this is in
// tests/service/legacy-dotnet.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { APP_URL, connect, stopAll, waitFor } from "../lib.mjs";
import { BOARD_EVENTS, LEGACY_TRANSPORTS, invokeOk, useLegacyBrowser, withPage } from "../legacy-browser.mjs";

const T = { timeout: 120000 };

useLegacyBrowser();

async function started(page, name, hubs, qs, transport) {
    await page.create(name, hubs, qs ? { qs } : {});
    const state = await page.start(name);
    assert.equal(state.failed, undefined, `start of ${name}: ${JSON.stringify(state.failed)}`);
    assert.equal(state.transport, transport);
    return state;
}

// A Core client of /ops (it lists the hub: the app's pushes there reach it) recording opsMessage.
async function opsWatcher(user) {
    const watcher = await connect({ user, hub: "ops" });
    watcher.connection.on("opsMessage", (...args) => {
        watcher.got.push(["opsMessage", ...args]);
        for (const w of watcher.waiters.splice(0)) w();
    });
    return watcher;
}

for (const transport of LEGACY_TRANSPORTS) {
    test(`${transport}: an unlisted hub of the app answers the client's calls with the identity the app's negotiate gives`, T, () =>
        withPage(async (page) => {
            const user = `ada-${transport}`;
            let watcher, sender;
            try {
                const state = await started(page, "ada", { board: BOARD_EVENTS, ops: [] }, { user, role: "admin" }, transport);
                // The first calls go out together: both are held while the app is asked, then sent in order.
                const [ping, admin] = await Promise.all([
                    page.invoke("ada", "ops", "Ping"), page.invoke("ada", "ops", "AdminOnly"),
                ]);
                assert.ok(ping.ok, JSON.stringify(ping.error));
                assert.equal(ping.value, "pong");
                assert.ok(admin.ok, JSON.stringify(admin.error)); // the role claim of the app's token
                assert.equal(admin.value, "admin ok");
                const who = (await invokeOk(page, "ada", "ops", "WhoAmI")).value;
                assert.deepEqual([who.hub, who.userIdentifier], ["ops", user]);
                // The app's OnConnected saw this connection on /ops; the listed hub works as before.
                const onOps = await (await fetch(`${APP_URL}/test/connections?hub=ops`)).json();
                assert.ok(onOps.some((c) => c.connectionId === who.connectionId), JSON.stringify(onOps));
                // The unlisted hub's pushes: a send of the client's call reaches the hub's subscribers.
                watcher = await opsWatcher(`ops-watch-${transport}`);
                await invokeOk(page, "ada", "ops", "Notify", `from ${transport}`);
                await waitFor(watcher, (m) => m[0] === "opsMessage" && m[1] === user && m[2] === `from ${transport}`,
                    "the unlisted hub's push at its Core subscriber");
                // The listed hub's pushes keep reaching the client, on the same transport.
                assert.equal((await invokeOk(page, "ada", "board", "Add", 1, 2)).value, 3);
                const board = (await invokeOk(page, "ada", "board", "WhoAmI")).value;
                assert.equal(board.connectionId, state.id);
                assert.notEqual(who.connectionId, state.id); // one app: one id per hub, as at negotiate
                sender = await connect({ user: `board-sender-${transport}` });
                await sender.connection.invoke("SendToConnection", state.id, "after ops");
                const [priv] = await page.waitForEvents("ada", "board", "private", 1, sender.id);
                assert.deepEqual(priv.args, [sender.id, "after ops"]);
                assert.equal((await page.state("ada")).transport, transport);
                assert.deepEqual(await page.errors(), {});
            } finally {
                await stopAll(watcher, sender);
            }
        }, { transport }));

    test(`${transport}: an unlisted hub the app refuses the client, or an unknown one, answers the calls with an error; the connection lives on`, T, () =>
        withPage(async (page) => {
            await started(page, "anon", { board: BOARD_EVENTS, ops: [], nohub: [] }, null, transport);
            const [first, second] = await Promise.all([page.invoke("anon", "ops", "Ping"), page.invoke("anon", "ops", "Notify", "x")]);
            for (const refused of [first, second]) {
                assert.equal(refused.ok, false);
                assert.match(refused.error.message, /'ops'/);
                assert.match(refused.error.message, /refused the client \(401/);
            }
            // Asked again on the next call (the app may take the client now); still refused.
            const again = await page.invoke("anon", "ops", "Ping");
            assert.equal(again.ok, false);
            assert.match(again.error.message, /401/);
            // A hub the app does not have: over a WebSocket a hub error; a /send (serverSentEvents,
            // longPolling) is answered 500, as the original's (the jQuery client: "Send failed.").
            const unknown = await page.invoke("anon", "nohub", "Ping");
            assert.equal(unknown.ok, false);
            const overSend = transport !== "webSockets";
            assert.equal(unknown.error.message, overSend ? "Error: Send failed." : "'nohub' Hub could not be resolved.");
            assert.equal((await invokeOk(page, "anon", "board", "Add", 20, 22)).value, 42);
            const state = await page.state("anon");
            assert.deepEqual([state.state, state.transport], ["connected", transport]);
            const errors = (await page.errors()).anon || [];
            assert.deepEqual(errors.map((e) => e.message), overSend ? ["Send failed."] : []);
        }, { transport }));
}
