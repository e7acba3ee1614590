// Query values are read whole, however long (issue 10, defect 4): a value cut to a fixed buffer,
// or taken for absent because it did not fit one, would mean something else. The relay used to
// copy them into fixed buffers: an `id` of 128+ characters was taken for no id (a fresh session
// where ASP.NET Core answers 404), an argument over 4 KB hid every argument after it, a legacy
// connectionData over 4 KB became an empty hub list (200, no hubs), a negotiateVersion over 31
// characters was taken for none (version 0), an id given twice was taken from its first copy
// (ASP.NET Core joins them: "a,b"), a JSONP `callback` of 8+ characters went unrefused,
// and a legacy invocation id over 127 characters came back cut, so the client never matched its
// answer. Each case is compared with what ASP.NET Core (the test backend) answers where it has one.
import { describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    RELAY_URL, BACKEND_URL, LEGACY_BASE, TIMEOUT_MS, WebSocket, LegacyClient, httpRequest, legacyConnectionData,
    legacyNegotiate, negotiate, withTimeout, wsUrl,
} from "../lib.mjs";
import { startRelay } from "../../lib/process.mjs";

// Opens a WebSocket and reports { status, body } of the refusal, or { status: 101 } when it opened.
function upgrade(url) {
    return withTimeout(new Promise((resolve, reject) => {
        const ws = new WebSocket(url);
        ws.on("open", () => { ws.terminate(); resolve({ status: 101, body: "" }); });
        ws.on("unexpected-response", (_req, res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
            res.on("error", reject);
        });
        ws.on("error", (e) => { if (!e.message.includes("Unexpected server response")) reject(e); });
    }), TIMEOUT_MS, `upgrade ${url.slice(0, 80)}`);
}

describe("Core query values read whole", () => {
    const longId = "a".repeat(200);

    it("an id of 200 characters no negotiate gave out: 404, as ASP.NET Core (not a fresh session)", async () => {
        const direct = await upgrade(wsUrl(BACKEND_URL, "chat", `id=${longId}`));
        assert.equal(direct.status, 404, "ASP.NET Core refuses an unknown id");
        const relayed = await upgrade(wsUrl(RELAY_URL, "chat", `id=${longId}`));
        assert.equal(relayed.status, 404, relayed.body);
        assert.equal(relayed.body, "No Connection with that ID");
    });

    it("an unknown id after a 5000-character argument is still seen: 404, as ASP.NET Core", async () => {
        const query = `pad=${"p".repeat(5000)}&id=unknown-id`;
        const direct = await upgrade(wsUrl(BACKEND_URL, "chat", query));
        assert.equal(direct.status, 404);
        const relayed = await upgrade(wsUrl(RELAY_URL, "chat", query));
        assert.equal(relayed.status, 404, relayed.body);
    });

    // ASP.NET Core joins a repeated argument's values with ',': the id "T,T" is no connection's. The
    // relay took the first one and connected a session a proxy in front might have read otherwise.
    it("an id given twice is read as ASP.NET Core reads it (joined with ','): 404, not the first one's session", async () => {
        for (const base of [BACKEND_URL, RELAY_URL]) {
            const neg = await negotiate(base, "chat");
            assert.equal(neg.status, 200, neg.body);
            const token = encodeURIComponent(neg.json.connectionToken);
            const res = await upgrade(wsUrl(base, "chat", `id=${token}&id=${token}`));
            assert.equal(res.status, 404, `${base === RELAY_URL ? "relay" : "ASP.NET Core"}: ${res.body}`);
            const single = await upgrade(wsUrl(base, "chat", `id=${token}`));
            assert.equal(single.status, 101, "the token itself was good");
        }
    });

    it("a negotiateVersion of 40 characters is refused as ASP.NET Core refuses it (not taken for version 0)", async () => {
        const path = `/chat/negotiate?negotiateVersion=${"1".repeat(40)}`;
        const direct = await httpRequest("POST", `${BACKEND_URL}${path}`);
        const relayed = await httpRequest("POST", `${RELAY_URL}${path}`);
        assert.equal(relayed.status, direct.status, relayed.body);
        assert.deepEqual(JSON.parse(relayed.body), JSON.parse(direct.body));
        assert.ok(JSON.parse(relayed.body).error, relayed.body);
    });
});

