// Replaying a session recorded against the REAL server (ASP.NET SignalR 2.4.1, tests/legacy-ref)
// against the relay: the relay must answer as the real server did, except for the differences
// listed in tests/legacy-ref/README.md's table, which are masked here and nowhere else. Each mask
// names its row; anything not masked is compared as for any fixture (statuses, JSON shapes, values,
// cursors and tokens as placeholders, order).
//
//   row 12-14  a non-HubException error text (the Core backend's texts, not the 2.x server's)
//   row 15     the hub name in a server->client call (the server's class name vs the client's spelling)
//   row 16     the connection id a hub sees (legacy GUID vs the backend's Core id): welcome's argument
//              and WhoAmI's connectionId
//   row 17-18  cursor and token format: already placeholders in every fixture (any value of its kind);
//              the real server's cursor also moves without a message, so two recorded cursors may
//              be one relay cursor (signalr-replay --reference: rp_bind.c shared_cursors)
//   row 19     negotiate TryWebSockets (false on Mono's host, true at the relay)
//   row 22     the Content-Type of error answers (none vs text/plain)
//   README.md "Known differences ... by design": the backend sees the relay (X-Forwarded-For) over a
//              Core WebSocket link: WhoAmI's forwardedFor and transport
// A masked JSON value becomes ANY, which the replayer accepts whatever the server sent. signalr-replay
// --reference applies these masks (tools/replay/rp_mask.c, a port); test/reference-mask.test.mjs
// checks that both mask every reference fixture's answers alike.
export const ANY = "<any>";

const MASKED_ROWS = "tests/legacy-ref/README.md rows 12-19, 22";

function maskElement(m) {
    if (!(m instanceof Map)) return m;
    if (m.has("H") && m.has("M") && m.has("A")) { // a server->client call (row 15, 16)
        m.set("H", ANY);
        const method = String(m.get("M")).toLowerCase();
        if (method === "welcome") m.set("A", ANY);
    }
    return m;
}

// The JSON body of a server answer (PersistentResponse, hub result, negotiate), masked in place.
export function maskReferenceJson(value, { negotiate = false } = {}) {
    if (!(value instanceof Map)) return value;
    if (negotiate && value.has("TryWebSockets")) value.set("TryWebSockets", ANY); // row 19
    if (value.has("I") && value.has("E") && value.get("H") !== true) value.set("E", ANY); // rows 12-14
    const r = value.get("R");
    if (r instanceof Map && r.has("connectionId")) { // WhoAmI
        for (const k of ["connectionId", "forwardedFor", "transport"]) if (r.has(k)) r.set(k, ANY);
    }
    if (Array.isArray(value.get("M"))) value.set("M", value.get("M").map(maskElement));
    return value;
}

// Row 22: an error answer's Content-Type is not compared.
export function maskReferenceHeaders(status, headers) {
    if (status >= 400 && headers) delete headers["content-type"];
    return headers;
}

export const describeMask = () => MASKED_ROWS;
