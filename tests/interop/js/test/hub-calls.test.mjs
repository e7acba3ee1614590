// Hub invocations over one connection: welcome push, echo of every value type (incl. 1 MB),
// several arguments, return values, void methods, the exact server error texts, client results,
// and a second hub (/status).
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import {
    PROTOCOL, DIRECT, CONNECTION_ID_RE, TIMEOUT_MS,
    buildConnection, connectChat, nextEvent, withTimeout, stopAll,
} from "../lib.mjs";
import { ECHO_VALUES as SHARED_ECHO_VALUES, bigString } from "../../../lib/values.mjs";

// A DateTime end to end: MessagePack carries it as a timestamp (extension type -1) both ways, and
// the backend's Echo(object) gets a DateTime; JSON carries the ISO 8601 text, which comes back as
// that text.
test("a Date argument: a MessagePack timestamp both ways, an ISO string with JSON", async () => {
    const { conn } = await connectChat();
    try {
        for (const when of [new Date(Date.UTC(2024, 1, 29, 12, 34, 56, 789)), new Date(Date.UTC(1969, 6, 20, 20, 17, 40, 0)),
            new Date(Date.UTC(2106, 1, 7, 6, 28, 16, 1))]) {
            const back = await conn.invoke("Echo", when);
            if (PROTOCOL === "messagepack") {
                assert.ok(back instanceof Date, `Echo of ${when.toISOString()} came back as ${typeof back} ${JSON.stringify(back)}`);
                assert.equal(back.getTime(), when.getTime(), `Echo of ${when.toISOString()}`);
            } else {
                assert.equal(back, when.toISOString());
            }
        }
    } finally {
        await stopAll(conn);
    }
});

test("welcome push arrives on connect with the backend's connection id", async () => {
    const { conn, backendId } = await connectChat();
    try {
        assert.match(backendId, CONNECTION_ID_RE);
        if (DIRECT) {
            assert.equal(backendId, conn.connectionId);
        }
        const who = await conn.invoke("WhoAmI");
        assert.equal(who.connectionId, backendId);
    } finally {
        await stopAll(conn);
    }
});

// The values every suite echoes (tests/lib/values.mjs), null, and exactly 1 MiB of mixed UTF-8.
const ECHO_VALUES = [...SHARED_ECHO_VALUES, ["null", null], ["1 MB string", bigString(1 << 20)]];

test("Echo returns every value type unchanged", async () => {
    const { conn } = await connectChat();
    try {
        for (const [what, value] of ECHO_VALUES) {
            const echoed = await conn.invoke("Echo", value);
            if (typeof value === "string" && value.length > 1000) {
                // Compare without letting a failure print a megabyte.
                assert.equal(typeof echoed, "string", `Echo of ${what}: type`);
                assert.equal(echoed.length, value.length, `Echo of ${what}: length`);
                assert.ok(echoed === value, `Echo of ${what}: content differs`);
            } else {
                assert.deepStrictEqual(echoed, value, `Echo of ${what}`);
            }
        }
        if (PROTOCOL === "messagepack") {
            // Binary exists only in MessagePack (bin family), decoded as Uint8Array.
            const bytes = new Uint8Array([0, 1, 2, 0x1e, 0x7f, 0x80, 0xff]);
            const echoed = await conn.invoke("Echo", bytes);
            assert.ok(echoed instanceof Uint8Array, "binary comes back as Uint8Array");
            assert.deepStrictEqual(Array.from(echoed), Array.from(bytes));
        }
    } finally {
        await stopAll(conn);
    }
});

test("EchoMany returns its three arguments in order", async () => {
    const { conn } = await connectChat();
    try {
        const result = await conn.invoke("EchoMany", "first", 2, { third: [3, "x"] });
        assert.deepStrictEqual(result, ["first", 2, { third: [3, "x"] }]);
    } finally {
        await stopAll(conn);
    }
});

test("Add returns the sum computed by the server", async () => {
    const { conn } = await connectChat();
    try {
        assert.equal(await conn.invoke("Add", 40, 2), 42);
        assert.equal(await conn.invoke("Add", -5, 3), -2);
    } finally {
        await stopAll(conn);
    }
});

test("a void method completes with a null result", async () => {
    const { conn } = await connectChat();
    try {
        assert.equal(await conn.invoke("VoidMethod"), null);
    } finally {
        await stopAll(conn);
    }
});

test("HubException text reaches the caller", async () => {
    const { conn } = await connectChat();
    try {
        await assert.rejects(conn.invoke("ThrowHubException", "custom failure 42"), {
            message: "An unexpected error occurred invoking 'ThrowHubException' on the server. HubException: custom failure 42",
        });
        // The connection survives a failed invocation.
        assert.equal(await conn.invoke("Add", 1, 1), 2);
    } finally {
        await stopAll(conn);
    }
});

test("other exceptions, unknown methods and bad arguments give the production texts", async () => {
    const { conn } = await connectChat();
    try {
        await assert.rejects(conn.invoke("ThrowOther"), {
            message: "An unexpected error occurred invoking 'ThrowOther' on the server.",
        });
        await assert.rejects(conn.invoke("NoSuchMethod", 1), {
            message: "Failed to invoke 'NoSuchMethod' due to an error on the server. HubException: Method does not exist.",
        });
        await assert.rejects(conn.invoke("Add", 1), {
            message: "Failed to invoke 'Add' due to an error on the server.",
        });
        assert.equal(await conn.invoke("Add", 2, 3), 5);
    } finally {
        await stopAll(conn);
    }
});

test("client result: AskClient returns what our GetName handler answered", async () => {
    const conn = buildConnection("/chat");
    let asked = null;
    conn.on("GetName", (question) => {
        asked = question;
        return `js-client:${question}`;
    });
    try {
        await withTimeout(conn.start(), TIMEOUT_MS, "start /chat");
        const answer = await withTimeout(conn.invoke("AskClient"), TIMEOUT_MS, "AskClient");
        assert.equal(asked, "backend-asks");
        assert.equal(answer, "js-client:backend-asks");
    } finally {
        await stopAll(conn);
    }
});

test("second hub /status: push on connect, Echo, GetStatus", async () => {
    const conn = buildConnection("/status");
    const pushed = nextEvent(conn, "status");
    try {
        await withTimeout(conn.start(), TIMEOUT_MS, "start /status");
        const [status] = await pushed;
        assert.equal(status.hub, "status");
        assert.match(status.connectionId, CONNECTION_ID_RE);
        assert.deepStrictEqual(await conn.invoke("Echo", { a: [1, "b"] }), { a: [1, "b"] });
        const current = await conn.invoke("GetStatus");
        assert.equal(current.hub, "status");
        assert.equal(current.connectionId, status.connectionId);
        assert.ok(Number.isInteger(current.connected) && current.connected >= 1, `connected=${current.connected}`);
        // The same client object can hold a /chat connection at the same time.
        const { conn: chat, backendId } = await connectChat();
        try {
            assert.notEqual(backendId, status.connectionId);
            assert.equal(await chat.invoke("Add", 1, 2), 3);
            assert.equal(await conn.invoke("Echo", "still here"), "still here");
        } finally {
            await stopAll(chat);
        }
    } finally {
        await stopAll(conn);
    }
});
