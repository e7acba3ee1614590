// HTTP keep-alive as clients rely on it: a response after which the relay closes the connection
// says `Connection: close` (as Kestrel's do), so that a keep-alive client never sends its next
// request into a closing socket; a response that keeps the connection says nothing of the kind,
// and the next request on the same socket is answered. Raw TCP, so the headers are exactly ours.
import { describe, it } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import net from "node:net";
import { RELAY_URL, withTimeout, TIMEOUT_MS } from "../lib.mjs";

const { hostname, port } = new URL(RELAY_URL);

// Sends each request in turn on one socket and returns the responses it read ({ status, headers,
// body }). With untilClosed, it then waits for the relay to close the socket (closedByRelay says
// whether it did); otherwise it closes the socket itself once every request is answered.
function exchange(requests, { untilClosed = false } = {}) {
    return withTimeout(new Promise((resolve, reject) => {
        const socket = net.connect(Number(port), hostname);
        let data = Buffer.alloc(0);
        const responses = [];
        let next = 0;
        const sendNext = () => { if (next < requests.length) socket.write(requests[next++]); };
        socket.on("connect", sendNext);
        socket.on("data", (chunk) => {
            data = Buffer.concat([data, chunk]);
            for (;;) {
                const end = data.indexOf("\r\n\r\n");
                if (end < 0) return;
                const head = data.subarray(0, end).toString("latin1").split("\r\n");
                const headers = {};
                for (const line of head.slice(1)) {
                    const colon = line.indexOf(":");
                    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
                }
                const length = Number(headers["content-length"] ?? 0);
                if (data.length < end + 4 + length) return;
                responses.push({ status: Number(head[0].split(" ")[1]), headers,
                    body: data.subarray(end + 4, end + 4 + length).toString("utf8") });
                data = data.subarray(end + 4 + length);
                if (responses.length === requests.length) {
                    if (!untilClosed) { socket.end(); resolve({ responses, closedByRelay: false }); }
                    return;
                }
                sendNext();
            }
        });
        socket.on("end", () => resolve({ responses, closedByRelay: true }));
        // a reset after the relay closed (our next request met a closed socket) is a close too
        socket.on("error", (e) => (responses.length ? resolve({ responses, closedByRelay: true }) : reject(e)));
    }), TIMEOUT_MS, "HTTP exchange");
}

const ping = (extra = "") => `GET /signalr/ping HTTP/1.1\r\nHost: ${hostname}\r\n${extra}\r\n`;

describe("HTTP keep-alive", () => {
    it("two requests on one socket are both answered, neither says Connection: close", async () => {
        const { responses } = await exchange([ping(), ping()]);
        assert.equal(responses.length, 2);
        for (const r of responses) {
            assert.equal(r.status, 200);
            assert.equal(r.headers.connection, undefined);
        }
    });

    it("a request saying Connection: close gets Connection: close back", async () => {
        const { responses, closedByRelay } = await exchange([ping("Connection: close\r\n")], { untilClosed: true });
        assert.equal(responses[0].status, 200);
        assert.equal(responses[0].headers.connection, "close");
        assert.equal(closedByRelay, true);
    });

    // lws takes such a body to be of unknown length and never reads another request on the socket.
    // (The Core negotiate, which waits for the request body, is not answered at all in this case
    // yet: the strict HTTP framing work of issue 10 is where that belongs.)
    it("a POST without Content-Length (its body length unknown) is answered with Connection: close", async () => {
        const hubs = encodeURIComponent(JSON.stringify([{ name: "chathub" }]));
        const negotiate = `POST /signalr/negotiate?clientProtocol=2.1&connectionData=${hubs} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`;
        const { responses } = await exchange([negotiate]);
        assert.equal(responses[0].status, 200, responses[0].body);
        assert.equal(responses[0].headers.connection, "close", "the relay will not read another request on this socket");
    });

    it("a POST with Content-Length: 0 keeps the connection for the next request", async () => {
        const negotiate = `POST /chat/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: ${hostname}\r\nContent-Length: 0\r\n\r\n`;
        const { responses } = await exchange([negotiate, ping()]);
        assert.equal(responses.length, 2);
        assert.equal(responses[0].status, 200, responses[0].body);
        assert.equal(responses[0].headers.connection, undefined);
        assert.equal(responses[1].status, 200);
    });
});
