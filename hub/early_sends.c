/* early_sends.c - bytes POSTed before a connection's first GET (see early_sends.h). */
#include "hub/early_sends.h"

static void drop_bytes(void *value)
{
    buf_free(value);
}

void early_sends_init(struct early_sends *set, const uint8_t seed[DICT_SEED_LEN])
{
    expiring_keys_init(&set->by_token, seed, sizeof(struct buf), drop_bytes);
}

void early_sends_free(struct early_sends *set)
{
    expiring_keys_free(&set->by_token);
}

enum early_result early_sends_append(struct early_sends *set, struct span token, const void *data, size_t len,
                                     size_t max_bytes, uint64_t until_ms, uint64_t now_ms)
{
    struct expiring_key *rec = expiring_keys_find(&set->by_token, token, now_ms);
    struct buf *bytes = rec ? expiring_key_value(rec) : NULL;
    if ((bytes ? bytes->len : 0) + len > max_bytes)
        return EARLY_TOO_LARGE;
    if (!rec) {
        bool added;
        if (!(rec = expiring_keys_put(&set->by_token, token, until_ms, now_ms, &added)))
            return EARLY_NO_MEMORY;
        bytes = expiring_key_value(rec);
        if (!added)
            buf_free(bytes); /* an expired record not yet pruned: its bytes are gone */
        buf_init(bytes);
    }
    return buf_append(bytes, data, len) ? EARLY_OK : EARLY_NO_MEMORY;
}

void early_sends_take(struct early_sends *set, struct span token, struct buf *out, uint64_t now_ms)
{
    struct expiring_key *rec = expiring_keys_find(&set->by_token, token, now_ms);
    if (!rec)
        return;
    struct buf *bytes = expiring_key_value(rec);
    *out = *bytes;
    buf_init(bytes);
    expiring_keys_remove(&set->by_token, rec);
}
