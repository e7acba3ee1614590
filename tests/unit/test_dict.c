/* test_dict.c - the incremental-rehashing hash table.
 *
 * Checked against a plain array model: presence of every key, count, that an
 * iteration returns each present entry exactly once (also while a resize is
 * half done and while the loop removes entries), and that no operation ever
 * does more than one bucket move plus DICT_REHASH_EMPTY_VISITS empty steps. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "test_rng.h"
#include "containers/dict.h"
#include "containers/list.h"

struct item {
    struct dict_entry entry; /* key points at name */
    char name[24];
    size_t name_len;
    int index;               /* position in the test's item array */
    bool linked;
};

static struct item *item_of(struct dict_entry *e)
{
    return list_container_of(e, struct item, entry);
}

static void item_init(struct item *it, int index, const char *prefix)
{
    it->index = index;
    it->name_len = (size_t)snprintf(it->name, sizeof(it->name), "%s%d", prefix, index);
    it->linked = false;
}

static struct span item_key(const struct item *it) { return span_make(it->name, it->name_len); }

static const uint8_t seed_a[DICT_SEED_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static uint64_t rng_state;
static uint64_t rng_next(void) { return test_rng_next(&rng_state); }

static size_t max_size(const struct dict *d)
{
    return d->ht[0].size > d->ht[1].size ? d->ht[0].size : d->ht[1].size;
}

/* Iterates the whole dict and checks it holds exactly the linked items. */
static void check_contents(struct dict *d, struct item *items, int n)
{
    unsigned char *seen = calloc((size_t)n, 1);
    size_t visited = 0;
    int bad = 0;
    struct dict_iter it;
    struct dict_entry *e;
    dict_iter_begin(&it, d);
    while ((e = dict_iter_next(&it)) != NULL) {
        struct item *x = item_of(e);
        visited++;
        if (x->index < 0 || x->index >= n || !x->linked || seen[x->index]++)
            bad++;
    }
    dict_iter_end(&it);
    size_t linked = 0;
    for (int i = 0; i < n; i++)
        linked += items[i].linked;
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(visited, linked);
    CHECK_EQ_INT(dict_count(d), linked);
    free(seen);
}

static void test_basics(void)
{
    struct dict d;
    dict_init(&d, seed_a);
    CHECK_EQ_INT(dict_count(&d), 0);
    CHECK(dict_find(&d, SPAN_LIT("x")) == NULL);
    CHECK(d.ht[0].segments == NULL); /* an empty dict allocates nothing */

    struct item a, b, a2, empty;
    item_init(&a, 1, "k");
    item_init(&b, 2, "k");
    item_init(&a2, 1, "k"); /* same key bytes as a, different object */
    item_init(&empty, 0, "");
    empty.name_len = 0;

    CHECK_EQ_INT(dict_insert(&d, &a.entry, item_key(&a)), DICT_OK);
    CHECK_EQ_INT(dict_insert(&d, &b.entry, item_key(&b)), DICT_OK);
    CHECK_EQ_INT(dict_insert(&d, &a2.entry, item_key(&a2)), DICT_DUPLICATE);
    CHECK_EQ_INT(dict_insert(&d, &empty.entry, item_key(&empty)), DICT_OK);
    CHECK_EQ_INT(dict_count(&d), 3);
    CHECK(dict_find(&d, SPAN_LIT("k1")) == &a.entry);
    CHECK(dict_find(&d, SPAN_LIT("k2")) == &b.entry);
    CHECK(dict_find(&d, SPAN_LIT("")) == &empty.entry);
    CHECK(dict_find(&d, SPAN_LIT("K1")) == NULL); /* byte-exact, case-sensitive */
    CHECK(dict_find(&d, SPAN_LIT("k")) == NULL);
    CHECK(dict_find(&d, SPAN_LIT("k10")) == NULL);

    CHECK(!dict_remove(&d, &a2.entry)); /* equal key, but not the linked entry */
    CHECK(dict_remove(&d, &a.entry));
    CHECK(!dict_remove(&d, &a.entry));
    CHECK(dict_find(&d, SPAN_LIT("k1")) == NULL);
    CHECK_EQ_INT(dict_insert(&d, &a2.entry, item_key(&a2)), DICT_OK);
    CHECK(dict_remove_key(&d, SPAN_LIT("k1")) == &a2.entry);
    CHECK(dict_remove_key(&d, SPAN_LIT("k1")) == NULL);
    CHECK(dict_remove_key(&d, SPAN_LIT("k2")) == &b.entry);
    CHECK(dict_remove_key(&d, SPAN_LIT("")) == &empty.entry);
    CHECK_EQ_INT(dict_count(&d), 0);
    dict_free(&d);
}

/* Random inserts, removals and lookups against the model, with the work of
 * every single operation measured. */
static void test_random_against_model(uint64_t seed, int universe, int ops)
{
    rng_state = seed;
    struct item *items = calloc((size_t)universe, sizeof(*items));
    for (int i = 0; i < universe; i++)
        item_init(&items[i], i, "name-");
    struct dict d;
    dict_init(&d, seed_a);

    int wrong = 0, over_budget = 0, overloaded = 0;
    uint64_t max_probes = 0;
    for (int op = 0; op < ops; op++) {
        /* Phases push the size up and down so both grows and shrinks happen. */
        int phase = (op / (ops / 8)) % 2;
        int insert_bias = phase == 0 ? 70 : 5;
        struct item *x = &items[rng_next() % (uint64_t)universe];
        struct dict_stats before = d.stats;
        unsigned r = (unsigned)(rng_next() % 100);
        if (r < (unsigned)insert_bias) {
            enum dict_result res = dict_insert(&d, &x->entry, item_key(x));
            if (res != (x->linked ? DICT_DUPLICATE : DICT_OK))
                wrong++;
            x->linked = true;
        } else if (r < 90) {
            bool removed = rng_next() & 1 ? dict_remove(&d, &x->entry)
                                          : dict_remove_key(&d, item_key(x)) == &x->entry;
            if (removed != x->linked)
                wrong++;
            x->linked = false;
        } else {
            struct dict_entry *e = dict_find(&d, item_key(x));
            if (e != (x->linked ? &x->entry : NULL))
                wrong++;
        }
        if (d.stats.buckets_moved - before.buckets_moved > 1 ||
            d.stats.empty_visits - before.empty_visits > DICT_REHASH_EMPTY_VISITS)
            over_budget++;
        /* Memory moves in segments: a few per operation, never a whole table. */
        if (d.stats.segment_allocs - before.segment_allocs > 8 ||
            d.stats.segment_frees - before.segment_frees > DICT_REHASH_EMPTY_VISITS + 1)
            over_budget++;
        if (d.stats.probes - before.probes > max_probes)
            max_probes = d.stats.probes - before.probes;
        if (dict_count(&d) > 2 * max_size(&d))
            overloaded++;
        if (op % 5000 == 0)
            check_contents(&d, items, universe);
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(over_budget, 0);
    CHECK_EQ_INT(overloaded, 0);
    CHECK(d.stats.resizes > 10);
    CHECK(d.stats.buckets_moved > 0);
    /* Chains stay short under a keyed hash: no lookup looked at 16 entries. */
    CHECK(max_probes < 16);
    check_contents(&d, items, universe);
    struct dict_stats end = d.stats;
    dict_free(&d);
    CHECK(end.segment_allocs > end.segment_frees); /* some still held before dict_free */
    free(items);
}

/* Starts a grow, then iterates while it is half done, removing every other
 * entry and inserting new ones from inside the loop. */
static void test_iterate_during_rehash(void)
{
    enum { N = 40000, EXTRA = 512 };
    struct item *items = calloc(N + EXTRA, sizeof(*items));
    for (int i = 0; i < N + EXTRA; i++)
        item_init(&items[i], i, "it-");
    struct dict d;
    dict_init(&d, seed_a);
    /* Fill until a grow has started and is not yet finished. */
    int n = 0;
    while (n < N && !(dict_is_rehashing(&d) && d.rehash_index > 5000 && d.ht[0].size >= 16384)) {
        CHECK_EQ_INT(dict_insert(&d, &items[n].entry, item_key(&items[n])), DICT_OK);
        items[n].linked = true;
        n++;
    }
    CHECK(dict_is_rehashing(&d));
    CHECK(d.ht[0].used > 0 && d.ht[1].used > 0); /* entries really are split over both tables */

    size_t rehash_index = d.rehash_index;
    size_t count_before = dict_count(&d);
    unsigned char *seen = calloc(N + EXTRA, 1);
    int duplicates = 0, strangers = 0, removed = 0, added = 0;
    struct dict_iter it;
    struct dict_entry *e;
    dict_iter_begin(&it, &d);
    int step = 0;
    while ((e = dict_iter_next(&it)) != NULL) {
        struct item *x = item_of(e);
        if (x->index >= n)
            strangers++; /* inserted during the loop: allowed, but count it */
        else if (seen[x->index]++)
            duplicates++;
        if (step++ % 2 == 0 && x->index < n) {
            CHECK(dict_remove(&d, e)); /* remove the current entry */
            x->linked = false;
            removed++;
        }
        if (added < EXTRA && step % 8 == 0) {
            struct item *y = &items[n + added++];
            CHECK_EQ_INT(dict_insert(&d, &y->entry, item_key(y)), DICT_OK);
            y->linked = true;
        }
        /* Lookups of surviving entries still work mid-iteration. */
        CHECK(dict_find(&d, item_key(&items[0])) == (items[0].linked ? &items[0].entry : NULL));
    }
    CHECK_EQ_INT(d.rehash_index, rehash_index); /* frozen while iterating */
    dict_iter_end(&it);

    int missed = 0;
    for (int i = 0; i < n; i++)
        missed += !seen[i];
    CHECK_EQ_INT(duplicates, 0);
    CHECK_EQ_INT(missed, 0);
    CHECK(strangers <= added);
    CHECK_EQ_INT(dict_count(&d), count_before - (size_t)removed + (size_t)added);
    check_contents(&d, items, N + EXTRA);

    /* Rehashing resumes afterwards and finishes. */
    for (int i = 0; dict_is_rehashing(&d) && i < 100000; i++)
        dict_find(&d, SPAN_LIT("absent"));
    CHECK(!dict_is_rehashing(&d));
    check_contents(&d, items, N + EXTRA);
    free(seen);
    dict_free(&d);
    free(items);
}

/* The old table's memory goes back a segment at a time while rehashing
 * proceeds, not all at once when it ends. */
static void test_segments_released_progressively(void)
{
    enum { N = 70000 };
    struct item *items = calloc(N, sizeof(*items));
    struct dict d;
    dict_init(&d, seed_a);
    int n = 0;
    /* Insert until the grow from 65536 buckets starts. */
    while (n < N && !(dict_is_rehashing(&d) && d.ht[0].size == 65536)) {
        item_init(&items[n], n, "seg-");
        CHECK_EQ_INT(dict_insert(&d, &items[n].entry, item_key(&items[n])), DICT_OK);
        n++;
    }
    CHECK(dict_is_rehashing(&d));
    uint64_t frees_at_start = d.stats.segment_frees;
    size_t old_segments = d.ht[0].size >> DICT_SEGMENT_SHIFT;
    CHECK_EQ_INT(old_segments, 16);
    while (dict_is_rehashing(&d) && d.rehash_index < d.ht[0].size / 2)
        dict_find(&d, SPAN_LIT("absent"));
    CHECK(dict_is_rehashing(&d));
    /* Half way: about half of the old segments are already freed. */
    CHECK(d.stats.segment_frees - frees_at_start >= old_segments / 2 - 1);
    CHECK(d.stats.segment_frees - frees_at_start < old_segments);
    while (dict_is_rehashing(&d))
        dict_find(&d, SPAN_LIT("absent"));
    CHECK_EQ_INT(d.stats.segment_frees - frees_at_start, old_segments);
    int lost = 0;
    for (int i = 0; i < n; i++)
        lost += dict_find(&d, item_key(&items[i])) != &items[i].entry;
    CHECK_EQ_INT(lost, 0);
    dict_free(&d);
    free(items);
}

/* The owner's way of freeing everything: iterate and remove each current
 * entry; then the dict shrinks back once the iterator is gone. */
static void test_drain_by_iteration_and_shrink(void)
{
    enum { N = 20000 };
    struct item *items = calloc(N, sizeof(*items));
    struct dict d;
    dict_init(&d, seed_a);
    for (int i = 0; i < N; i++) {
        item_init(&items[i], i, "drain-");
        dict_insert(&d, &items[i].entry, item_key(&items[i]));
        items[i].linked = true;
    }
    while (dict_is_rehashing(&d))
        dict_find(&d, SPAN_LIT("absent"));
    size_t big = d.ht[0].size;
    CHECK(big >= N);

    /* Keep every 100th item, drop the rest from inside an iteration. */
    struct dict_iter it;
    struct dict_entry *e;
    int visits = 0;
    dict_iter_begin(&it, &d);
    while ((e = dict_iter_next(&it)) != NULL) {
        visits++;
        if (item_of(e)->index % 100 != 0) {
            dict_remove(&d, e);
            item_of(e)->linked = false;
        }
    }
    dict_iter_end(&it);
    CHECK_EQ_INT(visits, N);
    CHECK_EQ_INT(dict_count(&d), N / 100);
    CHECK_EQ_INT(d.ht[0].size, big); /* no resize under the iterator */

    /* Ordinary traffic afterwards shrinks the table, a bounded step at a time. */
    for (int i = 0; i < 200; i++) {
        dict_remove(&d, &items[0].entry);
        dict_insert(&d, &items[0].entry, item_key(&items[0]));
    }
    while (dict_is_rehashing(&d))
        dict_find(&d, SPAN_LIT("absent"));
    CHECK(d.ht[0].size < big / 8);
    CHECK(d.ht[0].size >= dict_count(&d));
    check_contents(&d, items, N);

    dict_iter_begin(&it, &d);
    while ((e = dict_iter_next(&it)) != NULL)
        dict_remove(&d, e);
    dict_iter_end(&it);
    CHECK_EQ_INT(dict_count(&d), 0);
    dict_free(&d);
    free(items);
}

/* Different seeds place the same keys differently (the seed is really used). */
static void test_seed_changes_layout(void)
{
    static const uint8_t seed_b[DICT_SEED_LEN] = { 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 };
    struct item x;
    item_init(&x, 7, "seed-");
    int differ = 0;
    struct dict a, b;
    dict_init(&a, seed_a);
    dict_init(&b, seed_b);
    CHECK_EQ_INT(dict_insert(&a, &x.entry, item_key(&x)), DICT_OK);
    uint64_t ha = x.entry.hash;
    dict_remove(&a, &x.entry);
    CHECK_EQ_INT(dict_insert(&b, &x.entry, item_key(&x)), DICT_OK);
    differ = x.entry.hash != ha;
    CHECK(differ);
    dict_remove(&b, &x.entry);
    dict_free(&a);
    dict_free(&b);
}

int main(void)
{
    test_basics();
    test_random_against_model(UINT64_C(0x1234567890abcdef), 3000, 300000);
    test_random_against_model(UINT64_C(42), 60000, 300000);
    test_iterate_during_rehash();
    test_segments_released_progressively();
    test_drain_by_iteration_and_shrink();
    test_seed_changes_layout();
    return test_main_result("test_dict");
}
