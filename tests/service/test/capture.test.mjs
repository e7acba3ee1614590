// --capture in service mode: a relay of its own with --service-key and --capture DIR, a process of
// the real app (Azure SignalR SDK) connected to it, and stock @microsoft/signalr clients (JSON
// and MessagePack) that negotiate at the app and follow its redirect to the relay's /client/.
// Each client connection must give one file of the fixture format (docs/FIXTURES.md), complete
// (an `end` line), parseable line by line, `door: core`, `upstream: service`, with the access token,
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

// The app of tests/service-app pointed at `relayPort`; ready once its negotiate redirects.
async function startAppFor(relayPort) {
    const url = `http://127.0.0.1:${await freePort()}`;
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

test("service mode --capture: one masked, parseable file per client connection", { timeout: 120000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signalr-service-capture-"));
    const relay = await startRelay(["--service-key", SERVICE_KEY, "--capture", dir]);
    let app = null;
    const clients = [];
    try {
        app = await startAppFor(relay.port);
        assert.ok(REPLAY_BIN, "no signalr-replay: build it (cmake --build build/asan --target signalr-replay)");
        assert.match(await app.token("cap-probe"), /^eyJ/, "the app hands out JWTs");
        // One after another, so that neither file has the other's joined/left (a replay alone has none).
        for (const protocol of ["json", "messagepack"]) {
            const c = await connect({ user: `cap-${protocol}`, protocol, appUrl: app.url });
            clients.push(c);
            await waitFor(c, (m) => m[0] === "welcome", `${protocol}: welcome`);
            assert.equal(await c.connection.invoke("Add", 2, 3), 5);
            assert.equal(await c.connection.invoke("Echo", `captured ${protocol}`), `captured ${protocol}`);
            await stopAll(c);
        }
        const ids = clients.map((c) => c.id);
        const files = await pollUntil(async () => completeFiles(dir), (f) => f.length >= 2,
            "a complete capture file per client connection", 20000, 100);
        assert.equal(files.length, 2, `one file per client connection: ${fs.readdirSync(dir).join(", ")}`);
        const protocols = [];
        for (const file of files) {
            const text = fs.readFileSync(file, "utf8");
            const events = text.trim().split("\n").map((l, i) => {
                try {
                    return JSON.parse(l);
                } catch (e) {
                    throw new Error(`${file} line ${i + 1} is not JSON: ${e.message}`);
                }
            });
            const session = events[0];
            assert.equal(session.type, "session");
            assert.equal(session.format, "signalr-capture");
            assert.equal(session.version, 2);
            assert.equal(session.door, "core");
            assert.equal(session.upstream, "service");
            assert.equal(events[events.length - 1].type, "end");
            for (const e of events.slice(1)) assert.equal(typeof e.t, "number", `${file}: every event has t: ${JSON.stringify(e)}`);
            // The client's way in: negotiate at the relay's /client/ with Authorization, then the
            // WebSocket with access_token, both masked.
            const negotiate = events.find((e) => e.type === "http-request" && /\/client\/negotiate$/.test(e.path));
            assert.ok(negotiate, `${file}: the /client/negotiate request`);
            assert.equal(negotiate.headers.authorization, "<authorization>");
            const open = events.find((e) => e.type === "ws-open");
            assert.ok(open, `${file}: the WebSocket`);
            // (node's client sends the token as Authorization on the upgrade too; browsers as access_token)
            assert.ok(open.headers.authorization === "<authorization>" || /access_token=<accessToken>/.test(open.rawQuery),
                `${file}: the WebSocket's token masked: ${JSON.stringify(open)}`);
            // Never in clear: a JWT (the app's tokens start eyJ), a bearer value, any connection id.
            assert.doesNotMatch(text, /eyJ[A-Za-z0-9_-]{8,}/, `${file}: a token in clear`);
            assert.doesNotMatch(text, /Bearer [^<]/i, `${file}: a bearer value in clear`);
            assert.doesNotMatch(text, /access_token=[^<]/, `${file}: an access_token in clear`);
            for (const id of ids) assert.ok(!text.includes(id), `${file}: connection id ${id} in clear`);
            assert.doesNotMatch(text, /cap-probe/, `${file}: only its own connection`);
            // The calls and their answers are kept (bodies are captured by default).
            const frames = events.filter((e) => e.type === "ws-frame");
            const binary = frames.some((f) => f.binary !== undefined);
            protocols.push(text.includes("captured json") ? "json" : binary ? "messagepack" : "?");
            assert.ok(frames.some((f) => f.dir === "c2s") && frames.some((f) => f.dir === "s2c"), `${file}: frames both ways`);
        }
        assert.deepEqual(protocols.sort(), ["json", "messagepack"], "one file is the JSON client's, one the MessagePack client's");
        // Replayed against the same relay with a fresh token of the same user: answers as recorded.
        for (const file of files) {
            const user = /[?&]user=([^&"]+)/.exec(fs.readFileSync(file, "utf8"))[1];
            const run = await replay(["check", "--target", relay.url, "--authorization", `Bearer ${await app.token(user)}`,
                "--grace", "200", file]);
            assert.equal(run.code, 0, `${file} replayed:\n${run.stdout}${run.stderr}`);
            assert.match(run.stdout, /replay: 1 passed, 0 failed/);
        }
        // Without a token the relay refuses the negotiate: the replay says so (the comparison is live).
        const refused = await replay(["check", "--target", relay.url, "--grace", "200", files[0]]);
        assert.equal(refused.code, 1, refused.stdout + refused.stderr);
        assert.match(refused.stdout, /line 3: .*status 401, recorded 200/);
    } finally {
        await stopAll(...clients);
        if (app) await app.stop();
        await relay.stop();
        if (!process.env.KEEP_CAPTURE) fs.rmSync(dir, { recursive: true, force: true }); // KEEP_CAPTURE=1: to look at them
    }
});
