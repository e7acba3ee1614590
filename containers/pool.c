/* pool.c - pages of equal-sized records, each page with its own free list (see pool.h). */
#include "containers/pool.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
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
}

static struct pool_page *page_of(const void *record)
{
    return (struct pool_page *)((uintptr_t)record & ~(uintptr_t)(POOL_PAGE_BYTES - 1));
}

static char *slot_at(const struct pool *p, struct pool_page *page, size_t i)
{
    return (char *)page + PAGE_HEADER + i * p->size;
}

/* The index: page address -> pool, linear probing, deletion by shifting back (no tombstones). */
struct pool_index_slot {
    uintptr_t page; /* 0: empty */
    struct pool *owner;
};

static size_t index_home(const struct pool_index *ix, uintptr_t page)
{
    uint64_t h = (uint64_t)(page / POOL_PAGE_BYTES) * 0x9e3779b97f4a7c15u; /* Fibonacci hashing */
    return (size_t)(h >> 32) & (ix->cap - 1);
}

static bool index_grow(struct pool_index *ix)
{
    size_t cap = ix->cap ? ix->cap * 2 : 64;
    struct pool_index_slot *old = ix->slots, *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    size_t old_cap = ix->cap;
    ix->slots = slots;
    ix->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].page)
            continue;
        size_t j = index_home(ix, old[i].page);
        while (slots[j].page)
            j = (j + 1) & (cap - 1);
        slots[j] = old[i];
    }
    free(old);
    return true;
}

static bool index_add(struct pool_index *ix, const struct pool_page *page, struct pool *owner)
{
    if ((ix->count + 1) * 4 > ix->cap * 3 && !index_grow(ix)) /* at most 3/4 full */
        return false;
    size_t i = index_home(ix, (uintptr_t)page);
    while (ix->slots[i].page)
        i = (i + 1) & (ix->cap - 1);
    ix->slots[i] = (struct pool_index_slot){ (uintptr_t)page, owner };
    ix->count++;
    return true;
}

static size_t index_find(const struct pool_index *ix, uintptr_t page)
{
    if (!ix->cap)
        return SIZE_MAX;
    for (size_t i = index_home(ix, page);; i = (i + 1) & (ix->cap - 1)) {
        if (ix->slots[i].page == page)
            return i;
        if (!ix->slots[i].page)
            return SIZE_MAX;
    }
}

static void index_remove(struct pool_index *ix, const struct pool_page *page)
{
    size_t hole = index_find(ix, (uintptr_t)page);
    assert(hole != SIZE_MAX);
    size_t mask = ix->cap - 1;
    /* shift back each following entry of the run that may move into the hole */
    for (size_t j = (hole + 1) & mask; ix->slots[j].page; j = (j + 1) & mask) {
        size_t home = index_home(ix, ix->slots[j].page);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            ix->slots[hole] = ix->slots[j];
            hole = j;
        }
    }
    ix->slots[hole] = (struct pool_index_slot){ 0, NULL };
    ix->count--;
}

void pool_index_init(struct pool_index *ix)
{
    memset(ix, 0, sizeof(*ix));
}

void pool_index_free(struct pool_index *ix)
{
    assert(ix->count == 0);
    free(ix->slots);
    pool_index_init(ix);
}

struct pool *pool_index_owner(const struct pool_index *ix, const void *ptr)
{
    if (!ptr)
        return NULL;
    size_t i = index_find(ix, (uintptr_t)page_of(ptr));
    return i == SIZE_MAX ? NULL : ix->slots[i].owner;
}

void pool_set_index(struct pool *p, struct pool_index *ix)
{
    assert(p->pages == 0);
    p->index = ix;
}

static struct pool_page *page_new(struct pool *p)
{
    struct pool_page *page = aligned_alloc(POOL_PAGE_BYTES, POOL_PAGE_BYTES);
    if (!page)
        return NULL;
    if (p->index && !index_add(p->index, page, p)) {
        free(page);
        return NULL;
    }
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
    if (p->index)
        index_remove(p->index, page);
    free(page);
    p->pages--;
    p->empty_pages--;
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
}
