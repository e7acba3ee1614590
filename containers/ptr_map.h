/* ptr_map.h - records found by the pointer they are about.
 *
 * The relay keeps small records beside objects it does not own (a
 * libwebsockets connection waiting for its next head, a body being drained, a
 * socket lingering): each is found again from the object's pointer alone. A
 * ptr_map is a dict keyed by the pointer's value. Entries are intrusive, as in
 * dict.h: a struct ptr_map_entry lives inside the caller's record, which the
 * caller allocates and frees; the map allocates only its bucket arrays. */
#ifndef SR_PTR_MAP_H
#define SR_PTR_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "containers/dict.h"

struct ptr_map_entry {
    struct dict_entry entry;
    const void *ptr; /* the key: the pointer's value */
};

struct ptr_map {
    struct dict by_ptr;
};

void ptr_map_init(struct ptr_map *m, const uint8_t seed[DICT_SEED_LEN]);

/* Links e under ptr. False (e not linked) when ptr is already there or out of memory. */
bool ptr_map_add(struct ptr_map *m, struct ptr_map_entry *e, const void *ptr);

/* The entry linked under ptr, or NULL. */
struct ptr_map_entry *ptr_map_find(struct ptr_map *m, const void *ptr);

/* Unlinks e, which must be linked in m. */
void ptr_map_remove(struct ptr_map *m, struct ptr_map_entry *e);

static inline size_t ptr_map_count(const struct ptr_map *m) { return dict_count(&m->by_ptr); }

/* Unlinks every entry, handing each to release (which may free its record), then frees the
 * bucket arrays. The map is empty and usable afterwards. */
void ptr_map_clear(struct ptr_map *m, void (*release)(struct ptr_map_entry *e, void *ctx), void *ctx);

#endif
