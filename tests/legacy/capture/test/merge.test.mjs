// merge.mjs: a scenario's --capture files (one per connection) as one session of several connections.
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import { mergeCaptures, renumber } from "../merge.mjs";

const file = (start, lines, placeholders) => [
    { type: "session", format: "signalr-capture", version: 2, door: "legacy", label: "/signalr/negotiate", upstream: "proxy", start },
    ...lines,
    { type: "end", t: lines.at(-1).tEnd ?? lines.at(-1).t, placeholders },
].map((l) => JSON.stringify(l)).join("\n") + "\n";

test("the second file's connection becomes connection 2; backend ids keep their relay-wide numbers", () => {
    assert.equal(renumber('{"C":"<cursor:1.3>","G":"<groupsToken:1.1>","A":["<backendId:1>","<connectionId>"]}&connectionToken=<connectionToken>', 2),
        '{"C":"<cursor:2.3>","G":"<groupsToken:2.1>","A":["<backendId:1>","<connectionId#2>"]}&connectionToken=<connectionToken#2>');
    assert.equal(renumber("<cursor:1.3>", 1), "<cursor:1.3>");
});

test("lines in the order the relay wrote them (start + t, tEnd for a response); a client action first at the same ms; ids renumbered", () => {
    const a = file(1000, [
        { type: "ws-open", ws: 1, t: 0, path: "/signalr/connect", rawQuery: "connectionToken=<connectionToken>" },
        { type: "ws-frame", ws: 1, t: 30, dir: "s2c", text: '{"C":"<cursor:1.1>","M":[{"A":["b says hi"]}]}' },
        { type: "http-request", id: 1, t: 40, method: "POST", path: "/signalr/abort" },
        { type: "http-response", id: 1, t: 41, tEnd: 60, status: 200 },
    ], ["<connectionToken>", "<cursor:1.1>"]);
    const b = file(1010, [
        { type: "ws-open", ws: 1, t: 0, path: "/signalr/connect", rawQuery: "connectionToken=<connectionToken>" },
        { type: "ws-frame", ws: 1, t: 20, dir: "c2s", text: '{"M":"Broadcast","A":["b says hi"]}' },
        { type: "http-request", id: 1, t: 45, method: "POST", path: "/signalr/abort" },
        { type: "http-response", id: 1, t: 45, tEnd: 45, status: 200 },
    ], ["<connectionToken>"]);
    const lines = mergeCaptures([{ name: "a", text: a }, { name: "b", text: b }]).trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(lines[0].start, 1000);
    assert.match(lines[0].label, /2 connections merged/);
    // b's Broadcast (1010 + 20) and a's frame it caused (1000 + 30): the same ms, the client's action first.
    assert.deepEqual(lines.slice(1, -1).map((l) => [l.type, l.ws ?? l.id, l.t, l.dir ?? l.path ?? ""]), [
        ["ws-open", 1, 0, "/signalr/connect"],
        ["ws-open", 2, 10, "/signalr/connect"],
        ["ws-frame", 2, 30, "c2s"],
        ["ws-frame", 1, 30, "s2c"],
        ["http-request", 1, 40, "/signalr/abort"],
        ["http-request", 2, 55, "/signalr/abort"],
        ["http-response", 2, 55, ""],
        ["http-response", 1, 41, ""],
    ]);
    assert.equal(lines[2].rawQuery, "connectionToken=<connectionToken#2>");
    assert.deepEqual(lines.at(-1), { type: "end", t: 60, placeholders: ["<connectionToken>", "<cursor:1.1>", "<connectionToken#2>"] });
});

test("a file without start, an end line or of another door is refused; one file is passed through", () => {
    const one = file(5, [{ type: "ws-open", ws: 1, t: 0, path: "/x" }], []);
    assert.equal(mergeCaptures([{ name: "a", text: one }]), one);
    assert.throws(() => mergeCaptures([{ name: "a", text: one }, { name: "b", text: one.replace(/,"start":5/, "") }]), /b: its session line has no start/);
    assert.throws(() => mergeCaptures([{ name: "a", text: one }, { name: "b", text: one.split("\n").slice(0, -2).join("\n") }]), /b: no end line/);
    assert.throws(() => mergeCaptures([{ name: "a", text: one.replace('"legacy"', '"core"') }, { name: "b", text: one }]), /a: not a legacy/);
});
