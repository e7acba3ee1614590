/* dict.c - chained hash table with incremental rehashing (see dict.h).
 *
 * Invariants:
 * - Not rehashing: table[1] == NULL, every entry is in table[0].
 * - Rehashing: buckets of table[0] below rehash_index are empty (moved);
 *   new entries go to table[1]; an entry is in table[0] at its bucket if that
 *   bucket is at or above rehash_index, and may be in table[1] in any case.
 * - Resizing and bucket moves happen only when no iterator is live.
 *
 * Resize policy: grow to twice the buckets when entries reach the bucket
 * count (load 1); shrink when load falls to 1/8, to a table at load about 1/2,
 * so that a table hovering around one size does not flap between two. A grow
 * from S to 2S buckets needs at most S operations to finish rehashing (each
 * operation retires at least one old bucket), and S more inserts are needed
 * before the next grow, so a resize never has to wait for the previous one. */
#include "dict.h"

#include <stdlib.h>
#include <string.h>

void dict_init(struct dict *d, const uint8_t seed[DICT_SEED_LEN])
{
    memset(d, 0, sizeof(*d));
    memcpy(d->seed, seed, DICT_SEED_LEN);
}

void dict_free(struct dict *d)
{
    free(d->table[0]);
    free(d->table[1]);
    uint8_t seed[DICT_SEED_LEN];
    memcpy(seed, d->seed, sizeof(seed));
    dict_init(d, seed);
}

static inline uint64_t dict_hash(const struct dict *d, struct span key)
{
    return siphash24(d->seed, key.ptr, key.len);
}

static inline size_t bucket_index(const struct dict *d, int t, uint64_t hash)
{
    return (size_t)hash & (d->size[t] - 1);
}

/* True if table[0]'s bucket idx has already been moved to table[1]. */
static inline bool bucket_is_moved(const struct dict *d, size_t idx)
{
    return dict_is_rehashing(d) && idx < d->rehash_index;
}

static void finish_rehash(struct dict *d)
{
    free(d->table[0]);
    d->table[0] = d->table[1];
    d->size[0] = d->size[1];
    d->used[0] = d->used[1];
    d->table[1] = NULL;
    d->size[1] = 0;
    d->used[1] = 0;
    d->rehash_index = 0;
}

static void move_bucket(struct dict *d, size_t idx)
{
    struct dict_entry *e = d->table[0][idx];
    while (e) {
        struct dict_entry *next = e->next;
        size_t to = bucket_index(d, 1, e->hash);
        e->next = d->table[1][to];
        d->table[1][to] = e;
        d->used[0]--;
        d->used[1]++;
        e = next;
    }
    d->table[0][idx] = NULL;
}

/* One bounded step of rehashing: at most one non-empty bucket moved and
 * DICT_REHASH_EMPTY_VISITS empty ones stepped over. */
static void rehash_step(struct dict *d)
{
    if (!dict_is_rehashing(d) || d->iterators > 0)
        return;
    unsigned empty_budget = DICT_REHASH_EMPTY_VISITS;
    /* used[0] > 0 guarantees a non-empty bucket at or above rehash_index. */
    while (d->used[0] > 0) {
        if (d->table[0][d->rehash_index] == NULL) {
            d->rehash_index++;
            d->stats.empty_visits++;
            if (--empty_budget == 0)
                break;
            continue;
        }
        move_bucket(d, d->rehash_index);
        d->rehash_index++;
        d->stats.buckets_moved++;
        break;
    }
    if (d->used[0] == 0)
        finish_rehash(d);
}

/* Starts moving to a table of new_size buckets. Only called when not
 * rehashing and no iterator is live. Returns false if the allocation failed
 * (the dict stays as it was, which is always a valid state). */
static bool start_resize(struct dict *d, size_t new_size)
{
    if (new_size > SIZE_MAX / sizeof(struct dict_entry *))
        return false;
    struct dict_entry **t = calloc(new_size, sizeof(*t));
    if (!t)
        return false;
    d->stats.resizes++;
    if (d->used[0] == 0) {
        /* Nothing to move: swap at once. */
        free(d->table[0]);
        d->table[0] = t;
        d->size[0] = new_size;
        return true;
    }
    d->table[1] = t;
    d->size[1] = new_size;
    d->used[1] = 0;
    d->rehash_index = 0;
    return true;
}

static bool resize_allowed(const struct dict *d)
{
    return !dict_is_rehashing(d) && d->iterators == 0;
}

static void maybe_grow(struct dict *d)
{
    if (resize_allowed(d) && d->used[0] >= d->size[0] && d->size[0] <= SIZE_MAX / 2)
        start_resize(d, d->size[0] * 2);
}

