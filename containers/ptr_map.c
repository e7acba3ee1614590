/* ptr_map.c - records found by the pointer they are about (see ptr_map.h). */
#include "containers/ptr_map.h"

#include "containers/list.h"

static struct span key_of(const void *const *ptr)
{
    return span_make((const char *)ptr, sizeof *ptr);
}

void ptr_map_init(struct ptr_map *m, const uint8_t seed[DICT_SEED_LEN])
{
    dict_init(&m->by_ptr, seed);
}

bool ptr_map_add(struct ptr_map *m, struct ptr_map_entry *e, const void *ptr)
{
    e->ptr = ptr;
    return dict_insert(&m->by_ptr, &e->entry, key_of(&e->ptr)) == DICT_OK;
}

struct ptr_map_entry *ptr_map_find(struct ptr_map *m, const void *ptr)
{
    if (dict_count(&m->by_ptr) == 0)
        return NULL;
    struct dict_entry *e = dict_find(&m->by_ptr, key_of(&ptr));
    return e ? list_container_of(e, struct ptr_map_entry, entry) : NULL;
}

void ptr_map_remove(struct ptr_map *m, struct ptr_map_entry *e)
{
    dict_remove(&m->by_ptr, &e->entry);
}

void ptr_map_clear(struct ptr_map *m, void (*release)(struct ptr_map_entry *e, void *ctx), void *ctx)
{
    struct dict_iter it;
    struct dict_entry *e;
    dict_iter_begin(&it, &m->by_ptr);
    while ((e = dict_iter_next(&it))) {
        dict_remove(&m->by_ptr, e);
        release(list_container_of(e, struct ptr_map_entry, entry), ctx);
    }
    dict_iter_end(&it);
    dict_free(&m->by_ptr);
}
