/* early_sends.c - bytes POSTed before a connection's first GET (see early_sends.h). */
#include "hub/early_sends.h"

#include <stdlib.h>
#include <string.h>

/* One token's bytes. OWNERSHIP: the set owns it and bytes; entry.key points into token[]. */
struct early_send {
    struct dict_entry entry;
    struct list_node link;
    uint64_t until_ms;
    struct buf bytes;
    char token[];
};

static void drop(struct early_sends *set, struct early_send *e)
{
    dict_remove(&set->by_token, &e->entry);
    list_unlink(&e->link);
    buf_free(&e->bytes);
    free(e);
}

/* Drops the expired entries at the head of the FIFO. */
static void prune(struct early_sends *set, uint64_t now_ms)
{
    while (!list_is_empty(&set->fifo)) {
        struct early_send *e = list_container_of(set->fifo.next, struct early_send, link);
        if (e->until_ms > now_ms)
            return;
        drop(set, e);
    }
}

void early_sends_init(struct early_sends *set, const uint8_t seed[DICT_SEED_LEN])
{
    dict_init(&set->by_token, seed);
    list_init_head(&set->fifo);
}

void early_sends_free(struct early_sends *set)
{
    while (!list_is_empty(&set->fifo))
        drop(set, list_container_of(set->fifo.next, struct early_send, link));
    dict_free(&set->by_token);
}

static struct early_send *entry_new(struct early_sends *set, struct span token, uint64_t until_ms)
{
    struct early_send *e = malloc(sizeof *e + token.len + 1);
    if (!e)
        return NULL;
    if (token.len)
        memcpy(e->token, token.ptr, token.len);
    e->token[token.len] = '\0';
    e->until_ms = until_ms;
    buf_init(&e->bytes);
    if (dict_insert(&set->by_token, &e->entry, span_make(e->token, token.len)) != DICT_OK) {
        free(e);
        return NULL;
    }
    list_push_back(&set->fifo, &e->link);
    return e;
}

enum early_result early_sends_append(struct early_sends *set, struct span token, const void *data, size_t len,
                                     size_t max_bytes, uint64_t until_ms, uint64_t now_ms)
{
    prune(set, now_ms);
    struct dict_entry *found = dict_find(&set->by_token, token);
    struct early_send *e = found ? list_container_of(found, struct early_send, entry) : NULL;
    if ((e ? e->bytes.len : 0) + len > max_bytes)
        return EARLY_TOO_LARGE;
    if (!e && !(e = entry_new(set, token, until_ms)))
        return EARLY_NO_MEMORY;
    return buf_append(&e->bytes, data, len) ? EARLY_OK : EARLY_NO_MEMORY;
}

void early_sends_take(struct early_sends *set, struct span token, struct buf *out, uint64_t now_ms)
{
    prune(set, now_ms);
    struct dict_entry *found = dict_find(&set->by_token, token);
    if (!found)
        return;
    struct early_send *e = list_container_of(found, struct early_send, entry);
    *out = e->bytes;
    buf_init(&e->bytes);
    drop(set, e);
}
