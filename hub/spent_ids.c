/* spent_ids.c - connection ids that already opened a connection (see spent_ids.h). */
#include "hub/spent_ids.h"

#include <stdlib.h>
#include <string.h>

/* One remembered id. OWNERSHIP: the set owns it; entry.key points into id[]. */
struct spent_id {
    struct dict_entry entry;
    struct list_node link;
    uint64_t until_ms;
    char id[];
};

static void drop(struct spent_ids *set, struct spent_id *e)
{
    dict_remove(&set->by_id, &e->entry);
    list_unlink(&e->link);
    free(e);
}

/* Drops the expired entries at the head of the FIFO. */
static void prune(struct spent_ids *set, uint64_t now_ms)
{
    while (!list_is_empty(&set->fifo)) {
        struct spent_id *e = list_container_of(set->fifo.next, struct spent_id, link);
        if (e->until_ms > now_ms)
            return;
        drop(set, e);
    }
}

void spent_ids_init(struct spent_ids *set, const uint8_t seed[DICT_SEED_LEN])
{
    dict_init(&set->by_id, seed);
    list_init_head(&set->fifo);
}

void spent_ids_free(struct spent_ids *set)
{
    while (!list_is_empty(&set->fifo))
        drop(set, list_container_of(set->fifo.next, struct spent_id, link));
    dict_free(&set->by_id);
}

bool spent_ids_add(struct spent_ids *set, struct span id, uint64_t until_ms, uint64_t now_ms)
{
    prune(set, now_ms);
    struct dict_entry *found = dict_find(&set->by_id, id);
    if (found) {
        struct spent_id *e = list_container_of(found, struct spent_id, entry);
        if (e->until_ms < until_ms)
            e->until_ms = until_ms;
        list_unlink(&e->link);
        list_push_back(&set->fifo, &e->link);
        return true;
    }
    struct spent_id *e = malloc(sizeof *e + id.len + 1);
    if (!e)
        return false;
    if (id.len)
        memcpy(e->id, id.ptr, id.len);
    e->id[id.len] = '\0';
    e->until_ms = until_ms;
    if (dict_insert(&set->by_id, &e->entry, span_make(e->id, id.len)) != DICT_OK) {
        free(e);
        return false;
    }
    list_push_back(&set->fifo, &e->link);
    return true;
}

bool spent_ids_has(struct spent_ids *set, struct span id, uint64_t now_ms)
{
    prune(set, now_ms);
    struct dict_entry *found = dict_find(&set->by_id, id);
    return found && list_container_of(found, struct spent_id, entry)->until_ms > now_ms;
}
