/* capture_mask.h - the placeholders of one capture file: which value stands for which name.
 *
 * A capture file must not hold the per-run values of a connection (tokens,
 * ids, cursors, groups tokens): a fixture replays them as placeholders, and a
 * file left on a production disk must not hold credentials. The relay knows
 * where each of those values stands (a negotiate body field, a query
 * parameter, the top-level C and G of a legacy PersistentResponse), so it
 * replaces them there, exactly; the long random ones (tokens, ids, access
 * tokens) are then replaced wherever else they appear too. A value keeps
 * its placeholder for the whole file; numbering follows docs/FIXTURES.md
 * (`<connectionToken>`, `<connectionToken#2>`, `<cursor:1.K>`).
 *
 * Loop thread only; the table is owned by its capture file. */
#ifndef SR_CAPTURE_MASK_H
#define SR_CAPTURE_MASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/dict.h"
#include "containers/list.h"

enum mask_family {
    MASK_CONNECTION_TOKEN,
    MASK_CONNECTION_ID,
    MASK_ACCESS_TOKEN,
    MASK_CURSOR,
    MASK_GROUPS_TOKEN,
    MASK_BACKEND_ID,
    MASK_FAMILY_COUNT
};

/* Placeholders without a value of their own: always replaced where they stand. */
enum mask_fixed {
    MASK_AUTHORIZATION = 1u << 0,
    MASK_COOKIE = 1u << 1,
    MASK_ORIGIN = 1u << 2,
    MASK_TIMESTAMP = 1u << 3,
    MASK_TID = 1u << 4,
    MASK_NO_CACHE = 1u << 5,
};

struct mask_name;
struct mask_shared_id;

/* The backend ids every file of one recorder learned, relay-wide: an id keeps one number K
 * (`<backendId:K>`) in every file, and a connection that sends another's id (a hub call naming
 * it) writes that id's placeholder, so a scenario's files can be played together
 * (tests/legacy/capture/merge.mjs). An id is forgotten when the file that learned it first ends. */
struct mask_shared {
    struct dict ids;
    unsigned next;
};

struct mask_table {
    struct dict by_value;
    struct mask_name *head, **tail;   /* in order of first use: the end line's list */
    unsigned counts[MASK_FAMILY_COUNT];
    unsigned fixed_used;              /* enum mask_fixed bits */
    struct mask_shared *shared;       /* NULL: backend ids numbered per table */
    struct mask_shared_id *owned;     /* the shared ids this table learned first */
};

void mask_table_init(struct mask_table *t, const uint8_t seed[DICT_SEED_LEN]);
void mask_table_free(struct mask_table *t);
/* Backend ids of t are numbered in shared (which outlives t). */
void mask_table_share(struct mask_table *t, struct mask_shared *shared);
void mask_shared_init(struct mask_shared *s, const uint8_t seed[DICT_SEED_LEN]);
/* Once every table sharing it is freed. */
void mask_shared_free(struct mask_shared *s);

/* The placeholder for value in family (a new one on first sight), or NULL
 * when out of memory. secret: replaced wherever it appears in text too. */
const char *mask_name_for(struct mask_table *t, enum mask_family family, const char *value, size_t len,
                          bool secret);
/* The placeholder already given to value, or NULL. */
const char *mask_lookup(struct mask_table *t, const char *value, size_t len);
/* The placeholder of a fixed kind (and it is now used). */
const char *mask_fixed(struct mask_table *t, enum mask_fixed which);

/* A credential the client sent (the Authorization or Cookie header's value, which is written as
 * <authorization> / <cookie>): the value, a bearer token alone and each cookie's value (8
 * characters or more) are replaced by that placeholder wherever they appear in text too (a hub
 * that echoes a header back). */
void mask_learn_credential(struct mask_table *t, enum mask_fixed which, const char *value, size_t len);
/* Appends text with every secret value replaced by its placeholder (and, with a shared table,
 * every backend id another file learned: 22 characters of base64url standing alone). */
bool mask_text(struct mask_table *t, struct buf *out, const char *text, size_t len);
/* Appends a legacy server frame (a PersistentResponse, maybe with an SSE
 * "data: " in front): its top-level "C" and "G" values replaced by cursor
 * and groups-token placeholders, the connection ids the backend minted
 * (22 characters of base64url: a `welcome` argument, any "connectionId"
 * field) learned as `<backendId:K>`, then as mask_text. */
bool mask_persistent(struct mask_table *t, struct buf *out, const char *text, size_t len);
/* Learns the values of a negotiate answer (Core or legacy field names) and
 * calls found(ctx, value) for each token a later request may carry. */
void mask_learn_negotiate(struct mask_table *t, const char *body, size_t len,
                          void (*found)(void *ctx, const char *token), void *ctx);

/* Adds every placeholder used, in order of first use, to a cJSON array. */
struct cJSON;
void mask_list_add(const struct mask_table *t, struct cJSON *array);

#endif
