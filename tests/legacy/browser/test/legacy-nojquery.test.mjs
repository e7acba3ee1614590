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
            assert.deepEqual(seen.filter((s) => !s.startsWith("welcome")), [`started ${expected}`, "Add 42", "broadcast"], transport);
        } catch (e) {
            t.diagnostic(`page console (${transport}):\n${log.join("\n")}`);
            throw e;
        }
    }
});

// signalr-no-jquery 0.2.1 drops every message that arrives while it is still "connecting", i.e.
// before it has processed the /start answer: its ConnectingMessageBuffer drains through a wrapper
// of its jQuery shim made at init, whose event table is not the one handlers are bound in. The
// relay sends OnConnected's messages only after /start is answered (tests/relay
// legacy-onconnected.test.mjs), but the answer and the push travel on different sockets and the
// page often sees the push first; the real 2.4.1 server sends them during /start and the client
// drops them there too (tests/legacy-ref README). Kept as a todo: it passes when the order works out.
// SIGNALR_NOJQUERY_REPEAT=N runs the scenario N times per transport and reports how often the
// welcome arrived (a measurement; the test still judges the first run).
const REPEAT = Number(process.env.SIGNALR_NOJQUERY_REPEAT || 1);
const sawWelcome = (seen) => seen.indexOf("welcome string") >= 0 && seen.indexOf("welcome string") < seen.indexOf("broadcast");

test("signalr-no-jquery receives the hub's OnConnected push (welcome)", { skip, todo: "client defect, see comment", timeout: 120000 + REPEAT * 30000 }, async (t) => {
    const missed = [];
    for (const transport of transports) {
        const { seen } = await scenario(transport);
        if (!sawWelcome(seen)) missed.push(`${transport}: ${JSON.stringify(seen)}`);
        if (REPEAT > 1) {
            let count = sawWelcome(seen) ? 1 : 0;
            for (let i = 1; i < REPEAT; i++) {
                seenBy.delete(transport);
                if (sawWelcome((await scenario(transport)).seen)) count++;
            }
            t.diagnostic(`${transport}: welcome seen in ${count} of ${REPEAT} runs`);
        }
    }
    assert.deepEqual(missed, []);
});
