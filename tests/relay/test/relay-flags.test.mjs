// Flags of the relay that change where and how it serves, each on a relay of its own started here
// (RELAY_BIN) in front of backend A, and the one thing only a restart shows:
//   --path-prefix              hubs served under the prefix only
//   --token-secret             two relays with one secret: a legacy client negotiates on relay A
//                              and connects, starts and calls on relay B (a load balancer without
//                              sticky sessions); a relay with another secret refuses the token
//   --backend-source-addresses backend links opened from the given local addresses, round robin
//                              (the backend's own record of the TCP peer, RequestDetails)
//   a relay restart            a stock client with automatic reconnect gets the relay's Close with
//                              allowReconnect, reconnects to the restarted relay, and calls work
// Each relay must exit 0 on SIGTERM with a clean sanitizer log.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { startRelay } from "../../lib/process.mjs";
import {
    BACKEND_URL, TIMEOUT_MS, WebSocket, connectStock, httpRequest, negotiate, stockConnection, stopAll, withTimeout,
} from "../lib.mjs";

const HUBS = ["--hub", `chat=${BACKEND_URL}/chat`, "--hub", `chatHub=${BACKEND_URL}/chat`];

// Starts a relay, runs body(relay), and stops it (a failure to stop cleanly fails the test).
async function withRelay(args, body, options = {}) {
    const relay = await startRelay([...HUBS, ...args], options);
    try {
        return await body(relay);
    } finally {
        await relay.stop();
    }
}

test("--path-prefix: hubs answer under the prefix and nowhere else", async () => {
    await withRelay(["--path-prefix", "/rt/v1"], async (relay) => {
        assert.equal((await negotiate(`${relay.url}/rt/v1`, "chat")).status, 200, "negotiate under the prefix");
        assert.equal((await negotiate(relay.url, "chat")).status, 404, "negotiate without the prefix");
        assert.equal((await negotiate(`${relay.url}/rt`, "chat")).status, 404, "negotiate under part of the prefix");
        const { conn, connectionId } = await connectStock(`${relay.url}/rt/v1/chat`);
        try {
            assert.equal(await conn.invoke("Echo", "prefixed"), "prefixed");
            const who = await conn.invoke("WhoAmI");
            assert.equal(who.connectionId, connectionId);
            assert.equal(who.hub, "chat");
        } finally {
            await stopAll(conn);
        }
    });
});

// --- a legacy connection driven by hand, negotiate on one relay and the rest on another

const CONNECTION_DATA = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));

async function legacyNegotiate(base) {
    const res = await httpRequest("GET", `${base}/signalr/negotiate?clientProtocol=2.1&connectionData=${CONNECTION_DATA}`);
    assert.equal(res.status, 200, res.body);
    return JSON.parse(res.body);
}

function legacyQuery(token) {
    return `transport=webSockets&clientProtocol=2.1&connectionToken=${encodeURIComponent(token)}&connectionData=${CONNECTION_DATA}`;
}

// Opens /signalr/connect on `base`: resolves with { ws, frames, next(match, what) }, or rejects
// with the HTTP status of a refused upgrade.
function legacyConnect(base, token) {
    return withTimeout(new Promise((resolve, reject) => {
        const ws = new WebSocket(`${base.replace(/^http/, "ws")}/signalr/connect?${legacyQuery(token)}`);
        const frames = [];
        let waiters = [];
        ws.on("message", (data) => {
            const frame = JSON.parse(data.toString("utf8"));
            frames.push(frame);
            waiters = waiters.filter((w) => !w(frame));
        });
        ws.on("unexpected-response", (req, res) => {
            res.resume();
            req.socket.destroy();
            const err = new Error(`connect refused: HTTP ${res.statusCode}`);
            err.status = res.statusCode;
            reject(err);
        });
        ws.on("error", reject);
        ws.on("open", () => resolve({
            ws, frames,
            next(match, what) {
                const found = frames.find(match);
                if (found) return Promise.resolve(found);
                return withTimeout(new Promise((done) => waiters.push((f) => (match(f) ? (done(f), true) : false))),
                    TIMEOUT_MS, what);
            },
        }));
    }), TIMEOUT_MS, "legacy connect");
}

