/* dict.c - chained hash table with incremental rehashing (see dict.h).
 *
 * Invariants:
 * - Not rehashing: ht[1].size == 0, every entry is in ht[0].
 * - Rehashing: buckets of ht[0] below rehash_index are empty (moved), and
 *   its segments below segments_released are freed; new entries go to ht[1];
 *   an entry is in ht[0] at its bucket if that bucket is at or above
 *   rehash_index, and may be in ht[1] in any case.
 * - Resizing, bucket moves and segment releases happen only when no
 *   iterator is live.
 *
 * Resize policy: grow to twice the buckets when entries reach the bucket
 * count (load 1); shrink when load falls to 1/8, to a table at load about 1/2,
 * so that a table hovering around one size does not flap between two. A grow
 * from S to 2S buckets needs at most S operations to finish rehashing (each
 * operation retires at least one old bucket), and S more inserts are needed
 * before the next grow, so a resize never has to wait for the previous one.
 *
 * Memory: a resize allocates only the new segment directory (8 bytes per
 * 4096 buckets); segments are allocated on first store, and the old table's
 * segments are freed one by one as rehash_index passes them (or, if the old
 * table empties early because its entries were removed, one per step). */
#include "containers/dict.h"

#include <stdlib.h>
#include <string.h>

/* ---- segmented bucket arrays ---- */

static inline size_t segment_len(const struct dict_table *t) { return (size_t)1 << t->seg_shift; }
static inline size_t segment_count(const struct dict_table *t) { return t->size >> t->seg_shift; }

static inline struct dict_entry *bucket_head(const struct dict_table *t, size_t i)
{
    struct dict_entry **seg = t->segments[i >> t->seg_shift];
    return seg ? seg[i & (segment_len(t) - 1)] : NULL;
}

/* The bucket's head pointer, or NULL if its segment was never allocated. */
static inline struct dict_entry **bucket_ref(const struct dict_table *t, size_t i)
{
    struct dict_entry **seg = t->segments[i >> t->seg_shift];
    return seg ? &seg[i & (segment_len(t) - 1)] : NULL;
}

/* The bucket's head pointer, allocating its segment if needed; NULL on OOM. */
static struct dict_entry **bucket_ref_alloc(struct dict *d, struct dict_table *t, size_t i)
{
    struct dict_entry ***seg = &t->segments[i >> t->seg_shift];
    if (!*seg) {
        if (!(*seg = calloc(segment_len(t), sizeof(**seg))))
            return NULL;
        d->stats.segment_allocs++;
    }
    return &(*seg)[i & (segment_len(t) - 1)];
}

static bool table_alloc(struct dict_table *t, size_t size)
{
    unsigned shift = 0;
    while (shift < DICT_SEGMENT_SHIFT && ((size_t)1 << (shift + 1)) <= size)
        shift++;
    struct dict_entry ***dir = calloc(size >> shift, sizeof(*dir));
    if (!dir)
        return false;
    t->segments = dir;
    t->size = size;
    t->used = 0;
    t->seg_shift = shift;
    return true;
}

static void table_release(struct dict *d, struct dict_table *t, size_t first_segment)
{
    for (size_t s = first_segment; s < segment_count(t); s++) {
        if (t->segments[s]) {
            free(t->segments[s]);
            d->stats.segment_frees++;
        }
    }
    free(t->segments);
    memset(t, 0, sizeof(*t));
}

/* ---- setup ---- */

void dict_init(struct dict *d, const uint8_t seed[DICT_SEED_LEN])
{
    memset(d, 0, sizeof(*d));
    memcpy(d->seed, seed, DICT_SEED_LEN);
}

void dict_free(struct dict *d)
{
    table_release(d, &d->ht[0], dict_is_rehashing(d) ? d->segments_released : 0);
    table_release(d, &d->ht[1], 0);
    uint8_t seed[DICT_SEED_LEN];
    memcpy(seed, d->seed, sizeof(seed));
    dict_init(d, seed);
}

static inline uint64_t dict_hash(const struct dict *d, struct span key)
{
    return siphash24(d->seed, key.ptr, key.len);
}

static inline size_t bucket_index(const struct dict_table *t, uint64_t hash)
{
    return (size_t)hash & (t->size - 1);
}

/* True if ht[0]'s bucket idx has already been moved to ht[1]. */
static inline bool bucket_is_moved(const struct dict *d, size_t idx)
{
    return dict_is_rehashing(d) && idx < d->rehash_index;
}

