// 16. Out of descriptors, idle sockets first (issue 10, defect 2). A relay under a small `ulimit -n`
// gets more idle TCP connections (connected, never a byte sent) than it has descriptors. lws 4.1's
// accept loop logged "accept: errno 24" and returned with the listening socket still readable, so
// the relay spun at 100 % CPU writing ~180,000 log lines a second, and a real client waited until
// lws' own 20 s timeout closed idle sockets. Now accepting pauses when accept() finds no
// descriptor, one rate-limited line is logged, and the connections that have sent no request for
// a while are closed first. Checked: the relay's CPU share over a window at the limit stays far
// below a busy loop's, the log holds a handful of accept lines, the idle sockets are closed by the
// relay, and a stock client connects through (negotiate, WebSocket, backend link, Echo) while a
// fresh batch of idle sockets fills the relay again.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import { startProcess } from "../../lib/process.mjs";
import { BACKEND_URL, connectStock, cpuShareOver, freePort, metrics, pollUntil, stopAll, withTimeout } from "../lib.mjs";

const FD_LIMIT = 64;    // an idle ASan relay needs ~20
const IDLE = 200;       // idle sockets per batch: far more than the relay has descriptors

// Opens `count` TCP connections that never send anything; resolves once all are connected (the
// kernel completes the handshake for the listen backlog). `closed` counts those the relay closed.
async function idleSockets(port, count) {
    const batch = { sockets: [], closed: 0 };
    await Promise.all(Array.from({ length: count }, () => new Promise((resolve, reject) => {
        const s = net.connect(port, "127.0.0.1");
        s.once("connect", resolve);
        s.once("error", reject);
        s.on("close", () => { batch.closed++; });
        s.on("error", () => {});
        batch.sockets.push(s);
    })));
    return batch;
}

function destroyAll(...batches) {
    for (const b of batches) for (const s of b?.sockets ?? []) s.destroy();
}

test("out of descriptors: accepting backs off, idle sockets are closed first, a real client gets through", async () => {
    const port = await freePort();
    const relay = await startProcess("bash", ["-c", `ulimit -n ${FD_LIMIT} && exec "$RELAY_BIN" ` +
        `--listen 127.0.0.1:${port} --hub chat=${BACKEND_URL}/chat --max-connections 0`], {
        port, name: "signalr-relay",
        env: {
            ASAN_OPTIONS: process.env.ASAN_OPTIONS || "detect_leaks=1:abort_on_error=0:exitcode=23",
            UBSAN_OPTIONS: process.env.UBSAN_OPTIONS || "print_stacktrace=1:halt_on_error=1",
        },
    });
    let first = null, second = null, conn = null;
    try {
        first = await withTimeout(idleSockets(port, IDLE), 30000, `${IDLE} idle connections`);
        const share = await cpuShareOver(4000, relay.pid);
        console.log(`# relay CPU share over 4 s with ${IDLE} idle sockets at ulimit -n ${FD_LIMIT}: ${share.toFixed(3)}`);
        assert.ok(share < 0.3, `the relay spins at its descriptor limit: CPU share ${share.toFixed(3)} (log ${relay.log})`);
        await pollUntil(() => first.closed, (n) => n > 0, "the relay to close idle sockets", 30000, 200);

        second = await withTimeout(idleSockets(port, IDLE), 30000, `${IDLE} more idle connections`);
        ({ conn } = await connectStock(`${relay.url}/chat`, { timeoutMs: 60000 }));
        assert.equal(await withTimeout(conn.invoke("Echo", "through"), 30000, "Echo"), "through");

        const m = await pollUntil(() => metrics(relay.url), (v) => v.accept_pauses_total > 0, "/metrics", 30000, 200);
        console.log(`# accept pauses ${m.accept_pauses_total}, idle connections closed ${m.unidentified_closed_total}, ` +
            `accepted ${m.client_connections_accepted_total}; idle sockets closed by the relay: ` +
            `${first.closed} of the first ${IDLE}, ${second.closed} of the second`);
        assert.ok(m.unidentified_closed_total > 0, "idle connections closed");
        const acceptLines = fs.readFileSync(relay.log, "utf8").split("\n").filter((l) => /accept/.test(l));
        assert.ok(acceptLines.length > 0 && acceptLines.length <= 10,
            `${acceptLines.length} accept lines in the log (rate-limited: a few at most); log ${relay.log}`);
    } finally {
        await stopAll(conn);
        destroyAll(first, second);
        await relay.stop();
    }
});
