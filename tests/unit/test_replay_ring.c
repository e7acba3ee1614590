/* test_replay_ring.c - the legacy replay ring against a model of "what came after the cursor". */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "hub/replay_ring.h"

struct collected {
    uint64_t seqs[64];
    size_t count;
    size_t bytes;
};

static void collect(void *ctx, const struct replay_entry *e)
{
    struct collected *c = ctx;
    if (c->count < 64)
        c->seqs[c->count++] = e->seq;
    c->bytes += e->text->len;
}

static void test_basic(void)
{
    struct replay_ring r;
    replay_ring_init(&r, 4, 1 << 20);
    struct collected c = { { 0 }, 0, 0 };
    CHECK_EQ_INT(replay_ring_after(&r, 0, collect, &c), REPLAY_OK); /* nothing sent, nothing seen */
    CHECK_EQ_INT(c.count, 0);
    for (int i = 1; i <= 6; i++) {
        char msg[16];
        int n = snprintf(msg, sizeof msg, "m%d", i);
        CHECK_EQ_INT(replay_ring_append(&r, msg, (size_t)n), i);
    }
    CHECK_EQ_INT(r.count, 4); /* 3..6 held */
    c.count = 0;
    CHECK_EQ_INT(replay_ring_after(&r, 4, collect, &c), REPLAY_OK);
    CHECK_EQ_INT(c.count, 2);
    CHECK_EQ_INT(c.seqs[0], 5);
    CHECK_EQ_INT(c.seqs[1], 6);
    c.count = 0;
    CHECK_EQ_INT(replay_ring_after(&r, 2, collect, &c), REPLAY_OK); /* 3..6 still all held */
    CHECK_EQ_INT(c.count, 4);
    c.count = 0;
    CHECK_EQ_INT(replay_ring_after(&r, 1, collect, &c), REPLAY_GAP); /* 2 was evicted */
    CHECK_EQ_INT(c.count, 0);
    CHECK_EQ_INT(replay_ring_after(&r, 6, collect, &c), REPLAY_OK);
    CHECK_EQ_INT(c.count, 0);
    CHECK_EQ_INT(replay_ring_after(&r, 7, collect, &c), REPLAY_GAP); /* a cursor from the future */
    replay_ring_free(&r);
}

static void test_byte_limit(void)
{
    struct replay_ring r;
    replay_ring_init(&r, 100, 10);
    replay_ring_append(&r, "aaaa", 4);
    replay_ring_append(&r, "bbbb", 4);
    replay_ring_append(&r, "cccc", 4); /* 12 bytes > 10: the oldest goes */
    CHECK_EQ_INT(r.count, 2);
    CHECK_EQ_INT(r.bytes, 8);
    replay_ring_append(&r, "a message larger than the whole ring", 36); /* kept alone */
    CHECK_EQ_INT(r.count, 1);
    struct collected c = { { 0 }, 0, 0 };
    CHECK_EQ_INT(replay_ring_after(&r, 3, collect, &c), REPLAY_OK);
    CHECK_EQ_INT(c.count, 1);
    CHECK_EQ_INT(c.bytes, 36);
    replay_ring_free(&r);
}

/* One text in several rings (a fan-out's element): each holds a reference, none a copy; the
 * text lives until the last ring let go of it. */
static void test_shared_text(void)
{
    struct replay_ring a, b;
    replay_ring_init(&a, 2, 1 << 20);
    replay_ring_init(&b, 100, 1 << 20);
    struct replay_text *t = replay_text_new("{\"H\":\"hub\"}", 11);
    CHECK(t != NULL);
    CHECK_EQ_INT(replay_ring_append_text(&a, t), 1);
    CHECK_EQ_INT(replay_ring_append_text(&b, t), 1);
    CHECK_EQ_INT(t->refs, 3);
    CHECK_EQ_INT(a.bytes, 11);
    CHECK(list_container_of(a.entries.next, struct replay_entry, link)->text == t);
    replay_ring_append(&a, "x", 1);
    replay_ring_append(&a, "y", 1); /* a keeps 2: t's entry is evicted */
    CHECK_EQ_INT(t->refs, 2);
    replay_text_unref(t); /* the caller's */
    CHECK_EQ_INT(t->refs, 1);
    struct collected c = { { 0 }, 0, 0 };
    CHECK_EQ_INT(replay_ring_after(&b, 0, collect, &c), REPLAY_OK);
    CHECK_EQ_INT(c.bytes, 11);
    replay_ring_free(&b); /* the last reference: freed (ASan would see a leak otherwise) */
    replay_ring_free(&a);
    replay_text_unref(NULL);
}

/* Random appends and cursors against the model: replay is possible exactly
 * when every seq in (cursor, last] is held, and then returns exactly those. */
static void test_random(void)
{
    struct replay_ring r;
    replay_ring_init(&r, 50, 4000);
    srand(7);
    size_t lens[20001] = { 0 };
    for (int step = 0; step < 20000; step++) {
        size_t len = (size_t)(rand() % 200) + 1;
        char data[200] = { 0 };
        uint64_t seq = replay_ring_append(&r, data, len);
        lens[seq] = len;
        uint64_t last = seq;
        /* model: the ring holds the longest suffix within both limits */
        uint64_t oldest = last;
        size_t bytes = lens[last], count = 1;
        while (oldest > 1 && count < 50 && bytes + lens[oldest - 1] <= 4000) {
            oldest--;
            bytes += lens[oldest];
            count++;
        }
        uint64_t cursor = (uint64_t)(rand() % (int)(last + 2));
        struct collected c = { { 0 }, 0, 0 };
        enum replay_result got = replay_ring_after(&r, cursor, collect, &c);
        enum replay_result want = (cursor > last || cursor + 1 < oldest) ? REPLAY_GAP : REPLAY_OK;
        CHECK_EQ_INT(got, want);
        if (got == REPLAY_OK && want == REPLAY_OK) {
            CHECK_EQ_INT(c.count, last - cursor);
            if (c.count > 0)
                CHECK_EQ_INT(c.seqs[0], cursor + 1);
        }
        CHECK_EQ_INT(r.bytes, bytes);
        CHECK_EQ_INT(r.count, count);
    }
    replay_ring_free(&r);
}

int main(void)
{
    test_basic();
    test_shared_text();
    test_byte_limit();
    test_random();
    return test_main_result("test_replay_ring");
}
