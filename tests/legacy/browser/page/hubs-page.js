// Steps for test/legacy-hubs-script.test.mjs: only the generated proxies of <endpoint>/hubs
// ($.connection.hub, $.connection.chatHub.server / .client, $.connection.statusHub), as an app
// page written for the original server uses them.
(function () {
    "use strict";

    function promise(d) {
        return new Promise(function (resolve, reject) { d.done(resolve).fail(function (e) { reject(new Error(String(e && e.message || e))); }); });
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

    window.hubsPage = {
        // What the script defined, before any connection.
        shape: function () {
            var c = $.connection;
            return {
                hubUrl: c.hub && c.hub.url,
                chatHub: !!(c.chatHub && c.chatHub.hubName === "chathub" && c.chatHub.client && c.chatHub.server),
                statusHub: !!(c.statusHub && c.statusHub.server),
                statusMethods: Object.keys(c.statusHub.server).sort(),
            };
        },

        // client.* handlers set before start; server.* calls after; a broadcast round trip.
        run: async function (transport, waitMs) {
            var chat = $.connection.chatHub, status = $.connection.statusHub, seen = [];
            var tag = "hubs-" + Math.random().toString(36).slice(2);
            chat.client.welcome = function (id) { seen.push("welcome " + typeof id); };
            chat.client.broadcast = function (m) { if (m === tag) seen.push("broadcast " + m.slice(0, 5)); };
            try {
                await promise($.connection.hub.start(transport ? { transport: transport } : {}));
                var out = { transport: $.connection.hub.transport.name };
                out.add = await promise(chat.server.add(40, 2));                 // server method through the Proxy
                out.echo = await promise(status.server.echo("s"));               // a listed method
                // a method the hub lacks: not generated (a listed hub), or an invocation error (the Proxy)
                out.nope = typeof chat.server.nope !== "function" ? "not generated"
                    : await promise(chat.server.nope()).then(function () { return "ok"; }, function (e) { return e.message; });
                await promise(chat.server.broadcast(tag));
                await waitFor("broadcast", function () { return seen.some(function (s) { return s.indexOf("broadcast") === 0; }); }, waitMs)
                    .catch(function (e) { seen.push(e.message); });
                out.seen = seen;
                return out;
            } finally {
                $.connection.hub.stop();
            }
        },
    };
})();
