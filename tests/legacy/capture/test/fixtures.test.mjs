// The captured legacy sessions in fixtures/legacy/ (the relay's --capture: one file per client
// connection, <scenario>.jsonl for its first connection, <scenario>-2.jsonl ... for the next): first
// what each file and each scenario must contain (so a refreshed capture that lost a step, leaked a
// token or grew a big payload is noticed), then each scenario replayed against a running relay at
// SIGNALR_LEGACY_URL with signalr-replay check (skipped when it is not set), its files merged into
// one session (merge.mjs: a reconnect scenario's broadcasts come from its second connection), one
// scenario after another (a broadcast of one replay would otherwise reach the connections of another).
//
//   SIGNALR_LEGACY_URL=http://127.0.0.1:8080/signalr node --test test/fixtures.test.mjs
//   SIGNALR_REPLAY_PACE=1   keep the recorded pauses (default 0: as fast as the answers come)
//   SIGNALR_LEGACY_FIXTURES="name name2"   only these scenarios, SIGNALR_LEGACY_FIXTURE_DIR=dir from
//   there (scripts/capture-legacy-fixtures.sh checks new captures before they replace the fixtures)
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { readFixture as parseFixture, runReplay } from "./replay-bin.mjs";
import { mergeCaptures } from "../merge.mjs";

const FIXTURE_DIR = process.env.SIGNALR_LEGACY_FIXTURE_DIR ||
    path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../fixtures/legacy");
const LEGACY_URL = process.env.SIGNALR_LEGACY_URL || "";
const PACE = Number(process.env.SIGNALR_REPLAY_PACE || 0);
const ONLY = (process.env.SIGNALR_LEGACY_FIXTURES || "").split(/\s+/).filter(Boolean);
const MAX_BYTES = 64 * 1024;

const files = fs.existsSync(FIXTURE_DIR) ? fs.readdirSync(FIXTURE_DIR).filter((f) => f.endsWith(".jsonl")).sort() : [];
// Scenario name -> its files, first connection first (x.jsonl, x-2.jsonl, x-3.jsonl, ...).
const SUFFIX = /-(\d+)\.jsonl$/;
const scenarioOf = (f) => f.replace(SUFFIX, "").replace(/\.jsonl$/, "");
const connectionOf = (f) => Number(SUFFIX.exec(f)?.[1] ?? 1);
const scenarios = new Map();
for (const f of files) {
    if (ONLY.length && !ONLY.includes(scenarioOf(f))) continue;
    if (!scenarios.has(scenarioOf(f))) scenarios.set(scenarioOf(f), []);
    scenarios.get(scenarioOf(f)).push(f);
}
for (const list of scenarios.values()) list.sort((a, b) => connectionOf(a) - connectionOf(b));

const EXPECTED = ["webSockets", "serverSentEvents", "longPolling"].map((t) => [t, ["jquery", "dotnet"], ["session", "reconnect"]]);
test("fixtures/legacy has the session and reconnect captures of each client and transport listed", { skip: ONLY.length ? "SIGNALR_LEGACY_FIXTURES is set" : false }, () => {
    for (const [t, clients, kinds] of EXPECTED) for (const client of clients) {
        for (const kind of kinds) {
            assert.ok([...scenarios.keys()].some((f) => f.startsWith(`${client}-`) && f.endsWith(`-${t}-${kind}`)),
                `no ${client} ${kind} fixture in ${FIXTURE_DIR} (scripts/capture-legacy-fixtures.sh makes them)`);
        }
        // A reconnect scenario has its two connections: a (reconnecting) and b (broadcasting).
        const reconnect = [...scenarios.entries()].find(([name]) => name.startsWith(`${client}-`) && name.endsWith(`-${t}-reconnect`));
        assert.equal(reconnect?.[1].length, 2, `${client} ${t} reconnect: ${reconnect?.[1]}`);
    }
});

