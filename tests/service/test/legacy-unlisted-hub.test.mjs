// Service mode: a legacy client invokes a hub it did not list in its connectionData. The original
// ASP.NET SignalR 2.x server (and the relay in proxy mode) lets a client invoke any hub it knows by
// name; pushes of such a hub do not reach it (it is not subscribed). In service mode the relay
// must first learn who the client is on that hub: it asks the app's own negotiate for the hub
// (--app-negotiate ops=...), with the headers and query of the client's connect, holds the
// invocations meanwhile, then opens the hub connection with the claims of the app's token, or
// answers every held invocation with the app's refusal as a legacy hub error.
//
// The client is the stock jQuery client in Chromium. The jQuery client lists only hubs with a
// handler: `ops: []` makes a proxy for /ops without listing it. The app's /ops hub is [Authorize]
// (TestUserAuthHandler: ?user=NAME, &role=R), /board is anonymous.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { APP_URL } from "../lib.mjs";
import { BOARD_EVENTS, invokeOk, useLegacyBrowser, withPage } from "../legacy-browser.mjs";

const T = { timeout: 120000 };

useLegacyBrowser();

async function started(page, name, hubs, qs) {
    await page.create(name, hubs, qs ? { qs } : {});
    const state = await page.start(name);
    assert.equal(state.failed, undefined, `start of ${name}: ${JSON.stringify(state.failed)}`);
    return state;
}

test("an unlisted hub of the app answers the client's calls with the identity the app's negotiate gives", T, () =>
    withPage(async (page) => {
        const state = await started(page, "ada", { board: BOARD_EVENTS, ops: [] }, { user: "ada", role: "admin" });
        // The first calls go out together: both are held while the app is asked, then sent in order.
        const [ping, admin] = await Promise.all([
            page.invoke("ada", "ops", "Ping"), page.invoke("ada", "ops", "AdminOnly"),
        ]);
        assert.ok(ping.ok, JSON.stringify(ping.error));
        assert.equal(ping.value, "pong");
        assert.ok(admin.ok, JSON.stringify(admin.error)); // the role claim of the app's token
        assert.equal(admin.value, "admin ok");
        const who = (await invokeOk(page, "ada", "ops", "WhoAmI")).value;
        assert.deepEqual([who.hub, who.userIdentifier], ["ops", "ada"]);
        // The app's OnConnected saw this connection on /ops; the listed hub works as before.
        const onOps = await (await fetch(`${APP_URL}/test/connections?hub=ops`)).json();
        assert.ok(onOps.some((c) => c.connectionId === who.connectionId), JSON.stringify(onOps));
        assert.equal((await invokeOk(page, "ada", "board", "Add", 1, 2)).value, 3);
        const board = (await invokeOk(page, "ada", "board", "WhoAmI")).value;
        assert.equal(board.connectionId, state.id);
        assert.notEqual(who.connectionId, state.id); // one app: one id per hub, as at negotiate
        assert.deepEqual(await page.errors(), {});
    }));

test("an unlisted hub the app refuses the client, or an unknown one, answers the calls with an error; the connection lives on", T, () =>
    withPage(async (page) => {
        await started(page, "anon", { board: BOARD_EVENTS, ops: [], nohub: [] });
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
        const unknown = await page.invoke("anon", "nohub", "Ping");
        assert.equal(unknown.ok, false);
        assert.equal(unknown.error.message, "'nohub' Hub could not be resolved.");
        assert.equal((await invokeOk(page, "anon", "board", "Add", 20, 22)).value, 42);
        assert.equal((await page.state("anon")).state, "connected");
        assert.deepEqual(await page.errors(), {});
    }));
