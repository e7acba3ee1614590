// Steps for test/legacy-nojquery.test.mjs, run in the page with signalr-no-jquery loaded as
// window.signalRNoJQuery ({ hubConnection }).
(function () {
    "use strict";

    function deferredToPromise(d) {
        return new Promise(function (resolve, reject) { d.done(resolve).fail(reject); });
    }

    function waitFor(what, test, ms) {
        return new Promise(function (resolve, reject) {
            var started = Date.now();
            (function check() {
                if (test()) return resolve();
                if (Date.now() - started > ms) return reject(new Error("no " + what + " within " + ms + " ms"));
                setTimeout(check, 50);
            })();
        });
    }

    // Records the hub pushes the client takes into its ConnectingMessageBuffer, i.e. that reached
    // it on the receive channel while it was still "connecting" (before it processed its /start
    // answer): "buffered welcome". This client never hands those to a handler (see the test), so
    // this is the only place they can be seen in the page.
    function recordBuffered(connection, seen) {
        var buffer = connection._.connectingMessageBuffer, tryBuffer = buffer.tryBuffer;
        buffer.tryBuffer = function (message) {
            var taken = tryBuffer(message);
            if (taken && message && typeof message.M === "string") seen.push("buffered " + message.M);
            return taken;
        };
    }

    // Connects to chatHub over the given transport with handlers for the hub's OnConnected push
    // ("welcome") and for "broadcast" registered before start, as a page does; then Add, then a
    // Broadcast whose push it waits for. The server sends the welcome before that broadcast on the
    // same stream, so once the broadcast is in, a welcome neither seen nor buffered never reached
    // the client. Returns what the client saw, in order.
    window.nojquery = {
        onConnectedScenario: async function (url, transport, waitMs) {
            var seen = [];
            var tag = "nj-" + Math.random().toString(36).slice(2);
            var connection = window.signalRNoJQuery.hubConnection(url, { useDefaultPath: false });
            connection.logging = true;
            recordBuffered(connection, seen);
            var chat = connection.createHubProxy("chatHub");
            chat.on("welcome", function (id) { seen.push("welcome " + typeof id); });
            chat.on("broadcast", function (m) { if (m === tag) seen.push("broadcast"); });
            try {
                await deferredToPromise(connection.start({ transport: transport }));
                seen.push("started " + connection.transport.name);
                seen.push("Add " + await deferredToPromise(chat.invoke("Add", 40, 2)));
                await deferredToPromise(chat.invoke("Broadcast", tag));
                await waitFor("broadcast push", function () { return seen.indexOf("broadcast") >= 0; }, waitMs)
                    .catch(function (e) { seen.push(e.message); });
                return seen;
            } finally {
                connection.stop();
            }
        },
    };
})();
