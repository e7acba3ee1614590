// 10. Routing and /metrics: an unknown hub is 404 for negotiate and for the WebSocket upgrade, a
// GET on negotiate is 405 (as ASP.NET Core answers), hub names match case-insensitively, and
// /metrics answers in the Prometheus text format with the one OS-level timer.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { RELAY_URL, BACKEND_URL, RawClient, connectRaw, httpRequest, negotiate, wsUrl } from "../lib.mjs";

test("unknown hub: negotiate 404, WebSocket upgrade 404", async () => {
    const n = await negotiate(RELAY_URL, "nohub");
    assert.equal(n.status, 404);
    const direct = await negotiate(BACKEND_URL, "nohub");
    assert.equal(direct.status, 404, "the backend answers the same");
    const err = await RawClient.connect(wsUrl(RELAY_URL, "nohub")).then((c) => { c.close(); return null; }, (e) => e);
    assert.ok(err, "the upgrade was accepted");
    assert.equal(err.status, 404);
    for (const path of ["/nohub/negotiate", "/chat/extra/negotiate", "/chat/x", "/"]) {
        const res = await httpRequest("POST", `${RELAY_URL}${path}`);
        assert.equal(res.status, 404, `POST ${path}`);
    }
});

test("GET on negotiate: 405, as the backend answers", async () => {
    const relayed = await httpRequest("GET", `${RELAY_URL}/chat/negotiate?negotiateVersion=1`);
    const direct = await httpRequest("GET", `${BACKEND_URL}/chat/negotiate?negotiateVersion=1`);
    assert.equal(direct.status, 405);
    assert.equal(relayed.status, 405);
});

test("hub names are matched case-insensitively", async () => {
    const n = await negotiate(RELAY_URL, "CHAT");
    assert.equal(n.status, 200, n.body);
    const { client } = await connectRaw({ hub: "Chat" });
    try {
        assert.equal(await client.invoke("Echo", ["any case"]), "any case");
    } finally {
        client.close();
    }
});

test("/metrics: Prometheus text, every sample a counter or gauge, one OS timer", async () => {
    const res = await httpRequest("GET", `${RELAY_URL}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers["content-type"], /^text\/plain; version=0\.0\.4/);
    const lines = res.body.split("\n").filter((l) => l.length > 0);
    const names = new Set();
    for (const line of lines) {
        if (line.startsWith("#")) continue;
        // Per-instance samples carry labels: {hub="...",backend="..."}.
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*",?)+\})? ([0-9]+)$/.exec(line);
        assert.ok(m, `not a Prometheus sample: '${line}'`);
        assert.ok(!names.has(m[1] + (m[2] ?? "")), `${m[1]}${m[2] ?? ""} twice`);
        names.add(m[1] + (m[2] ?? ""));
    }
    assert.ok(lines.includes("signalr_relay_os_timers 1"), "signalr_relay_os_timers 1");
    for (const name of ["sessions_active", "backend_links_active", "backend_failures_total", "timers_armed",
        "flow_control_pauses_total", "negotiations_pending", "protocol_errors_total"]) {
        assert.ok(names.has(`signalr_relay_${name}`), `signalr_relay_${name} missing`);
    }
    const post = await httpRequest("POST", `${RELAY_URL}/metrics`);
    assert.notEqual(post.status, 200, "POST /metrics");
});
