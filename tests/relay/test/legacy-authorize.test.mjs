// Legacy negotiate and [Authorize] hubs: the original server runs hub authorization on negotiate
// and answers a hub the user may not use with 401 (anonymous; 403 authenticated), empty, before
// any connection exists (tests/legacy-ref: `negotiate SecureHub ([Authorize]) without and with
// token`). The relay asks each listed hub's backend (a Core negotiate with the client's
// credentials) and answers the same; a backend it cannot ask gives 502 naming the hub, one that
// does not answer in --backend-timeout 504. Hub "secure" is the backend's SecureHub ([Authorize],
// test token `good-token` as access_token or Bearer header).
import { after, before, describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { BACKEND_URL, RELAY_URL, httpRequest, pollUntil, withTimeout } from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

const BASE = `${RELAY_URL}/signalr`;

function connectionData(...hubs) {
    return encodeURIComponent(JSON.stringify(hubs.map((name) => ({ name }))));
}

function negotiate(base, hubs, { query = "", headers = {} } = {}) {
    return httpRequest("GET", `${base}/negotiate?clientProtocol=2.1&connectionData=${connectionData(...hubs)}${query}`,
        headers);
}

describe("legacy negotiate asks the backends of the listed hubs", () => {
    it("an [Authorize] hub without a token or with a bad one: 401, empty, no Content-Type (as the original)", async () => {
        for (const [what, query] of [["no token", ""], ["a bad token", "&access_token=bad-token"]]) {
            const res = await negotiate(BASE, ["securehub"], { query });
            assert.equal(res.status, 401, `${what}: ${res.body}`);
            assert.equal(res.body, "", what);
            assert.equal(res.headers["content-type"], undefined, what);
        }
    });

    it("an [Authorize] hub with the token in the query or an Authorization header: 200 and a token", async () => {
        for (const [what, options] of [
            ["access_token", { query: "&access_token=good-token" }],
            ["Authorization: Bearer", { headers: { authorization: "Bearer good-token" } }],
        ]) {
            const res = await negotiate(BASE, ["securehub"], options);
            assert.equal(res.status, 200, `${what}: ${res.body}`);
            assert.ok(JSON.parse(res.body).ConnectionToken, `${what}: ${res.body}`);
        }
    });

    it("one refusing hub among several is enough: 401; hubs without [Authorize] alone: 200", async () => {
        const both = await negotiate(BASE, ["chathub", "securehub"]);
        assert.equal(both.status, 401, both.body);
        const open = await negotiate(BASE, ["chathub", "statushub"]);
        assert.equal(open.status, 200, open.body);
    });

    it("a connection negotiated with the token works end to end over longPolling", async () => {
        const q = "&access_token=good-token";
        const neg = await negotiate(BASE, ["securehub"], { query: q });
        assert.equal(neg.status, 200, neg.body);
        const common = `clientProtocol=2.1&connectionToken=${encodeURIComponent(JSON.parse(neg.body).ConnectionToken)}` +
            `&connectionData=${connectionData("securehub")}${q}`;
        const connect = await httpRequest("POST", `${BASE}/connect?transport=longPolling&${common}`);
        assert.equal(connect.status, 200, connect.body);
        const start = await httpRequest("GET", `${BASE}/start?transport=longPolling&${common}`);
        assert.equal(start.status, 200, start.body);
        const data = encodeURIComponent(JSON.stringify({ H: "securehub", M: "WhoAmI", A: [], I: 0 }));
        const send = await httpRequest("POST", `${BASE}/send?transport=longPolling&${common}`,
            { "content-type": "application/x-www-form-urlencoded" }, `data=${data}`);
        assert.equal(send.status, 200, send.body);
        assert.equal(JSON.parse(send.body).R.user, "good-user", send.body);
        await httpRequest("POST", `${BASE}/abort?transport=longPolling&${common}`);
    });

    it("a hub whose backend cannot be reached: 502 naming the hub", async () => {
        const res = await negotiate(BASE, ["dead"]);
        assert.equal(res.status, 502, res.body);
        assert.match(res.body, /^The backend hub 'dead' is unreachable: /);
    });
});

describe("legacy negotiate with a backend that never answers", () => {
    let server, relay;
    const sockets = [];
    before(async () => {
        server = net.createServer((socket) => {
            const entry = { socket, data: "" };
            socket.on("data", (d) => { entry.data += d.toString("latin1"); });
            socket.on("error", () => {});
            sockets.push(entry);
        });
        await new Promise((resolve, reject) => server.listen(0, "127.0.0.1", resolve).on("error", reject));
        relay = await startRelay(["--hub", `chatHub=${BACKEND_URL}/chat`,
            "--hub", `hungHub=http://127.0.0.1:${server.address().port}/chat`, "--backend-timeout", "2"]);
    });
    after(async () => {
        for (const { socket } of sockets) socket.destroy();
        server?.close();
        await relay?.stop(); // exits 0 with a clean sanitizer log: nothing leaked by an abandoned check
    });

    it("504 naming the hub after --backend-timeout, and the request carried the client's credentials", async () => {
        const started = Date.now();
        const res = await negotiate(`${relay.url}/signalr`, ["chathub", "hunghub"],
            { query: "&access_token=t1", headers: { cookie: "session=s1" } });
        assert.equal(res.status, 504, res.body);
        assert.equal(res.body, "The backend hub 'hungHub' did not answer the negotiate within 2 s.");
        assert.ok(Date.now() - started >= 1500, `answered after ${Date.now() - started} ms`);
        const request = sockets.find((s) => /\r\n\r\n/.test(s.data))?.data ?? "";
        assert.match(request, /^POST \/chat\/negotiate\?negotiateVersion=1&access_token=t1 HTTP\/1\.1\r\n/);
        assert.match(request, /\r\ncookie: session=s1\r\n/i);
    });

    it("a client that leaves while the backend is asked: the relay serves on", async () => {
        const n = sockets.length;
        const req = http.get(`${relay.url}/signalr/negotiate?clientProtocol=2.1&connectionData=${connectionData("hunghub")}`,
            { agent: false });
        req.on("error", () => {});
        await pollUntil(() => sockets.slice(n).some((s) => /\r\n\r\n/.test(s.data)), Boolean,
            "the relay's negotiate to the hung backend", 10000);
        req.destroy();
        const ok = await withTimeout(negotiate(`${relay.url}/signalr`, ["chathub"]), 10000, "negotiate after");
        assert.equal(ok.status, 200, ok.body);
    });
});
