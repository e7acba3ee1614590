// Node side of the legacy browser suite: reads the environment, checks that something answers at
// SIGNALR_LEGACY_URL, starts headless Chromium (Debian's, through playwright-core), opens the test
// page and runs page steps (page/legacy-page.js) with bounded timeouts.
//
// Where the page comes from (SIGNALR_LEGACY_PAGE):
//   same-origin (default)  the page's URL is on the relay's own origin
//                          (<origin>/__signalr_legacy_test__/index.html); Playwright answers those
//                          few requests from the files here and then removes its interception, so
//                          every later request (negotiate, WebSocket, start, abort, ping) goes
//                          from the page to the relay untouched, as same-origin requests. Nothing
//                          of this path ever reaches the relay and the relay needs no CORS set-up.
//   cross-origin           the page is served by a small HTTP server here on 127.0.0.1
//                          (port SIGNALR_LEGACY_PAGE_PORT, default any free one); the jQuery client
//                          then makes cross-origin requests (withCredentials XHR, form content
//                          type), so the relay must allow that origin (spec §9 item 18 and §11).
import { readFile } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { listen, pollUntil, withTimeout } from "../../../lib/common.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..");

export const LEGACY_URL = (process.env.SIGNALR_LEGACY_URL || "").replace(/\/+$/, "");
export const PAGE_MODE = process.env.SIGNALR_LEGACY_PAGE || "same-origin";
// SIGNALR_LEGACY_TRANSPORT: webSockets (default), serverSentEvents, longPolling, or auto (the
// client's own order with fallback). EXPECTED_TRANSPORT is the one a started client must be on:
// the forced one, or for auto SIGNALR_LEGACY_AUTO_EXPECT (default webSockets; serverSentEvents
// when the relay refuses WebSockets with --legacy-websockets refuse).
export const TRANSPORT = process.env.SIGNALR_LEGACY_TRANSPORT || "webSockets";
export const EXPECTED_TRANSPORT = TRANSPORT === "auto" ? (process.env.SIGNALR_LEGACY_AUTO_EXPECT || "webSockets") : TRANSPORT;
const PAGE_PORT = Number(process.env.SIGNALR_LEGACY_PAGE_PORT || 0);
const CHROMIUM = process.env.SIGNALR_LEGACY_CHROMIUM || "/usr/bin/chromium";
// SIGNALR_LEGACY_VERBOSE=1 prints the page's console (the jQuery client's own log) for every test,
// not only for failed ones.
const VERBOSE = process.env.SIGNALR_LEGACY_VERBOSE === "1";

// One step in the page (an invoke, a wait) never takes longer than this on the Node side; the page
// has its own, shorter timeouts so that it normally reports first and says what it waited for.
// SIGNALR_LEGACY_TIMEOUT_S (default 10) is the page's: tests/legacy-ref/run-tests.sh gives the real
// server on Mono more (a 100 KiB Echo through its /send took over 10 s on the loaded CI machine).
export const TIMEOUT_MS = Math.round(Number(process.env.SIGNALR_LEGACY_TIMEOUT_S || 10) * 1000);
export const STEP_TIMEOUT_MS = TIMEOUT_MS + 20000;

const PAGE_PREFIX = "/__signalr_legacy_test__/";
const PAGE_FILES = {
    "index.html": { file: path.join(ROOT, "page/index.html"), type: "text/html; charset=utf-8" },
    "jquery.js": { file: path.join(ROOT, "node_modules/jquery/dist/jquery.js"), type: "text/javascript; charset=utf-8" },
    "jquery.signalR.js": { file: path.join(ROOT, "node_modules/signalr/jquery.signalR.js"), type: "text/javascript; charset=utf-8" },
    "legacy-page.js": { file: path.join(ROOT, "page/legacy-page.js"), type: "text/javascript; charset=utf-8" },
};

export const CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    // Chromium 156 blocks a WebSocket to 127.0.0.1 from a page it puts in the "unknown" address
    // space (spec §11); a page fulfilled by Playwright has no remote address of its own.
    "--disable-features=LocalNetworkAccessChecks",
    // SIGNALR_LEGACY_CHROMIUM_ARGS: more flags, space-separated, e.g. against a relay with a test
    // certificate --ignore-certificate-errors-spki-list=<base64 SHA-256 of its public key> (that
    // one key only, not every certificate error).
    ...(process.env.SIGNALR_LEGACY_CHROMIUM_ARGS || "").split(" ").filter(Boolean),
];

