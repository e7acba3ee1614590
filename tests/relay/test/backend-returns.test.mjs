// A Core reconnect that completes after the backend went away: a backend process of this test's
// own dies (SIGKILL) under a stock client with automatic reconnect; the relay's Close allows
// reconnecting, the client retries, and once a backend answers again on the same address the
// client is back: a new backend session (OnConnectedAsync again), and calls work. The relay
// (started here, default flags) must exit 0 with a clean sanitizer log.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../lib/common.mjs";
import { startProcess, startRelay } from "../../lib/process.mjs";
import { TIMEOUT_MS, stockConnection, stopAll, withTimeout } from "../lib.mjs";

const BACKEND_DLL = path.resolve(path.dirname(fileURLToPath(import.meta.url)),
    "../../backend/bin/Release/net10.0/signalr-test-backend.dll");

function startBackend(port) {
    return startProcess("dotnet", [BACKEND_DLL, "--urls", `http://127.0.0.1:${port}`], {
        port, ready: "/health", name: "signalr-test-backend", timeoutMs: 60000,
        env: { ASPNETCORE_ENVIRONMENT: "Production", Logging__LogLevel__Default: "Warning", DOTNET_NOLOGO: "1" },
    });
}

test("backend killed and back: a stock client with automatic reconnect reconnects and calls work", async () => {
    const port = await freePort();
    let backend = await startBackend(port);
    const relay = await startRelay(["--hub", `chat=${backend.url}/chat`]);
    // Retries every second for up to two minutes: a backend start on a loaded machine takes a while.
    const conn = stockConnection(`${relay.url}/chat`, { reconnectDelays: Array(120).fill(1000) });
    const welcomes = [];
    conn.on("welcome", (id) => welcomes.push(id));
    const reconnecting = new Promise((resolve) => conn.onreconnecting((e) => resolve(e ?? null)));
    const reconnected = new Promise((resolve) => conn.onreconnected(() => resolve()));
    let closeError = "not closed";
    conn.onclose((e) => { closeError = e ?? null; });
    try {
        await withTimeout(conn.start(), TIMEOUT_MS, "start");
        assert.equal(await conn.invoke("Echo", "before"), "before");
        await backend.kill("SIGKILL");
        const why = await withTimeout(reconnecting, TIMEOUT_MS, "onreconnecting after the backend died");
        assert.match(why?.message ?? "", /The relay lost its connection to the backend hub 'chat'\.$/);
        backend = await startBackend(port);
        await withTimeout(reconnected, 120000, "onreconnected once the backend is back");
        assert.equal(conn.state, "Connected");
        assert.equal(await conn.invoke("Echo", "after"), "after");
        assert.equal(welcomes.length, 2, `welcome pushes: ${JSON.stringify(welcomes)}`);
        assert.equal((await conn.invoke("WhoAmI")).connectionId, welcomes[1]);
        assert.equal(closeError, "not closed");
    } finally {
        await stopAll(conn);
        await relay.stop();
        await backend.kill("SIGTERM");
    }
});
