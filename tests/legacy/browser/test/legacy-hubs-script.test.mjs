// GET <endpoint>/hubs, the generated hub proxy script, as a page written for the original server
// loads it: <script src="/signalr/hubs"> after jquery.signalR, then only $.connection.chatHub.server.*
// and .client.* (headless Chromium, the stock jQuery client 2.4.3). Against the relay (tests/legacy/run.sh;
// relay_start configures --hub-methods StatusHub=Echo,GetStatus,WhoAmI and leaves ChatHub's methods
// to the ES2015 Proxy) and against the real server (tests/legacy-ref/run-tests.sh hubs), which
// lists every method of its hub classes. Same-origin page only.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, test } from "../../../lib/test.mjs";
import { fileURLToPath } from "node:url";
import { withTimeout } from "../../../lib/common.mjs";
import { EXPECTED_TRANSPORT, LEGACY_URL, PAGE_MODE, STEP_TIMEOUT_MS, TRANSPORT, checkEnvironment, probeLegacyServer } from "../lib/harness.mjs";
import { launchChromium, openStaticPage } from "../lib/static-page.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const skip = PAGE_MODE !== "same-origin" && "the generated-proxy page runs same-origin only";
let browser, files, transport, expectedTransport;

before(async () => {
    if (skip) return;
    checkEnvironment();
    const negotiate = await probeLegacyServer();
    // The suite's transport (SIGNALR_LEGACY_TRANSPORT, "auto" included); serverSentEvents against a
    // server without WebSockets when none was asked for.
    transport = !negotiate.TryWebSockets && TRANSPORT === "webSockets" ? "serverSentEvents" : TRANSPORT;
    expectedTransport = transport === "auto" ? EXPECTED_TRANSPORT : transport;
    const js = "text/javascript; charset=utf-8";
    const file = async (f) => readFile(path.join(ROOT, f));
    files = {
        "hubs.html": { type: "text/html; charset=utf-8", body: await file("page/hubs.html") },
        "hubs-page.js": { type: js, body: await file("page/hubs-page.js") },
        "jquery.js": { type: js, body: await file("node_modules/jquery/dist/jquery.js") },
        "jquery.signalR.js": { type: js, body: await file("node_modules/signalr/jquery.signalR.js") },
    };
    browser = await launchChromium();
}, { timeout: 60000 }); // negotiate probe (5 s) and Chromium's launch (30 s) on a loaded machine

after(async () => {
    await browser?.close().catch(() => {});
}, { timeout: 30000 });

test("GET /hubs: 200 JavaScript with a proxy per hub", { skip, timeout: 30000 }, async () => {
    const r = await fetch(`${LEGACY_URL}/hubs`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "application/javascript; charset=UTF-8");
    const body = await r.text();
    assert.match(body, /proxies\['chatHub'\] = this\.createHubProxy\('chatHub'\)/);
    assert.match(body, /\$\.hubConnection\("\/signalr", \{ useDefaultPath: false \}\)/);
});

test("a page uses only the generated proxies: client handlers, server methods, pushes", { skip, timeout: 120000 }, async (t) => {
    const { context, page, log } = await openStaticPage(browser, files, "hubs.html");
    try {
        await page.addScriptTag({ url: `${LEGACY_URL}/hubs` }); // <script src="/signalr/hubs">
        const shape = await page.evaluate(() => window.hubsPage.shape());
        assert.deepEqual(shape, { hubUrl: new URL(LEGACY_URL).pathname, chatHub: true, statusHub: true,
            statusMethods: ["echo", "getStatus", "whoAmI"] });
        const out = await withTimeout(page.evaluate(([tr, ms]) => window.hubsPage.run(tr, ms), [transport === "auto" ? null : transport, 10000]),
            STEP_TIMEOUT_MS, "hubs page scenario");
        assert.equal(out.transport, expectedTransport);
        assert.equal(out.add, 42);
        assert.equal(out.echo, "s");
        // The hub has no Nope: the real server generates no such function; the relay's Proxy invokes
        // it and the hub answers with the 2.x server's error text.
        assert.ok(["not generated", "There was an error invoking Hub method 'chathub.nope'."].includes(out.nope), out.nope);
        assert.ok(out.seen.some((s) => s.startsWith("broadcast")), `no broadcast through client.broadcast: ${JSON.stringify(out.seen)}`);
    } catch (e) {
        t.diagnostic(`page console:\n${log.join("\n")}`);
        throw e;
    } finally {
        await context.close().catch(() => {});
    }
});
