/* test_expiring_keys.c - keys kept until their deadline: against a plain array model, with values, growth and shrinking.
 *
 * The random walk uses one lifetime for every key and a clock that only
 * moves forward, as its users do: then the ring is in deadline order and the
 * set's count must equal the model's live keys exactly after every call. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "containers/buf.h"
#include "containers/expiring_keys.h"

static const uint8_t SEED[SIPHASH_KEY_LEN] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6 };

static uint64_t rng_state = UINT64_C(0x2545f4914f6cdd1d);
static uint64_t rng_next(void) { return test_rng_next(&rng_state); }

static struct span key_of(char *buf, size_t cap, unsigned k)
{
    return span_make(buf, (size_t)snprintf(buf, cap, "key-%u", k));
}

static void test_basics(void)
{
    struct expiring_keys set;
    bool added;
    expiring_keys_init(&set, SEED, 0, NULL);
    CHECK(expiring_keys_find(&set, span_from_cstr("a"), 0) == NULL); /* empty, nothing allocated */
    CHECK(expiring_keys_put(&set, span_from_cstr("a"), 1000, 0, &added) && added);
    CHECK(expiring_keys_put(&set, span_from_cstr("b"), 1500, 500, &added) && added);
    CHECK(expiring_keys_find(&set, span_from_cstr("a"), 999) != NULL);
    CHECK(expiring_keys_find(&set, span_from_cstr("c"), 999) == NULL);
    CHECK(expiring_keys_put(&set, span_from_cstr("a"), 900, 600, &added) && !added); /* keeps the later deadline */
    CHECK(expiring_keys_find(&set, span_from_cstr("a"), 999) != NULL);
    CHECK_EQ_INT(expiring_keys_count(&set), 2);
    CHECK(expiring_keys_find(&set, span_from_cstr("a"), 1000) == NULL); /* its deadline */
    CHECK(expiring_keys_find(&set, span_from_cstr("b"), 1499) != NULL);
    /* "a" moved behind "b" with the earlier deadline: not found, but pruned only after "b". */
    CHECK_EQ_INT(expiring_keys_count(&set), 2);
    struct expiring_key *b = expiring_keys_find(&set, span_from_cstr("b"), 1499);
    expiring_keys_remove(&set, b);
    CHECK(expiring_keys_find(&set, span_from_cstr("b"), 1499) == NULL);
    CHECK_EQ_INT(expiring_keys_count(&set), 0);
    /* Keys that differ only in length or one byte are different keys. */
    CHECK(expiring_keys_put(&set, span_make("ab\0", 3), 5000, 2000, &added) && added);
    CHECK(expiring_keys_find(&set, span_make("ab", 2), 2000) == NULL);
    CHECK(expiring_keys_find(&set, span_make("ab\0", 3), 2000) != NULL);
    expiring_keys_free(&set);
}

/* A value that owns memory: dropped when it expires or with the set, never when removed. */
static int drops;
static void drop_buf(void *value)
{
    buf_free(value);
    drops++;
}

static void test_values(void)
{
    struct expiring_keys set;
    bool added;
    char kb[32];
    expiring_keys_init(&set, SEED, sizeof(struct buf), drop_buf);
    for (unsigned k = 0; k < 100; k++) {
        struct expiring_key *r = expiring_keys_put(&set, key_of(kb, sizeof kb, k), 1000 + k, k, &added);
        CHECK(r && added);
        struct buf *b = expiring_key_value(r);
        CHECK(b->data == NULL && b->len == 0); /* zeroed */
        buf_init(b);
        CHECK(buf_append(b, kb, strlen(kb)));
    }
    /* Values survive the moves of growth and of a re-add. */
    struct expiring_key *r = expiring_keys_put(&set, key_of(kb, sizeof kb, 3), 2000, 100, &added);
    CHECK(r && !added);
    CHECK_BYTES(((struct buf *)expiring_key_value(r))->data, 5, "key-3");
    r = expiring_keys_find(&set, key_of(kb, sizeof kb, 77), 100);
    CHECK(r != NULL);
    struct buf taken = *(struct buf *)expiring_key_value(r);
    expiring_keys_remove(&set, r); /* the caller took it: not dropped */
    CHECK_BYTES(taken.data, 6, "key-77");
    buf_free(&taken);
    CHECK_EQ_INT(drops, 0);
    CHECK(expiring_keys_find(&set, key_of(kb, sizeof kb, 0), 1050) == NULL); /* 0..50 but 3 expired and dropped */
    CHECK_EQ_INT(drops, 50);
    expiring_keys_free(&set); /* the other 49: ASan checks nothing leaks */
    CHECK_EQ_INT(drops, 99);
}

