/* pool.c - pages of equal-sized records, each page with its own free list; an index's mapped blocks of pages (see pool.h). */
#include "containers/pool.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN 1
#endif
#endif
#ifdef POOL_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#include <sanitizer/lsan_interface.h>
#define LSAN_ROOT(p, n) __lsan_register_root_region((p), (n))
#define LSAN_UNROOT(p, n) __lsan_unregister_root_region((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#define LSAN_ROOT(p, n) ((void)(p), (void)(n))
#define LSAN_UNROOT(p, n) ((void)(p), (void)(n))
#endif

struct pool_slot {
    struct pool_slot *next; /* the page's next free slot (only while free) */
};

struct pool_page {
    struct list_node link;  /* in pool->with_free while it has a free slot */
    struct pool_slot *free; /* its free slots */
    uint32_t used;          /* its records handed out */
};

/* Slots begin after the header, 16-aligned. */
#define PAGE_HEADER (((sizeof(struct pool_page)) + 15u) & ~(size_t)15u)

void pool_init(struct pool *p, size_t size)
{
    assert(size > 0 && size <= POOL_PAGE_BYTES / 4);
    memset(p, 0, sizeof(*p));
    /* 8-byte slots: the records pooled hold nothing aligned to more than a pointer or a uint64_t. */
    p->size = (size + 7u) & ~(size_t)7u;
    if (p->size < sizeof(struct pool_slot))
        p->size = sizeof(struct pool_slot);
    p->per_page = (POOL_PAGE_BYTES - PAGE_HEADER) / p->size;
    list_init_head(&p->with_free);
    pool_index_init(&p->own);
    p->index = &p->own;
}

static struct pool_page *page_of(const void *record)
{
    return (struct pool_page *)((uintptr_t)record & ~(uintptr_t)(POOL_PAGE_BYTES - 1));
}

static char *slot_at(const struct pool *p, struct pool_page *page, size_t i)
{
    return (char *)page + PAGE_HEADER + i * p->size;
}

/* The index: blocks mapped from the kernel, found by address (linear probing, deletion by
 * shifting back: no tombstones); each block says which pool holds each of its pages. */
struct pool_block {
    char *base;                               /* POOL_BLOCK_BYTES, aligned to that */
    struct pool *owner[POOL_BLOCK_PAGES];     /* the pool each page is lent to, NULL: not lent */
    uint32_t lent;                            /* pages lent */
    struct list_node link;                    /* in ix->with_free while a page is not lent */
};

struct pool_index_slot {
    uintptr_t base; /* 0: empty */
    struct pool_block *block;
};

static size_t index_home(const struct pool_index *ix, uintptr_t base)
{
    uint64_t h = (uint64_t)(base / POOL_BLOCK_BYTES) * 0x9e3779b97f4a7c15u; /* Fibonacci hashing */
    return (size_t)(h >> 32) & (ix->cap - 1);
}

static bool index_grow(struct pool_index *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 16;
    struct pool_index_slot *old = ix->slots, *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    size_t old_cap = ix->cap;
    ix->slots = slots;
    ix->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].base)
            continue;
        size_t j = index_home(ix, old[i].base);
        while (slots[j].base)
            j = (j + 1) & (cap - 1);
        slots[j] = old[i];
    }
    free(old);
    return true;
}

static size_t index_find(const struct pool_index *ix, uintptr_t base)
{
    if (!ix->cap)
        return SIZE_MAX;
    for (size_t i = index_home(ix, base);; i = (i + 1) & (ix->cap - 1)) {
        if (ix->slots[i].base == base)
            return i;
        if (!ix->slots[i].base)
            return SIZE_MAX;
    }
}

static bool index_add(struct pool_index *ix, struct pool_block *block)
{
    if ((ix->blocks + 1) * 4 > ix->cap * 3 && !index_grow(ix)) /* at most 3/4 full */
        return false;
    size_t i = index_home(ix, (uintptr_t)block->base);
    while (ix->slots[i].base)
        i = (i + 1) & (ix->cap - 1);
    ix->slots[i] = (struct pool_index_slot){ (uintptr_t)block->base, block };
    ix->blocks++;
    return true;
}

static void index_remove(struct pool_index *ix, const struct pool_block *block)
{
    size_t hole = index_find(ix, (uintptr_t)block->base);
    assert(hole != SIZE_MAX);
    size_t mask = ix->cap - 1;
    /* shift back each following entry of the run whose home lets it move into the hole */
    for (size_t j = (hole + 1) & mask; ix->slots[j].base; j = (j + 1) & mask) {
        size_t home = index_home(ix, ix->slots[j].base);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            ix->slots[hole] = ix->slots[j];
            hole = j;
        }
    }
    ix->slots[hole] = (struct pool_index_slot){ 0, NULL };
    ix->blocks--;
}

/* POOL_BLOCK_BYTES from the kernel, aligned to their size: twice that mapped, the rest unmapped. */
static char *block_map(void)
{
    size_t len = 2 * (size_t)POOL_BLOCK_BYTES;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    char *base = (char *)(((uintptr_t)m + POOL_BLOCK_BYTES - 1) & ~(uintptr_t)(POOL_BLOCK_BYTES - 1));
    if (base > m)
        munmap(m, (size_t)(base - m));
    if (base + POOL_BLOCK_BYTES < m + len)
        munmap(base + POOL_BLOCK_BYTES, (size_t)(m + len - (base + POOL_BLOCK_BYTES)));
    return base;
}