/* ---- incremental rehashing ---- */

static void finish_rehash(struct dict *d)
{
    table_release(d, &d->ht[0], d->segments_released);
    d->ht[0] = d->ht[1];
    memset(&d->ht[1], 0, sizeof(d->ht[1]));
    d->rehash_index = 0;
    d->segments_released = 0;
}

/* Frees the old table's segments that rehashing has fully passed. */
static void release_passed_segments(struct dict *d)
{
    struct dict_table *old = &d->ht[0];
    while (((d->segments_released + 1) << old->seg_shift) <= d->rehash_index) {
        struct dict_entry ***seg = &old->segments[d->segments_released++];
        if (*seg) {
            free(*seg);
            *seg = NULL;
            d->stats.segment_frees++;
        }
    }
}

/* Moves ht[0]'s bucket idx to ht[1]. Allocates the target segments first, so
 * that running out of memory leaves the bucket whole (returns false). */
static bool move_bucket(struct dict *d, size_t idx)
{
    struct dict_entry **from = bucket_ref(&d->ht[0], idx);
    for (struct dict_entry *e = *from; e; e = e->next)
        if (!bucket_ref_alloc(d, &d->ht[1], bucket_index(&d->ht[1], e->hash)))
            return false;
    struct dict_entry *e = *from;
    while (e) {
        struct dict_entry *next = e->next;
        struct dict_entry **to = bucket_ref(&d->ht[1], bucket_index(&d->ht[1], e->hash));
        e->next = *to;
        *to = e;
        d->ht[0].used--;
        d->ht[1].used++;
        e = next;
    }
    *from = NULL;
    return true;
}

/* Once the old table holds no entry (all moved, or removed meanwhile), its
 * remaining segments are returned one per step rather than all at once:
 * looking at up to DICT_REHASH_EMPTY_VISITS directory slots, freeing at most
 * one segment. Finishes the rehash when none is left. */
static void release_old_segments_step(struct dict *d)
{
    struct dict_table *old = &d->ht[0];
    for (unsigned looked = 0; looked < DICT_REHASH_EMPTY_VISITS; looked++) {
        if (d->segments_released == segment_count(old)) {
            finish_rehash(d);
            return;
        }
        struct dict_entry ***seg = &old->segments[d->segments_released++];
        /* Keep "buckets below rehash_index are gone" true for lookups. */
        if (d->rehash_index < d->segments_released << old->seg_shift)
            d->rehash_index = d->segments_released << old->seg_shift;
        if (*seg) {
            free(*seg);
            *seg = NULL;
            d->stats.segment_frees++;
            break;
        }
    }
    if (d->segments_released == segment_count(old))
        finish_rehash(d);
}

/* One bounded step of rehashing: at most one non-empty bucket moved and
 * DICT_REHASH_EMPTY_VISITS empty buckets or never-allocated segments
 * stepped over (each passed segment freed), or, once the old table is
 * empty, one of its remaining segments freed. */
static void rehash_step(struct dict *d)
{
    if (!dict_is_rehashing(d) || d->iterators > 0)
        return;
    struct dict_table *old = &d->ht[0];
    if (old->used == 0) {
        release_old_segments_step(d);
        return;
    }
    unsigned empty_budget = DICT_REHASH_EMPTY_VISITS;
    /* used > 0 guarantees a non-empty bucket at or above rehash_index. */
    while (old->used > 0) {
        size_t idx = d->rehash_index;
        if (old->segments[idx >> old->seg_shift] == NULL) {
            /* A whole segment that never held an entry counts as one visit. */
            d->rehash_index = ((idx >> old->seg_shift) + 1) << old->seg_shift;
        } else if (bucket_head(old, idx) == NULL) {
            d->rehash_index++;
        } else {
            if (!move_bucket(d, idx))
                return; /* out of memory: a later operation retries */
            d->rehash_index++;
            d->stats.buckets_moved++;
            release_passed_segments(d);
            return;
        }
        d->stats.empty_visits++;
        release_passed_segments(d);
        if (--empty_budget == 0)
            return;
    }
}

/* Starts moving to a table of new_size buckets. Only called when not
 * rehashing and no iterator is live. On allocation failure the dict stays as
 * it was, which is always a valid state. */