#define MODEL_KEYS 3000
#define TTL 5000

/* Random puts, finds and removes against the model, one TTL for all. */
static void test_against_model(void)
{
    static uint64_t until[MODEL_KEYS]; /* 0: absent */
    struct expiring_keys set;
    char kb[32];
    uint64_t now = 1;
    size_t max_bytes = 0;
    int wrong = 0;
    expiring_keys_init(&set, SEED, 0, NULL);
    for (int step = 0; step < 200000; step++) {
        now += rng_next() % 3;
        unsigned k = (unsigned)(rng_next() % MODEL_KEYS);
        struct span key = key_of(kb, sizeof kb, k);
        bool live = until[k] > now;
        unsigned op = (unsigned)(rng_next() % 8);
        if (op < 3) {
            bool added;
            CHECK(expiring_keys_put(&set, key, now + TTL, now, &added) != NULL);
            until[k] = now + TTL;
            if (added && live)
                wrong++;
        } else if (op == 3) {
            struct expiring_key *r = expiring_keys_find(&set, key, now);
            if (r)
                expiring_keys_remove(&set, r);
            until[k] = 0;
            wrong += (r != NULL) != live;
        } else {
            wrong += (expiring_keys_find(&set, key, now) != NULL) != live;
        }
        size_t n = 0;
        for (unsigned i = 0; i < MODEL_KEYS && step % 997 == 0; i++)
            n += until[i] > now;
        if (step % 997 == 0)
            CHECK_EQ_INT(expiring_keys_count(&set), n);
        if (expiring_keys_bytes(&set) > max_bytes)
            max_bytes = expiring_keys_bytes(&set);
    }
    CHECK_EQ_INT(wrong, 0);
    /* Everything expires: the ring shrinks back to its smallest size. */
    now += TTL;
    CHECK(expiring_keys_find(&set, span_from_cstr("none"), now) == NULL);
    CHECK_EQ_INT(expiring_keys_count(&set), 0);
    CHECK_EQ_INT(expiring_keys_bytes(&set), EXPIRING_KEYS_MIN_CAP * (24 + 8));
    CHECK(max_bytes <= 8192 * (24 + 8)); /* at most 3,000 live keys: never more than 8,192 records */
    expiring_keys_free(&set);
}

/* Many keys live at once: all found, the dense layout's cost per key, then all expire. */
static void test_many(void)
{
    struct expiring_keys set;
    char kb[32];
    bool added;
    expiring_keys_init(&set, SEED, 0, NULL);
    for (unsigned k = 0; k < 100000; k++)
        CHECK(expiring_keys_put(&set, key_of(kb, sizeof kb, k), 10000 + k, k / 100, &added) && added);
    int missing = 0, extra = 0;
    for (unsigned k = 0; k < 100000; k++)
        missing += expiring_keys_find(&set, key_of(kb, sizeof kb, k), 1000) == NULL;
    for (unsigned k = 100000; k < 200000; k++)
        extra += expiring_keys_find(&set, key_of(kb, sizeof kb, k), 1000) != NULL;
    CHECK_EQ_INT(missing, 0);
    CHECK_EQ_INT(extra, 0);
    /* 131,072 records of 24 B and 262,144 index slots of 4 B: 42 B per key at this count. */
    CHECK(expiring_keys_bytes(&set) <= 100000 * 44);
    CHECK(expiring_keys_find(&set, span_from_cstr("x"), 10000 + 75000) == NULL);
    CHECK_EQ_INT(expiring_keys_count(&set), 24999); /* keys 75,001..99,999 */
    CHECK(expiring_keys_bytes(&set) <= 65536 * 32); /* shrank */
    expiring_keys_free(&set);
}

int main(void)
{
    test_basics();
    test_values();
    test_against_model();
    test_many();
    return test_main_result("test_expiring_keys");
}
