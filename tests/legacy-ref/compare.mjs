#!/usr/bin/env node
// Runs every case of lib/observe.mjs against one legacy endpoint and prints the observations as
// JSON, or against two and prints the cases (and fields) where they differ:
//   node compare.mjs http://127.0.0.1:PORT/signalr [http://127.0.0.1:OTHER/signalr] [--only TEXT] [--skip TEXT]
// (--only / --skip: run only / leave out the cases whose name contains TEXT)
import { cases, Endpoint } from "./lib/observe.mjs";

const args = process.argv.slice(2);
const onlyAt = args.indexOf("--only");
const only = onlyAt >= 0 ? args.splice(onlyAt, 2)[1] : null;
const skipAt = args.indexOf("--skip");
const skip = skipAt >= 0 ? args.splice(skipAt, 2)[1] : null;
const [a, b] = args;
if (!a) {
    console.error("usage: node compare.mjs URL [OTHER_URL] [--only TEXT] [--skip TEXT]");
    process.exit(2);
}

async function observeAll(url) {
    const ep = new Endpoint(url);
    const out = {};
    for (const [name, run] of Object.entries(cases)) {
        if (only && !name.includes(only)) continue;
        if (skip && name.includes(skip)) continue;
        try {
            out[name] = await run(ep);
        } catch (e) {
            out[name] = { error: String(e?.message ?? e) };
        }
    }
    return out;
}

const first = await observeAll(a);
if (!b) {
    console.log(JSON.stringify(first, null, 2));
    process.exit(0);
}
const second = await observeAll(b);
for (const name of Object.keys(first)) {
    const x = first[name], y = second[name];
    const keys = [...new Set([...Object.keys(x ?? {}), ...Object.keys(y ?? {})])];
    const diffs = keys.filter((k) => JSON.stringify(x?.[k]) !== JSON.stringify(y?.[k]));
    if (diffs.length === 0) {
        console.log(`= ${name}`);
        continue;
    }
    console.log(`! ${name}`);
    for (const k of diffs) {
        console.log(`    ${k}:\n      A: ${JSON.stringify(x?.[k])}\n      B: ${JSON.stringify(y?.[k])}`);
    }
}
