// Starting and stopping the processes a test needs of its own (a relay with particular flags),
// with bounded waits: the process answers before the test goes on, and stop() fails the test when
// it exits non-zero or leaves a sanitizer report in its log (as scripts/lib/relay.sh does).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, httpRequest, pollUntil, withTimeout } from "./common.mjs";

const SANITIZER_REPORT = /ERROR: (Address|Leak)Sanitizer|runtime error:/;

// Starts `bin` with `args`, output to a log file, and waits until GET `ready(port)` answers 200
// (through `probe(url)`, a promise of the status, when given: e.g. over TLS with a test CA).
// Returns { pid, port, url, log, exited (a promise of the exit code or signal), stop() }.
export async function startProcess(bin, args, { port = null, ready = "/metrics", env = {}, timeoutMs = 30000, name = path.basename(bin),
    scheme = "http", probe = null } = {}) {
    const logPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), `${name}.`)), `${name}.log`);
    const log = fs.openSync(logPath, "w");
    const child = spawn(bin, typeof args === "function" ? args(port) : args, {
        stdio: ["ignore", log, log], env: { ...process.env, ...env },
    });
    fs.closeSync(log);
    const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal)));
    let gone = null;
    exited.then((how) => { gone = how; });
    const url = `${scheme}://127.0.0.1:${port}`;
    const get = probe ?? ((u) => httpRequest("GET", u, {}, null, 2000).then((r) => r.status));
    try {
        await pollUntil(async () => {
            if (gone !== null) return { exited: gone };
            return get(`${url}${ready}`).then((status) => status, () => 0);
        }, (v) => v === 200 || v?.exited !== undefined, `${name} to answer ${ready}`, timeoutMs, 100);
    } catch (e) {
        child.kill("SIGKILL");
        throw new Error(`${e.message}; log ${logPath}:\n${readTail(logPath)}`);
    }
    if (gone !== null) throw new Error(`${name} exited (${gone}) during start; log ${logPath}:\n${readTail(logPath)}`);
    return {
        pid: child.pid, port, url, log: logPath, exited, child,
        // SIGTERM, wait (SIGKILL after timeoutMs), then require exit status 0 and a clean log.
        async stop(stopTimeoutMs = 15000) {
            if (gone === null) child.kill("SIGTERM");
            let how;
            try {
                how = await withTimeout(exited, stopTimeoutMs, `${name} (pid ${child.pid}) to exit after SIGTERM`);
            } catch (e) {
                child.kill("SIGKILL");
                await exited;
                throw e;
            }
            const text = fs.readFileSync(logPath, "utf8");
            if (how !== 0) throw new Error(`${name} exited with ${how}; log ${logPath}:\n${readTail(logPath)}`);
            if (SANITIZER_REPORT.test(text)) throw new Error(`${name} logged a sanitizer report; log ${logPath}:\n${readTail(logPath)}`);
        },
        kill(signal = "SIGKILL") { child.kill(signal); return exited; },
    };
}

function readTail(file, lines = 40) {
    try {
        return fs.readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
    } catch {
        return "(no log)";
    }
}

// A signalr-relay (RELAY_BIN, the build scripts/relay-tests.sh uses) on a free port of 127.0.0.1
// with `args` after --listen; the sanitizer options match scripts/lib/relay.sh. A relay with
// --tls-cert needs scheme "https" and a probe that trusts its CA.
export async function startRelay(args, { port = null, env = {}, scheme = "http", probe = null } = {}) {
    const bin = process.env.RELAY_BIN;
    if (!bin) throw new Error("RELAY_BIN is not set: run the suite through scripts/relay-tests.sh");
    const p = port ?? await freePort();
    return startProcess(bin, ["--listen", `127.0.0.1:${p}`, ...args], {
        port: p, name: "signalr-relay", scheme, probe,
        env: {
            ASAN_OPTIONS: process.env.ASAN_OPTIONS || "detect_leaks=1:abort_on_error=0:exitcode=23",
            UBSAN_OPTIONS: process.env.UBSAN_OPTIONS || "print_stacktrace=1:halt_on_error=1",
            ...env,
        },
    });
}
