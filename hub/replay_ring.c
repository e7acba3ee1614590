/* replay_ring.c - bounded ring of recent legacy messages (see replay_ring.h). */
#include "hub/replay_ring.h"

#include <stdlib.h>
#include <string.h>

void replay_ring_init(struct replay_ring *r, size_t max_count, size_t max_bytes)
{
    list_init_head(&r->entries);
    r->next_seq = 1;
    r->count = 0;
    r->bytes = 0;
    r->max_count = max_count;
    r->max_bytes = max_bytes;
}

struct replay_text *replay_text_new(const char *data, size_t len)
{
    struct replay_text *t = malloc(sizeof *t + len);
    if (!t)
        return NULL;
    t->refs = 1;
    t->len = len;
    memcpy(t->data, data, len);
    return t;
}

void replay_text_unref(struct replay_text *t)
{
    if (t && --t->refs == 0)
        free(t);
}

static void evict_oldest(struct replay_ring *r)
{
    struct replay_entry *e = list_container_of(r->entries.next, struct replay_entry, link);
    list_unlink(&e->link);
    r->count--;
    r->bytes -= e->text->len;
    replay_text_unref(e->text);
    free(e);
}

void replay_ring_free(struct replay_ring *r)
{
    while (!list_is_empty(&r->entries))
        evict_oldest(r);
}

uint64_t replay_ring_append(struct replay_ring *r, const char *data, size_t len)
{
    struct replay_text *t = replay_text_new(data, len);
    if (!t)
        return 0;
    uint64_t seq = replay_ring_append_text(r, t);
    replay_text_unref(t);
    return seq;
}

uint64_t replay_ring_append_text(struct replay_ring *r, struct replay_text *t)
{
    struct replay_entry *e = malloc(sizeof *e);
    if (!e)
        return 0;
    e->seq = r->next_seq++;
    e->text = replay_text_ref(t);
    list_push_back(&r->entries, &e->link);
    r->count++;
    r->bytes += t->len;
    /* Keep at least the newest message, whatever its size. */
    while (r->count > 1 && (r->count > r->max_count || r->bytes > r->max_bytes))
        evict_oldest(r);
    return e->seq;
}

enum replay_result replay_ring_after(const struct replay_ring *r, uint64_t cursor,
                                     void (*visit)(void *ctx, const struct replay_entry *e), void *ctx)
{
    uint64_t last = replay_ring_last_seq(r);
    if (cursor > last)
        return REPLAY_GAP;
    if (cursor == last)
        return REPLAY_OK;
    uint64_t oldest = list_is_empty(&r->entries)
                          ? r->next_seq
                          : list_container_of(r->entries.next, struct replay_entry, link)->seq;
    if (cursor + 1 < oldest)
        return REPLAY_GAP;
    if (!visit)
        return REPLAY_OK;
    for (const struct list_node *n = r->entries.next; n != &r->entries; n = n->next) {
        const struct replay_entry *e = list_container_of(n, const struct replay_entry, link);
        if (e->seq > cursor)
            visit(ctx, e);
    }
    return REPLAY_OK;
}
