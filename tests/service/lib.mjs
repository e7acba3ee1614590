// Shared helpers of the service-mode tests (scripts/service-tests.sh sets the environment): the
// relay and the real app (tests/service-app, Azure SignalR SDK 1.34.0) it serves, stock
// @microsoft/signalr clients that negotiate at the app and follow its redirect to the relay,
// recorders of what each client receives, /metrics, and extra app processes a test may start
// and kill. Every wait has a timeout, so a missing message fails a test instead of hanging it.
import { spawn } from "node:child_process";
import * as signalR from "@microsoft/signalr";
import { MessagePackHubProtocol } from "@microsoft/signalr-protocol-msgpack";

export { signalR };

function required(name) {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set: run the suite through scripts/service-tests.sh`);
    return value;
}

export const RELAY_URL = required("RELAY_URL");
export const RELAY_PORT = Number(new URL(RELAY_URL).port);
export const APP_URL = required("APP_URL");
export const APP_DLL = required("APP_DLL");
export const SERVICE_KEY = required("SERVICE_KEY");
// The port of an app a test starts itself, whose /board the relay serves to legacy clients as
// hub `lboard` (--app-negotiate lboard=http://127.0.0.1:LEGACY_APP_PORT/board).
export const LEGACY_APP_PORT = Number(process.env.LEGACY_APP_PORT || 0);
// The bounded waits every node suite shares (tests/lib/common.mjs).
export { TIMEOUT_MS, sleep, withTimeout, pollUntil, freePort } from "../lib/common.mjs";
import { TIMEOUT_MS, withTimeout, pollUntil, freePort } from "../lib/common.mjs";

// The client methods the Board hub calls.
const BOARD_METHODS = ["welcome", "joined", "left", "private", "userMessage", "broadcast", "groupMessage"];

// A stock client of hub `hub` (board or ops) at app `appUrl`, as user `user` (or anonymous), JSON
// or MessagePack. Records every call it receives in `got` ([method, ...args]) and its lifecycle
// events in `events`. With reconnect, withAutomaticReconnect([60000]) so that a Close with
// allowReconnect shows as `reconnecting` (and no second attempt comes within a test).
// transport: WebSockets (default), ServerSentEvents or LongPolling.
export async function connect({ user, protocol = "json", hub = "board", appUrl = APP_URL, reconnect = false,
    transport = "WebSockets" } = {}) {
    const query = user ? `?user=${encodeURIComponent(user)}` : "";
    const builder = new signalR.HubConnectionBuilder()
        .withUrl(`${appUrl}/${hub}${query}`, { transport: signalR.HttpTransportType[transport] })
        .configureLogging(signalR.LogLevel.None);
    if (protocol === "messagepack") builder.withHubProtocol(new MessagePackHubProtocol());
    if (reconnect) builder.withAutomaticReconnect([60000]);
    const connection = builder.build();
    const client = { connection, user, protocol, got: [], events: [], waiters: [] };
    const note = () => {
        for (const w of client.waiters.splice(0)) w();
    };
    for (const method of BOARD_METHODS) {
        connection.on(method, (...args) => {
            client.got.push([method, ...args]);
            note();
        });
    }
    connection.onclose((error) => {
        client.events.push(["close", error ? String(error.message || error) : null]);
        note();
    });
    connection.onreconnecting((error) => {
        client.events.push(["reconnecting", error ? String(error.message || error) : null]);
        note();
    });
    try {
        await withTimeout(connection.start(), TIMEOUT_MS, `${user || "anonymous"} (${protocol}) to start`);
    } catch (e) {
        connection.stop().catch(() => {}); // a start that comes late must not keep the test file running
        throw e;
    }
    client.id = connection.connectionId;
    return client;
}

// Waits until the client's record (got or events) has an entry that `match` accepts.
export async function waitFor(client, match, what, list = "got", timeoutMs = TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const found = client[list].find(match);
        if (found) return found;
        const left = deadline - Date.now();
        if (left <= 0)
            throw new Error(`timed out waiting for ${what}; ${client.user || "client"} has ${JSON.stringify(client[list])}`);
        await new Promise((resolve) => {
            const timer = setTimeout(resolve, left);
            client.waiters.push(() => {
                clearTimeout(timer);
                resolve();
            });
        });
    }
}

// What a client got of one method with a given message text (the last argument).
export function messages(client, method, text) {
    return client.got.filter((m) => m[0] === method && m[m.length - 1] === text);
}

// The positive barrier before an absence check ("X did not get M"): `sender` sends a marker
// to each client of `recipients` ("private", Clients.Client(id)), and this waits until each
// got its own. Call it only once the clients that must get M got it: the relay has then handled
// M (it handles a message whole), and whatever it delivers to one client leaves in order on
// that client's socket, so a copy of M wrongly sent to a recipient would have come before the
// marker. That makes "not in `got`" a fact, not a bet on a fixed sleep. sender: a client (its
// hub call SendToConnection) or an app's URL (POST /test/board/connection/ID, from outside a hub
// call, as the app's own IHubContext sends).
let markers = 0;
export async function marker(sender, ...recipients) {
    await Promise.all(recipients.map(async (r) => {
        const text = `marker-${++markers}`;
        if (typeof sender === "string") {
            const res = await fetch(`${sender}/test/board/connection/${encodeURIComponent(r.id)}?message=${text}`,
                { method: "POST" });
            if (res.status !== 200) throw new Error(`POST ${sender}/test/board/connection: HTTP ${res.status}`);
        } else {
            await withTimeout(sender.connection.invoke("SendToConnection", r.id, text), TIMEOUT_MS,
                `${sender.user}'s marker to ${r.user}`);
        }
        await waitFor(r, (m) => m[0] === "private" && m[2] === text, `the marker ${text}`);
    }));
}