test("--token-secret shared by two relays: negotiate on A, connect, start and call on B", async () => {
    const secret = ["--token-secret", "shared-secret-of-this-test"];
    await withRelay(secret, (a) => withRelay(secret, (b) => withRelay(["--token-secret", "another-secret"], async (other) => {
        const n = await legacyNegotiate(a.url);
        const c = await legacyConnect(b.url, n.ConnectionToken);
        try {
            const start = await httpRequest("GET", `${b.url}/signalr/start?${legacyQuery(n.ConnectionToken)}`);
            assert.equal(start.status, 200, start.body);
            assert.deepStrictEqual(JSON.parse(start.body), { Response: "started" });
            const welcome = await c.next((f) => f.M?.some((m) => m.M === "welcome"), "welcome");
            const backendId = welcome.M.find((m) => m.M === "welcome").A[0];
            c.ws.send(JSON.stringify({ H: "chathub", M: "WhoAmI", A: [], I: 0 }));
            const who = await c.next((f) => f.I === "0", "the WhoAmI result");
            assert.equal(who.R.connectionId, backendId);
            c.ws.send(JSON.stringify({ H: "chathub", M: "Echo", A: ["via B"], I: 1 }));
            assert.equal((await c.next((f) => f.I === "1", "the Echo result")).R, "via B");
        } finally {
            c.ws.terminate();
        }
        // Relay B knows the connection only from the token: A's secret is B's.
        const refused = await legacyConnect(other.url, n.ConnectionToken).then((x) => { x.ws.terminate(); return null; }, (e) => e);
        assert.ok(refused, "a relay with another secret accepted the token");
        assert.notEqual(refused.status, 101);
        assert.ok(refused.status >= 400 && refused.status < 500, `refused with ${refused.status}`);
    })));
});

// Opens `count` stock sessions through a relay with these source addresses and returns the
// address the backend saw each WebSocket link come from.
async function linkSources(addresses, count) {
    return withRelay(["--backend-source-addresses", addresses.join(",")], async (relay) => {
        const conns = [];
        try {
            const seen = [];
            for (let i = 0; i < count; i++) {
                const { conn } = await connectStock(`${relay.url}/chat`);
                conns.push(conn);
                seen.push((await conn.invoke("RequestDetails")).remoteAddress);
            }
            return seen;
        } finally {
            await stopAll(...conns);
        }
    });
}

test("--backend-source-addresses: backend links come from those addresses, every one in use", async () => {
    const addresses = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
    const seen = await linkSources(addresses, 6);
    for (const a of seen) assert.ok(addresses.includes(a), `the backend saw a link from ${a}; ${JSON.stringify(seen)}`);
    assert.deepStrictEqual([...new Set(seen)].sort(), addresses, `every address in use: ${JSON.stringify(seen)}`);
    // Without the flag the backend sees a client from the kernel's choice, 127.0.0.1.
    const direct = await connectStock(`${BACKEND_URL}/chat`);
    try {
        assert.equal((await direct.conn.invoke("RequestDetails")).remoteAddress, "127.0.0.1");
    } finally {
        await stopAll(direct.conn);
    }
});

// With two addresses every WebSocket link once came from the same one: the round robin also
// counted the negotiate request that precedes each link, so negotiates took one address and links
// the other, and the ~28k links per source address the flag is meant to lift stayed the limit.
test("--backend-source-addresses with two addresses: links spread over both",
    async () => {
        const addresses = ["127.0.0.2", "127.0.0.3"];
        const seen = await linkSources(addresses, 4);
        assert.deepStrictEqual([...new Set(seen)].sort(), addresses, `both addresses in use: ${JSON.stringify(seen)}`);
    });

test("relay restart: a stock client with automatic reconnect comes back and calls work again", async () => {
    const first = await startRelay(HUBS);
    let second = null;
    // Retries every second for up to a minute: long enough for a restart on a loaded machine.
    const conn = stockConnection(`${first.url}/chat`, { reconnectDelays: Array(60).fill(1000) });
    const welcomes = [];
    conn.on("welcome", (id) => welcomes.push(id));
    const reconnecting = new Promise((resolve) => conn.onreconnecting((e) => resolve(e ?? null)));
    const reconnected = new Promise((resolve) => conn.onreconnected((id) => resolve(id ?? null)));
    let closeError = "not closed";
    conn.onclose((e) => { closeError = e ?? null; });
    try {
        await withTimeout(conn.start(), TIMEOUT_MS, "start");
        assert.equal(await conn.invoke("Echo", "before"), "before");
        await first.stop(); // SIGTERM: the relay says goodbye with allowReconnect, then exits 0
        const why = await withTimeout(reconnecting, TIMEOUT_MS, "onreconnecting");
        assert.match(why?.message ?? "", /The relay is shutting down\.$/);
        second = await startRelay(HUBS, { port: first.port });
        await withTimeout(reconnected, 70000, "onreconnected after the restart");
        assert.equal(conn.state, "Connected");
        assert.equal(await conn.invoke("Echo", "after"), "after");
        // A new backend session: OnConnectedAsync ran again for it.
        assert.equal(welcomes.length, 2, `welcome pushes: ${JSON.stringify(welcomes)}`);
        assert.notEqual(welcomes[1], welcomes[0]);
        assert.equal((await conn.invoke("WhoAmI")).connectionId, welcomes[1]);
        assert.equal(closeError, "not closed");
    } finally {
        await stopAll(conn);
        if (second) await second.stop();
    }
});
