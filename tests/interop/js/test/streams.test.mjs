// Streaming both ways: server->client (all items then completion; cancellation observed by the
// backend) and client->server upload.
import { test } from "../../../lib/test.mjs";
import assert from "node:assert/strict";
import { signalR, connectChat, pollUntil, withTimeout, stopAll, TIMEOUT_MS } from "../lib.mjs";

function collectStream(conn, ...args) {
    const items = [];
    let subscription;
    const done = new Promise((resolve, reject) => {
        subscription = conn.stream("Counter", ...args).subscribe({
            next: (item) => items.push(item),
            complete: () => resolve(items),
            error: reject,
        });
    });
    return { items, done, subscription };
}

test("server->client stream delivers all items then completes", async () => {
    const { conn } = await connectChat();
    try {
        const { done } = collectStream(conn, 5, 10);
        const items = await withTimeout(done, TIMEOUT_MS, "Counter completion");
        assert.deepStrictEqual(items, [0, 1, 2, 3, 4]);
        assert.equal(await conn.invoke("GetStreamStatus"), "completed");
    } finally {
        await stopAll(conn);
    }
});

test("cancelling a server->client stream cancels it on the backend", async () => {
    const { conn } = await connectChat();
    try {
        const items = [];
        let subscription;
        const threeItems = new Promise((resolve, reject) => {
            subscription = conn.stream("Counter", 1000, 50).subscribe({
                next: (item) => {
                    items.push(item);
                    if (items.length === 3) resolve();
                },
                complete: () => reject(new Error("stream completed although it was cancelled")),
                error: reject,
            });
        });
        await withTimeout(threeItems, TIMEOUT_MS, "three stream items");
        assert.equal(await conn.invoke("GetStreamStatus"), "running");
        subscription.dispose(); // sends CancelInvocation
        const status = await pollUntil(() => conn.invoke("GetStreamStatus"), (s) => s !== "running",
            "the backend to end the stream");
        assert.equal(status, "cancelled");
        assert.deepStrictEqual(items.slice(0, 3), [0, 1, 2]);
        assert.ok(items.length < 1000);
    } finally {
        await stopAll(conn);
    }
});

test("client->server upload stream: Sum adds the items", async () => {
    const { conn } = await connectChat();
    try {
        const subject = new signalR.Subject();
        const result = conn.invoke("Sum", subject);
        for (let i = 1; i <= 10; i++) {
            subject.next(i);
        }
        subject.complete();
        assert.equal(await withTimeout(result, TIMEOUT_MS, "Sum"), 55);

        const empty = new signalR.Subject();
        const emptyResult = conn.invoke("Sum", empty);
        empty.complete();
        assert.equal(await withTimeout(emptyResult, TIMEOUT_MS, "Sum of nothing"), 0);
    } finally {
        await stopAll(conn);
    }
});
