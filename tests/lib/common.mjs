// Helpers shared by every Node test suite of the repository (tests/interop/js, tests/relay,
// tests/legacy/browser, tests/legacy/capture): waiting with a bound, polling an observable
// condition, plain HTTP requests, free ports and small servers on 127.0.0.1. No dependencies
// outside Node itself, so each suite imports it by relative path whatever its node_modules hold.
//
// Rules the suites follow with these: every wait has a bound (a missing event fails the test with
// what it waited for instead of hanging it); a test waits for an observable event (a /metrics
// value, the backend's own record, a client callback) rather than sleeping a fixed time; bounds
// are generous (the CI machine has two cores shared with other jobs), never sub-second windows.
import http from "node:http";
import net from "node:net";

// The default bound of one wait. Generous on purpose: a pass must not depend on the machine's load.
export const TIMEOUT_MS = 10000;

export function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

// Resolves or rejects as `promise` does, or rejects after `ms` with "timed out ... waiting for <what>".
export function withTimeout(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Polls `probe` (sync or async) until `done(value)` holds and returns that value; probes at least
// once and once more at the deadline, then fails with the last value seen.
export async function pollUntil(probe, done, what, timeoutMs = TIMEOUT_MS, everyMs = 50) {
    const deadline = Date.now() + timeoutMs;
    let last;
    for (;;) {
        last = await probe();
        if (done(last)) return last;
        if (Date.now() >= deadline) break;
        await sleep(Math.min(everyMs, Math.max(1, deadline - Date.now())));
    }
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === "function" ? what() : what}; last value ${JSON.stringify(last)}`);
}

// A name no other test (or other run on the same backend) uses: groups, broadcast tags.
export function uniqueName(prefix) {
    return `${prefix}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
}

// One HTTP request on a fresh connection: { status, headers (lower-case names), body (text) }.
export function httpRequest(method, url, headers = {}, body = null, timeoutMs = TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
        const req = http.request(url, { method, headers, agent: false, timeout: timeoutMs }, (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => resolve({
                status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString("utf8"),
            }));
            res.on("error", reject);
        });
        req.on("timeout", () => req.destroy(new Error(`${method} ${url}: no answer in ${timeoutMs} ms`)));
        req.on("error", reject);
        req.end(body);
    });
}

// Starts `server` (an http.Server or net.Server) on 127.0.0.1 and a free port; resolves with the port.
export function listen(server, port = 0) {
    return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => {
            server.off("error", reject);
            resolve(server.address().port);
        });
    });
}

// Closes a server started with listen(), dropping its open connections.
export function closeServer(server) {
    if (!server) return Promise.resolve();
    return new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
    });
}

// A port that was free a moment ago on 127.0.0.1 (the kernel's choice). A small race with other
// processes remains: prefer listen(server) with port 0 where the server is ours.
export async function freePort() {
    const server = net.createServer();
    const port = await listen(server);
    await closeServer(server);
    return port;
}

// The kernel's TCP state of this process's connection from 127.0.0.1:`localPort` (IPv4 only), as
// /proc/net/tcp names it: "ESTABLISHED", "CLOSE_WAIT" (the peer closed; seen even while the
// application is not reading), ..., or null when there is none. Lets a test observe that a server
// dropped a connection its client has stopped reading.
const TCP_STATES = ["", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE",
    "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING"];
export async function tcpState(localPort) {
    const { readFile } = await import("node:fs/promises");
    const want = `0100007F:${localPort.toString(16).toUpperCase().padStart(4, "0")}`;
    for (const line of (await readFile("/proc/net/tcp", "utf8")).split("\n").slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f[1] === want) return TCP_STATES[parseInt(f[3], 16)] ?? f[3];
    }
    return null;
}
