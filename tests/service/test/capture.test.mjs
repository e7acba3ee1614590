// --capture in service mode: a relay of its own with --service-key and --capture DIR, a process of
// the real app (Azure SignalR SDK) connected to it, and stock @microsoft/signalr clients (JSON
// and MessagePack over WebSockets, JSON over Server-Sent Events and long polling) that negotiate
// at the app and follow its redirect to the relay's /client/; then the stock jQuery client (legacy
// 2.x, headless Chromium, tests/legacy/browser's harness) at the relay's /signalr, which asks the
// app's negotiate who it is (--app-negotiate).
// Each client connection must give one file of the fixture format (docs/FIXTURES.md), complete
// (an `end` line), parseable line by line, `door: core` (`legacy`), `upstream: service`, with the access token,
// the Authorization header and the connection ids masked (never in clear), and the relay must stop
// cleanly (exit 0, no sanitizer report). Each file then replays with `signalr-replay check` against
// the same relay, given a fresh token of the app for the same user (--authorization: the recorded
// one is masked), the relay's answers compared with the recorded ones.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { startRelay } from "../../lib/process.mjs";
import { APP_DLL, SERVICE_KEY, connect, freePort, pollUntil, stopAll, waitFor, withTimeout } from "../lib.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const REPLAY_BIN = process.env.SIGNALR_REPLAY_BIN ||
    ["build/asan", "build/release"].map((d) => path.join(ROOT, d, "tools/replay/signalr-replay")).find((f) => fs.existsSync(f));

function replay(args) {
    return new Promise((resolve) => execFile(REPLAY_BIN, args, { timeout: 60000 },
        (error, stdout, stderr) => resolve({ code: error ? error.code ?? 1 : 0, stdout, stderr })));
}

