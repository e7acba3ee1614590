// --demo-dir: the relay's /demo/ serves the files of one directory and nothing else. A directory
// of its own (index.html, a script, a file in a subdirectory, a symbolic link that stays inside and
// one that leads out to a secret next to it) behind a relay of its own: the files come with their
// content types, only GET is answered, and no spelling of a path reaches the secret: "..", "%2e%2e",
// encoded slashes (%2F, %2f: lws decodes them, and resolves dot segments, before the relay sees the
// path), backslashes (%5C), a NUL (lws drops some such requests unanswered), a link out. Requests are written raw on a socket so that the
// path reaches the relay exactly as spelled. Without --demo-dir, /demo says how to turn it on.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { startRelay } from "../../lib/process.mjs";
import { withTimeout } from "../../lib/common.mjs";

const SECRET = "secret-outside-the-demo-dir-3f9a";

// One raw HTTP/1.1 request: { status, type, body }.
function rawRequest(port, method, target) {
    return withTimeout(new Promise((resolve, reject) => {
        const socket = net.connect(port, "127.0.0.1", () =>
            socket.end(`${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`));
        const chunks = [];
        socket.on("data", (c) => chunks.push(c));
        socket.on("error", reject);
        socket.on("close", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            const head = text.slice(0, text.indexOf("\r\n\r\n"));
            const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
            const type = /^content-type: *(.*)$/im.exec(head)?.[1]?.trim() ?? null;
            resolve({ status, type, body: text.slice(head.length + 4), raw: text });
        });
    }), 10000, `${method} ${target}`);
}

function demoTree() {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), "demo-files."));
    const dir = path.join(base, "demo");
    fs.mkdirSync(path.join(dir, "sub"), { recursive: true });
    fs.writeFileSync(path.join(dir, "index.html"), "<!doctype html><p>demo index</p>");
    fs.writeFileSync(path.join(dir, "app.js"), "console.log('demo app');");
    fs.writeFileSync(path.join(dir, "sub", "style.css"), "p { color: red }");
    fs.writeFileSync(path.join(dir, "sub", "index.html"), "<p>sub index</p>");
    fs.writeFileSync(path.join(base, "secret.txt"), SECRET);
    fs.symlinkSync("../secret.txt", path.join(dir, "out.txt"));
    fs.symlinkSync(base, path.join(dir, "up"));
    fs.symlinkSync("sub/style.css", path.join(dir, "in.css"));
    return { base, dir };
}

test("--demo-dir: files with their types, GET only, nothing outside the directory whatever the spelling", async () => {
    const { dir } = demoTree();
    const relay = await startRelay(["--hub", "chat=http://127.0.0.1:9/chat", "--demo-dir", dir]);
    try {
        const get = (target) => rawRequest(relay.port, "GET", target);
        for (const [target, type, body] of [
            ["/demo", "text/html; charset=utf-8", "<!doctype html><p>demo index</p>"],
            ["/demo/", "text/html; charset=utf-8", "<!doctype html><p>demo index</p>"],
            ["/demo/app.js", "text/javascript; charset=utf-8", "console.log('demo app');"],
            ["/demo/sub/style.css", "text/css; charset=utf-8", "p { color: red }"],
            ["/demo/sub/", "text/html; charset=utf-8", "<p>sub index</p>"],
            ["/demo/in.css", "text/css; charset=utf-8", "p { color: red }"], // a link that stays inside
            ["/demo/app.js?v=1", "text/javascript; charset=utf-8", "console.log('demo app');"],
        ]) {
            const r = await get(target);
            assert.deepEqual([r.status, r.type, r.body], [200, type, body], target);
        }
        for (const method of ["POST", "PUT", "DELETE"]) {
            assert.equal((await rawRequest(relay.port, method, "/demo/app.js")).status, 405, method);
        }
        assert.equal((await get("/demo/nothing.js")).status, 404);
        assert.equal((await get("/demox")).status, 404);

        // Every way out: refused (400) or not found (404), never the secret.
        const escapes = ["/demo/../secret.txt", "/demo/sub/../../secret.txt", "/demo/%2e%2e/secret.txt",
            "/demo/%2E%2E%2Fsecret.txt", "/demo/..%2fsecret.txt", "/demo/sub%2F..%2F..%2Fsecret.txt",
            "/demo/..%5csecret.txt", "/demo/sub%5C..%5C..%5Csecret.txt", "/demo/out.txt", "/demo/up/secret.txt",
            "/demo/%00/../secret.txt", "/demo/app.js%00.txt", "/demo/%252e%252e/secret.txt", `/demo/${dir}/../secret.txt`,
            "/demo//etc/passwd", "/demo/..", "/demo/.%2e/secret.txt"];
        for (const target of escapes) {
            const r = await get(target);
            // lws closes the connection without an answer (status 0 here) on some NULs itself.
            assert.ok([400, 404].includes(r.status) || (r.status === 0 && target.includes("%00")), `${target}: ${r.status}`);
            assert.ok(!r.raw.includes(SECRET) && !r.raw.includes("root:"), `${target} leaked: ${r.raw}`);
        }
        // What lws leaves odd after decoding is refused outright.
        for (const target of ["/demo/sub%5Cstyle.css", "/demo/a%25b.js"]) {
            assert.equal((await get(target)).status, 400, target);
        }
        assert.ok([400, 404].includes((await get("/demo/app%0a.js")).status), "a control byte");
        assert.ok([400, 404].includes((await get("/demo/app%01.js")).status), "a control byte");
        // An encoded slash is a slash once lws has decoded it: inside the directory it names a file there.
        assert.equal((await get("/demo/sub%2Fstyle.css")).body, "p { color: red }");
    } finally {
        await relay.stop();
    }
});

test("without --demo-dir, /demo answers 404 with how to turn it on", async () => {
    const relay = await startRelay(["--hub", "chat=http://127.0.0.1:9/chat"]);
    try {
        for (const target of ["/demo", "/demo/", "/demo/index.html"]) {
            const r = await rawRequest(relay.port, "GET", target);
            assert.equal(r.status, 404, target);
            assert.match(r.body, /--demo-dir DIR/, target);
        }
    } finally {
        await relay.stop();
    }
});