static void start_resize(struct dict *d, size_t new_size)
{
    if (new_size > SIZE_MAX / sizeof(struct dict_entry *))
        return;
    struct dict_table fresh;
    if (!table_alloc(&fresh, new_size))
        return;
    d->stats.resizes++;
    if (d->ht[0].used == 0 && segment_count(&d->ht[0]) <= 1) {
        /* Nothing to move and at most one segment to free: swap at once.
         * (An empty but large table goes the incremental way, so that its
         * segments are freed a step at a time.) */
        table_release(d, &d->ht[0], 0);
        d->ht[0] = fresh;
        return;
    }
    d->ht[1] = fresh;
    d->rehash_index = 0;
    d->segments_released = 0;
}

static bool resize_allowed(const struct dict *d)
{
    return !dict_is_rehashing(d) && d->iterators == 0;
}

static void maybe_grow(struct dict *d)
{
    if (resize_allowed(d) && d->ht[0].used >= d->ht[0].size && d->ht[0].size <= SIZE_MAX / 2)
        start_resize(d, d->ht[0].size * 2);
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
    struct dict_table *t = &d->ht[0];
    if (resize_allowed(d) && t->size > DICT_MIN_BUCKETS && t->used <= t->size / 8) {
        size_t target = next_power_of_two(t->used * 2);
        if (target < t->size)
            start_resize(d, target);
    }
}

/* ---- lookups and updates ---- */

/* Looks key up in both tables without side effects other than counters. */
static struct dict_entry *lookup(struct dict *d, struct span key, uint64_t hash)
{
    for (int t = 0; t < 2; t++) {
        const struct dict_table *ht = &d->ht[t];
        if (ht->size == 0)
            continue;
        size_t idx = bucket_index(ht, hash);
        if (t == 0 && bucket_is_moved(d, idx))
            continue;
        for (struct dict_entry *e = bucket_head(ht, idx); e; e = e->next) {
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
    /* First entry: the smallest table. Safe even under a live iterator,
     * which simply sees the new (empty) table. */
    if (d->ht[0].size == 0 && !table_alloc(&d->ht[0], DICT_MIN_BUCKETS))
        return DICT_NOMEM;
    rehash_step(d);
    uint64_t hash = dict_hash(d, key);
    if (lookup(d, key, hash))
        return DICT_DUPLICATE;
    maybe_grow(d);

    struct dict_table *t = &d->ht[dict_is_rehashing(d) ? 1 : 0];
    struct dict_entry **head = bucket_ref_alloc(d, t, bucket_index(t, hash));
    if (!head)
        return DICT_NOMEM;
    entry->hash = hash;
    entry->key = key;
    entry->next = *head;
    *head = entry;
    t->used++;
    return DICT_OK;
}

/* Unlinks entry from the chain of table t, bucket idx, if it is there. */
static bool unlink_from_bucket(struct dict *d, struct dict_table *t, size_t idx,
                               struct dict_entry *entry)
{
    struct dict_entry **link = bucket_ref(t, idx);
    for (; link && *link; link = &(*link)->next) {
        d->stats.probes++;
        if (*link == entry) {
            *link = entry->next;
            entry->next = NULL;
            t->used--;
            return true;
        }
    }
    return false;
}

/* Unlinks entry wherever it is; no rehash step, no resize. */
static bool unlink_entry(struct dict *d, struct dict_entry *entry)
{
    size_t idx0 = bucket_index(&d->ht[0], entry->hash);
    if (!bucket_is_moved(d, idx0) && unlink_from_bucket(d, &d->ht[0], idx0, entry))
        return true;
    return dict_is_rehashing(d) &&
           unlink_from_bucket(d, &d->ht[1], bucket_index(&d->ht[1], entry->hash), entry);
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

/* ---- iteration ---- */

void dict_iter_begin(struct dict_iter *it, struct dict *d)
{
    d->iterators++;
    it->dict = d;
    it->table = 0;
    /* Buckets below rehash_index are empty (and maybe freed): skip them. */
    it->index = dict_is_rehashing(d) ? d->rehash_index : 0;
    it->next = NULL;
}

struct dict_entry *dict_iter_next(struct dict_iter *it)
{
    struct dict *d = it->dict;
    while (it->next == NULL) {
        const struct dict_table *t = &d->ht[it->table];
        if (it->index >= t->size) {
            if (it->table == 0 && dict_is_rehashing(d)) {
                it->table = 1;
                it->index = 0;
                continue;
            }
            return NULL;
        }
        if (t->segments[it->index >> t->seg_shift] == NULL) {
            it->index = ((it->index >> t->seg_shift) + 1) << t->seg_shift;
            continue;
        }
        it->next = bucket_head(t, it->index++);
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