export async function stopAll(...clients) {
    await Promise.all(clients.filter(Boolean).map((c) => c.connection.stop().catch(() => {})));
}

export async function metrics() {
    const res = await fetch(`${RELAY_URL}/metrics`);
    const text = await res.text();
    const values = {};
    for (const line of text.split("\n")) {
        const m = /^([a-z_]+(?:\{[^}]*\})?) (\d+)$/.exec(line);
        if (m) values[m[1]] = Number(m[2]);
    }
    return values;
}

// Another process of the test app against the relay, with extra --ServiceApp:X=Y options; ready
// once its /board negotiate answers with a redirect (its server connections are up). port: where
// it listens (default any free one; LEGACY_APP_PORT is the one the relay's `lboard` hub expects).
export async function startApp(options = {}, port = undefined) {
    port ??= await freePort();
    const url = `http://127.0.0.1:${port}`;
    const args = [APP_DLL, "--urls", url,
        `--Azure:SignalR:ConnectionString=Endpoint=http://127.0.0.1;Port=${RELAY_PORT};AccessKey=${SERVICE_KEY};Version=1.0;`];
    for (const [k, v] of Object.entries(options)) args.push(`--ServiceApp:${k}=${v}`);
    const proc = spawn("dotnet", args, { stdio: ["ignore", "pipe", "pipe"] });
    let log = "";
    proc.stdout.on("data", (d) => (log += d));
    proc.stderr.on("data", (d) => (log += d));
    const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
    const app = { url, proc, exited, log: () => log };
    try {
        await pollUntil(async () => {
            try {
                const res = await fetch(`${url}/board/negotiate?negotiateVersion=1`, { method: "POST" });
                return res.status;
            } catch {
                return 0;
            }
        }, (status) => status === 200, `app on ${url} to connect to the relay`, 30000, 200);
    } catch (e) {
        proc.kill("SIGKILL");
        throw new Error(`${e.message}\napp log:\n${log}`);
    }
    return app;
}

export async function stopApp(app, signal = "SIGTERM") {
    if (app.proc.exitCode !== null || app.proc.signalCode !== null) return app.exited;
    app.proc.kill(signal);
    return withTimeout(app.exited, 40000, `app to exit on ${signal}`);
}
