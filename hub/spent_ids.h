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
 * Entries expire in about the order they were added (one TTL for all), so
 * they are kept in a FIFO list beside the dict, and every add or lookup first
 * drops the expired ones at the head: no timer, and memory bounded by the
 * ids opened within one TTL. The clock is the caller's (pure model). */
#ifndef SR_SPENT_IDS_H
#define SR_SPENT_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/dict.h"
#include "containers/list.h"
#include "containers/span.h"

struct spent_ids {
    struct dict by_id;      /* struct spent_id.entry */
    struct list_node fifo;  /* struct spent_id.link, oldest first */
};

void spent_ids_init(struct spent_ids *set, const uint8_t seed[DICT_SEED_LEN]);
/* Frees every entry. */
void spent_ids_free(struct spent_ids *set);
/* Remembers id until until_ms (a later add of the same id extends it). False when out of memory. */
bool spent_ids_add(struct spent_ids *set, struct span id, uint64_t until_ms, uint64_t now_ms);
/* True while id is remembered and now_ms is before its until_ms. */
bool spent_ids_has(struct spent_ids *set, struct span id, uint64_t now_ms);
static inline size_t spent_ids_count(const struct spent_ids *set) { return dict_count(&set->by_id); }

#endif
