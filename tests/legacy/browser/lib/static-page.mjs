// static-page.mjs - a test page on the legacy endpoint's own origin, for the tests that bring
// their own page (legacy-nojquery, legacy-hubs-script): Playwright answers the page's files
// under /__signalr_legacy_test__/, then stops intercepting, so every request the page makes
// afterwards reaches the server untouched, as same-origin requests.
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS, LEGACY_URL, TIMEOUT_MS } from "./harness.mjs";

const PREFIX = "/__signalr_legacy_test__/";
const CHROMIUM = process.env.SIGNALR_LEGACY_CHROMIUM || "/usr/bin/chromium";

export function launchChromium() {
    return chromium.launch({ executablePath: CHROMIUM, headless: true,
        args: CHROMIUM_ARGS.filter((a) => a !== "--headless"), timeout: 30000 });
}

// files: name -> { type, body }; opens PREFIX + page. Returns { context, page, log }.
export async function openStaticPage(browser, files, page) {
    const context = await browser.newContext();
    const tab = await context.newPage();
    const log = [];
    tab.on("console", (m) => log.push(`[${m.type()}] ${m.text()}`));
    tab.on("pageerror", (e) => log.push(`[pageerror] ${e.message}`));
    await context.route((url) => url.pathname.startsWith(PREFIX), (route) => {
        const file = files[new URL(route.request().url()).pathname.slice(PREFIX.length)];
        return file ? route.fulfill({ status: 200, contentType: file.type, body: file.body })
            : route.fulfill({ status: 404, body: "not found" });
    });
    await tab.goto(`${new URL(LEGACY_URL).origin}${PREFIX}${page}`, { waitUntil: "load", timeout: TIMEOUT_MS });
    await context.unrouteAll({ behavior: "wait" });
    return { context, page: tab, log };
}
