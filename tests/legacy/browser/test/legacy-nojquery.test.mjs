// signalr-no-jquery (npm 0.2.1: the legacy 2.x JavaScript client without jQuery, the same wire
// protocol) in headless Chromium against SIGNALR_LEGACY_URL (the relay in front of tests/backend,
// or the real ASP.NET SignalR 2.4.1 server of tests/legacy-ref): connect, start, invoke, pushes;
// and the hub's OnConnected push ("welcome"), which this client drops when it arrives before it
// has processed its /start answer (see the todo below).
//
// Transports: SIGNALR_LEGACY_TRANSPORTS (comma-separated), else webSockets where negotiate offers
// them, else serverSentEvents and longPolling. Same-origin page only (the real server knows no CORS).
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { readFile } from "node:fs/promises";
import { withTimeout } from "../../../lib/common.mjs";
import { bundleCommonJs } from "../lib/cjs-bundle.mjs";
import { EXPECTED_TRANSPORT, LEGACY_URL, PAGE_MODE, STEP_TIMEOUT_MS, TRANSPORT, checkEnvironment, probeLegacyServer } from "../lib/harness.mjs";
import { launchChromium, openStaticPage } from "../lib/static-page.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const skip = PAGE_MODE !== "same-origin" && "signalr-no-jquery runs from a same-origin page only";

let browser, files, transports;

before(async () => {
    if (skip) return;
    checkEnvironment();
    const negotiate = await probeLegacyServer();
    transports = process.env.SIGNALR_LEGACY_TRANSPORTS?.split(",").filter(Boolean) ??
        (negotiate.TryWebSockets ? [TRANSPORT] : ["serverSentEvents", "longPolling"]); // the suite's, "auto" included
    const js = "text/javascript; charset=utf-8";
    files = {
        "nojquery.html": { type: "text/html; charset=utf-8", body: await readFile(path.join(ROOT, "page/nojquery.html")) },
        "nojquery-page.js": { type: js, body: await readFile(path.join(ROOT, "page/nojquery-page.js")) },
        "signalr-no-jquery.js": {
            type: js,
            body: await bundleCommonJs(path.join(ROOT, "node_modules/signalr-no-jquery/build/signalR.js"), "signalRNoJQuery"),
        },
    };
    browser = await launchChromium();
});

after(async () => {
    await browser?.close().catch(() => {});
});

// One scenario per transport, run once; the tests below judge what it saw.
const seenBy = new Map();
async function scenario(transport) {
    if (seenBy.has(transport)) return seenBy.get(transport);
    const { context, page, log } = await openStaticPage(browser, files, "nojquery.html");
    try {
        const seen = await withTimeout(page.evaluate(([url, tr, ms]) => window.nojquery.onConnectedScenario(url, tr, ms),
            [LEGACY_URL, transport, 10000]), STEP_TIMEOUT_MS, `${transport} scenario`);
        const result = { seen, log };
        seenBy.set(transport, result);
        return result;
    } finally {
        await context.close().catch(() => {});
    }
}

test("signalr-no-jquery connects, starts, invokes and gets pushes sent after start", { skip, timeout: 120000 }, async (t) => {
    for (const transport of transports) {
        const { seen, log } = await scenario(transport);
        try {
            const expected = transport === "auto" ? EXPECTED_TRANSPORT : transport;
            assert.deepEqual(seen.filter((s) => !/^(buffered )?welcome/.test(s)), [`started ${expected}`, "Add 42", "broadcast"], transport);
        } catch (e) {
            t.diagnostic(`page console (${transport}):\n${log.join("\n")}`);
            throw e;
        }
    }
});

// signalr-no-jquery 0.2.1 drops every message that reaches it while it is still "connecting", i.e.
// before it has processed its /start answer. transports._logic.triggerReceived
// (node_modules/signalr-no-jquery/build/signalR.js:1590) puts such a message in the
// ConnectingMessageBuffer, and drain() (signalR.js:651, after the /start answer) hands it to
// `$connection.triggerHandler("onReceived")` where `$connection = $(this)` was made in init
// (signalR.js:352, :360) before any handler was bound. The jQuery shim's wrapper copies the event
// table when it is made (build/jQueryShim.js:14, `var events = subject.events || {}`), and the
// hub proxies' handlers are bound later through other wrappers into a new table; so the drain
// finds no handler and the message is gone. jquery.signalR 2.4 has the same buffer but real
// jQuery keeps one event table per object, so it delivers them.
// Whether a message comes before or after the /start answer is decided in the browser: the
// answer and the push travel on different connections (the /start XHR, and the event stream or a
// poll), and the page may process the push first even though the relay wrote the answer first
// (tests/relay legacy-onconnected.test.mjs checks that order on the wire); the real 2.4.1 server
// writes them while it handles /start, before its answer. No order of writes on the server's side
// decides which connection the browser dispatches first, so this is asserted: the welcome reaches
// the client once, before the later broadcast (handled, or taken into that buffer); and the
// client's handler getting it is a todo (a client defect; measured rates in README's
// signalr-no-jquery row).
// SIGNALR_NOJQUERY_REPEAT=N runs the scenario N times per transport and reports how often the
// welcome was handled and how often the client dropped it (a measurement; the tests judge the
// first run, and the first test below every run).
const REPEAT = Number(process.env.SIGNALR_NOJQUERY_REPEAT || 1);
const before_ = (seen, what) => seen.indexOf(what) >= 0 && seen.indexOf(what) < seen.indexOf("broadcast");
const sawWelcome = (seen) => before_(seen, "welcome string");
const welcomes = (seen) => seen.filter((s) => /^(buffered )?welcome/.test(s));

test("signalr-no-jquery's receive channel gets the hub's OnConnected push (welcome) once, before later pushes", { skip, timeout: 120000 + REPEAT * 30000 }, async (t) => {
    const wrong = [];
    for (const transport of transports) {
        let handled = 0, dropped = 0;
        for (let i = 0; i < REPEAT; i++) {
            if (i > 0) seenBy.delete(transport);
            const { seen } = await scenario(transport);
            const w = welcomes(seen);
            const ok = w.length === 1 && (sawWelcome(seen) || before_(seen, "buffered welcome"));
            if (!ok) wrong.push(`${transport} run ${i + 1}: ${JSON.stringify(seen)}`);
            if (sawWelcome(seen)) handled++;
            else if (ok) dropped++;
        }
        if (REPEAT > 1) t.diagnostic(`${transport}: welcome handled in ${handled} of ${REPEAT} runs, dropped by the client in ${dropped}`);
    }
    assert.deepEqual(wrong, []);
});

test("signalr-no-jquery hands the hub's OnConnected push (welcome) to its handler", { skip, todo: "client defect, see comment", timeout: 120000 }, async () => {
    const missed = [];
    for (const transport of transports) {
        const { seen } = await scenario(transport);
        if (!sawWelcome(seen)) missed.push(`${transport}: ${JSON.stringify(seen)}`);
    }
    assert.deepEqual(missed, []);
});