// The app of tests/service-app pointed at `relayPort`, listening on `port`; ready once its negotiate redirects.
async function startAppFor(relayPort, port) {
    const url = `http://127.0.0.1:${port}`;
    const proc = spawn("dotnet", [APP_DLL, "--urls", url,
        `--Azure:SignalR:ConnectionString=Endpoint=http://127.0.0.1;Port=${relayPort};AccessKey=${SERVICE_KEY};Version=1.0;`],
    { stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    proc.stdout.on("data", (d) => (log += d));
    proc.stderr.on("data", (d) => (log += d));
    const exited = new Promise((resolve) => proc.on("exit", resolve));
    const negotiate = () => fetch(`${url}/board/negotiate?negotiateVersion=1`, { method: "POST" }).then((r) => r.status, () => 0);
    try {
        await pollUntil(negotiate, (status) => status === 200, `app on ${url} to connect to the capturing relay`, 30000, 200);
    } catch (e) {
        proc.kill("SIGKILL");
        throw new Error(`${e.message}\napp log:\n${log}`);
    }
    return {
        url,
        // A token of the app for `user` (its redirect negotiate's accessToken).
        async token(user) {
            const res = await fetch(`${url}/board/negotiate?negotiateVersion=1&user=${user}`, { method: "POST" });
            return (await res.json()).accessToken;
        },
        async stop() {
            if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
            await withTimeout(exited, 40000, "the capture test's app to exit");
        },
    };
}

// The capture files of dir that are complete (their last line is the `end` event).
function completeFiles(dir) {
    return fs.readdirSync(dir).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(dir, f)).filter((file) => {
        const lines = fs.readFileSync(file, "utf8").trim().split("\n");
        try {
            return JSON.parse(lines[lines.length - 1]).type === "end";
        } catch {
            return false;
        }
    });
}

// The Core clients, one after another (so that no file has another's joined/left: a replay alone
// has none), each its own user; then the legacy one.
const CORE_CLIENTS = [
    { protocol: "json", transport: "WebSockets" },
    { protocol: "messagepack", transport: "WebSockets" },
    { protocol: "json", transport: "ServerSentEvents" },
    { protocol: "json", transport: "LongPolling" },
];
const userOf = ({ protocol, transport }) => `cap-${protocol}-${transport}`;
const LEGACY_USER = "cap-legacy";

function readEvents(file) {
    const text = fs.readFileSync(file, "utf8");
    const events = text.trim().split("\n").map((l, i) => {
        try {
            return JSON.parse(l);
        } catch (e) {
            throw new Error(`${file} line ${i + 1} is not JSON: ${e.message}`);
        }
    });
    return { text, events };
}

// Never in clear: a JWT (the app's tokens start eyJ), a bearer value, any connection id.
function assertMasked(file, text, ids) {
    assert.doesNotMatch(text, /eyJ[A-Za-z0-9_-]{8,}/, `${file}: a token in clear`);
    assert.doesNotMatch(text, /Bearer [^<]/i, `${file}: a bearer value in clear`);
    assert.doesNotMatch(text, /access_token=[^<]/, `${file}: an access_token in clear`);
    for (const id of ids) assert.ok(!text.includes(id), `${file}: connection id ${id} in clear`);
    assert.doesNotMatch(text, /cap-probe/, `${file}: only its own connection`);
}

// The jQuery client of tests/legacy/browser at `relayUrl`/signalr as LEGACY_USER: Add, Echo, stop.
async function legacySession(relayUrl) {
    process.env.SIGNALR_LEGACY_URL = `${relayUrl}/signalr`; // read by the harness when it is loaded
    const harness = await import("../../legacy/browser/lib/harness.mjs");
    const browser = await harness.Browser.launch();
    try {
        const page = await browser.openPage();
        try {
            await page.create("l", { board: ["welcome"] }, { qs: { user: LEGACY_USER } });
            const state = await page.start("l");
            assert.equal(state.state, "connected", JSON.stringify(state));
            await page.waitForEvents("l", "board", "welcome", 1);
            const add = await page.invoke("l", "board", "Add", 2, 3);
            assert.equal(add.value, 5, JSON.stringify(add));
            const echo = await page.invoke("l", "board", "Echo", "captured legacy");
            assert.equal(echo.value, "captured legacy", JSON.stringify(echo));
            await page.stop("l");
            return state.id;
        } finally {
            await page.close();
        }
    } finally {
        await browser.close();
    }
}

test("service mode --capture: one masked, parseable file per client connection, Core (every transport) and legacy; each replays", { timeout: 180000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signalr-service-capture-"));
    const appPort = await freePort();
    const relay = await startRelay(["--service-key", SERVICE_KEY, "--capture", dir,
        "--app-negotiate", `board=http://127.0.0.1:${appPort}/board`]);
    let app = null;
    const clients = [];
    try {
        app = await startAppFor(relay.port, appPort);
        assert.ok(REPLAY_BIN, "no signalr-replay: build it (cmake --build build/asan --target signalr-replay)");
        assert.match(await app.token("cap-probe"), /^eyJ/, "the app hands out JWTs");
        for (const client of CORE_CLIENTS) {
            const what = `${client.protocol} over ${client.transport}`;
            const c = await connect({ user: userOf(client), protocol: client.protocol, transport: client.transport, appUrl: app.url });
            clients.push(c);
            await waitFor(c, (m) => m[0] === "welcome", `${what}: welcome`);
            assert.equal(await c.connection.invoke("Add", 2, 3), 5);
            assert.equal(await c.connection.invoke("Echo", `captured ${what}`), `captured ${what}`);
            await stopAll(c);
            await pollUntil(async () => completeFiles(dir), (f) => f.length >= clients.length, `${what}: its complete file`, 20000, 100);
        }
        const legacyId = await legacySession(relay.url);
        const files = await pollUntil(async () => completeFiles(dir), (f) => f.length >= CORE_CLIENTS.length + 1,
            "a complete capture file per client connection", 20000, 100);
        assert.equal(files.length, CORE_CLIENTS.length + 1, `one file per client connection: ${fs.readdirSync(dir).join(", ")}`);
        const ids = [...clients.map((c) => c.id), legacyId];
        const users = [];
        for (const file of files) {
            const { text, events } = readEvents(file);
            const session = events[0];
            assert.equal(session.type, "session");
            assert.equal(session.format, "signalr-capture");
            assert.equal(session.version, 2);
            assert.equal(session.upstream, "service");
            assert.equal(events[events.length - 1].type, "end");
            for (const e of events.slice(1)) assert.equal(typeof e.t, "number", `${file}: every event has t: ${JSON.stringify(e)}`);
            assertMasked(file, text, ids);
            const user = /[?&]user=([^&"]+)/.exec(text)?.[1];
            users.push(user);
            if (user === LEGACY_USER) {
                // negotiate at /signalr (the relay asked the app), connect, start, the calls, abort.
                assert.equal(session.door, "legacy");
                for (const step of ["/signalr/negotiate", "/signalr/start", "/signalr/abort"]) {
                    assert.ok(events.some((e) => e.type === "http-request" && e.path === step), `${file}: ${step}`);
                }
                assert.ok(events.some((e) => e.type === "ws-frame" && e.dir === "s2c" && e.text?.includes("captured legacy")), `${file}: the Echo`);
                for (const e of events.filter((x) => x.query)) {
                    const token = e.query.find(([k]) => k === "connectionToken");
                    if (token) assert.equal(token[1], "<connectionToken>", `${file}: ${e.path}`);
                }
                continue;
            }
            // The client's way in: negotiate at the relay's /client/ with Authorization, then the
            // transport's requests (or its WebSocket) with the token as Authorization or
            // access_token (browsers; node's client sends Authorization), both masked.
            assert.equal(session.door, "core");
            const negotiate = events.find((e) => e.type === "http-request" && /\/client\/negotiate$/.test(e.path));
            assert.ok(negotiate, `${file}: the /client/negotiate request`);
            assert.equal(negotiate.headers.authorization, "<authorization>");
            const client = CORE_CLIENTS.find((c) => userOf(c) === user);
            assert.ok(client, `${file}: user ${user}`);
            const ways = events.filter((e) => e.type === "ws-open" || (e.type === "http-request" && e !== negotiate));
            assert.ok(ways.length >= 1, `${file}: the transport's requests`);
            for (const e of ways) {
                assert.ok(e.headers.authorization === "<authorization>" || /access_token=<accessToken>/.test(e.rawQuery),
                    `${file}: the token masked: ${JSON.stringify(e)}`);
            }
            assert.equal(events.some((e) => e.type === "ws-open"), client.transport === "WebSockets", `${file}: a WebSocket or not`);
            if (client.transport === "ServerSentEvents") {
                assert.ok(events.some((e) => e.type === "http-response" && e.headers["content-type"] === "text/event-stream" && e.chunks?.length),
                    `${file}: the event stream with its pieces`);
            }
            if (client.transport === "LongPolling") assert.ok(events.some((e) => e.type === "http-request" && e.method === "DELETE"), `${file}: the DELETE`);
            // The calls and their answers are kept (bodies are captured by default).
            if (client.protocol === "json") assert.ok(text.includes(`captured ${client.protocol} over ${client.transport}`), `${file}: the Echo`);
            else assert.ok(events.some((e) => e.type === "ws-frame" && e.binary !== undefined), `${file}: binary frames`);
        }
        assert.deepEqual(users.sort(), [...CORE_CLIENTS.map(userOf), LEGACY_USER].sort(), "one file per client");
        // Replayed against the same relay (a Core file with a fresh token of the app for the same
        // user; the legacy one asks the app's negotiate with its ?user=): answers as recorded.
        // Before each replay the app has seen every earlier connection go (and sent its "left" to the
        // others), so no replayed session gets another connection's "left", which its recording has not.
        const boardEmpty = () => pollUntil(async () => (await fetch(`${app.url}/test/connections?hub=board`)).json(),
            (list) => list.length === 0, "the app to see every earlier connection go", 20000, 100);
        for (const file of files) {
            await boardEmpty();
            const user = /[?&]user=([^&"]+)/.exec(fs.readFileSync(file, "utf8"))[1];
            const auth = user === LEGACY_USER ? [] : ["--authorization", `Bearer ${await app.token(user)}`];
            const run = await replay(["check", "--target", relay.url, ...auth, "--grace", "200", file]);
            assert.equal(run.code, 0, `${file} (${user}) replayed:\n${run.stdout}${run.stderr}`);
            assert.match(run.stdout, /replay: 1 passed, 0 failed/);
        }
        // Without a token the relay refuses the negotiate: the replay says so (the comparison is live).
        const first = files.find((f) => fs.readFileSync(f, "utf8").includes(`user=${userOf(CORE_CLIENTS[0])}`));
        const refused = await replay(["check", "--target", relay.url, "--grace", "200", first]);
        assert.equal(refused.code, 1, refused.stdout + refused.stderr);
        assert.match(refused.stdout, /line 3: .*status 401, recorded 200/);
    } finally {
        await stopAll(...clients);
        if (app) await app.stop();
        await relay.stop();
        if (!process.env.KEEP_CAPTURE) fs.rmSync(dir, { recursive: true, force: true }); // KEEP_CAPTURE=1: to look at them
    }
});
