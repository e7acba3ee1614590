/* spent_ids.c - connection ids that already opened a connection (see spent_ids.h). */
#include "hub/spent_ids.h"

void spent_ids_init(struct spent_ids *set, const uint8_t seed[DICT_SEED_LEN])
{
    expiring_keys_init(&set->ids, seed, 0, NULL);
}

void spent_ids_free(struct spent_ids *set)
{
    expiring_keys_free(&set->ids);
}

bool spent_ids_add(struct spent_ids *set, struct span id, uint64_t until_ms, uint64_t now_ms)
{
    bool added;
    return expiring_keys_put(&set->ids, id, until_ms, now_ms, &added) != NULL;
}

bool spent_ids_has(struct spent_ids *set, struct span id, uint64_t now_ms)
{
    return expiring_keys_find(&set->ids, id, now_ms) != NULL;
}
