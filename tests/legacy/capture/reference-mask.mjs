// Replaying a session recorded against the REAL server (ASP.NET SignalR 2.4.1, tests/legacy-ref)
// against the relay: the relay must answer as the real server did, except for the differences
// listed in tests/legacy-ref/README.md's table, which are masked here and nowhere else. Each mask
// names its row; anything not masked is compared as for any fixture (statuses, JSON shapes, values,
// cursors and tokens as placeholders, order).
//
//   row 1      the connection id a hub sees (legacy GUID vs the backend's Core id): welcome's argument
//              and WhoAmI's connectionId
//   rows 2-3   cursor and token format: already placeholders in every fixture (any value of its kind);
//              the real server's cursor also moves without a message, so two recorded cursors may
//              be one relay cursor (signalr-replay --reference: rp_bind.c shared_cursors)
//   row 4      negotiate TryWebSockets (false on Mono's host, true at the relay)
//   README.md "Known differences ... by design": the backend sees the relay (X-Forwarded-For) over a
//              Core WebSocket link: WhoAmI's forwardedFor and transport
// No longer masked (the relay now answers as the real server, re-checked 2026-12-01 with every
// fixture of fixtures/legacy/reference): the error text of a failed invocation, the hub name of a
// server->client call, and the Content-Type of error answers (none).
// A masked JSON value becomes ANY, which the replayer accepts whatever the server sent. signalr-replay
// --reference applies these masks (tools/replay/rp_mask.c, a port); test/reference-mask.test.mjs
// checks that both mask every reference fixture's answers alike.
export const ANY = "<any>";

const MASKED_ROWS = "tests/legacy-ref/README.md rows 1-4";

function maskElement(m) {
    if (!(m instanceof Map)) return m;
    if (m.has("H") && m.has("M") && m.has("A")) { // a server->client call (row 1)
        const method = String(m.get("M")).toLowerCase();
        if (method === "welcome") m.set("A", ANY);
    }
    return m;
}

// The JSON body of a server answer (PersistentResponse, hub result, negotiate), masked in place.
export function maskReferenceJson(value, { negotiate = false } = {}) {
    if (!(value instanceof Map)) return value;
    if (negotiate && value.has("TryWebSockets")) value.set("TryWebSockets", ANY); // row 4
    const r = value.get("R");
    if (r instanceof Map && r.has("connectionId")) { // WhoAmI
        for (const k of ["connectionId", "forwardedFor", "transport"]) if (r.has(k)) r.set(k, ANY);
    }
    if (Array.isArray(value.get("M"))) value.set("M", value.get("M").map(maskElement));
    return value;
}

// Headers: nothing masked (error answers have no Content-Type at either server).
export function maskReferenceHeaders(status, headers) {
    void status;
    return headers;
}

export const describeMask = () => MASKED_ROWS;
