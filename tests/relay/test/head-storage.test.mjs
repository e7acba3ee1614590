// A request head of thousands of short headers libwebsockets does not know by name (issue 10: "oversize
// request lines and headers get 414/431, not a silent close"). lws 4.1.6 keeps each such line with 8
// bytes of bookkeeping, so 6,000 lines "zz:1" (36 KB on the wire, within the 42 KB the relay reads)
// overflowed its 44 KB header buffer and it closed the connection without a word. The relay reads a
// plain connection's heads itself (relay/request_head.c) and now answers such a head 431 with a reason,
// as the first request and as a kept-alive connection's next one; 3,000 lines, which lws holds, are
// served. (Not "a:1": lws 4.1.6 never answers a head whose last header is named by a prefix of a
// header it knows, such as "a" of "accept", before its header timeout.) Raw TCP against the suite's relay with the default limits.
import { test } from "../../lib/test.mjs";
import assert from "node:assert/strict";
import net from "node:net";
import { PLAIN_RELAY_URL, TIMEOUT_MS, withTimeout } from "../lib.mjs";

const head = (lines) => `GET /metrics HTTP/1.1\r\nHost: x\r\n${"zz:1\r\n".repeat(lines)}\r\n`;

// Sends the requests one after another on one connection, each once the answer before it is whole;
// returns the answers ({ status, reason }) once there is one for each request, or when the relay closes.
function exchange(requests) {
    const count = requests.length;
    const { port } = new URL(PLAIN_RELAY_URL);
    return withTimeout(new Promise((resolve) => {
        const answers = [];
        let text = "";
        const s = net.connect(Number(port), "127.0.0.1", () => s.write(requests.shift()));
        s.on("data", (d) => {
            text += d.toString("latin1");
            const end = text.indexOf("\r\n\r\n");
            const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1];
            if (end < 0 || length === undefined || text.length < end + 4 + Number(length)) return;
            answers.push({ status: Number(text.split(" ")[1]), reason: text.slice(end + 4, end + 4 + Number(length)) });
            text = text.slice(end + 4 + Number(length));
            if (requests.length) s.write(requests.shift());
            else if (answers.length === count) { resolve({ answers }); s.destroy(); }
        });
        s.on("error", () => {});
        s.on("close", () => resolve({ answers }));
    }), TIMEOUT_MS, "the relay's answers");
}

test("6,000 short unknown headers: 431 with a reason (lws closed it without one); 3,000 are served", async () => {
    const reason = "Request Header Fields Too Large: more header lines than the relay reads in one request.";
    const [first, next, held] = await Promise.all([
        exchange([head(6000)]),
        exchange([head(1), head(6000)]),
        exchange([head(3000)]),
    ]);
    assert.deepEqual(first.answers, [{ status: 431, reason }]);
    assert.equal(next.answers.length, 2, JSON.stringify(next.answers).slice(0, 300));
    assert.equal(next.answers[0].status, 200);
    assert.deepEqual(next.answers[1], { status: 431, reason });
    assert.equal(held.answers.length, 1);
    assert.equal(held.answers[0].status, 200);
});