describe("legacy query values read whole", () => {
    it("connectionData over 4 KB naming an unknown hub: 500, as for a short one (not an empty hub list)", async () => {
        const name = `nosuchhub${"x".repeat(5000)}`;
        const res = await httpRequest("GET", `${LEGACY_BASE}/negotiate?clientProtocol=2.1&connectionData=${legacyConnectionData(name)}`);
        assert.equal(res.status, 500, res.body.slice(0, 200));
        // the original server (and the relay since h15conf) answers it with an empty 500
    });

    it("connectionData over 4 KB naming a served hub negotiates (200)", async () => {
        // JSON allows white space: the same one hub, padded past 4 KB
        const data = encodeURIComponent(`[{"name":"chathub"}${" ".repeat(5000)}]`);
        const res = await httpRequest("GET", `${LEGACY_BASE}/negotiate?clientProtocol=2.1&connectionData=${data}`);
        assert.equal(res.status, 200, res.body.slice(0, 200));
        assert.ok(JSON.parse(res.body).ConnectionToken);
    });

    it("a JSONP callback of 40 characters is refused (403) like a short one", async () => {
        const res = await httpRequest("GET", `${LEGACY_BASE}/negotiate?clientProtocol=2.1&connectionData=${legacyConnectionData("chathub")}` +
            `&callback=jQuery${"1".repeat(34)}`);
        assert.equal(res.status, 403, res.body);
    });

    it("an invocation id of 300 characters comes back whole with its result", async () => {
        const c = await LegacyClient.open(["chathub"]);
        try {
            assert.equal((await c.start()).status, 200);
            const id = "7".repeat(300);
            const result = await c.invoke("chathub", "Echo", ["whole"], id);
            assert.equal(result.I, id);
            assert.equal(result.R, "whole");
        } finally {
            c.ws.terminate();
        }
    });
});

describe("X-Forwarded-For passed on whole or not at all", () => {
    // The legacy session kept "chain, peer" in 128 bytes: a longer chain came out cut, its last
    // address wrong (the backend read "…, 127.0" for the client's address).
    it("a 140-character chain that does not fit: the backend sees the client's own address whole", async () => {
        const chain = Array.from({ length: 12 }, (_, i) => `10.0.0.${100 + i}`).join(", ");
        assert.ok(chain.length > 130 && chain.length < 200, `${chain.length}`);
        const neg = await legacyNegotiate(["chathub"]);
        const query = `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(neg.json.ConnectionToken)}` +
            `&connectionData=${legacyConnectionData("chathub")}`;
        const ws = new WebSocket(`${LEGACY_BASE.replace(/^http/, "ws")}/connect?${query}`, { headers: { "X-Forwarded-For": chain } });
        const frames = [];
        let wake = () => {};
        ws.on("message", (d) => { frames.push(JSON.parse(d.toString("utf8"))); wake(); });
        try {
            await withTimeout(new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); }), TIMEOUT_MS, "connect");
            assert.equal((await httpRequest("GET", `${LEGACY_BASE}/start?${query}`)).status, 200);
            ws.send(JSON.stringify({ H: "chathub", M: "WhoAmI", A: [], I: "1" }));
            const result = await withTimeout(new Promise((resolve) => {
                const look = () => { const f = frames.find((x) => x.I === "1"); if (f) resolve(f); };
                wake = look;
                look();
            }), TIMEOUT_MS, "WhoAmI result");
            const forwarded = result.R.forwardedFor;
            assert.ok(forwarded === `${chain}, 127.0.0.1` || forwarded === "127.0.0.1", `the backend saw "${forwarded}"`);
        } finally {
            ws.terminate();
        }
    });
});

describe("service mode query values", () => {
    it("an app server's hub name over 255 bytes: 400 saying it is too long (not 'hub and cid are required')", async () => {
        const relay = await startRelay(["--service-key", "query-whole-test-key"]);
        try {
            const res = await upgrade(`${relay.url.replace(/^http/, "ws")}/server/?hub=${"h".repeat(300)}&cid=c1`);
            assert.equal(res.status, 400, res.body);
            assert.match(res.body, /too long/);
        } finally {
            await relay.stop();
        }
    });
});
