// 18. Connection limits: --max-connections and --max-connections-per-address. A relay of its own
// with limits 4 and 2; connections come from several loopback source addresses (127.0.0.1-3). Held
// keep-alive HTTP connections count; one over a limit is answered 503 with the reason (an HTTP
// request and a WebSocket upgrade alike) and closed by the relay; a freed place serves again; one
// rate-limited log line for the refusals.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import { startRelay } from "../../lib/process.mjs";
import { BACKEND_URL, RawClient, pollUntil, withTimeout, wsUrl } from "../lib.mjs";

// One keep-alive connection from `localAddress`; get(path) sends a request on it and resolves to the
// answer ({ status, body }); `closed` resolves when the relay (or we) closed it.
async function connection(port, localAddress) {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress });
    await withTimeout(new Promise((resolve, reject) => { socket.once("connect", resolve); socket.once("error", reject); }),
        10000, `connect from ${localAddress}`);
    let data = "";
    let waiter = null;
    const closed = new Promise((resolve) => socket.on("close", resolve));
    socket.on("error", () => {});
    socket.on("data", (chunk) => { data += chunk.toString("latin1"); waiter?.(); });
    const get = (path) => withTimeout(new Promise((resolve) => {
        waiter = () => {
            const end = data.indexOf("\r\n\r\n");
            if (end < 0) return;
            const head = data.slice(0, end);
            const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
            if (data.length < end + 4 + length) return;
            const answer = { status: Number(head.split(" ")[1]), body: data.slice(end + 4, end + 4 + length) };
            data = data.slice(end + 4 + length);
            waiter = null;
            resolve(answer);
        };
        socket.write(`GET ${path} HTTP/1.1\r\nHost: relay\r\n\r\n`);
        waiter();
    }), 10000, `GET ${path} from ${localAddress}`);
    return { socket, get, closed };
}

test("--max-connections and --max-connections-per-address: 503 with the reason, then closed; a freed place serves again", async () => {
    const relay = await startRelay(["--hub", `chat=${BACKEND_URL}/chat`, "--max-connections", "4",
        "--max-connections-per-address", "2"]);
    const held = [];
    let refused = 0;
    try {
        // startRelay's readiness probe may still be open for a moment: wait until it is gone.
        const probe = await connection(relay.port, "127.0.0.1");
        assert.equal((await probe.get("/metrics")).status, 200);
        probe.socket.destroy();
        await pollUntil(async () => {
            const c = await connection(relay.port, "127.0.0.3");
            const m = await c.get("/metrics");
            c.socket.destroy();
            return /client_connections_active (\d+)/.exec(m.body)?.[1];
        }, (active) => active === "1", "only the probe's own connection held", 10000, 100);

        for (const from of ["127.0.0.1", "127.0.0.1", "127.0.0.2"]) {
            const c = await connection(relay.port, from);
            assert.equal((await c.get("/metrics")).status, 200, `a connection from ${from} within the limits`);
            held.push(c);
        }
        const third = await connection(relay.port, "127.0.0.1");
        const perAddress = await third.get("/metrics");
        assert.equal(perAddress.status, 503);
        assert.match(perAddress.body, /--max-connections-per-address/);
        await withTimeout(third.closed, 10000, "the relay to close the refused connection");

        held.push(await connection(relay.port, "127.0.0.2"));
        assert.equal((await held[3].get("/metrics")).status, 200, "the fourth connection");
        const over = await connection(relay.port, "127.0.0.3");
        const total = await over.get("/metrics");
        assert.equal(total.status, 503);
        assert.match(total.body, /--max-connections\b/);
        await withTimeout(over.closed, 10000, "the relay to close the refused connection");

        const refusedUpgrade = await RawClient.connect(wsUrl(relay.url, "chat"), {}).then(() => null, (e) => e);
        assert.equal(refusedUpgrade?.status, 503, "a WebSocket upgrade over the limit is refused with 503");
        assert.match(refusedUpgrade.body, /--max-connections\b/);

        held.shift().socket.destroy(); // one from 127.0.0.1 goes: a place for 127.0.0.1 again
        await pollUntil(async () => {
            const c = await connection(relay.port, "127.0.0.1");
            const answer = await c.get("/metrics");
            if (answer.status === 200) held.push(c);
            else c.socket.destroy();
            return answer.status;
        }, (status) => status === 200, "a freed place to serve again", 10000, 200);
        const metrics = await held[held.length - 1].get("/metrics");
        refused = Number(/client_connections_refused_total (\d+)/.exec(metrics.body)?.[1]);
        assert.ok(refused >= 3, `refusals counted: ${refused}`);
    } finally {
        for (const c of held) c.socket.destroy();
        await relay.stop();
    }
    const refusals = fs.readFileSync(relay.log, "utf8").split("\n").filter((l) => /refused a connection/.test(l));
    // At most one line per 10 s: one, or two if the test ran longer than that.
    assert.ok(refusals.length >= 1 && refusals.length <= 2 && refusals.length < refused,
        `rate-limited log lines for ${refused} refusals: ${refusals.join(" | ")}`);
});
