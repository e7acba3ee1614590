// merge.mjs - one scenario's --capture files (one per client connection) played as one session.
//
// The relay's --capture writes each client connection into a file of its own, where it is
// connection 1 (docs/FIXTURES.md). A scenario with two connections (the reconnect scenarios: b
// broadcasts while a is away) replays only with both: signalr-replay check plays one file at a
// time, so the scenario's files are merged into one session of several connections, the way
// record.mjs wrote them: the k-th file's connection becomes connection k (<connectionToken#k>,
// <connectionId#k>, <cursor:k.J>, <groupsToken:k.J>), its requests and sockets renumbered after the
// earlier files', its times on one clock. Backend ids keep their numbers: the relay numbers them
// relay-wide, and writes another connection's id (b asking about a) as that id's placeholder.
//
// Order: the session line's `start` (the Unix ms of the file's t=0, on one clock for all files
// of a relay) plus a line's time (tEnd for a response: lines are written when complete) gives the
// time the relay wrote it. The merge keeps each file's order and takes the earliest head; at the
// same millisecond a client action (request, socket open, client frame or close) goes before a
// server event (it may be its cause), then the earlier file. Pure: the same files give the same
// session.
//
//   node merge.mjs FILE... > merged.jsonl        (the files in the order their connections began)
import fs from "node:fs";
import { fileURLToPath } from "node:url";

const CLIENT_TYPES = new Set(["http-request", "ws-open"]);
const isClientAction = (e) => CLIENT_TYPES.has(e.type) || (e.type === "ws-frame" && e.dir === "c2s") ||
    (e.type === "ws-close" && e.by === "client");

// The k-th connection's placeholders (k from 1); the first file's stay as they are.
export function renumber(line, k) {
    if (k === 1) return line;
    return line
        .replace(/<connectionToken>/g, `<connectionToken#${k}>`)
        .replace(/<connectionId>/g, `<connectionId#${k}>`)
        .replace(/<(cursor|groupsToken):1\.(\d+)>/g, `<$1:${k}.$2>`);
}

function parse(text, name, k) {
    const lines = text.split("\n").filter((l) => l.trim() !== "");
    const events = lines.map((l, i) => {
        try { return JSON.parse(renumber(l, k)); } catch (err) { throw new Error(`${name}:${i + 1}: ${err.message}`); }
    });
    const [session] = events, end = events.at(-1);
    if (session?.type !== "session" || session.format !== "signalr-capture" || session.version !== 2 ||
        session.door !== "legacy") {
        throw new Error(`${name}: not a legacy signalr-capture version 2 file`);
    }
    if (!Number.isInteger(session.start)) throw new Error(`${name}: its session line has no start (a relay before it was written)`);
    if (end?.type !== "end") throw new Error(`${name}: no end line (truncated)`);
    return { session, end, body: events.slice(1, -1) };
}

// files: [{name, text}] in the order their connections began. Returns the merged file's text.
export function mergeCaptures(files) {
    if (files.length === 1) return files[0].text;
    const parsed = files.map((f, i) => parse(f.text, f.name, i + 1));
    const t0 = Math.min(...parsed.map((p) => p.session.start));
    const heads = parsed.map(() => 0), out = [];
    const httpIds = new Map(), wsIds = new Map();
    let nextHttp = 0, nextWs = 0, last = 0;
    const key = (p, e) => p.session.start - t0 + (e.type === "http-response" ? e.tEnd ?? e.t : e.t);
    for (;;) {
        let best = -1, bestKey = 0, bestClient = false;
        parsed.forEach((p, i) => {
            const e = p.body[heads[i]];
            if (!e) return;
            const k = key(p, e), client = isClientAction(e);
            if (best < 0 || k < bestKey || (k === bestKey && client && !bestClient)) {
                best = i; bestKey = k; bestClient = client;
            }
        });
        if (best < 0) break;
        const p = parsed[best], e = { ...p.body[heads[best]++] };
        const shift = p.session.start - t0;
        for (const field of ["t", "tEnd"]) if (typeof e[field] === "number") e[field] += shift;
        if (Array.isArray(e.chunks)) e.chunks = e.chunks.map((c) => ({ ...c, t: c.t + shift }));
        if (e.id !== undefined) {
            const id = `${best}:${e.id}`;
            if (!httpIds.has(id)) httpIds.set(id, ++nextHttp);
            e.id = httpIds.get(id);
        }
        if (e.ws !== undefined) {
            const ws = `${best}:${e.ws}`;
            if (!wsIds.has(ws)) wsIds.set(ws, ++nextWs);
            e.ws = wsIds.get(ws);
        }
        last = Math.max(last, bestKey);
        out.push(e);
    }
    const placeholders = [...new Set(parsed.flatMap((p) => p.end.placeholders ?? []))];
    const session = { ...parsed[0].session, start: t0, label: `${parsed[0].session.label} (${files.length} connections merged)` };
    const end = { type: "end", t: Math.max(last, ...parsed.map((p) => p.session.start - t0 + p.end.t)), placeholders };
    return [session, ...out, end].map((e) => JSON.stringify(e)).join("\n") + "\n";
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
    const names = process.argv.slice(2);
    if (!names.length) {
        console.error("usage: node merge.mjs FILE... > merged.jsonl (one scenario's --capture files, first connection first)");
        process.exit(2);
    }
    try {
        process.stdout.write(mergeCaptures(names.map((name) => ({ name, text: fs.readFileSync(name, "utf8") }))));
    } catch (err) {
        console.error(`merge: ${err.message}`);
        process.exit(2);
    }
}
