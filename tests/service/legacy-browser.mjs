// The stock jQuery legacy client (signalr 2.4.3) in headless Chromium for the service-mode tests,
// through tests/legacy/browser's harness, aimed at the relay's /signalr: one browser per test
// file (useLegacyBrowser registers its launch and close), a fresh page per test, and the steps
// every legacy test takes (a started client, an invocation that must succeed).
import { after, before } from "../lib/test.mjs";
import assert from "node:assert/strict";
import { RELAY_URL } from "./lib.mjs";

// What a client of the app's Board hub records (tests/service-app/Hubs/Board.cs).
export const BOARD_EVENTS = ["welcome", "joined", "left", "private", "userMessage", "broadcast", "groupMessage"];

// The legacy transports, each forced in turn where a test runs on all of them.
export const LEGACY_TRANSPORTS = ["webSockets", "serverSentEvents", "longPolling"];

let harness = null;
let browser = null;
let unavailable = null;

// Registers the file's before/after hooks: Chromium launched once, closed at the end.
export function useLegacyBrowser() {
    before(async () => {
        try {
            process.env.SIGNALR_LEGACY_URL = `${RELAY_URL}/signalr`;
            harness = await import("../legacy/browser/lib/harness.mjs");
            browser = await harness.Browser.launch();
        } catch (error) {
            unavailable = error;
        }
    });
    after(async () => {
        await browser?.close();
    });
}

// A fresh page (its own cookie jar); closed (every client stopped) afterwards. transport: the
// one its clients start on (webSockets, serverSentEvents or longPolling), else the harness's
// (SIGNALR_LEGACY_TRANSPORT, default webSockets).
export async function withPage(body, { transport } = {}) {
    if (unavailable) throw unavailable;
    const page = await browser.openPage();
    let failed = true;
    try {
        if (transport) await page.page.evaluate((t) => window.legacy.configure({ transport: t }), transport);
        await body(page);
        failed = false;
    } finally {
        if (failed) page.printConsole("page console:");
        await page.close();
    }
}

// One page per transport (withPage's), all open while body(pages) runs.
export async function withPages(transports, body, pages = []) {
    if (pages.length === transports.length) return body(pages);
    return withPage((page) => withPages(transports, body, [...pages, page]), { transport: transports[pages.length] });
}

// A started jQuery client `name` of hub board (or hubs) as user (query ?user=).
export async function legacyClient(page, name, user, hubs = { board: BOARD_EVENTS }) {
    await page.create(name, hubs, user ? { qs: { user } } : {});
    const state = await page.start(name);
    assert.equal(state.failed, undefined, `start of ${name}: ${JSON.stringify(state.failed)}`);
    assert.equal(state.state, "connected");
    return state;
}

export async function invokeOk(page, name, hub, method, ...args) {
    const outcome = await page.invoke(name, hub, method, ...args);
    assert.ok(outcome.ok, `${hub}.${method} on ${name}: ${JSON.stringify(outcome.error)}`);
    return outcome;
}
