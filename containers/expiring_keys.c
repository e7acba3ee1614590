/* expiring_keys.c - keys kept until their deadline, in a dense ring and an index (see expiring_keys.h). */
#include "containers/expiring_keys.h"

#include <stdlib.h>
#include <string.h>

/* The largest ring: slots + 1 must fit the index's uint32_t, with room to double. */
#define MAX_CAP (UINT32_C(1) << 30)

static struct expiring_key *rec_at(const struct expiring_keys *set, uint32_t slot)
{
    return (struct expiring_key *)(set->ring + (size_t)slot * set->rec_size);
}

static uint32_t index_mask(const struct expiring_keys *set) { return 2 * set->cap - 1; }

static bool digest_eq(const struct expiring_key *r, const uint64_t d[2])
{
    return r->digest[0] == d[0] && r->digest[1] == d[1];
}

/* The index slot holding digest d, or -1. */
static long index_find(const struct expiring_keys *set, const uint64_t d[2])
{
    if (!set->cap)
        return -1;
    uint32_t mask = index_mask(set);
    for (uint32_t i = (uint32_t)d[0] & mask; set->index[i]; i = (i + 1) & mask)
        if (digest_eq(rec_at(set, set->index[i] - 1), d))
            return (long)i;
    return -1;
}

static void index_insert(struct expiring_keys *set, const uint64_t d[2], uint32_t slot)
{
    uint32_t mask = index_mask(set), i = (uint32_t)d[0] & mask;
    while (set->index[i])
        i = (i + 1) & mask;
    set->index[i] = slot + 1;
}

/* Empties index slot i and moves back the entries after it that probed past it. */
static void index_erase(struct expiring_keys *set, uint32_t i)
{
    uint32_t mask = index_mask(set);
    for (uint32_t j = (i + 1) & mask; set->index[j]; j = (j + 1) & mask) {
        uint32_t home = (uint32_t)rec_at(set, set->index[j] - 1)->digest[0] & mask;
        /* j's entry may fill the gap at i unless its home lies cyclically in (i, j]. */
        bool home_between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!home_between) {
            set->index[i] = set->index[j];
            i = j;
        }
    }
    set->index[i] = 0;
}

/* Copies the live records, oldest first, into a ring of new_cap records. False when out of memory. */
static bool rebuild(struct expiring_keys *set, uint32_t new_cap)
{
    unsigned char *ring = malloc((size_t)new_cap * set->rec_size);
    uint32_t *index = calloc(2 * (size_t)new_cap, sizeof *index);
    if (!ring || !index) {
        free(ring);
        free(index);
        return false;
    }
    uint32_t n = 0;
    for (uint32_t k = 0; k < set->used; k++) {
        struct expiring_key *r = rec_at(set, (set->head + k) & (set->cap - 1));
        if (r->until_ms)
            memcpy(ring + (size_t)n++ * set->rec_size, r, set->rec_size);
    }
    free(set->ring);
    free(set->index);
    set->ring = ring;
    set->index = index;
    set->cap = new_cap;
    set->head = 0;
    set->used = n;
    for (uint32_t k = 0; k < n; k++)
        index_insert(set, rec_at(set, k)->digest, k);
    return true;
}

/* The smallest ring that holds count live keys at most half full. */
static uint32_t fitting_cap(uint32_t count)
{
    uint32_t cap = EXPIRING_KEYS_MIN_CAP;
    while (cap < 2 * count)
        cap *= 2;
    return cap;
}

/* Room for one more record at the tail. */
static bool make_room(struct expiring_keys *set)
{
    if (set->used < set->cap)
        return true;
    if (!set->cap)
        return rebuild(set, EXPIRING_KEYS_MIN_CAP);
    if (set->count < set->cap / 2)
        return rebuild(set, set->cap); /* half of it or more is holes */
    return set->cap < MAX_CAP && rebuild(set, set->cap * 2);
}

/* Forgets the live record r (its value is the caller's concern). */
static void forget(struct expiring_keys *set, struct expiring_key *r)
{
    long i = index_find(set, r->digest);
    if (i >= 0)
        index_erase(set, (uint32_t)i);
    r->until_ms = 0;
    set->count--;
}

/* Drops the expired records and holes at the head; shrinks a mostly empty ring. */
static void prune(struct expiring_keys *set, uint64_t now_ms)
{
    while (set->used) {
        struct expiring_key *r = rec_at(set, set->head);
        if (r->until_ms > now_ms)
            break;
        if (r->until_ms) {
            if (set->drop)
                set->drop(expiring_key_value(r));
            forget(set, r);
        }
        set->head = (set->head + 1) & (set->cap - 1);
        set->used--;
    }
    if (set->cap > EXPIRING_KEYS_MIN_CAP && set->count <= set->cap / 4) {
        uint32_t smaller = fitting_cap(set->count);
        if (smaller < set->cap)
            rebuild(set, smaller); /* out of memory: stays as large as it is */
    }
}

static void digest_of(const struct expiring_keys *set, struct span key, uint64_t d[2])
{
    siphash24_128(set->seed, key.ptr, key.len, d);
}

void expiring_keys_init(struct expiring_keys *set, const uint8_t seed[SIPHASH_KEY_LEN], size_t value_size,
                        void (*drop)(void *value))
{
    memset(set, 0, sizeof *set);
    memcpy(set->seed, seed, SIPHASH_KEY_LEN);
    set->value_size = value_size;
    set->rec_size = sizeof(struct expiring_key) + ((value_size + 7) & ~(size_t)7);
    set->drop = drop;
}

void expiring_keys_free(struct expiring_keys *set)
{
    for (uint32_t k = 0; k < set->used && set->drop; k++) {
        struct expiring_key *r = rec_at(set, (set->head + k) & (set->cap - 1));
        if (r->until_ms)
            set->drop(expiring_key_value(r));
    }
    free(set->ring);
    free(set->index);
    set->ring = NULL;
    set->index = NULL;
    set->cap = set->head = set->used = set->count = 0;
}

struct expiring_key *expiring_keys_find(struct expiring_keys *set, struct span key, uint64_t now_ms)
{
    prune(set, now_ms);
    uint64_t d[2];
    digest_of(set, key, d);
    long i = index_find(set, d);
    if (i < 0)
        return NULL;
    struct expiring_key *r = rec_at(set, set->index[i] - 1);
    return r->until_ms > now_ms ? r : NULL;
}

struct expiring_key *expiring_keys_put(struct expiring_keys *set, struct span key, uint64_t until_ms,
                                       uint64_t now_ms, bool *added)
{
    prune(set, now_ms);
    if (!make_room(set))
        return NULL;
    uint64_t d[2];
    digest_of(set, key, d);
    long i = index_find(set, d);
    uint32_t tail = (set->head + set->used) & (set->cap - 1);
    struct expiring_key *r = rec_at(set, tail);
    if (i >= 0) {
        struct expiring_key *old = rec_at(set, set->index[i] - 1);
        memcpy(r, old, set->rec_size);
        old->until_ms = 0;
        set->index[i] = tail + 1;
        if (r->until_ms < until_ms)
            r->until_ms = until_ms;
        *added = false;
    } else {
        memset(r, 0, set->rec_size);
        r->digest[0] = d[0];
        r->digest[1] = d[1];
        r->until_ms = until_ms ? until_ms : 1;
        index_insert(set, d, tail);
        set->count++;
        *added = true;
    }
    set->used++;
    return r;
}

void expiring_keys_remove(struct expiring_keys *set, struct expiring_key *rec)
{
    if (rec->until_ms)
        forget(set, rec);
}
