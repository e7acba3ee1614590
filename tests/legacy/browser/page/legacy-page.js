// Runs inside the test page, next to jquery and jquery.signalR-2.4.3.js. It holds the page's
// legacy hub connections by name and offers small steps (create, start, invoke, wait, drop, stop)
// that the Node tests drive one page.evaluate at a time. It asserts nothing: every step returns
// plain data (what the client did and saw) and the Node side decides whether that is right.
/* global window */
(function () {
    "use strict";

    var $ = window.jQuery;
    var settings = { url: null, logging: true };
    var clients = {};

    var STATE_NAMES = {};
    $.each($.signalR.connectionState, function (name, value) { STATE_NAMES[value] = name; });

    // An Error from the jQuery client as plain data (Errors do not survive page.evaluate whole).
    function describeError(error) {
        if (error === null || typeof error !== "object") {
            return { message: String(error), source: undefined, data: undefined };
        }
        return {
            message: error.message,
            source: error.source,
            data: error.data,
            transport: error.transport,
        };
    }

    function withTimeout(promise, ms, what) {
        return new Promise(function (resolve, reject) {
            var timer = window.setTimeout(function () {
                reject(new Error("timed out after " + ms + " ms waiting for " + what));
            }, ms);
            promise.then(function (value) {
                window.clearTimeout(timer);
                resolve(value);
            }, function (error) {
                window.clearTimeout(timer);
                reject(error);
            });
        });
    }

    function client(name) {
        var c = clients[name];
        if (!c) {
            throw new Error("no client named '" + name + "'");
        }
        return c;
    }

    function snapshot(c) {
        var conn = c.connection;
        return {
            state: STATE_NAMES[conn.state],
            id: conn.id,
            transport: conn.transport ? conn.transport.name : null,
            messageId: conn.messageId,
            groupsToken: conn.groupsToken,
            connectionData: conn.data,
            counts: $.extend({}, c.counts),
            errors: c.errors.slice(),
        };
    }

    // Polls until check() returns a truthy value (resolved with it) or the time is up.
    function waitUntil(check, ms, what) {
        return new Promise(function (resolve, reject) {
            var deadline = Date.now() + ms;
            (function poll() {
                var value;
                try {
                    value = check();
                } catch (e) {
                    reject(e);
                    return;
                }
                if (value) {
                    resolve(value);
                } else if (Date.now() >= deadline) {
                    reject(new Error("timed out after " + ms + " ms waiting for " + what));
                } else {
                    window.setTimeout(poll, 10);
                }
            }());
        });
    }

    function matching(c, hub, event, firstArg) {
        return c.events.filter(function (e) {
            return e.hub === hub.toLowerCase() && e.event === event &&
                (firstArg === undefined || e.args[0] === firstArg);
        });
    }

    window.legacy = {
        configure: function (options) {
            $.extend(settings, options);
            return { jquery: $.fn.jquery, signalR: $.signalR.version };
        },

        // hubs: { hubName: [event names to record] }. Handlers are registered before start, which
        // is what puts a hub into the client's connectionData (the jQuery client lists only hubs
        // with at least one handler).
        // options.qs: the query string the client adds to every request (its connection.qs), as
        // pages pass an access token.
        create: function (name, hubs, options) {
            if (clients[name]) {
                throw new Error("client '" + name + "' exists already");
            }
            var connection = $.hubConnection(settings.url, { useDefaultPath: false });
            if (options && options.qs) {
                connection.qs = options.qs;
            }
            connection.logging = settings.logging;
            var c = {
                connection: connection,
                proxies: {},
                events: [],
                errors: [],
                counts: { reconnecting: 0, reconnected: 0, disconnected: 0, slow: 0 },
            };
            $.each(hubs, function (hubName, events) {
                var proxy = connection.createHubProxy(hubName);
                c.proxies[hubName.toLowerCase()] = proxy;
                $.each(events, function (_, event) {
                    proxy.on(event, function () {
                        c.events.push({
                            hub: hubName.toLowerCase(),
                            event: event,
                            args: Array.prototype.slice.call(arguments),
                            at: Date.now(),
                        });
                    });
                });
            });
            connection.reconnecting(function () { c.counts.reconnecting++; });
            connection.reconnected(function () { c.counts.reconnected++; });
            connection.disconnected(function () { c.counts.disconnected++; });
            connection.connectionSlow(function () { c.counts.slow++; });
            connection.error(function (error) { c.errors.push(describeError(error)); });
            clients[name] = c;
            return snapshot(c);
        },

        // Starts over the configured transport (settings.transport: webSockets unless told;
        // "auto": the client's own order with fallback). Resolves with the client's state, or
        // with {failed} when the client rejected the start (the Node side shows why).
        start: function (name, timeoutMs) {
            var c = client(name);
            var transport = settings.transport || "webSockets";
            var options = transport === "auto" ? {} : { transport: transport };
            var started = new Promise(function (resolve, reject) {
                c.connection.start(options).done(resolve).fail(reject);
            });
            return withTimeout(started, timeoutMs, "start of '" + name + "'").then(function () {
                return snapshot(c);
            }, function (error) {
                var s = snapshot(c);
                s.failed = describeError(error);
                return s;
            });
        },

        // Invokes hub.method(args...). Never rejects for a hub error: the outcome is data.
        // progress collects every .progress() value, in order, before the result.
        invoke: function (name, hub, method, args, timeoutMs) {
            var c = client(name);
            var proxy = c.proxies[hub.toLowerCase()];
            if (!proxy) {
                throw new Error("client '" + name + "' has no proxy for hub '" + hub + "'");
            }
            var progress = [];
            var outcome = new Promise(function (resolve) {
                proxy.invoke.apply(proxy, [method].concat(args))
                    .progress(function (value) { progress.push(value); })
                    .done(function (value) {
                        resolve({ ok: true, value: value, hasValue: value !== undefined, progress: progress });
                    })
                    .fail(function (error) {
                        resolve({ ok: false, error: describeError(error), progress: progress });
                    });
            });
            return withTimeout(outcome, timeoutMs, hub + "." + method + " on '" + name + "'");
        },

        // Every recorded server->client call so far (optionally one hub/event only).
        events: function (name, hub, event) {
            var c = client(name);
            return c.events.filter(function (e) {
                return (!hub || e.hub === hub.toLowerCase()) && (!event || e.event === event);
            });
        },

        // Waits until `count` calls of hub.event have arrived (with args[0] === firstArg if given)
        // and returns them all.
        waitForEvents: function (name, hub, event, count, firstArg, timeoutMs) {
            var c = client(name);
            return waitUntil(function () {
                var seen = matching(c, hub, event, firstArg === null ? undefined : firstArg);
                return seen.length >= count ? seen : null;
            }, timeoutMs, count + " x " + hub + "." + event + (firstArg != null ? "(" + firstArg + ", ...)" : "") +
                " on '" + name + "'");
        },

        // Waits until counts[what] reaches `atLeast`.
        waitForCount: function (name, what, atLeast, timeoutMs) {
            var c = client(name);
            return waitUntil(function () {
                return c.counts[what] >= atLeast ? snapshot(c) : null;
            }, timeoutMs, "'" + what + "' x " + atLeast + " on '" + name + "'").then(null, function (error) {
                error.message += " (state " + JSON.stringify(snapshot(c)) + ")";
                throw error;
            });
        },

        state: function (name) {
            return snapshot(client(name));
        },

        // The request the client sends every pingInterval (300 s by default) to keep its session:
        // GET <url>/ping, expecting {"Response":"pong"}.
        ping: function (name, timeoutMs) {
            var c = client(name);
            var answered = new Promise(function (resolve) {
                $.signalR.transports._logic.pingServer(c.connection)
                    .done(function () { resolve({ ok: true }); })
                    .fail(function (error) { resolve({ ok: false, error: describeError(error) }); });
            });
            return withTimeout(answered, timeoutMs, "ping of '" + name + "'");
        },

        // Simulates a dropped transport from the client side: closes the live WebSocket with a
        // non-1000 code, without /abort, and answers once the socket has closed (so whatever the
        // test does next happens after the server saw the close, also in a recording of it). The
        // jQuery client sees the close and reconnects after its reconnectDelay (2000 ms).
        // Over serverSentEvents the EventSource is closed and over longPolling the pending poll
        // aborted, each then reported to the client as a lost connection (its own
        // lostConnection), so it reconnects after its reconnectDelay with its last cursor.
        dropSocket: function (name, code, reason) {
            var c = client(name);
            var connection = c.connection;
            var transportName = connection.transport ? connection.transport.name : null;
            if (transportName === "serverSentEvents" || transportName === "longPolling") {
                var live = transportName === "serverSentEvents" ? connection.eventSource : connection.pollXhr;
                if (!live) {
                    return { dropped: false, state: snapshot(c) };
                }
                if (transportName === "serverSentEvents") {
                    connection.eventSource.close();
                }
                connection.transport.lostConnection(connection);
                return { dropped: true, reconnectDelay: connection.reconnectDelay, state: snapshot(c) };
            }
            var socket = connection.socket;
            if (!socket) {
                return { dropped: false, state: snapshot(c) };
            }
            var closed = new Promise(function (resolve) {
                socket.addEventListener("close", function () { resolve(); });
            });
            socket.close(code, reason);
            return withTimeout(closed, 5000, "close of the socket of '" + name + "'").then(function () {
                return { dropped: true, reconnectDelay: c.connection.reconnectDelay, state: snapshot(c) };
            });
        },

        // stop(): /abort to the server (fetch keepalive), socket closed, state disconnected.
        stop: function (name) {
            var c = client(name);
            c.connection.stop();
            return snapshot(c);
        },

        // Sets a cookie for the page's host (path /); the browser sends it with the client's
        // requests to the relay (cross-origin too: the jQuery client uses credentials).
        setCookie: function (text) {
            window.document.cookie = text + "; path=/";
            return window.document.cookie;
        },

        // Every error each client reported through connection.error(...), by client name: the
        // Node side requires none unless the test expects one.
        errors: function () {
            var all = {};
            $.each(clients, function (name, c) {
                if (c.errors.length) {
                    all[name] = c.errors.slice();
                }
            });
            return all;
        },

        stopAll: function () {
            $.each(clients, function (_, c) {
                try {
                    c.connection.stop();
                } catch (e) {
                    // best effort at the end of a test
                }
            });
            return Object.keys(clients);
        },
    };
}());