// Over webSockets the frames are ws-frame lines; over serverSentEvents and longPolling the client's
// invocations are /send form posts (data=) and the server's frames are the /send answers (hub
// results), the event stream's data lines and the long polls' bodies: both as {line, ws, json}.
const transportOf = (file) => /-(webSockets|serverSentEvents|longPolling)-/.exec(file)?.[1] ?? "webSockets";
const isJson = (text) => { try { JSON.parse(text); return true; } catch { return false; } };
function httpFrames(events, dir) {
    if (dir === "c2s") {
        return events.filter((e) => e.type === "http-request" && e.path.endsWith("/send") && e.form)
            .map((e) => ({ ...e, json: JSON.parse(new Map(e.form).get("data")) }));
    }
    const requests = new Map(events.filter((e) => e.type === "http-request").map((e) => [e.id, e]));
    return events.filter((e) => e.type === "http-response" && typeof e.body === "string").flatMap((e) => {
        const request = requests.get(e.id);
        const data = e.headers?.["content-type"] === "text/event-stream"
            ? e.body.split("\n\n").filter((d) => d.startsWith("data: ")).map((d) => d.slice(6)).filter(isJson)
            : (isJson(e.body) && e.body.trim() ? [e.body] : []);
        return data.map((text) => ({ ...e, line: e.line, request, json: JSON.parse(text) }));
    });
}
let transport = "webSockets";
const frames = (events, dir) => transport !== "webSockets" ? httpFrames(events, dir)
    : events.filter((e) => e.type === "ws-frame" && e.dir === dir && e.text !== undefined)
        .map((e) => ({ ...e, json: JSON.parse(e.text) }));
const elements = (events) => frames(events, "s2c").flatMap((f) => (Array.isArray(f.json.M) ? f.json.M : []));
const requests = (events, suffix) => events.filter((e) => e.type === "http-request" && e.path.endsWith(suffix));

