// scenario-demo.mjs - fake clients played through the app by probe.mjs (--scenario demo --app URL).
// Does what a relay would do for real clients: negotiate at the app (redirect + client token),
// OpenConnection with the token's claims, the client's SignalR handshake as ConnectionData, hub
// invocations as ConnectionData; keeps a tiny routing table (connections, users, groups) to
// deliver what the SDK sends to the fake clients, and logs each delivery decoded. Every step that
// the app should answer is awaited with a timeout, so a missing answer shows as a FAILED line.
const RS = "\x1e";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function runScenario(ctx) {
    const { APP, log, listeners, serverConns, sendMsg, sendMsgsOneFrame, closeConn, checkJwt, map, Bin, MpMap, encode, decode, frame, unframe, render } = ctx;
    if (!APP) throw new Error("--app http://127.0.0.1:APPPORT is required for this scenario");

    async function until(pred, ms, what) {
        const end = Date.now() + ms;
        while (Date.now() < end) { if (pred()) return; await sleep(20); }
        throw new Error(`timed out: ${what}`);
    }

    // ---------------------------------------------------------- routing table of the fake service
    const clients = new Map(); // connectionId -> FakeClient
    const groups = new Map(); // group -> Set(connectionId)
    let nextId = 1;

    class FakeClient {
        constructor(name, hub, protocol) {
            this.name = name; this.hub = hub; this.protocol = protocol;
            this.id = `c${nextId++}-${name}`;
            this.inbox = []; // decoded hub messages, in arrival order
            this.handshake = null; this.firstArrivals = [];
            this.invocationNo = 0; this.closed = false;
        }
        get conn() { return this._conn; }
        payloadFrom(payloads) {
            // payloads map: pick this client's protocol (keys case-insensitive).
            const e = payloads.entries.find(([k]) => String(k).toLowerCase() === this.protocol);
            return e ? e[1].bytes : null;
        }
        deliver(bytes, via) {
            if (this.closed) { log(`  !! ${this.name} got data after close via ${via}`); }
            if (!this.handshake) {
                const text = bytes.toString("utf8");
                if (text.startsWith("{") && text.endsWith(RS) && via.startsWith("6")) {
                    this.handshake = text;
                    this.firstArrivals.push("handshake");
                    log(`  ${this.name} <= handshake response ${JSON.stringify(text)} via ${via}`);
                    return;
                }
            }
            for (const m of this.decodeHub(bytes)) {
                if (!this.handshake) this.firstArrivals.push(`${m.type}:${m.target ?? ""}`);
                this.inbox.push(m);
                log(`  ${this.name} <= ${JSON.stringify(m)} via ${via}`);
            }
        }
        decodeHub(bytes) {
            if (this.protocol === "json") return bytes.toString("utf8").split(RS).filter((s) => s).map((s) => JSON.parse(s));
            const [bodies] = unframe(bytes);
            return bodies.map((b) => fromMsgpack(decode(b)));
        }
        send(hubMessages) {
            let bytes;
            if (this.protocol === "json") bytes = Buffer.from(hubMessages.map((m) => JSON.stringify(m) + RS).join(""));
            else bytes = Buffer.concat(hubMessages.map((m) => frame(encode(toMsgpack(m)))));
            sendMsg(this.conn, [6, this.id, new Bin(bytes), map([])], `(${this.name})`);
        }
        async invoke(target, args, { stream = false, timeout = 12000 } = {}) {
            const invocationId = String(++this.invocationNo);
            const from = this.inbox.length;
            this.send([{ type: stream ? 4 : 1, invocationId, target, arguments: args }]);
            let done;
            await until(() => (done = this.inbox.slice(from).find((m) => m.type === 3 && m.invocationId === invocationId)), timeout, `${this.name} ${target} completion`);
            const items = this.inbox.slice(from).filter((m) => m.type === 2 && m.invocationId === invocationId).map((m) => m.item);
            log(`  ${this.name} ${target}(${JSON.stringify(args)}) -> ${done.error !== undefined ? "ERROR " + JSON.stringify(done.error) : JSON.stringify(stream ? items : done.result)}`);
            return done;
        }
        async waitFor(pred, what, timeout = 5000) {
            let m;
            await until(() => (m = this.inbox.find(pred)), timeout, `${this.name}: ${what}`);
            return m;
        }
    }

    // SignalR MessagePack hub protocol <-> the JSON-shaped objects used above.
    function fromMsgpack(a) {
        const plain = (v) => (v instanceof MpMap ? Object.fromEntries(v.entries.map(([k, x]) => [k, plain(x)])) : Array.isArray(v) ? v.map(plain) : v instanceof Bin ? v.bytes.toString("hex") : v);
        switch (a[0]) {
            case 1: return { type: 1, invocationId: a[2] ?? undefined, target: a[3], arguments: plain(a[4]) };
            case 2: return { type: 2, invocationId: a[2], item: plain(a[3]) };
            case 3: return a[3] === 1 ? { type: 3, invocationId: a[2], error: a[4] } : a[3] === 3 ? { type: 3, invocationId: a[2], result: plain(a[4]) } : { type: 3, invocationId: a[2] };
            case 6: return { type: 6 };
            case 7: return { type: 7, error: a[1] ?? undefined, allowReconnect: a[2] };
            default: return { type: a[0], raw: render(a) };
        }
    }
    function toMsgpack(m) {
        switch (m.type) {
            case 1: return [1, map([]), m.invocationId ?? null, m.target, m.arguments, []];
            case 4: return [4, map([]), m.invocationId, m.target, m.arguments, []];
            case 3: return m.error !== undefined ? [3, map([]), m.invocationId, 1, m.error] : [3, map([]), m.invocationId, 3, m.result];
            case 6: return [6];
            default: throw new Error(`no msgpack mapping for ${m.type}`);
        }
    }

    // Every S->R message: route it to the fake clients like a service would.
    listeners.add((conn, msg) => {
        const [type] = msg;
        const via = `${type}@#${conn.no}`;
        const to = (ids, payloads) => { for (const id of ids) { const c = clients.get(id); if (c && !c.closed) { const b = c.payloadFrom(payloads); if (b) c.deliver(b, via); } } };
        const hubClients = (hub) => [...clients.values()].filter((c) => c.hub === hub && !c.closed);
        switch (type) {
            case 6: { const c = clients.get(msg[1]); if (c) c.deliver(msg[2].bytes, via); else log(`  (6 for unknown connection ${msg[1]}: dropped)`); break; }
            case 5: { const c = clients.get(msg[1]); if (c) { log(`  ${c.name} closed by the app (5), error=${render(msg[2])}`); c.closed = true; } else log(`  (5 for unknown connection ${msg[1]})`); break; }
            case 7: to(msg[1], msg[2]); break;
            case 8: to(hubClients(conn.hub).filter((c) => c.userId === msg[1]).map((c) => c.id), msg[2]); break;
            case 9: to(hubClients(conn.hub).filter((c) => msg[1].includes(c.userId)).map((c) => c.id), msg[2]); break;
            case 10: to(hubClients(conn.hub).filter((c) => !msg[1].includes(c.id)).map((c) => c.id), msg[2]); break;
            case 13: {
                const exclUsers = Array.isArray(msg[5]) ? msg[5] : [];
                to([...(groups.get(msg[1]) || [])].filter((id) => !msg[2].includes(id) && !exclUsers.includes(clients.get(id)?.userId)), msg[3]);
                break;
            }
            case 14: to([...new Set(msg[1].flatMap((g) => [...(groups.get(g) || [])]))], msg[2]); break;
            case 18: { if (!groups.has(msg[2])) groups.set(msg[2], new Set()); groups.get(msg[2]).add(msg[1]); break; }
            case 19: { if (msg[2] === null) for (const s of groups.values()) s.delete(msg[1]); else groups.get(msg[2])?.delete(msg[1]); break; }
            case 34: { const c = clients.get(msg[2]); const b = c && c.payloadFrom(msg[4]); if (b) c.deliver(b, via); break; }
        }
    });

    // ---------------------------------------------------------- helpers
    async function negotiate(path, { query = "", headers = {} } = {}) {
        const url = `${APP}${path}/negotiate?negotiateVersion=1${query}`;
        const res = await fetch(url, { method: "POST", headers });
        const text = await res.text();
        log(`NEGOTIATE POST ${path}/negotiate?negotiateVersion=1${query} ${JSON.stringify(headers)} -> ${res.status} ${res.headers.get("content-type")} ${text}`);
        if (res.status !== 200) return { status: res.status, text };
        const body = JSON.parse(text);
        const redirect = new URL(body.url);
        const hub = redirect.searchParams.get("hub");
        const jwt = checkJwt(body.accessToken, `http://${redirect.hostname}/client/?hub=${hub}`);
        log(`  client JWT header=${JSON.stringify(jwt.header)} payload=${JSON.stringify(jwt.payload)} | ${jwt.notes.join("; ")}`);
        log(`  redirect: path=${redirect.pathname} query=${[...redirect.searchParams].map(([k, v]) => `${k}=${v}`).join(" & ")}`);
        return { status: 200, body, redirect, hub, claims: jwt.payload };
    }

    // What a relay would put in OpenConnection: the token's claims (arrays flattened to repeated
    // keys, non-strings stringified), the client's headers, its query with a leading '?'.
    function claimsMap(payload, rename = {}) {
        const entries = [];
        for (const [k, v] of Object.entries(payload)) for (const x of Array.isArray(v) ? v : [v]) entries.push([rename[k] ?? k, String(x)]);
        return map(entries);
    }

    async function open(name, neg, protocol, conn, { rename = {}, dropSystem = false, ext = map([[3, protocol]]), expectHandshake = true } = {}) {
        const c = new FakeClient(name, conn.hub, protocol);
        c._conn = conn; c.userId = neg.claims["asrs.s.uid"];
        clients.set(c.id, c);
        let payload = neg.claims;
        if (dropSystem) payload = Object.fromEntries(Object.entries(payload).filter(([k]) => !["aud", "exp", "iat", "nbf", "iss"].includes(k)));
        const headers = map([["User-Agent", ["probe-fake-client/1.0"]], ["X-Forwarded-For", ["127.0.0.9"]], ["Host", ["127.0.0.1"]], ["X-Probe", [name, "second value"]]]);
        const query = "?" + neg.redirect.search.slice(1);
        sendMsg(conn, [4, c.id, claimsMap(payload, rename), headers, query, ext], `(${name})`);
        const hs = Buffer.from(JSON.stringify({ protocol, version: 1 }) + RS);
        sendMsg(conn, [6, c.id, new Bin(hs), map([])], `(${name} handshake)`);
        if (!expectHandshake) return c;
        await until(() => c.handshake, 8000, `${name} handshake response`);
        await sleep(150);
        log(`  ${name}: order of first arrivals: ${c.firstArrivals.join(", ")}`);
        return c;
    }

    async function httpCall(method, path) {
        const res = await fetch(`${APP}${path}`, { method });
        log(`HTTP ${method} ${path} -> ${res.status} ${await res.text()}`);
    }

    const section = (t) => log(`======== ${t}`);

    // ---------------------------------------------------------- the scenario
    await until(() => serverConns.filter((c) => c.handshakeDone && c.hub === "board").length >= 2 &&
                      serverConns.filter((c) => c.handshakeDone && c.hub === "opshub").length >= 2, 20000, "2 server connections per hub");
    await sleep(500);
    const board = serverConns.filter((c) => c.hub === "board");
    const ops = serverConns.filter((c) => c.hub === "opshub");

    section("negotiate at the app (/board)");
    const negAlice = await negotiate("/board", { query: "&user=alice&role=admin" });
    const negBob = await negotiate("/board", { headers: { Authorization: "Bearer bob" } });
    const negCarol = await negotiate("/board");

    section("OpenConnection + handshake: alice (json, conn A), bob (messagepack, conn B), carol (anonymous json, conn A)");
    const alice = await open("alice", negAlice, "json", board[0]);
    const bob = await open("bob", negBob, "messagepack", board[1]);
    const carol = await open("carol", negCarol, "json", board[0]);

    section("WhoAmI: what the app reconstructs from OpenConnection");
    await alice.invoke("WhoAmI", []);
    await bob.invoke("WhoAmI", []);
    await carol.invoke("WhoAmI", []);

    section("plain calls");
    await alice.invoke("Echo", [{ a: 1, b: [true, null, "x"] }]);
    await bob.invoke("Echo", ["hello from msgpack"]);
    await alice.invoke("Add", [2, 3]);
    await alice.invoke("Fail", ["boom"]);

    section("groups (18/19 + Ack 20)");
    await alice.invoke("AddToGroup", ["g1"]);
    await bob.invoke("AddToGroup", ["g1"]);
    await carol.invoke("AddConnectionToGroup", [carol.id, "g2"]);
    await alice.invoke("SendToGroup", ["g1", "to g1"]);
    await alice.invoke("SendToGroupExcept", ["g1", [bob.id], "to g1 except bob"]);
    await alice.invoke("SendToOthersInGroup", ["g1", "to g1 but me"]);
    await alice.invoke("SendToGroups", [["g1", "g2"], "to g1+g2"]);
    await alice.invoke("RemoveFromGroup", ["g1"]);
    await alice.invoke("SendToGroup", ["g1", "to g1 after alice left"]);

    section("users, all, others, caller, connections");
    await alice.invoke("SendToUser", ["bob", "to user bob"]);
    await alice.invoke("SendToUsers", [["bob", "alice"], "to users bob+alice"]);
    await alice.invoke("SendToAll", ["to all"]);
    await alice.invoke("SendToOthers", ["to others"]);
    await alice.invoke("SendToAllExcept", [[carol.id], "to all except carol"]);
    await alice.invoke("SendToCaller", ["to caller"]);
    await alice.invoke("SendToConnection", [bob.id, "to bob's connection"]);
    await alice.invoke("SendToConnections", [[bob.id, carol.id], "to bob+carol connections"]);
    await sleep(200);

    section("streams");
    await alice.invoke("Counter", [3, 0], { stream: true });
    await bob.invoke("CounterChannel", [2, 0], { stream: true });
    await alice.invoke("GetStreamStatus", []);
    {
        // upload stream: Sum(IAsyncEnumerable<int>) fed with 1, 2, 3
        const invocationId = String(++alice.invocationNo);
        const from = alice.inbox.length;
        alice.send([{ type: 1, invocationId, target: "Sum", arguments: [], streamIds: ["up1"] },
                    { type: 2, invocationId: "up1", item: 1 }, { type: 2, invocationId: "up1", item: 2 }]);
        alice.send([{ type: 2, invocationId: "up1", item: 3 }, { type: 3, invocationId: "up1" }]);
        await until(() => alice.inbox.slice(from).find((m) => m.type === 3 && m.invocationId === invocationId), 8000, "Sum completion");
        log(`  alice Sum(1,2,3 uploaded) -> ${JSON.stringify(alice.inbox.slice(from).find((m) => m.type === 3 && m.invocationId === invocationId))}`);
    }
    {
        // cancel a running server stream (CancelInvocation, type 5)
        const invocationId = String(++alice.invocationNo);
        alice.send([{ type: 4, invocationId, target: "Counter", arguments: [100, 50] }]);
        await alice.waitFor((m) => m.type === 2 && m.invocationId === invocationId, "first Counter item");
        alice.send([{ type: 5, invocationId }]);
        await sleep(300);
        await alice.invoke("GetStreamStatus", []);
    }
    await alice.invoke("GetConnected", []);

    section("big answer (70000 chars): fragmentation");
    const big = await alice.invoke("Repeat", ["x", 70000]);
    log(`  Repeat result length ${big.result?.length}`);

    section("client results: AskCaller");
    {
        const invocationId = String(++alice.invocationNo);
        const from = alice.inbox.length;
        alice.send([{ type: 1, invocationId, target: "AskCaller", arguments: ["what is the answer?"] }]);
        const ask = await alice.waitFor((m, i) => m.type === 1 && m.target === "GetAnswer", "GetAnswer invocation");
        alice.send([{ type: 3, invocationId: ask.invocationId, result: "42" }]);
        await until(() => alice.inbox.slice(from).find((m) => m.type === 3 && m.invocationId === invocationId), 8000, "AskCaller completion");
        log(`  AskCaller -> ${JSON.stringify(alice.inbox.slice(from).find((m) => m.type === 3 && m.invocationId === invocationId))}`);
    }

    section("sends from outside a hub call (IHubContext via HTTP)");
    await httpCall("POST", "/test/board/all?message=from-http");
    await httpCall("POST", "/test/board/user/bob?message=from-http-to-bob");
    await httpCall("PUT", `/test/board/group/g3/${encodeURIComponent(bob.id)}`);
    await httpCall("POST", "/test/board/group/g3?message=from-http-to-g3");
    await httpCall("DELETE", `/test/board/group/g3/${encodeURIComponent(bob.id)}`);
    await sleep(300);

    section("app-side abort: carol AbortMe");
    {
        const from = carol.inbox.length;
        carol.send([{ type: 1, invocationId: "99", target: "AbortMe", arguments: [] }]);
        await until(() => carol.closed, 8000, "carol closed by the app");
        await sleep(300);
        log(`  carol after AbortMe received ${JSON.stringify(carol.inbox.slice(from))}`);
    }

    section("relay-side close: CloseConnection for bob");
    sendMsg(bob.conn, [5, bob.id, "", map([]), map([])], "(bob leaves)");
    bob.closed = true;
    await alice.waitFor((m) => m.type === 1 && m.target === "left" && m.arguments[0] === bob.id, "left(bob)");
    await sleep(500);
    await alice.invoke("GetEvents", [bob.id]);
    await httpCall("GET", "/test/connections?hub=board");

    section("second hub /ops (hub key opshub, [Authorize])");
    await negotiate("/ops");
    const negDave = await negotiate("/ops", { query: "&user=dave&role=admin" });
    const dave = await open("dave", negDave, "json", ops[0]);
    await dave.invoke("Ping", []);
    await dave.invoke("WhoAmI", []);
    await dave.invoke("AdminOnly", []);
    // The same claims with the inbound JWT map applied (short -> long claim types).
    const longTypes = {
        nameid: "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier",
        unique_name: "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
        role: "http://schemas.microsoft.com/ws/2008/06/identity/claims/role",
    };
    const eve = await open("eve", negDave, "json", ops[1], { rename: longTypes, dropSystem: true });
    await eve.invoke("WhoAmI", []);
    await eve.invoke("AdminOnly", []);
    await eve.invoke("Notify", ["ops broadcast"]);
    await sleep(300);

    section("edge: OpenConnection without ext key 3 (protocol): frank");
    {
        const frank = await open("frank", negCarol, "json", board[0], { ext: map([]), expectHandshake: false });
        await sleep(3000);
        log(`  frank after 3 s: handshake response ${frank.handshake ? "received" : "NOT received"}, ${frank.inbox.length} messages`);
        await httpCall("GET", "/test/connections?hub=board");
        sendMsg(frank.conn, [5, frank.id, "", map([]), map([])], "(frank leaves)");
        frank.closed = true;
        await sleep(500);
    }

    section("edge: ConnectionData for a connection id the app does not know");
    sendMsg(board[0], [6, "c-ghost", new Bin(Buffer.from('{"type":1,"invocationId":"1","target":"Echo","arguments":[1]}' + RS)), map([])], "(ghost)");
    await sleep(1000);

    section("edge: CloseConnection with an error text: gina");
    {
        const gina = await open("gina", negCarol, "json", board[1]);
        sendMsg(gina.conn, [5, gina.id, "relay: transport lost", map([]), map([])], "(gina dropped with error)");
        gina.closed = true;
        await sleep(500);
        await alice.invoke("GetEvents", [gina.id]);
    }

    section("edge: one hub invocation split over two ConnectionData messages (no IsPartial)");
    {
        const text = JSON.stringify({ type: 1, invocationId: "s1", target: "Echo", arguments: ["split in two"] }) + RS;
        const from = alice.inbox.length;
        sendMsg(alice.conn, [6, alice.id, new Bin(Buffer.from(text.slice(0, 20))), map([])], "(alice, first half)");
        await sleep(200);
        sendMsg(alice.conn, [6, alice.id, new Bin(Buffer.from(text.slice(20))), map([])], "(alice, second half)");
        await until(() => alice.inbox.slice(from).find((m) => m.type === 3 && m.invocationId === "s1"), 5000, "split Echo completion");
        log(`  split Echo -> ${JSON.stringify(alice.inbox.slice(from).find((m) => m.invocationId === "s1"))}`);
    }

    section("edge: two invocations in one ConnectionData");
    {
        const text = [{ type: 1, invocationId: "m1", target: "Add", arguments: [1, 1] }, { type: 1, invocationId: "m2", target: "Add", arguments: [2, 2] }]
            .map((m) => JSON.stringify(m) + RS).join("");
        const from = alice.inbox.length;
        sendMsg(alice.conn, [6, alice.id, new Bin(Buffer.from(text)), map([])], "(alice, two invocations)");
        await until(() => alice.inbox.slice(from).filter((m) => m.type === 3).length >= 2, 5000, "both Add completions");
    }

    section("edge: OpenConnection + handshake + first invocation in ONE WebSocket frame, handshake and invocation in ONE ConnectionData: hank");
    {
        const hank = new FakeClient("hank", "board", "json");
        hank._conn = board[1]; hank.userId = undefined; clients.set(hank.id, hank);
        const bytes = Buffer.from(JSON.stringify({ protocol: "json", version: 1 }) + RS + JSON.stringify({ type: 1, invocationId: "h1", target: "Echo", arguments: ["together"] }) + RS);
        const claims = claimsMap(negCarol.claims);
        const headers = map([["User-Agent", ["probe-fake-client/1.0"]]]);
        sendMsgsOneFrame(board[1], [[4, hank.id, claims, headers, "?" + negCarol.redirect.search.slice(1), map([[3, "json"]])], [6, hank.id, new Bin(bytes), map([])]]);
        await until(() => hank.handshake && hank.inbox.find((m) => m.type === 3 && m.invocationId === "h1"), 5000, "hank handshake + Echo");
        log(`  hank: order of first arrivals: ${hank.firstArrivals.join(", ")}; Echo -> ${JSON.stringify(hank.inbox.find((m) => m.invocationId === "h1"))}`);
        sendMsg(hank.conn, [5, hank.id, "", map([]), map([])], "(hank leaves)");
        hank.closed = true;
        await sleep(300);
    }

    section("edge: a protocol the app does not support (\"foo\"): ivy");
    {
        const ivy = await open("ivy", negCarol, "foo", board[0], { expectHandshake: false });
        await sleep(1500);
        log(`  ivy: handshake answer ${JSON.stringify(ivy.handshake)}, closed by app: ${ivy.closed}`);
        if (!ivy.closed) { sendMsg(ivy.conn, [5, ivy.id, "", map([]), map([])], "(ivy leaves)"); ivy.closed = true; }
        await sleep(300);
    }

    section("edge: the service drops the server connection that carries jack");
    {
        const jack = await open("jack", negCarol, "json", board[1]);
        const before = serverConns.filter((c) => c.hub === "board").length;
        closeConn(board[1]);
        await sleep(2000);
        log(`  board server connections: ${before} before, ${serverConns.filter((c) => c.hub === "board").length} two seconds after`);
        await alice.invoke("GetEvents", [jack.id]);
        jack.closed = true;
    }
}
