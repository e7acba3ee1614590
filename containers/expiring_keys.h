/* expiring_keys.h - a set of byte-string keys, each kept until its deadline, in one dense ring and an index.
 *
 * For what is remembered for a while after an event, with one lifetime for
 * all entries so that they expire in about the order they were added
 * (hub/spent_ids.h: ids that opened a connection, until their token expires;
 * hub/early_sends.h: bytes POSTed before a first GET, until the token could
 * no longer open one). No timer: every call first drops the expired records
 * at the ring's head, so memory is bounded by what was added within one
 * lifetime. The clock is the caller's.
 *
 * Layout. A record is the key's 128-bit digest, its deadline and the
 * caller's fixed-size value (value_size bytes, 0 for a plain set), in a ring
 * of records in the order they were added. An open-addressing index
 * (linear probing, at most half full, backward-shift deletion, no
 * tombstones) maps a digest to its ring slot as a uint32_t. So a key costs
 * 24 bytes plus its value in the ring and 8 bytes of index at full load,
 * against ~96 for a malloc'ed entry with a dict entry, a list link and the
 * key's bytes. A key that is re-added or removed leaves a hole in the ring
 * (skipped by the pruning); when the ring is full it is rebuilt, compacted
 * when at least half of it is holes and doubled otherwise, and halved when a
 * quarter of it is live or less: O(live keys) for that one call,
 * amortised O(1) per add. Unlike containers/dict.h this is not spread over
 * later calls: measured (CPU time, -O2, this project's 2-core machine
 * under load) 0.7 ms for the rebuild to 32,768 records, 2.9 ms to 131,072,
 * 5.4 ms to 262,144; a put costs ~1 us on average. For spent ids that is
 * one such call per doubling of the ids opened within one token lifetime
 * (65,536 of them in 17 s is 3,800 connections a second).
 *
 * The key itself is not kept, only its digest: SipHash-2-4-128 under a
 * secret random seed (containers/siphash.h). Two different keys are then
 * taken for the same one only if their digests collide, which for keys an
 * outsider cannot choose with the seed in mind has probability 2^-128 per
 * pair: with a million live keys, a new key matches one of them with
 * probability below 10^-32 (spent_ids would refuse one connection, which
 * negotiates again; early_sends would hand POSTed bytes to another token).
 * That is the documented, negligible risk; nothing else differs from
 * comparing the keys' bytes.
 *
 * OWNERSHIP: the set owns its arrays and, through `drop`, the values it
 * still holds when they expire or when it is freed. A record pointer is
 * valid until the next call that adds, finds or prunes (they may move the
 * ring). */
#ifndef SR_EXPIRING_KEYS_H
#define SR_EXPIRING_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/siphash.h"
#include "containers/span.h"

/* The smallest ring (records); the index has twice as many slots. */
#define EXPIRING_KEYS_MIN_CAP 16u

/* One record; value_size bytes of value follow it (8-aligned). */
struct expiring_key {
    uint64_t digest[2];
    uint64_t until_ms; /* 0: a hole (removed, or moved to the back) */
};

struct expiring_keys {
    unsigned char *ring;       /* cap records of rec_size bytes; NULL until the first add */
    uint32_t *index;           /* 2 * cap slots: ring slot + 1, 0 = empty */
    size_t rec_size;
    size_t value_size;
    void (*drop)(void *value); /* frees what a value owns when the set lets it go; may be NULL */
    uint32_t cap;              /* a power of two, or 0 */
    uint32_t head;             /* the oldest record's slot */
    uint32_t used;             /* records from head on, holes included */
    uint32_t count;            /* live keys */
    uint8_t seed[SIPHASH_KEY_LEN];
};

/* Allocates nothing. A value starts zeroed. */
void expiring_keys_init(struct expiring_keys *set, const uint8_t seed[SIPHASH_KEY_LEN], size_t value_size,
                        void (*drop)(void *value));
/* Drops every value still held and frees the arrays. */
void expiring_keys_free(struct expiring_keys *set);

/* The live record for key (its deadline after now_ms), or NULL. Prunes first. */
struct expiring_key *expiring_keys_find(struct expiring_keys *set, struct span key, uint64_t now_ms);

/* Remembers key until until_ms (which must be > 0): a new record with a
 * zeroed value (*added = true), or the one there was, moved to the back with
 * the later of the two deadlines and its value kept (*added = false).
 * Prunes first. NULL when out of memory (nothing changed). */
struct expiring_key *expiring_keys_put(struct expiring_keys *set, struct span key, uint64_t until_ms,
                                       uint64_t now_ms, bool *added);

/* Forgets a live record now, without calling drop (the caller took its value). */
void expiring_keys_remove(struct expiring_keys *set, struct expiring_key *rec);

static inline void *expiring_key_value(struct expiring_key *rec) { return rec + 1; }
static inline size_t expiring_keys_count(const struct expiring_keys *set) { return set->count; }
/* Bytes held by the arrays (for tests and benchmarks). */
static inline size_t expiring_keys_bytes(const struct expiring_keys *set)
{
    return (size_t)set->cap * (set->rec_size + 2 * sizeof(uint32_t));
}

#endif