static size_t next_power_of_two(size_t n)
{
    size_t p = DICT_MIN_BUCKETS;
    while (p < n && p <= SIZE_MAX / 2)
        p *= 2;
    return p;
}

static void maybe_shrink(struct dict *d)
{
    if (resize_allowed(d) && d->size[0] > DICT_MIN_BUCKETS && d->used[0] <= d->size[0] / 8) {
        size_t target = next_power_of_two(d->used[0] * 2);
        if (target < d->size[0])
            start_resize(d, target);
    }
}

/* Looks key up in both tables without side effects other than counters. */
static struct dict_entry *lookup(struct dict *d, struct span key, uint64_t hash)
{
    for (int t = 0; t < 2; t++) {
        if (d->table[t] == NULL)
            continue;
        size_t idx = bucket_index(d, t, hash);
        if (t == 0 && bucket_is_moved(d, idx))
            continue;
        for (struct dict_entry *e = d->table[t][idx]; e; e = e->next) {
            d->stats.probes++;
            if (e->hash == hash && span_eq(e->key, key))
                return e;
        }
    }
    return NULL;
}

struct dict_entry *dict_find(struct dict *d, struct span key)
{
    if (dict_count(d) == 0)
        return NULL;
    rehash_step(d);
    return lookup(d, key, dict_hash(d, key));
}

enum dict_result dict_insert(struct dict *d, struct dict_entry *entry, struct span key)
{
    if (d->table[0] == NULL) {
        /* First entry: allocate the smallest table. Safe even under a live
         * iterator, which simply sees the new (empty) table. */
        d->table[0] = calloc(DICT_MIN_BUCKETS, sizeof(*d->table[0]));
        if (!d->table[0])
            return DICT_NOMEM;
        d->size[0] = DICT_MIN_BUCKETS;
    }
    rehash_step(d);
    uint64_t hash = dict_hash(d, key);
    if (lookup(d, key, hash))
        return DICT_DUPLICATE;
    maybe_grow(d);

    int t = dict_is_rehashing(d) ? 1 : 0;
    size_t idx = bucket_index(d, t, hash);
    entry->hash = hash;
    entry->key = key;
    entry->next = d->table[t][idx];
    d->table[t][idx] = entry;
    d->used[t]++;
    return DICT_OK;
}

/* Unlinks entry from the chain of table t bucket idx if it is there. */
static bool unlink_from_bucket(struct dict *d, int t, size_t idx, struct dict_entry *entry)
{
    for (struct dict_entry **link = &d->table[t][idx]; *link; link = &(*link)->next) {
        d->stats.probes++;
        if (*link == entry) {
            *link = entry->next;
            entry->next = NULL;
            d->used[t]--;
            return true;
        }
    }
    return false;
}

/* Unlinks entry wherever it is; no rehash step, no resize. */
static bool unlink_entry(struct dict *d, struct dict_entry *entry)
{
    size_t idx0 = bucket_index(d, 0, entry->hash);
    if (!bucket_is_moved(d, idx0) && unlink_from_bucket(d, 0, idx0, entry))
        return true;
    return dict_is_rehashing(d) &&
           unlink_from_bucket(d, 1, bucket_index(d, 1, entry->hash), entry);
}

bool dict_remove(struct dict *d, struct dict_entry *entry)
{
    if (dict_count(d) == 0 || !unlink_entry(d, entry))
        return false;
    maybe_shrink(d);
    rehash_step(d);
    return true;
}

struct dict_entry *dict_remove_key(struct dict *d, struct span key)
{
    if (dict_count(d) == 0)
        return NULL;
    struct dict_entry *e = lookup(d, key, dict_hash(d, key));
    if (e) {
        unlink_entry(d, e);
        maybe_shrink(d);
    }
    rehash_step(d);
    return e;
}

void dict_iter_begin(struct dict_iter *it, struct dict *d)
{
    d->iterators++;
    it->dict = d;
    it->table = 0;
    /* Buckets below rehash_index are empty; no need to open them. */
    it->index = dict_is_rehashing(d) ? d->rehash_index : 0;
    it->next = NULL;
}

struct dict_entry *dict_iter_next(struct dict_iter *it)
{
    struct dict *d = it->dict;
    while (it->next == NULL) {
        if (it->index >= d->size[it->table]) {
            if (it->table == 0 && dict_is_rehashing(d)) {
                it->table = 1;
                it->index = 0;
                continue;
            }
            return NULL;
        }
        it->next = d->table[it->table][it->index++];
    }
    struct dict_entry *e = it->next;
    it->next = e->next;
    return e;
}

void dict_iter_end(struct dict_iter *it)
{
    it->dict->iterators--;
    it->dict = NULL;
}
