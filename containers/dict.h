/* dict.h - a byte-string keyed hash table with incremental rehashing.
 *
 * Shape after Redis' dict.c: chained buckets, power-of-two tables, and while
 * the table grows or shrinks two tables live side by side and every
 * operation moves at most one non-empty bucket (stepping over at most
 * DICT_REHASH_EMPTY_VISITS empty ones) from the old to the new. Unlike Redis,
 * bucket arrays are segmented (see DICT_SEGMENT_SHIFT), so memory too is
 * allocated and returned a segment at a time. So a table of a million groups
 * never stalls the event loop: the cost of a resize is spread over the
 * operations that follow it.
 *
 * Entries are intrusive: a struct dict_entry lives inside the value it
 * indexes (a group, a user, a connection), so the dict allocates nothing but
 * its bucket arrays. OWNERSHIP: the value owns its key bytes; the entry's key
 * span points into the value and must stay valid and unchanged while the
 * entry is in the dict. The dict never frees entries or values: dict_free
 * releases the bucket arrays only, the owner frees its values (typically by
 * iterating and removing each current entry first).
 *
 * Keys are hashed with SipHash-2-4 under the seed given to dict_init, which
 * should be fresh random bytes per process (OpenSSL RAND_bytes): keys come
 * from clients and backends, and a secret seed keeps them from choosing
 * names that collide. The hash of each entry is stored in it, so moving a
 * bucket never re-hashes a key and most failed comparisons cost one integer
 * compare. */
#ifndef SR_DICT_H
#define SR_DICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/siphash.h"
#include "containers/span.h"

#define DICT_SEED_LEN SIPHASH_KEY_LEN
/* Smallest bucket array; the dict never shrinks below it. */
#define DICT_MIN_BUCKETS 4
/* Per operation, rehashing moves one non-empty bucket and steps over at most
 * this many empty ones (or never-allocated segments) before giving up until
 * the next operation. */
#define DICT_REHASH_EMPTY_VISITS 10
/* Bucket arrays are cut into segments of 2^12 buckets (32 KiB), allocated on
 * first store and freed as soon as rehashing has passed them, so that no
 * single operation allocates, zeroes or frees more than a few segments. (One
 * 16 MiB array per table would cost ~1.6 ms to munmap in the one operation
 * that finishes a rehash of a million-entry table.) */
#define DICT_SEGMENT_SHIFT 12

struct dict_entry {
    struct dict_entry *next; /* next entry in the same bucket */
    uint64_t hash;           /* SipHash of key, computed once at insert */
    struct span key;         /* borrowed from the value that embeds this entry */
};

/* Work counters, for tests and benchmarks (never reset by the dict). */
struct dict_stats {
    uint64_t buckets_moved;  /* non-empty buckets carried to the new table */
    uint64_t empty_visits;   /* empty old buckets/segments stepped over while rehashing */
    uint64_t probes;         /* entries looked at by lookups and removals */
    uint64_t resizes;        /* resizes started */
    uint64_t segment_allocs; /* bucket segments allocated */
    uint64_t segment_frees;  /* bucket segments freed */
};

/* One bucket array: size buckets in size >> seg_shift segments. */
struct dict_table {
    struct dict_entry ***segments; /* directory; a NULL segment is all empty buckets */
    size_t size;                   /* buckets: a power of two, or 0 */
    size_t used;                   /* entries */
    unsigned seg_shift;            /* log2(buckets per segment) */
};

struct dict {
    struct dict_table ht[2]; /* ht[1] is in use only while rehashing */
    size_t rehash_index;     /* while rehashing: ht[0] buckets below it are moved */
    size_t segments_released; /* while rehashing: ht[0] segments below it are freed */
    unsigned iterators;      /* live iterators; while > 0 no entry changes table */
    uint8_t seed[DICT_SEED_LEN];
    struct dict_stats stats;
};

enum dict_result {
    DICT_OK = 0,
    DICT_DUPLICATE, /* an entry with an equal key is already present */
    DICT_NOMEM,     /* the bucket segment for the entry could not be allocated */
};

/* Allocates nothing: an empty dict costs sizeof(struct dict). */
void dict_init(struct dict *d, const uint8_t seed[DICT_SEED_LEN]);

/* Frees the bucket arrays (not the entries). Must have no live iterator. */
void dict_free(struct dict *d);

static inline size_t dict_count(const struct dict *d) { return d->ht[0].used + d->ht[1].used; }
static inline bool dict_is_rehashing(const struct dict *d) { return d->ht[1].size != 0; }

/* The entry whose key equals key byte for byte, or NULL. */
struct dict_entry *dict_find(struct dict *d, struct span key);

/* Links entry under key (which must point into the entry's value and stay
 * valid while it is linked). Fails with DICT_DUPLICATE, leaving the dict
 * unchanged, if an equal key is present, and with DICT_NOMEM if its bucket's
 * segment could not be allocated. A failed allocation for a bigger table is
 * not an error: the table stays as it is (chains grow a little longer until a
 * later resize succeeds), and a bucket move that cannot get its segment is
 * retried by a later operation. */
enum dict_result dict_insert(struct dict *d, struct dict_entry *entry, struct span key);

/* Unlinks an entry known to be in d; O(its bucket's chain). Returns false
 * (and changes nothing) if it is not in d. */
bool dict_remove(struct dict *d, struct dict_entry *entry);

/* Finds and unlinks the entry with this key; returns it, or NULL. */
struct dict_entry *dict_remove_key(struct dict *d, struct span key);

/* Iteration over every entry, in no particular order.
 *
 * While an iterator is live the dict does not rehash or resize, so no entry
 * moves between buckets and each entry present for the whole iteration is
 * returned exactly once. Allowed during iteration: removing the entry just
 * returned (dict_remove / dict_remove_key), finding, and inserting (a new
 * entry may or may not be returned). Not allowed: removing any entry other
 * than the one just returned, and dict_free. Every dict_iter_begin must be
 * paired with dict_iter_end, which lets rehashing resume. */
struct dict_iter {
    struct dict *dict;
    int table;
    size_t index;            /* next bucket to open in ht[table] */
    struct dict_entry *next; /* saved before returning an entry, so it may be removed */
};

void dict_iter_begin(struct dict_iter *it, struct dict *d);
struct dict_entry *dict_iter_next(struct dict_iter *it);
void dict_iter_end(struct dict_iter *it);

#endif
