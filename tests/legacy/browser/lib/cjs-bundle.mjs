// cjs-bundle.mjs - a CommonJS package and what it requires as one script for a page.
//
// signalr-no-jquery (npm) is published as CommonJS only (require/module.exports), for bundlers.
// This puts the entry file and every file it requires (found by `require('...')` with a string
// literal, resolved as Node resolves it) into one script that defines window[globalName] as the
// entry's exports. Enough for small dependency trees without dynamic requires; nothing is
// rewritten inside the files.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

const REQUIRE = /\brequire\(\s*(['"])([^'"]+)\1\s*\)/g;

export async function bundleCommonJs(entryFile, globalName) {
    const ids = new Map(); // absolute path -> index
    const modules = [];    // { source, deps: { spec: index } }
    async function add(file) {
        if (ids.has(file)) return ids.get(file);
        const id = modules.length;
        ids.set(file, id);
        const record = { source: await readFile(file, "utf8"), deps: {} };
        modules.push(record);
        const resolve = createRequire(file).resolve;
        for (const [, , spec] of record.source.matchAll(REQUIRE)) {
            record.deps[spec] = await add(resolve(spec));
        }
        return id;
    }
    await add(entryFile);
    const defs = modules.map((m) =>
        `[function (module, exports, require) {\n${m.source}\n}, ${JSON.stringify(m.deps)}]`).join(",\n");
    return `(function () {
var defs = [${defs}];
var cache = [];
function load(id) {
    if (cache[id]) return cache[id].exports;
    var module = cache[id] = { exports: {} };
    defs[id][0].call(module.exports, module, module.exports, function (spec) {
        if (!(spec in defs[id][1])) throw new Error("cjs-bundle: " + spec + " was not bundled");
        return load(defs[id][1][spec]);
    });
    return module.exports;
}
window[${JSON.stringify(globalName)}] = load(0);
})();
`;
}
