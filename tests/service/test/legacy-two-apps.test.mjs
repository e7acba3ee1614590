// Service mode, two processes of the app on the same hub, with legacy clients: the relay spreads
// new connections over the server connections of both (fewest clients first), legacy (the stock
// jQuery client in Chromium, whose negotiate the relay asks of the first app) and Core alike; a
// group send from either process reaches the members bound to both; killing one process closes
// exactly its clients. A legacy client whose app went gets what proxy mode gives a legacy client
// whose backend went: an error naming the hub, then the end of its connection (the relay's
// session_end with the link's failure: an error frame, the socket closed; jQuery reports the
// error and `disconnected`). The others keep working.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { APP_URL, connect, messages, metrics, pollUntil, startApp, stopAll, stopApp, waitFor } from "../lib.mjs";
import { BOARD_EVENTS, invokeOk, legacyClient, useLegacyBrowser, withPage } from "../legacy-browser.mjs";

const T = { timeout: 150000 };
const CLIENTS = 'signalr_relay_service_clients{hub="board"}';

useLegacyBrowser();

const boundTo = async (url) => (await (await fetch(`${url}/test/connections?hub=board`)).json()).map((c) => c.connectionId);

test("two app processes: legacy and Core clients on both, group sends from either reach all, killing one closes exactly its clients", T, () =>
    withPage(async (page) => {
        const group = `two-apps-legacy-${Date.now()}`;
        const second = await startApp();
        const core = [];
        try {
            // Clients until each process has a legacy and a Core one (fewest clients first: 2 + 2 do).
            const legacy = {};
            const where = async () => {
                const [first, other] = await Promise.all([boundTo(APP_URL), boundTo(second.url)]);
                const side = (id) => (first.includes(id) ? "first" : other.includes(id) ? "second" : "none");
                return {
                    legacy: Object.fromEntries(Object.entries(legacy).map(([name, id]) => [name, side(id)])),
                    core: core.map((c) => side(c.id)),
                };
            };
            let spread;
            for (let i = 0; i < 8; i++) {
                const name = `l${i}`;
                legacy[name] = (await legacyClient(page, name, `two-l${i}`)).id;
                core.push(await connect({ user: `two-c${i}`, protocol: i % 2 ? "messagepack" : "json",
                    appUrl: i % 2 ? second.url : APP_URL }));
                spread = await where();
                const sides = (list) => new Set(list);
                const l = sides(Object.values(spread.legacy)), c = sides(spread.core);
                if (i >= 1 && l.has("first") && l.has("second") && c.has("first") && c.has("second")) break;
            }
            assert.ok(!Object.values(spread.legacy).includes("none"), JSON.stringify(spread));
            assert.ok(new Set(Object.values(spread.legacy)).size === 2, `legacy clients on both: ${JSON.stringify(spread)}`);
            assert.ok(new Set(spread.core).size === 2, `Core clients on both: ${JSON.stringify(spread)}`);
            const names = Object.keys(legacy);
            for (const name of names) await invokeOk(page, name, "board", "AddToGroup", group);
            for (const c of core) await c.connection.invoke("AddToGroup", group);

            // From outside a hub call, on each process in turn: every member gets each send once.
            const sendFrom = async (url, text) => {
                const res = await fetch(`${url}/test/board/group/${group}?message=${encodeURIComponent(text)}`, { method: "POST" });
                assert.equal(res.status, 200);
            };
            for (const [url, text] of [[APP_URL, "from the first"], [second.url, "from the second"]]) {
                await sendFrom(url, text);
                for (const c of core) await waitFor(c, (m) => m[0] === "groupMessage" && m[3] === text, `"${text}"`);
            }
            for (const name of names) {
                await page.waitForEvents(name, "board", "groupMessage", 2, group);
                const got = (await page.events(name, "board", "groupMessage")).map((e) => e.args.slice(1));
                assert.deepEqual(got, [["server", "from the first"], ["server", "from the second"]], name);
            }

            // The second process dies: exactly its clients go.
            const onSecond = names.filter((n) => spread.legacy[n] === "second");
            const onFirst = names.filter((n) => spread.legacy[n] === "first");
            const coreFirst = core.filter((_, i) => spread.core[i] === "first");
            const coreSecond = core.filter((_, i) => spread.core[i] === "second");
            const before = (await metrics())[CLIENTS];
            second.proc.kill("SIGKILL");
            for (const name of onSecond) {
                const ended = await page.waitForCount(name, "disconnected", 1, 30000);
                assert.equal(ended.state, "disconnected");
                assert.ok(ended.errors.some((e) => /'board'/.test(JSON.stringify(e))),
                    `${name} must hear that its hub went: ${JSON.stringify(ended.errors)}`);
            }
            for (const c of coreSecond) await waitFor(c, (e) => e[0] === "close", "the Core client's close", "events");
            await pollUntil(async () => (await metrics())[CLIENTS], (n) => n === before - onSecond.length - coreSecond.length,
                `${CLIENTS} to lose exactly the second process's ${onSecond.length + coreSecond.length} clients`, 20000, 200);

            // The first process's clients work on: calls, and its group sends reach them all.
            for (const name of onFirst) {
                assert.equal((await invokeOk(page, name, "board", "Add", 40, 2)).value, 42);
                const s = await page.state(name);
                assert.equal(s.state, "connected");
                assert.deepEqual([s.counts.disconnected, s.counts.reconnecting], [0, 0]);
            }
            for (const c of coreFirst) assert.deepEqual(c.events, []);
            await sendFrom(APP_URL, "after the kill");
            for (const c of coreFirst) await waitFor(c, (m) => m[0] === "groupMessage" && m[3] === "after the kill", "after the kill");
            for (const name of onFirst) await page.waitForEvents(name, "board", "groupMessage", 3, group);
            for (const c of coreFirst) assert.equal(messages(c, "groupMessage", "from the second").length, 1);
            const errors = await page.errors();
            for (const name of onSecond) delete errors[name];
            assert.deepEqual(errors, {});
        } finally {
            await stopAll(...core);
            await stopApp(second, "SIGKILL");
        }
    }));
