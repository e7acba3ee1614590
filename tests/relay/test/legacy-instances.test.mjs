// Stock legacy clients (Microsoft.AspNet.SignalR.Client 2.4.2, tests/legacy/dotnet) against a relay
// whose ChatHub has three backend instances: the shared test backend and two of this test's own.
// The scenarios themselves are tests/legacy/dotnet/Instances.cs: six clients spread two per
// instance, every call of a client is served by its instance (the backend's RequestDetails names
// the port), a client whose transport is cut reconnects onto the same backend link; then one
// instance is killed: its clients hear of it and a new start lands on a survivor, while the other
// clients neither err nor reconnect nor move. This file starts the processes, runs the .NET
// runner (built here when missing or older than its sources; scripts/interop.sh builds it first
// in CI) and checks its result, then /readyz and /metrics.
import { test, after } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { spawnSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../lib/common.mjs";
import { startProcess, startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, httpRequest, withTimeout } from "../lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const BACKEND_DLL = path.resolve(here, "../../backend/bin/Release/net10.0/signalr-test-backend.dll");
const LEGACY_DIR = path.resolve(here, "../../legacy/dotnet");
const LEGACY_DLL = path.join(LEGACY_DIR, "bin/Release/net10.0/signalr-legacy-dotnet.dll");
const RUN_TIMEOUT_MS = 100000;

function startBackend(port) {
    return startProcess("dotnet", [BACKEND_DLL, "--urls", `http://127.0.0.1:${port}`], {
        port, ready: "/health", name: "signalr-test-backend", timeoutMs: 60000,
        env: { ASPNETCORE_ENVIRONMENT: "Production", Logging__LogLevel__Default: "Warning", DOTNET_NOLOGO: "1" },
    });
}

// The runner, built when missing or older than one of its sources (incremental dotnet build).
function buildLegacyRunner() {
    const newest = Math.max(...[LEGACY_DIR, path.resolve(here, "../../lib")].flatMap((d) => fs.readdirSync(d)
        .filter((f) => f.endsWith(".cs") || f.endsWith(".csproj")).map((f) => fs.statSync(path.join(d, f)).mtimeMs)));
    if (fs.existsSync(LEGACY_DLL) && fs.statSync(LEGACY_DLL).mtimeMs >= newest) return;
    const r = spawnSync("dotnet", ["build", LEGACY_DIR, "-c", "Release", "--nologo", "-v", "quiet"],
        { encoding: "utf8", timeout: 600000, env: { ...process.env, DOTNET_NOLOGO: "1", DOTNET_CLI_TELEMETRY_OPTOUT: "1" } });
    assert.equal(r.status, 0, `dotnet build ${LEGACY_DIR}:\n${r.stdout}\n${r.stderr}`);
}

function runLegacy(env) {
    return new Promise((resolve) => {
        const child = spawn("dotnet", [LEGACY_DLL], { env: { ...process.env, DOTNET_NOLOGO: "1", ...env } });
        let out = "";
        child.stdout.on("data", (d) => { out += d; });
        child.stderr.on("data", (d) => { out += d; });
        const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
        child.on("exit", (code, signal) => { clearTimeout(timer); resolve({ code: code ?? signal, out }); });
    });
}

const ports = [await freePort(), await freePort()];
const own = await Promise.all(ports.map(startBackend));
const urls = [`${BACKEND_URL}/chat`, `${own[0].url}/chat`, `${own[1].url}/chat`];
after(async () => { for (const b of own) await b.kill("SIGTERM"); });

test("stock legacy .NET clients over three instances: spread, stickiness, an instance killed", { timeout: 720000 }, async () => {
    buildLegacyRunner();
    const relay = await startRelay(["--hub", `ChatHub=${urls.join(",")}`]);
    try {
        const { code, out } = await withTimeout(runLegacy({
            SIGNALR_LEGACY_URL: `${relay.url}/signalr`,
            SIGNALR_LEGACY_INSTANCES: urls.map((u) => new URL(u).port).join(","),
            SIGNALR_LEGACY_VICTIM_PID: String(own[0].pid),
        }), RUN_TIMEOUT_MS + 10000, "the .NET legacy runner");
        console.log(out);
        assert.equal(code, 0, out);
        assert.match(out, /^2 passed, 0 failed$/m, out);
        // The killed instance is out in /readyz, with no links left.
        const ready = await httpRequest("GET", `${relay.url}/readyz`);
        assert.match(ready.body, new RegExp(`^  backend ${urls[1]}: (backed off|not reachable)[^\\n]*, 0 active links$`, "m"), ready.body);
    } finally {
        await relay.stop();
    }
});
