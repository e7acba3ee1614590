// The legacy endpoint's refusals of plain HTTP requests that carry no (or a bad) connectionToken:
// the original server answers 400 "Protocol error: Missing connection token." (or "The
// ConnectionId is in the incorrect format.") and goes on serving; so must the relay. A relay that
// answered and then freed claims it never filled died on the first such GET (found by comparing it
// with the real server, tests/legacy-ref), so every request here is followed by proof of life.
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { RELAY_URL, RELAY_PID, TIMEOUT_MS, httpRequest } from "../lib.mjs";

const BASE = `${RELAY_URL}/signalr`;
const MISSING = "Protocol error: Missing connection token.";
const MALFORMED = "The ConnectionId is in the incorrect format.";
const CONNECTION_DATA = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));

// Requests on one kept-alive connection, as browsers and the legacy clients send them: the answer
// to a refused request must be the only answer, and the connection must stay usable.
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
after(() => keepAlive.destroy());

function request(method, url) {
    return new Promise((resolve, reject) => {
        const req = http.request(url, { method, agent: keepAlive, timeout: TIMEOUT_MS }, (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
            res.on("error", reject);
        });
        req.on("timeout", () => req.destroy(new Error(`${method} ${url}: no answer in ${TIMEOUT_MS} ms`)));
        req.on("error", reject);
        req.end();
    });
}

function alive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    } catch {
        return false;
    }
}

async function assertServing(what) {
    assert.ok(alive(RELAY_PID), `the relay process is gone after ${what}`);
    for (const send of [request, httpRequest]) { // the same kept-alive connection, then a fresh one
        const neg = await send("GET", `${BASE}/negotiate?clientProtocol=2.1&connectionData=${CONNECTION_DATA}`);
        assert.equal(neg.status, 200, `negotiate after ${what}: ${neg.body}`);
        assert.ok(JSON.parse(neg.body).ConnectionToken, neg.body);
    }
}

describe("legacy requests without a usable connectionToken", () => {
    const commands = ["connect", "reconnect", "start", "send", "poll", "abort"];
    const transports = ["longPolling", "serverSentEvents", "webSockets"];
    for (const command of commands) {
        for (const transport of transports) {
            it(`${command} over ${transport} without a token: 400 '${MISSING}', and the relay serves on`, async () => {
                const method = ["send", "poll", "abort"].includes(command) ? "POST" : "GET";
                const url = `${BASE}/${command}?transport=${transport}&clientProtocol=2.1&connectionData=${CONNECTION_DATA}`;
                const res = await request(method, url);
                assert.equal(res.status, 400, res.body);
                assert.equal(res.body, MISSING);
                await assertServing(`${method} /${command}?transport=${transport}`);
            });
        }
    }

    for (const command of ["connect", "start", "abort"]) {
        it(`${command} with a tampered token: 400 '${MALFORMED}', and the relay serves on`, async () => {
            const url = `${BASE}/${command}?transport=longPolling&clientProtocol=2.1&connectionToken=not-a-token` +
                `&connectionData=${CONNECTION_DATA}`;
            const res = await request(command === "connect" ? "GET" : "POST", url);
            assert.equal(res.status, 400, res.body);
            assert.equal(res.body, MALFORMED);
            await assertServing(`/${command} with a tampered token`);
        });
    }
});
