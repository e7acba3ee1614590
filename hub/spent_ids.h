/* spent_ids.h - connection ids that already opened a connection, refused again until their token expires.
 *
 * Service mode's negotiate is stateless: the relay's connection token (or a v0
 * client's signed id) proves itself for --negotiate-timeout. A request that
 * arrives after its connection ended (a poll sent just before the client's
 * DELETE and read after it, a replayed token) must not open a second
 * connection under the same id: ASP.NET Core answers such a request 404, as
 * its connection is gone. This set remembers each id that opened until the
 * token that names it can no longer pass anyway.
 *
 * The set is a containers/expiring_keys.h with no value: one 24-byte record
 * (the id's 128-bit keyed digest and its deadline) in a ring ordered by
 * addition, and 8 bytes of index, per id opened within one TTL; every add or
 * lookup first drops the expired ones: no timer. A different id is refused
 * as spent only if its digest collides with a remembered one's (probability
 * 2^-128 per pair under the process's random seed: see expiring_keys.h).
 * The clock is the caller's (pure model). */
#ifndef SR_SPENT_IDS_H
#define SR_SPENT_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/dict.h"
#include "containers/expiring_keys.h"
#include "containers/span.h"

struct spent_ids {
    struct expiring_keys ids;
};

void spent_ids_init(struct spent_ids *set, const uint8_t seed[DICT_SEED_LEN]);
/* Frees the set's arrays. */
void spent_ids_free(struct spent_ids *set);
/* Remembers id until until_ms (a later add of the same id extends it). False when out of memory. */
bool spent_ids_add(struct spent_ids *set, struct span id, uint64_t until_ms, uint64_t now_ms);
/* True while id is remembered and now_ms is before its until_ms. */
bool spent_ids_has(struct spent_ids *set, struct span id, uint64_t now_ms);
static inline size_t spent_ids_count(const struct spent_ids *set) { return expiring_keys_count(&set->ids); }

#endif
