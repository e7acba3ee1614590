// The /demo page of scripts/run.sh in headless Chromium (Debian's, through playwright-core): a relay
// started with --demo-dir demo in front of the sample backend serves the page, its jQuery pane
// (the legacy client, through /signalr/hubs) and its @microsoft/signalr pane both connect, a
// message is sent from each, and both panes must show both messages. A screenshot of the page
// goes to DEMO_SCREENSHOT (default build/test-output/demo.png of the repository).
//   DEMO_URL=http://127.0.0.1:8080 node --test demo/demo.test.mjs     (tests/legacy/browser)
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "../../../lib/test.mjs";
import { launchChromium } from "../lib/static-page.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const DEMO_URL = (process.env.DEMO_URL || "").replace(/\/+$/, "");
const SCREENSHOT = process.env.DEMO_SCREENSHOT || path.join(ROOT, "build/test-output/demo.png");
const WAIT_MS = 30000;
let browser;

before(async () => {
    if (!/^https?:\/\//.test(DEMO_URL)) throw new Error("set DEMO_URL to the relay's origin, e.g. http://127.0.0.1:8080");
    browser = await launchChromium();
});

after(async () => {
    await browser?.close().catch(() => {});
});

test("GET /demo/ is the page, its script and libraries are served with their types", async () => {
    for (const [p, type] of [["/demo/", "text/html; charset=utf-8"], ["/demo/demo.js", "text/javascript; charset=utf-8"],
        ["/demo/node_modules/@microsoft/signalr/dist/browser/signalr.min.js", "text/javascript; charset=utf-8"],
        ["/demo/node_modules/signalr/jquery.signalR.js", "text/javascript; charset=utf-8"]]) {
        const r = await fetch(`${DEMO_URL}${p}`);
        const body = await r.text();
        assert.equal(r.status, 200, `${p}: ${r.status} ${body.slice(0, 200)}`);
        assert.equal(r.headers.get("content-type"), type, p);
    }
});

test("both panes connect, each sends, both show both messages; screenshot saved", async (t) => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 640 } });
    const page = await context.newPage();
    const log = [];
    page.on("console", (m) => log.push(`[${m.type()}] ${m.text()}`));
    page.on("pageerror", (e) => log.push(`[pageerror] ${e.message}`));
    try {
        await page.goto(`${DEMO_URL}/demo/`, { waitUntil: "load", timeout: WAIT_MS });
        for (const pane of ["legacy", "core"]) {
            await page.waitForSelector(`#${pane} .state[data-state="connected"]`, { timeout: WAIT_MS });
        }
        const stamp = Date.now().toString(36);
        const sent = { legacy: `hello from jQuery ${stamp}`, core: `hello from Core ${stamp}` };
        await page.fill("#legacy input", sent.legacy);
        await page.click("#legacy button");
        await page.fill("#core input", sent.core);
        await page.press("#core input", "Enter");
        const expected = [`jQuery: ${sent.legacy}`, `Core: ${sent.core}`];
        for (const pane of ["legacy", "core"]) {
            await page.waitForFunction(([p, want]) => {
                const shown = [...document.querySelectorAll(`#${p} .messages li`)].map((li) => li.textContent);
                return want.every((w) => shown.includes(w));
            }, [pane, expected], { timeout: WAIT_MS });
        }
        const states = await page.$$eval(".state", (els) => els.map((e) => e.textContent));
        assert.match(states[0], /^connected \(webSockets, id [0-9a-f-]{36}\)$/, states[0]);
        assert.match(states[1], /^connected \(id \S+\)$/, states[1]);
        fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
        await page.screenshot({ path: SCREENSHOT, fullPage: true });
        assert.ok(fs.statSync(SCREENSHOT).size > 1000, "a screenshot with something in it");
        t.diagnostic(`screenshot: ${SCREENSHOT}`);
    } catch (e) {
        t.diagnostic(`page console:\n${log.join("\n")}`);
        throw e;
    } finally {
        await context.close().catch(() => {});
    }
});
