// signalr-replay --reference masks what reference-mask.mjs lists, no more and no less: every JSON
// answer of every fixture in fixtures/legacy/reference (negotiate bodies, /send results, event
// stream data lines, long-poll bodies) and a few made-up ones go through both, and must come out
// the same. reference-mask.mjs stays the list (tests/legacy-ref/README.md's rows); a mask added
// there and not to tools/replay/rp_mask.c fails here.
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { maskReferenceJson } from "../reference-mask.mjs";
import { REPLAY_BIN, readFixture } from "./replay-bin.mjs";

const REFERENCE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../fixtures/legacy/reference");

// reference-mask.mjs works on Maps (member order kept); compared here as plain values.
const toMaps = (v) => Array.isArray(v) ? v.map(toMaps)
    : v !== null && typeof v === "object" ? new Map(Object.entries(v).map(([k, x]) => [k, toMaps(x)])) : v;
const toPlain = (v) => v instanceof Map ? Object.fromEntries([...v].map(([k, x]) => [k, toPlain(x)]))
    : Array.isArray(v) ? v.map(toPlain) : v;

function cMask(lines, negotiate) {
    assert.ok(REPLAY_BIN, "no signalr-replay binary (see replay-bin.mjs)");
    return new Promise((resolve, reject) => {
        const child = spawn(REPLAY_BIN, ["mask", "--reference", ...(negotiate ? ["--negotiate"] : [])]);
        let out = "", err = "";
        // Decoded as one stream: a multi-byte character split between two pipe reads stays whole.
        child.stdout.setEncoding("utf8");
        child.stderr.setEncoding("utf8");
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (err += d));
        child.on("error", reject);
        child.on("close", (code) => (code === 0 ? resolve(out.split("\n").filter(Boolean)) : reject(new Error(`exit ${code}: ${err}`))));
        child.stdin.end(lines.map((l) => `${l}\n`).join(""));
    });
}

function answers() {
    const found = { negotiate: [], other: [] };
    const isJson = (t) => { try { JSON.parse(t); return t.trim().length > 0; } catch { return false; } };
    const files = fs.existsSync(REFERENCE_DIR) ? fs.readdirSync(REFERENCE_DIR).filter((f) => f.endsWith(".jsonl")) : [];
    for (const file of files) {
        const { events } = readFixture(fs.readFileSync(path.join(REFERENCE_DIR, file), "utf8"), file);
        const requests = new Map(events.filter((e) => e.type === "http-request").map((e) => [e.id, e]));
        for (const e of events.filter((x) => x.type === "http-response" && typeof x.body === "string")) {
            const pieces = e.headers?.["content-type"] === "text/event-stream"
                ? e.body.split("\n\n").filter((d) => d.startsWith("data: ")).map((d) => d.slice(6)) : [e.body];
            const negotiate = requests.get(e.id)?.path.endsWith("/negotiate");
            for (const p of pieces.filter(isJson)) found[negotiate ? "negotiate" : "other"].push(p.replace(/\n/g, " "));
        }
    }
    return found;
}

const MADE_UP = [
    '{"C":"c","M":[{"H":"ChatHub","M":"Welcome","A":["x"]},{"H":"ChatHub","M":"note","A":[1]}]}',
    '{"I":"1","E":"boom"}', '{"I":"1","E":"boom","H":true}', '{"I":"2","R":{"connectionId":"a","transport":"t","forwardedFor":"f","x":1}}',
    '{"R":{"transport":"t"},"I":"3"}', '[1,2]', '"text"', '{"M":"not an array","TryWebSockets":true}',
];

test("signalr-replay mask --reference masks every reference answer as reference-mask.mjs does", async () => {
    const { negotiate, other } = answers();
    assert.ok(negotiate.length > 0 && other.length > 10, `reference answers found: ${negotiate.length} negotiate, ${other.length} other`);
    for (const [lines, isNegotiate] of [[negotiate, true], [[...other, ...MADE_UP], false], [MADE_UP, true]]) {
        const got = await cMask(lines, isNegotiate);
        assert.equal(got.length, lines.length);
        lines.forEach((line, k) => {
            const want = toPlain(maskReferenceJson(toMaps(JSON.parse(line)), { negotiate: isNegotiate }));
            assert.deepStrictEqual(JSON.parse(got[k]), want, `${line} (negotiate: ${isNegotiate})`);
        });
    }
});
