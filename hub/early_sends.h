/* early_sends.h - what Core clients POSTed before their connection's first GET, by connection token.
 *
 * ASP.NET Core has a connection from its negotiate on; a POST before the
 * first GET (no transport chosen yet) goes into the connection's pipe, and
 * the hub reads it once the first GET starts it. Service mode's negotiate is
 * stateless (the token proves itself), so such bytes wait here until the
 * first SSE GET or poll opens the session and takes them, or until the token
 * could no longer open one (its TTL: every entry gets the same, so they
 * expire in the order they came, pruned on every call; no timer). The set
 * is a containers/expiring_keys.h whose value is the token's struct buf:
 * the token is known by its 128-bit keyed digest (see there for what a
 * collision would mean, and why it is negligible). The clock is the
 * caller's (pure model). */
#ifndef SR_EARLY_SENDS_H
#define SR_EARLY_SENDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/dict.h"
#include "containers/expiring_keys.h"
#include "containers/span.h"

struct early_sends {
    struct expiring_keys by_token; /* value: struct buf, the token's bytes */
};

enum early_result { EARLY_OK, EARLY_NO_TOKEN, EARLY_TOO_LARGE, EARLY_NO_MEMORY };

void early_sends_init(struct early_sends *set, const uint8_t seed[DICT_SEED_LEN]);
/* Frees every entry and its bytes. */
void early_sends_free(struct early_sends *set);
/* Appends data to what token has waiting (a first send makes the entry, kept until until_ms);
 * EARLY_TOO_LARGE when that would be more than max_bytes in all. */
enum early_result early_sends_append(struct early_sends *set, struct span token, const void *data, size_t len,
                                     size_t max_bytes, uint64_t until_ms, uint64_t now_ms);
/* Moves token's bytes into out (left empty when none) and forgets the token. */
void early_sends_take(struct early_sends *set, struct span token, struct buf *out, uint64_t now_ms);
static inline size_t early_sends_count(const struct early_sends *set) { return expiring_keys_count(&set->by_token); }

#endif