export function checkEnvironment() {
    if (!LEGACY_URL) {
        throw new Error("SIGNALR_LEGACY_URL is not set (e.g. http://127.0.0.1:8080/signalr)");
    }
    if (!/^https?:\/\//.test(LEGACY_URL)) {
        throw new Error(`SIGNALR_LEGACY_URL must be an http(s) URL, not '${LEGACY_URL}'`);
    }
    if (PAGE_MODE !== "same-origin" && PAGE_MODE !== "cross-origin") {
        throw new Error(`SIGNALR_LEGACY_PAGE must be same-origin or cross-origin, not '${PAGE_MODE}'`);
    }
}

// Asks the server for a negotiate, as the jQuery client would, with a short timeout. Throws an
// error that says plainly that nothing listens (or that something else answered); resolves with
// the parsed negotiate body otherwise.
export async function probeLegacyServer() {
    const connectionData = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));
    const url = `${LEGACY_URL}/negotiate?clientProtocol=2.1&connectionData=${connectionData}`;
    let response;
    try {
        response = await fetch(url, { signal: AbortSignal.timeout(5000) });
    } catch (error) {
        const why = error.cause?.code || error.cause?.message || (error.name === "TimeoutError" ? "no answer within 5 s" : error.message);
        throw new Error(`no legacy SignalR server answers at ${LEGACY_URL} (GET negotiate: ${why}); ` +
            "start the relay and set SIGNALR_LEGACY_URL to its /signalr endpoint");
    }
    const text = await response.text();
    if (response.status !== 200) {
        throw new Error(`GET ${url} answered ${response.status} (${text.slice(0, 200)}): not a legacy SignalR endpoint`);
    }
    let body;
    try {
        body = JSON.parse(text);
    } catch {
        throw new Error(`GET ${url} answered 200 with a body that is not JSON: ${text.slice(0, 200)}`);
    }
    return body;
}

async function pageFile(name) {
    const entry = PAGE_FILES[name];
    if (!entry) {
        return null;
    }
    return { body: await readFile(entry.file), type: entry.type };
}

// A tiny static server for cross-origin mode.
async function startPageServer() {
    const server = http.createServer(async (req, res) => {
        const name = req.url.startsWith(PAGE_PREFIX) ? req.url.slice(PAGE_PREFIX.length).split("?")[0] : "";
        const file = await pageFile(name).catch(() => null);
        if (!file) {
            res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
            return;
        }
        res.writeHead(200, { "Content-Type": file.type, "Cache-Control": "no-store" }).end(file.body);
    });
    await listen(server, PAGE_PORT);
    return server;
}

// The browser and, in cross-origin mode, the page server: one per test file.
export class Browser {
    static async launch() {
        const self = new Browser();
        self.browser = await chromium.launch({
            executablePath: CHROMIUM,
            // Playwright adds --headless itself and gives every launch a fresh temporary
            // --user-data-dir (refusing one in args); the rest are ours.
            headless: true,
            args: CHROMIUM_ARGS.filter((a) => a !== "--headless"),
            timeout: 30000,
        });
        if (PAGE_MODE === "cross-origin") {
            self.pageServer = await startPageServer();
            const { port } = self.pageServer.address();
            self.pageUrl = `http://127.0.0.1:${port}${PAGE_PREFIX}index.html`;
        } else {
            self.pageUrl = `${new URL(LEGACY_URL).origin}${PAGE_PREFIX}index.html`;
        }
        return self;
    }