static struct pool_block *block_new(struct pool_index *ix)
{
    struct pool_block *block = calloc(1, sizeof *block);
    if (!block)
        return NULL;
    if (!(block->base = block_map()) || !index_add(ix, block)) {
        if (block->base)
            munmap(block->base, POOL_BLOCK_BYTES);
        free(block);
        return NULL;
    }
    LSAN_ROOT(block->base, POOL_BLOCK_BYTES);
    list_push_back(&ix->with_free, &block->link);
    return block;
}

static void block_release(struct pool_index *ix, struct pool_block *block)
{
    LSAN_UNROOT(block->base, POOL_BLOCK_BYTES);
    list_unlink(&block->link);
    index_remove(ix, block);
    munmap(block->base, POOL_BLOCK_BYTES);
    free(block);
}

/* A page lent to p: from the last block with a page not lent, else from a new block. */
static void *index_page_take(struct pool_index *ix, struct pool *p)
{
    struct pool_block *block = list_is_empty(&ix->with_free)
                                   ? block_new(ix)
                                   : list_container_of(ix->with_free.prev, struct pool_block, link);
    if (!block)
        return NULL;
    size_t i = 0;
    while (block->owner[i])
        i++;
    block->owner[i] = p;
    if (++block->lent == POOL_BLOCK_PAGES)
        list_unlink(&block->link);
    ix->count++;
    return block->base + i * POOL_PAGE_BYTES;
}

static struct pool_block *block_of(const struct pool_index *ix, const void *ptr)
{
    size_t i = index_find(ix, (uintptr_t)ptr & ~(uintptr_t)(POOL_BLOCK_BYTES - 1));
    return i == SIZE_MAX ? NULL : ix->slots[i].block;
}

/* A page given back: its memory returned to the kernel at once, the block unmapped with its last page. */
static void index_page_give(struct pool_index *ix, void *page)
{
    struct pool_block *block = block_of(ix, page);
    assert(block);
    size_t i = (size_t)((char *)page - block->base) / POOL_PAGE_BYTES;
    assert(block->owner[i]);
    block->owner[i] = NULL;
    ix->count--;
    if (block->lent-- == POOL_BLOCK_PAGES)
        list_push_back(&ix->with_free, &block->link);
    if (block->lent == 0)
        block_release(ix, block);
    else
        madvise(page, POOL_PAGE_BYTES, MADV_DONTNEED);
}

void pool_index_init(struct pool_index *ix)
{
    memset(ix, 0, sizeof(*ix));
    list_init_head(&ix->with_free);
}

void pool_index_free(struct pool_index *ix)
{
    assert(ix->count == 0 && ix->blocks == 0);
    free(ix->slots);
    pool_index_init(ix);
}

struct pool *pool_index_owner(const struct pool_index *ix, const void *ptr)
{
    if (!ptr)
        return NULL;
    const struct pool_block *block = block_of(ix, ptr);
    return block ? block->owner[(size_t)((const char *)ptr - block->base) / POOL_PAGE_BYTES] : NULL;
}

void pool_set_index(struct pool *p, struct pool_index *ix)
{
    assert(p->pages == 0 && p->own.slots == NULL);
    p->index = ix;
}

static struct pool_page *page_new(struct pool *p)
{
    struct pool_page *page = index_page_take(p->index, p);
    if (!page)
        return NULL;
    page->used = 0;
    page->free = NULL;
    for (size_t i = p->per_page; i-- > 0;) { /* slot 0 first: records fill the page in address order */
        struct pool_slot *s = (struct pool_slot *)slot_at(p, page, i);
        s->next = page->free;
        page->free = s;
        POISON(s, p->size);
    }
    list_push_back(&p->with_free, &page->link);
    p->pages++;
    p->empty_pages++;
    return page;
}

static void page_release(struct pool *p, struct pool_page *page)
{
    list_unlink(&page->link);
    UNPOISON((char *)page + PAGE_HEADER, p->per_page * p->size);
    index_page_give(p->index, page);
    p->pages--;
    p->empty_pages--;
    if (p->closing && p->pages == 0 && p->index == &p->own)
        pool_index_free(&p->own); /* the last page of a closed pool: its own table too */
}

void *pool_alloc(struct pool *p)
{
    struct pool_page *page = list_is_empty(&p->with_free)
                                 ? page_new(p)
                                 : list_container_of(p->with_free.prev, struct pool_page, link);
    if (!page)
        return NULL;
    struct pool_slot *s = page->free;
    UNPOISON(s, p->size);
    page->free = s->next;
    if (page->used++ == 0)
        p->empty_pages--;
    if (!page->free)
        list_unlink(&page->link);
    p->in_use++;
    memset(s, 0, p->size);
    return s;
}

void pool_free(struct pool *p, void *record)
{
    if (!record)
        return;
    struct pool_page *page = page_of(record);
    assert(page->used > 0 && p->in_use > 0);
    struct pool_slot *s = record;
    bool was_full = page->free == NULL;
    s->next = page->free;
    page->free = s;
    POISON(s, p->size);
    p->in_use--;
    if (was_full)
        list_push_back(&p->with_free, &page->link); /* the next allocation takes from it */
    if (--page->used > 0)
        return;
    p->empty_pages++;
    if (p->closing || p->empty_pages > 1)
        page_release(p, page);
}

void pool_close(struct pool *p)
{
    p->closing = true;
    struct list_node *n = p->with_free.next;
    while (n != &p->with_free) {
        struct pool_page *page = list_container_of(n, struct pool_page, link);
        n = n->next;
        if (page->used == 0)
            page_release(p, page);
    }
    if (p->pages == 0 && p->index == &p->own)
        pool_index_free(&p->own);
}
