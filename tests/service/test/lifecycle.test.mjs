// Ends: the app aborting a client, a client leaving, and the app process going away (killed,
// or stopped with SIGTERM, when the SDK's shutdown handshake fin:0 / finack runs).
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import { connect, waitFor, metrics, pollUntil, stopAll, startApp, stopApp } from "../lib.mjs";

const T = { timeout: 60000 };

test("AbortMe closes the caller; the others hear it left", T, async () => {
    const a = await connect({ user: "abort-a" });
    const b = await connect({ user: "abort-b", protocol: "messagepack" });
    try {
        await a.connection.invoke("AbortMe").catch(() => {});
        await waitFor(a, (e) => e[0] === "close", "the caller to be closed", "events");
        await waitFor(b, (m) => m[0] === "left" && m[1] === a.id, "b hears a left");
    } finally {
        await stopAll(a, b);
    }
});

test("a client that stops runs OnDisconnected at the app", T, async () => {
    const a = await connect({ user: "leave-a", protocol: "messagepack" });
    const b = await connect({ user: "leave-b" });
    try {
        await a.connection.stop();
        await waitFor(b, (m) => m[0] === "left" && m[1] === a.id, "b hears a left");
    } finally {
        await stopAll(a, b);
    }
});

// The extra app's tokens name its server (StickyMode Required), so its clients are bound to it
// and not to the suite's main app, which serves the same hub.
test("killing the app closes its clients, with allowReconnect", T, async () => {
    const app = await startApp({ StickyMode: "Required" });
    const clients = [];
    try {
        clients.push(await connect({ user: "kill-a", appUrl: app.url, reconnect: true }));
        clients.push(await connect({ user: "kill-b", appUrl: app.url, protocol: "messagepack", reconnect: true }));
        assert.equal(await clients[0].connection.invoke("Echo", 1), 1);
        app.proc.kill("SIGKILL");
        for (const c of clients) {
            const [, error] = await waitFor(c, (e) => e[0] === "reconnecting", "the client to be told to reconnect", "events");
            assert.match(error, /relay/i);
        }
    } finally {
        await stopAll(...clients);
        await stopApp(app, "SIGKILL");
    }
});

test("an app SIGTERM closes its clients cleanly (finack), and the app exits at once", T, async () => {
    const serverSockets = async () => (await metrics()).signalr_relay_service_server_sockets;
    const socketsBefore = await serverSockets();
    const app = await startApp({ StickyMode: "Required" });
    const clients = [];
    try {
        clients.push(await connect({ user: "term-a", appUrl: app.url, reconnect: true }));
        clients.push(await connect({ user: "term-b", appUrl: app.url, protocol: "messagepack", reconnect: true }));
        const started = Date.now();
        app.proc.kill("SIGTERM");
        for (const c of clients) {
            const [, error] = await waitFor(c, (e) => e[0] === "reconnecting", "the client to be told to reconnect", "events");
            assert.equal(error, null, "the app's own Close (allowReconnect, no error)");
        }
        const { code } = await stopApp(app);
        assert.equal(code, 0);
        /* Without finack the SDK waits GracefulShutdown.Timeout (30 s) before it exits. */
        assert.ok(Date.now() - started < 10000, `the app took ${Date.now() - started} ms to stop`);
    } finally {
        await stopAll(...clients);
        await stopApp(app, "SIGKILL");
        /* The next test file finds the relay without this app's server connections. */
        await pollUntil(serverSockets, (n) => n <= socketsBefore, "the relay to drop the app's server connections");
    }
});