    // A fresh context and page with the test page loaded and the client configured.
    async openPage() {
        const context = await this.browser.newContext();
        const console = [];
        const page = await context.newPage();
        page.on("console", (m) => console.push(`[${m.type()}] ${m.text()}`));
        page.on("pageerror", (e) => console.push(`[pageerror] ${e.message}`));
        // The client's /abort requests in flight, so close() can let them reach the server first.
        const aborts = new Set();
        page.on("request", (r) => { if (new URL(r.url()).pathname.endsWith("/abort")) aborts.add(r); });
        page.on("requestfinished", (r) => aborts.delete(r));
        page.on("requestfailed", (r) => aborts.delete(r));
        if (PAGE_MODE === "same-origin") {
            await context.route((url) => url.pathname.startsWith(PAGE_PREFIX), async (route) => {
                const name = new URL(route.request().url()).pathname.slice(PAGE_PREFIX.length);
                const file = await pageFile(name).catch(() => null);
                if (!file) {
                    await route.fulfill({ status: 404, body: "not found" });
                    return;
                }
                await route.fulfill({ status: 200, contentType: file.type, body: file.body });
            });
        }
        await page.goto(this.pageUrl, { waitUntil: "load", timeout: TIMEOUT_MS });
        if (PAGE_MODE === "same-origin") {
            // With no route left Playwright turns request interception off, so the client's own
            // requests reach the relay as the browser sends them.
            await context.unrouteAll({ behavior: "wait" });
        }
        const versions = await page.evaluate(([url, transport]) => window.legacy.configure({ url, transport, logging: true }), [LEGACY_URL, TRANSPORT]);
        return new LegacyPage(context, page, console, versions, aborts);
    }

    async close() {
        await this.browser?.close().catch(() => {});
        if (this.pageServer) {
            await new Promise((resolve) => this.pageServer.close(resolve));
        }
    }
}

// One test page; every method is one page step with a Node-side timeout.
export class LegacyPage {
    constructor(context, page, console, versions, aborts) {
        this.aborts = aborts;
        this.context = context;
        this.page = page;
        this.console = console;
        this.versions = versions;
    }

    step(what, fn, ...args) {
        return withTimeout(this.page.evaluate(fn, args), STEP_TIMEOUT_MS, `page step '${what}'`);
    }

    create(name, hubs, options = {}) {
        return this.step(`create ${name}`, ([n, h, o]) => window.legacy.create(n, h, o), name, hubs, options);
    }

    setCookie(text) {
        return this.step(`set cookie ${text}`, ([t]) => window.legacy.setCookie(t), text);
    }

    start(name) {
        return this.step(`start ${name}`, ([n, ms]) => window.legacy.start(n, ms), name, TIMEOUT_MS);
    }

    invoke(name, hub, method, ...args) {
        return this.step(`${hub}.${method} on ${name}`,
            ([n, h, m, a, ms]) => window.legacy.invoke(n, h, m, a, ms), name, hub, method, args, TIMEOUT_MS);
    }

    events(name, hub, event) {
        return this.step(`events of ${name}`, ([n, h, e]) => window.legacy.events(n, h, e), name, hub, event);
    }

    waitForEvents(name, hub, event, count, firstArg = null, timeoutMs = TIMEOUT_MS) {
        return this.step(`wait for ${hub}.${event} on ${name}`,
            ([n, h, e, c, f, ms]) => window.legacy.waitForEvents(n, h, e, c, f, ms),
            name, hub, event, count, firstArg, timeoutMs);
    }

    waitForCount(name, what, atLeast, timeoutMs = TIMEOUT_MS) {
        return this.step(`wait for ${what} on ${name}`,
            ([n, w, a, ms]) => window.legacy.waitForCount(n, w, a, ms), name, what, atLeast, timeoutMs);
    }

    state(name) {
        return this.step(`state of ${name}`, ([n]) => window.legacy.state(n), name);
    }

    ping(name) {
        return this.step(`ping ${name}`, ([n, ms]) => window.legacy.ping(n, ms), name, TIMEOUT_MS);
    }

    dropSocket(name, code, reason) {
        return this.step(`drop socket of ${name}`, ([n, c, r]) => window.legacy.dropSocket(n, c, r), name, code, reason);
    }

    // Every error the page's clients reported (connection.error), by client name; {} when none.
    errors() {
        return this.step("errors of all clients", () => window.legacy.errors());
    }

    stop(name) {
        return this.step(`stop ${name}`, ([n]) => window.legacy.stop(n), name);
    }

    // Stops every client and closes the page (its sockets close with it).
    async close() {
        await this.step("stop all", () => window.legacy.stopAll()).catch(() => {});
        // Let the /abort requests leave before the page goes away (they are answered at once).
        await pollUntil(() => this.aborts.size, (n) => n === 0, "the clients' /abort requests", 5000).catch(() => {});
        await this.context.close().catch(() => {});
    }

    printConsole(header) {
        if (this.console.length) {
            process.stdout.write(`# ${header}\n${this.console.map((l) => `#   ${l}`).join("\n")}\n`);
        }
    }
}

export { VERBOSE };
