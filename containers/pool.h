/* pool.h - a dense pool of equal-sized records, for the long-lived ones of each client.
 *
 * Why: malloc places a client's long-lived records wherever a hole fits,
 * among what the connections in flight allocate only until their handshake
 * is done; when those are freed the holes stay between the long-lived
 * chunks (docs/BENCHMARKS.md, service mode's memory). A pool takes its
 * records from pages of its own, filled slot after slot, so they do not
 * interleave with short-lived allocations, and a slot carries no malloc
 * header and no rounding to 16 (a record costs its size rounded up to 8:
 * records that need more alignment than 8 do not belong here).
 *
 * Pages are POOL_PAGE_BYTES, aligned to their size (aligned_alloc, so
 * LeakSanitizer still sees what records point to), with a small header; a
 * record's page is found by masking its address. Each page keeps its own
 * list of free slots; allocation takes from the last page on the list of
 * pages with a free slot (a page joins it at the tail when a record of it
 * is freed while it was full), else from a new page. A
 * page whose records are all freed is released at once unless it is the
 * only empty page (one is kept so that a client coming and going at the
 * boundary does not allocate and free a page each time). So after a peak
 * the memory of the emptied pages goes back to malloc; a page with a single
 * live record stays whole.
 *
 * Under AddressSanitizer a free slot is poisoned: a use after pool_free or a
 * read past a record into its neighbour's free slot is reported as it would
 * be for malloc'd memory.
 *
 * A pool may register its pages in a struct pool_index (pool_set_index), which
 * several pools can share: pool_index_owner then tells, from any pointer,
 * whether it lies in a live page of one of them and which, without reading
 * the memory it points to. That is how an allocator that serves some chunks
 * from pools and the rest from malloc recognises its pooled ones on free: a
 * malloc chunk can never lie inside a live page (the page is itself a live
 * allocation), so masking the pointer and looking the page up is sound.
 *
 * OWNERSHIP: the pool owns its pages; the caller owns each record from
 * pool_alloc until pool_free. An index owns only its table (page addresses),
 * never the pages. Not thread-safe (one per event loop). */
#ifndef SR_POOL_H
#define SR_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/list.h"

#define POOL_PAGE_BYTES 16384u

struct pool_index;

struct pool {
    size_t size;            /* slot size: the record's, rounded up to 8 */
    size_t per_page;        /* slots per page */
    struct list_node with_free; /* struct pool_page.link: pages with a free slot */
    size_t pages;           /* pages held */
    size_t empty_pages;     /* of which all free (at most 1, or 0 once closing) */
    size_t in_use;          /* records handed out */
    bool closing;           /* pool_close was called: release every page as it empties */
    struct pool_index *index; /* where its pages are registered, or NULL (pool_set_index) */
};

/* The live pages of some pools, by address: an open-addressed table (linear probing) of
 * page address -> owning pool, grown as pages come. */
struct pool_index {
    struct pool_index_slot *slots; /* cap entries, or NULL while nothing was registered */
    size_t cap;                    /* a power of two, or 0 */
    size_t count;                  /* pages registered */
};

/* A pool of records of `size` bytes (1 to POOL_PAGE_BYTES / 4). Allocates nothing. */
void pool_init(struct pool *p, size_t size);
/* A zeroed record, or NULL when out of memory. */
void *pool_alloc(struct pool *p);
/* Returns a record of this pool (NULL: nothing). */
void pool_free(struct pool *p, void *record);
/* The owner is (about to be) done: the empty pages go now, every other one
 * as its last record is freed, none is kept empty from now on (the struct
 * must stay valid until the last record is freed). */
void pool_close(struct pool *p);

/* Registers the pool's pages in ix from now on (call before the first pool_alloc; ix must
 * outlive the pool's last page). A page that cannot be registered (out of memory) is not made:
 * pool_alloc returns NULL. */
void pool_set_index(struct pool *p, struct pool_index *ix);

/* An empty index (allocates nothing). */
void pool_index_init(struct pool_index *ix);
/* Frees the table; the index must be empty (every page registered in it released). */
void pool_index_free(struct pool_index *ix);
/* The pool whose live page holds ptr, or NULL for any other pointer (NULL included). Reads only
 * the index, never *ptr. */
struct pool *pool_index_owner(const struct pool_index *ix, const void *ptr);
static inline size_t pool_index_count(const struct pool_index *ix) { return ix->count; }

static inline size_t pool_in_use(const struct pool *p) { return p->in_use; }
static inline size_t pool_pages(const struct pool *p) { return p->pages; }

#endif
