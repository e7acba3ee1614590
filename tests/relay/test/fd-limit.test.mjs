// 15. At its descriptor limit (issue 10, defect 1). A relay with a small `ulimit -n` gets more
// negotiates at once than it has descriptors for, so opening some of their backend connections
// fails inside lws_client_connect_via_info, which then destroys the new connection before
// returning. The relay used to free the negotiate while still holding it (ASan: heap-use-after-
// free; a release build aborted). It must answer what it cannot serve (503) and keep running:
// every request answered, /metrics afterwards, a clean exit and a clean sanitizer log on SIGTERM.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BACKEND_URL, freePort, httpRequest, negotiate, pollUntil } from "../lib.mjs";

const FD_LIMIT = 40;     // a few more than an idle ASan relay needs
const AT_ONCE = 60;      // negotiates in flight together, each wanting two descriptors
const ROUNDS = 3;

test("a relay out of descriptors answers what it cannot open and keeps running", async () => {
    const bin = process.env.RELAY_BIN;
    assert.ok(bin, "RELAY_BIN is not set: run through scripts/relay-tests.sh");
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const logPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "relay-fd-limit-")), "relay.log");
    const log = fs.openSync(logPath, "w");
    const relay = spawn("bash", ["-c", `ulimit -n ${FD_LIMIT} && exec "$RELAY_BIN" --listen 127.0.0.1:${port} ` +
        `--hub chat=${BACKEND_URL}/chat`], { stdio: ["ignore", log, log], env: process.env });
    const exited = new Promise((resolve) => relay.on("exit", (code, signal) => resolve({ code, signal })));
    try {
        await pollUntil(() => httpRequest("GET", `${base}/metrics`).catch(() => ({ status: 0 })),
            (r) => r.status === 200, "the relay to start", 20000, 200);
        const statuses = {};
        for (let round = 0; round < ROUNDS; round++) {
            const answers = await Promise.all(Array.from({ length: AT_ONCE }, () =>
                negotiate(base, "chat").then((r) => r.status, (e) => `error: ${e.message}`)));
            for (const a of answers) statuses[a] = (statuses[a] || 0) + 1;
            assert.equal(relay.exitCode, null, `the relay died; statuses ${JSON.stringify(statuses)}; log ${logPath}`);
        }
        console.log(`# negotiate answers at ulimit -n ${FD_LIMIT}: ${JSON.stringify(statuses)}`);
        for (const s of Object.keys(statuses))
            assert.ok(s === "200" || s === "503", `every negotiate answered 200 or 503: ${JSON.stringify(statuses)}`);
        assert.ok(statuses["200"] > 0, "some negotiates got through");
        // Its descriptors come back as the rounds' connections close: it answers again by then.
        await pollUntil(() => httpRequest("GET", `${base}/metrics`).catch(() => ({ status: 0 })),
            (r) => r.status === 200, "the relay to answer /metrics after the rounds", 20000, 100);
    } finally {
        relay.kill("SIGTERM");
        const { code, signal } = await exited;
        fs.closeSync(log);
        const text = fs.readFileSync(logPath, "utf8");
        assert.ok(!/Sanitizer|runtime error/.test(text), `sanitizer report in ${logPath}`);
        assert.deepEqual({ code, signal }, { code: 0, signal: null }, `relay exit; log ${logPath}`);
    }
});
