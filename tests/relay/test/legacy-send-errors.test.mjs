// /send that the original server cannot dispatch, answered as it answers them (tests/legacy-ref,
// `send results and errors`): no data field, data that is not an invocation, or a hub it does not
// have: 500 with an empty body (its exception), not a hub result; and a GET /send with data= in the
// query is invoked like a POST (it reads the form, then the query). The connection serves on.
import { describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { LEGACY_BASE as BASE, LEGACY_FORM as FORM, httpRequest, legacyLongPollingConnection } from "../lib.mjs";


async function longPollingConnection() {
    return (await legacyLongPollingConnection(BASE)).q;
}

const send = (q, body) => httpRequest("POST", `${BASE}/send?${q}`, FORM, body);
const data = (m) => `data=${encodeURIComponent(JSON.stringify(m))}`;

describe("legacy /send the original cannot dispatch", () => {
    it("no data field, data not JSON, an unknown hub: 500, empty, no Content-Type; then a good send works", async () => {
        const q = await longPollingConnection();
        for (const [what, body] of [
            ["no data field", ""],
            ["data not JSON", "data=not+json"],
            ["unknown hub", data({ H: "nosuchhub", M: "Echo", A: [1], I: 10 })],
        ]) {
            const res = await send(q, body);
            assert.equal(res.status, 500, `${what}: ${res.body}`);
            assert.equal(res.body, "", what);
            assert.equal(res.headers["content-type"], undefined, what);
        }
        const ok = await send(q, data({ H: "chathub", M: "Add", A: [40, 2], I: 0 }));
        assert.equal(ok.status, 200, ok.body);
        assert.deepEqual(JSON.parse(ok.body), { R: 42, I: "0" });
        await httpRequest("POST", `${BASE}/abort?${q}`, FORM, "");
    });

    it("GET /send with data= in the query: invoked, 200 with the hub result", async () => {
        const q = await longPollingConnection();
        const res = await httpRequest("GET", `${BASE}/send?${q}&${data({ H: "chathub", M: "Add", A: [1, 2], I: 13 })}`);
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(JSON.parse(res.body), { R: 3, I: "13" });
        await httpRequest("POST", `${BASE}/abort?${q}`, FORM, "");
    });
});
