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
 * Pages are POOL_PAGE_BYTES, aligned to their size, with a small header; a
 * record's page is found by masking its address. They are carved out of
 * blocks of POOL_BLOCK_BYTES mapped from the kernel (below). Each page keeps its own
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
 * Where pages come from: a struct pool_index maps blocks of POOL_BLOCK_BYTES
 * from the kernel (mmap), aligned to their size, lends their pages to pools,
 * returns a page's memory once it comes back (madvise) and unmaps a block with
 * its last page. Each pool has an index of its own; pools may share one
 * instead (pool_set_index). Not aligned_alloc: a 16 KiB aligned_alloc takes
 * 32 KiB from malloc's heap and frees the part before the aligned page (8 KiB
 * on average) between chunks that stay, where later small allocations settle
 * for good (measured in docs/BENCHMARKS.md, round of 2026-12-02 06:10). An
 * untouched page of a block costs address space, not memory. Under
 * AddressSanitizer a block is a LeakSanitizer root region, so what pooled
 * records point to is still seen, as in a malloc'd page.
 *
 * A shared index answers pool_index_owner: from any pointer, whether it lies
 * in a page lent to one of its pools and to which, without reading the memory
 * it points to. That is how an allocator that serves some chunks from pools
 * and the rest from malloc recognises its pooled ones on free (a malloc chunk
 * never lies inside a mapped block).
 *
 * OWNERSHIP: the pool owns its pages; the caller owns each record from
 * pool_alloc until pool_free. An index owns its blocks and its table; a page
 * lent to a pool is the pool's until it gives it back. A pool's own index's
 * table goes once the pool is closed and its last page released. A pool does
 * not move after pool_init (it points into itself). Not thread-safe (one per
 * event loop). */
#ifndef SR_POOL_H
#define SR_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/list.h"

#define POOL_PAGE_BYTES 16384u
#define POOL_BLOCK_BYTES (1u << 20) /* an index's blocks: 64 pages */
#define POOL_BLOCK_PAGES (POOL_BLOCK_BYTES / POOL_PAGE_BYTES)

/* Pages for some pools, from mapped blocks: an open-addressed table (linear probing) of block
 * address -> struct pool_block (which pool holds each of its pages), grown as blocks come. */
struct pool_index {
    struct pool_index_slot *slots; /* cap entries, or NULL while no block was mapped */
    size_t cap;                    /* a power of two, or 0 */
    size_t blocks;                 /* blocks mapped */
    size_t count;                  /* pages lent to pools */
    struct list_node with_free;    /* struct pool_block.link: blocks with a page not lent */
};

struct pool {
    size_t size;            /* slot size: the record's, rounded up to 8 */
    size_t per_page;        /* slots per page */
    struct list_node with_free; /* struct pool_page.link: pages with a free slot */
    size_t pages;           /* pages held */
    size_t empty_pages;     /* of which all free (at most 1, or 0 once closing) */
    size_t in_use;          /* records handed out */
    bool closing;           /* pool_close was called: release every page as it empties */
    struct pool_index *index; /* where its pages come from: &own, or a shared one (pool_set_index) */
    struct pool_index own;
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

/* The pool takes its pages from ix, shared with other pools, instead of its own index (call
 * before the first pool_alloc; ix must outlive the pool's last page). */
void pool_set_index(struct pool *p, struct pool_index *ix);

/* An empty index (maps and allocates nothing). */
void pool_index_init(struct pool_index *ix);
/* Frees the table; the index must be empty (every page given back, so every block unmapped). */
void pool_index_free(struct pool_index *ix);
/* The pool whose live page holds ptr, or NULL for any other pointer (NULL included). Reads only
 * the index, never *ptr. */
struct pool *pool_index_owner(const struct pool_index *ix, const void *ptr);
/* Pages lent to pools, and blocks mapped. */
static inline size_t pool_index_count(const struct pool_index *ix) { return ix->count; }
static inline size_t pool_index_blocks(const struct pool_index *ix) { return ix->blocks; }

static inline size_t pool_in_use(const struct pool *p) { return p->in_use; }
static inline size_t pool_pages(const struct pool *p) { return p->pages; }

#endif
