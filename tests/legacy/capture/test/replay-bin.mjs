// What the node tests of tests/legacy/capture need of signalr-replay (tools/replay): where the
// binary is (SIGNALR_REPLAY_BIN, else build/asan or build/release of this checkout; run.sh builds
// it), running it, and reading a fixture's lines (docs/FIXTURES.md) for the content checks of
// fixtures.test.mjs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
export const REPLAY_BIN = process.env.SIGNALR_REPLAY_BIN ||
    ["build/asan", "build/release"].map((d) => path.join(ROOT, d, "tools/replay/signalr-replay")).find((f) => fs.existsSync(f));

// Runs signalr-replay; resolves with { code, stdout, stderr }.
export function runReplay(args, timeoutMs = 120000) {
    assert.ok(REPLAY_BIN, "no signalr-replay binary: build it (cmake --build build/asan --target signalr-replay) or set SIGNALR_REPLAY_BIN");
    return new Promise((resolve) => {
        execFile(REPLAY_BIN, args, { timeout: timeoutMs }, (error, stdout, stderr) => {
            resolve({ code: error ? (error.code ?? -1) : 0, stdout, stderr });
        });
    });
}

// A fixture's lines: { session, events (each with its line number), placeholders }. Throws on a
// file that is not one (signalr-replay refuses the same files).
export function readFixture(text, name = "fixture") {
    const lines = text.split("\n").filter((l) => l.trim().length > 0);
    const entries = lines.map((l, k) => ({ ...JSON.parse(l), line: k + 1 }));
    const session = entries[0];
    assert.ok(session?.type === "session" && ["signalr-legacy-capture", "signalr-capture"].includes(session.format),
        `${name}: the first line is not a session line`);
    const end = entries[entries.length - 1];
    assert.equal(end.type, "end", `${name}: no end line (a truncated capture)`);
    return { name, session, events: entries.slice(1, -1), placeholders: end.placeholders };
}
