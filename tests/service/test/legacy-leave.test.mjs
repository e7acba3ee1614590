// Service mode: a legacy client that leaves a group, or whose connection ends, is no longer a
// member. Legacy clients (the stock jQuery client in Chromium) and Core clients (JSON and
// MessagePack) join one group through the app's hub method (Board.AddToGroup: Groups.AddToGroupAsync,
// an AddToGroup the relay acks); then the legacy ones go, each its own way:
//   - leave: the app's RemoveFromGroup, the connection stays (it still hears broadcasts);
//   - stop: jQuery's connection.stop(), which sends /abort;
//   - aborted by the app: Board.AbortMe (Context.Abort), the app closes the connection;
//   - dropped: its browser goes without /abort (jQuery's unload handler removed, as in a crash),
//     so the relay keeps the connection for
//     the client's reconnect until --legacy-disconnect-timeout (+ the original's 5 s) ends it.
// After each, a group send reaches exactly the members left, legacy and Core, and the relay's
// gauges of the hub (signalr_relay_service_memberships and _groups) come back to where they were.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { APP_URL, connect, messages, metrics, pollUntil, stopAll, waitFor } from "../lib.mjs";
import { BOARD_EVENTS, invokeOk, legacyClient, useLegacyBrowser, withPage } from "../legacy-browser.mjs";

const T = { timeout: 150000 };
const MEMBERSHIPS = 'signalr_relay_service_memberships{hub="board"}';
const GROUPS = 'signalr_relay_service_groups{hub="board"}';

useLegacyBrowser();

async function gauges() {
    const m = await metrics();
    return { memberships: m[MEMBERSHIPS], groups: m[GROUPS] };
}

// Waits until the hub's gauges are `want` (what the relay's model holds once the leaves are done).
async function gaugesBecome(want, what, timeoutMs = 20000) {
    await pollUntil(gauges, (g) => g.memberships === want.memberships && g.groups === want.groups,
        `${what}: gauges ${JSON.stringify(want)}`, timeoutMs, 200);
}

test("legacy members that leave, stop, are aborted or drop are out of the group; the others, legacy and Core, still get its sends", T, () =>
    withPage(async (page) => {
        const group = `leave-${Date.now()}`;
        const base = await gauges();
        assert.equal(typeof base.memberships, "number", "the relay reports signalr_relay_service_memberships for board");
        let json, pack, sender;
        try {
            const names = ["leaver", "stopper", "aborted", "stays"];
            const ids = {};
            for (const name of names) ids[name] = (await legacyClient(page, name, `lv-${name}`)).id;
            json = await connect({ user: "lv-json" });
            pack = await connect({ user: "lv-pack", protocol: "messagepack" });
            sender = await connect({ user: "lv-sender" });
            for (const name of names) await invokeOk(page, name, "board", "AddToGroup", group);
            await json.connection.invoke("AddToGroup", group);
            await pack.connection.invoke("AddToGroup", group);

            // The dropped one: in a page of its own, whose browser context goes without /abort.
            await withPage(async (other) => {
                const dropped = await legacyClient(other, "dropped", "lv-dropped");
                ids.dropped = dropped.id;
                await invokeOk(other, "dropped", "board", "AddToGroup", group);
                await gaugesBecome({ memberships: base.memberships + 7, groups: base.groups + 1 }, "7 members");
                await sender.connection.invoke("SendToGroup", group, "one");
                await other.waitForEvents("dropped", "board", "groupMessage", 1, group);
                // As a browser that crashes or loses the network: jQuery's unload handler (a
                // synchronous /abort) does not run, the sockets just go.
                await other.page.evaluate(() => window.jQuery(window).off("unload beforeunload"));
                await other.context.close();
            });
            for (const name of names) await page.waitForEvents(name, "board", "groupMessage", 1, group);
            for (const c of [json, pack]) await waitFor(c, (m) => m[0] === "groupMessage" && m[3] === "one", "one");

            // leave, stop, abort: out of the group at once.
            await invokeOk(page, "leaver", "board", "RemoveFromGroup", group);
            await page.stop("stopper");
            await page.invoke("aborted", "board", "AbortMe"); // its answer is the app closing it
            await page.waitForCount("aborted", "disconnected", 1, 30000);
            await gaugesBecome({ memberships: base.memberships + 4, groups: base.groups + 1 }, "leave, stop and abort");
            await sender.connection.invoke("SendToGroup", group, "two");
            await sender.connection.invoke("SendToAll", "marker-2"); // after "two" on every connection
            await page.waitForEvents("stays", "board", "groupMessage", 2, group);
            await page.waitForEvents("leaver", "board", "broadcast", 1, sender.id);
            for (const c of [json, pack]) await waitFor(c, (m) => m[0] === "groupMessage" && m[3] === "two", "two");
            assert.deepEqual((await page.events("leaver", "board", "groupMessage")).map((e) => e.args[2]), ["one"]);

            // The dropped one: out once the relay gave up on its reconnect (the app sees it leave).
            await pollUntil(async () => (await (await fetch(`${APP_URL}/test/connections?hub=board`)).json()),
                (live) => !live.some((c) => c.connectionId === ids.dropped), "the app to see the dropped client go",
                60000, 500);
            await gaugesBecome({ memberships: base.memberships + 3, groups: base.groups + 1 }, "the drop");
            await sender.connection.invoke("SendToGroup", group, "three");
            await page.waitForEvents("stays", "board", "groupMessage", 3, group);
            for (const c of [json, pack]) await waitFor(c, (m) => m[0] === "groupMessage" && m[3] === "three", "three");
            for (const c of [json, pack]) assert.equal(messages(c, "groupMessage", "one").length, 1);
            const got = (await page.events("stays", "board", "groupMessage")).map((e) => e.args[2]);
            assert.deepEqual(got, ["one", "two", "three"]);

            // The last members go (a Core one by stopping): the group itself goes.
            await invokeOk(page, "stays", "board", "RemoveFromGroup", group);
            await stopAll(json);
            await pack.connection.invoke("RemoveFromGroup", group);
            await gaugesBecome(base, "every member gone");
            const errors = await page.errors();
            delete errors.aborted; // the app closed it: jQuery reports that
            assert.deepEqual(errors, {});
        } finally {
            await stopAll(json, pack, sender);
        }
    }));
