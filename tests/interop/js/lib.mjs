// Shared helpers for the interop tests: reads the environment (SIGNALR_URL, SIGNALR_PROTOCOL,
// SIGNALR_TRANSPORT), builds stock @microsoft/signalr connections, and waits for events with
// timeouts so that a missing message fails a test instead of hanging it.
import * as signalR from "@microsoft/signalr";
import { MessagePackHubProtocol } from "@microsoft/signalr-protocol-msgpack";

export { signalR };
// Waiting, polling and HTTP helpers shared with the other Node suites (tests/lib/common.mjs).
export { TIMEOUT_MS, httpRequest, pollUntil, sleep, uniqueName, withTimeout } from "../../lib/common.mjs";
import { TIMEOUT_MS, withTimeout } from "../../lib/common.mjs";
import { afterEach } from "../../lib/test.mjs";

export const BASE_URL = (process.env.SIGNALR_URL || "").replace(/\/+$/, "");
if (!BASE_URL) {
    throw new Error("SIGNALR_URL is not set (e.g. http://127.0.0.1:5000)");
}

export const PROTOCOL = process.env.SIGNALR_PROTOCOL || "json";
if (PROTOCOL !== "json" && PROTOCOL !== "messagepack") {
    throw new Error(`SIGNALR_PROTOCOL must be json or messagepack, not '${PROTOCOL}'`);
}

export const TRANSPORT_NAME = process.env.SIGNALR_TRANSPORT || "WebSockets";
const TRANSPORT = signalR.HttpTransportType[TRANSPORT_NAME];
if (TRANSPORT === undefined || typeof TRANSPORT !== "number" || TRANSPORT_NAME === "None") {
    throw new Error(`SIGNALR_TRANSPORT must be WebSockets, ServerSentEvents or LongPolling, not '${TRANSPORT_NAME}'`);
}
if (PROTOCOL === "messagepack" && TRANSPORT_NAME === "ServerSentEvents") {
    throw new Error("MessagePack needs a binary transport; ServerSentEvents carries text only");
}

// The transport the hub itself sees (Context): a relay may reach the backend over another one
// (signalr-relay in proxy mode always uses a WebSocket).
export const BACKEND_TRANSPORT_NAME = process.env.SIGNALR_EXPECT_BACKEND_TRANSPORT || TRANSPORT_NAME;

// SIGNALR_DIRECT=1 means the suite talks straight to the backend (no relay in between), which
// allows checks that a relay legitimately changes: same connection id on both sides, no
// X-Forwarded-For header.
export const DIRECT = process.env.SIGNALR_DIRECT === "1";

// The transports the server under test offers in negotiate (comma list, in order). A relay may
// offer fewer than the backend; the clients then pick among those.
export const EXPECT_TRANSPORTS = (process.env.SIGNALR_EXPECT_TRANSPORTS || "WebSockets,ServerSentEvents,LongPolling")
    .split(",").map((name) => name.trim()).filter((name) => name.length > 0);

// What the backend should see in X-Forwarded-For: absent when direct, or as given.
export const EXPECT_FORWARDED_FOR = process.env.SIGNALR_EXPECT_FORWARDED_FOR ?? null;

const LOG_LEVEL = signalR.LogLevel[process.env.SIGNALR_LOG_LEVEL || "None"];

// A connection id / token as ASP.NET Core makes them: 16 random bytes, base64url, no padding.
export const CONNECTION_ID_RE = /^[A-Za-z0-9_-]{22}$/;

export function hubUrl(path) {
    return BASE_URL + path;
}

export function buildConnection(path, options = {}) {
    const httpOptions = {
        transport: options.skipNegotiation ? signalR.HttpTransportType.WebSockets : TRANSPORT,
        skipNegotiation: options.skipNegotiation === true,
    };
    if (options.accessTokenFactory) {
        httpOptions.accessTokenFactory = options.accessTokenFactory;
    }
    if (options.headers) {
        httpOptions.headers = options.headers;
    }
    const builder = new signalR.HubConnectionBuilder()
        .withUrl(hubUrl(path), httpOptions)
        .configureLogging(LOG_LEVEL);
    if (PROTOCOL === "messagepack") {
        builder.withHubProtocol(new MessagePackHubProtocol());
    }
    const conn = builder.build();
    // An onclose with an error fails the test (afterEach below) unless the test expects it.
    conn.onclose((error) => {
        if (error && !expectingCloseError.has(conn)) unexpectedCloseErrors.push(`${path}: ${error.message}`);
    });
    return conn;
}

const expectingCloseError = new WeakSet();
const unexpectedCloseErrors = [];

// The test expects `conn` to close with an error (the server or a relay ends it on purpose).
export function expectCloseError(conn) {
    expectingCloseError.add(conn);
}

afterEach(() => {
    const errors = unexpectedCloseErrors.splice(0);
    if (errors.length > 0) {
        throw new Error(`connections closed with errors the test did not expect: ${errors.join(" | ")}`);
    }
});

// Starts a /chat connection and returns it with the backend's connection id, taken from the
// "welcome" push that ChatHub.OnConnectedAsync sends first.
export async function connectChat(options = {}) {
    const path = options.path || "/chat";
    const conn = buildConnection(path, options);
    const welcome = nextEvent(conn, "welcome");
    await withTimeout(conn.start(), TIMEOUT_MS, `start ${path}`);
    const [backendId] = await welcome;
    return { conn, backendId };
}

// Resolves with the arguments of the next `name` event whose arguments satisfy `filter`.
export function nextEvent(conn, name, filter = () => true, timeoutMs = TIMEOUT_MS) {
    let handler;
    const received = new Promise((resolve) => {
        handler = (...args) => {
            if (filter(...args)) {
                conn.off(name, handler);
                resolve(args);
            }
        };
        conn.on(name, handler);
    });
    return withTimeout(received, timeoutMs, `event '${name}'`).finally(() => conn.off(name, handler));
}

// Records every `name` event, for checks that something did NOT arrive.
export function recordEvents(conn, name) {
    const seen = [];
    conn.on(name, (...args) => seen.push(args));
    return seen;
}

// Stops connections at the end of a test whatever happened, so the process can exit.
export async function stopAll(...conns) {
    await Promise.all(conns.filter(Boolean).map((c) => c.stop().catch(() => {})));
}

