// A reload that raises --max-request-headers (issue 10: oversize heads get 431, not a silent close).
// libwebsockets' header buffer is sized for the limits at start; a SIGHUP that raised them made the
// relay hand lws heads its buffer could not hold: with 16K at start and 40K after the reload, a
// 35 KB Cookie was closed without an answer. Raising the limits now takes a restart (the reload
// keeps the running values and says so), and the same head gets 431 with a reason.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, TIMEOUT_MS, pollUntil, withTimeout } from "../lib.mjs";

// Sends a head with a Cookie of n bytes; { status, reason } of the answer (status 0: none).
function cookieHead(port, n) {
    return withTimeout(new Promise((resolve) => {
        let text = "";
        const s = net.connect(Number(port), "127.0.0.1",
            () => s.write(`GET /metrics HTTP/1.1\r\nHost: x\r\nCookie: a=${"b".repeat(n)}\r\n\r\n`));
        s.on("data", (d) => { text += d.toString("latin1"); });
        s.on("error", () => {});
        s.on("close", () => {
            const end = text.indexOf("\r\n\r\n");
            resolve({ status: end < 0 ? 0 : Number(text.split(" ")[1]), reason: end < 0 ? "" : text.slice(end + 4) });
        });
    }), TIMEOUT_MS, "the relay closing the connection");
}

test("a reload that raises --max-request-headers keeps the running limits: a 35 KB Cookie gets 431, not a silent close", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "relay-header-buffer."));
    const file = path.join(dir, "relay.json");
    fs.writeFileSync(file, JSON.stringify({ hubs: { chat: `${BACKEND_URL}/chat` }, "max-request-headers": "16K" }));
    const relay = await startRelay(["--config", file]);
    try {
        fs.writeFileSync(file, JSON.stringify({ hubs: { chat: `${BACKEND_URL}/chat` }, "max-request-headers": "40K" }));
        process.kill(relay.pid, "SIGHUP");
        await pollUntil(async () => fs.readFileSync(relay.log, "utf8"), (log) => /configuration reloaded/.test(log),
            "the reload", TIMEOUT_MS, 100);
        const r = await cookieHead(relay.port, 35000);
        assert.equal(r.status, 431, "answered 431 with a reason, not closed without an answer");
        assert.match(r.reason, /^Request Header Fields Too Large: /);
        assert.match(fs.readFileSync(relay.log, "utf8"),
            /reload: raising --max-request-line or --max-request-headers takes a restart/);
    } finally {
        await relay.stop();
        fs.rmSync(dir, { recursive: true, force: true });
    }
});