for (const file of [...scenarios.values()].flat()) {
    const text = fs.readFileSync(path.join(FIXTURE_DIR, file), "utf8");
    test(`${file}: small, masked, complete, one connection recorded by the relay`, () => {
        assert.ok(Buffer.byteLength(text) <= MAX_BYTES, `${Buffer.byteLength(text)} bytes`);
        const fixture = parseFixture(text, file);
        const listed = new Set(fixture.placeholders);
        for (const used of new Set(text.match(/<(connectionToken|connectionId|cursor|groupsToken|backendId)[^>]*>/g) ?? [])) {
            assert.ok(listed.has(used), `${used} is not in the end line`);
        }
        // Per-run values never appear in clear: no GUID (legacy connection ids), every token and
        // cursor the client sent back is a placeholder.
        assert.doesNotMatch(text, /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i);
        for (const e of fixture.events.filter((x) => x.query)) {
            for (const [name, value] of e.query) {
                if (["connectionToken", "messageId", "groupsToken"].includes(name)) {
                    assert.match(value, /^<\w+[#:.\d]*>$/, `line ${e.line}: ${name}=${value}`);
                }
            }
        }
        // --capture: one connection from its negotiate on (a probe, a negotiate alone, is no fixture).
        assert.equal(fixture.session.format, "signalr-capture");
        assert.equal(fixture.session.door, "legacy");
        assert.ok(fixture.events[0]?.type === "http-request" && fixture.events[0].path.endsWith("/negotiate"), "does not begin with its negotiate");
        assert.equal(fixture.events.filter((e) => e.type === "http-request" && e.path.endsWith("/negotiate")).length, 1, "negotiates");
        assert.ok(fixture.events.some((e) => (e.type === "ws-open" || e.type === "http-request") && e.path.endsWith("/connect")), "no /connect");
    });
}

for (const [scenario, list] of scenarios) {
    const file = `${scenario}.jsonl`;
    const text = mergeCaptures(list.map((f) => ({ name: f, text: fs.readFileSync(path.join(FIXTURE_DIR, f), "utf8") })));
    const fileTransport = transportOf(file);

    if (file.endsWith("-session.jsonl")) {
        test(`${scenario}: a whole session (negotiate, connect, start, Echo, HubException, broadcast, Counter progress, abort)`, () => {
            const { events } = parseFixture(text, file);
            transport = fileTransport;
            for (const step of ["/negotiate", "/start", "/abort"]) {
                assert.ok(requests(events, step).length >= 1, `no ${step} request`);
            }
            assert.ok(events.some((e) => (e.type === "ws-open" || e.type === "http-request") && e.path.endsWith("/connect")), "no /connect");
            const calls = frames(events, "c2s").map((f) => f.json.M);
            assert.ok(calls.filter((m) => m === "Echo").length >= 5, `Echo calls: ${calls}`);
            assert.ok(calls.includes("ThrowHubException") && calls.includes("Broadcast") && calls.includes("Counter"), `calls: ${calls}`);
            assert.ok(frames(events, "s2c").some((f) => f.json.H === true && typeof f.json.E === "string"), "no HubException result");
            assert.ok(elements(events).some((m) => m.M === "broadcast"), "no broadcast received");
            assert.ok(elements(events).filter((m) => typeof m.I === "string" && m.I.startsWith("P|")).length >= 3, "no Counter progress");
        });
    }

    if (file.endsWith("-reconnect.jsonl")) {
        test(`${scenario}: a cut ${fileTransport === "webSockets" ? "socket" : "channel"}, broadcasts meanwhile, /reconnect with messageId, the replay`, () => {
            const { events } = parseFixture(text, file);
            transport = fileTransport;
            if (fileTransport !== "webSockets") {
                // The cut is not on the wire over HTTP (a closed request); what shows is the /reconnect
                // with the cursor, and every broadcast sent while away in what it brought.
                const reconnect = events.find((e) => e.type === "http-request" && e.path.endsWith("/reconnect"));
                assert.ok(reconnect, "no /reconnect");
                const messageId = new Map(reconnect.query).get("messageId") ?? new Map(reconnect.form ?? []).get("messageId") ?? "";
                assert.match(messageId, /^<cursor:\d+\.\d+>$/);
                const away = frames(events, "c2s").filter((f) => f.json.M === "Broadcast" && String(f.json.A[0]).includes("-away-"));
                assert.ok(away.length >= 1, "nothing broadcast while away");
                const after = frames(events, "s2c").filter((f) => f.id === reconnect.id || f.id > reconnect.id).flatMap((f) => f.json.M ?? []);
                for (const b of away) {
                    assert.equal(after.filter((m) => m.M === "broadcast" && m.A[0] === b.json.A[0]).length, 1,
                        `${b.json.A[0]} not brought exactly once from /reconnect on`);
                }
                return;
            }
            const reconnect = events.find((e) => e.type === "ws-open" && e.path.endsWith("/reconnect"));
            assert.ok(reconnect, "no /reconnect");
            assert.match(new Map(reconnect.query).get("messageId") ?? "", /^<cursor:\d+\.\d+>$/);
            const cut = events.find((e) => e.type === "ws-close" && e.by === "client" && e.line < reconnect.line);
            assert.ok(cut && cut.code !== 1000, "the socket was not cut before the reconnect");
            const away = frames(events, "c2s").filter((f) => f.line > cut.line && f.line < reconnect.line && f.json.M === "Broadcast");
            assert.ok(away.length >= 1, "nothing broadcast while away");
            const replayed = frames(events, "s2c").filter((f) => f.ws === reconnect.ws).flatMap((f) => f.json.M ?? []);
            for (const b of away) {
                assert.ok(replayed.some((m) => m.M === "broadcast" && m.A[0] === b.json.A[0]), `${b.json.A[0]} not replayed`);
            }
        });
    }

    test(`${scenario}: replays against the relay (${list.length} connection${list.length > 1 ? "s" : ""})`, { skip: LEGACY_URL ? false : "SIGNALR_LEGACY_URL is not set" }, async () => {
        let played = path.join(FIXTURE_DIR, list[0]), dir = "";
        if (list.length > 1) {
            dir = fs.mkdtempSync(path.join(os.tmpdir(), "signalr-legacy-merged-"));
            played = path.join(dir, file);
            fs.writeFileSync(played, text);
        }
        try {
            const run = await runReplay(["check", "--target", new URL(LEGACY_URL).origin, "--pace", String(PACE), played]);
            assert.equal(run.code, 0, run.stdout + run.stderr);
        } finally {
            if (dir) fs.rmSync(dir, { recursive: true, force: true });
        }
    });
}
