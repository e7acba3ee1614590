/* test_pool.c - the records' pool: distinct zeroed 8-aligned records, pages filled and released, reuse, close, poisoning, the page index. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "containers/pool.h"

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define RECORD 296 /* struct core_session's size today */

static bool all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void test_fill_and_release(void)
{
    struct pool p;
    pool_init(&p, RECORD);
    CHECK_EQ_INT(p.size, RECORD);
    CHECK(p.per_page >= 50);
    CHECK_EQ_INT(pool_pages(&p), 0); /* allocates nothing until asked */
    size_t n = 3 * p.per_page + 5;
    unsigned char **r = calloc(n, sizeof *r);
    for (size_t i = 0; i < n; i++) {
        r[i] = pool_alloc(&p);
        CHECK(r[i] != NULL);
        CHECK(((uintptr_t)r[i] & 7u) == 0);
        CHECK(all_zero(r[i], RECORD));
        memset(r[i], (int)(i & 0xff) | 1, RECORD); /* every byte written: ASan would catch an overlap */
    }
    CHECK_EQ_INT(pool_in_use(&p), n);
    CHECK_EQ_INT(pool_pages(&p), 4);
    /* records of one page are consecutive slots: no header between them */
    CHECK(r[1] - r[0] == RECORD);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < RECORD; j += 37)
            CHECK_EQ_INT(r[i][j], (int)(i & 0xff) | 1);
    /* free every other record, then reuse: the freed slots come back zeroed */
    for (size_t i = 0; i < n; i += 2)
        pool_free(&p, r[i]);
    CHECK_EQ_INT(pool_pages(&p), 4);
    for (size_t i = 0; i < n; i += 2) {
        r[i] = pool_alloc(&p);
        CHECK(r[i] != NULL && all_zero(r[i], RECORD));
    }
    CHECK_EQ_INT(pool_pages(&p), 4); /* the holes were filled first */
    /* free all: one empty page is kept, the others go */
    for (size_t i = 0; i < n; i++)
        pool_free(&p, r[i]);
    CHECK_EQ_INT(pool_in_use(&p), 0);
    CHECK_EQ_INT(pool_pages(&p), 1);
    pool_free(&p, NULL);
    /* the kept page serves the next record; close releases it once that record goes */
    r[0] = pool_alloc(&p);
    CHECK_EQ_INT(pool_pages(&p), 1);
    r[1] = pool_alloc(&p);
    pool_free(&p, r[1]);
    pool_close(&p);
    CHECK_EQ_INT(pool_pages(&p), 1);
    pool_free(&p, r[0]);
    CHECK_EQ_INT(pool_pages(&p), 0); /* nothing left for LeakSanitizer to find */
    free(r);
}

/* A page that empties while another empty one is kept is released; a full page freed into joins
 * the list and is used again before a new page is made. */
static void test_churn(void)
{
    struct pool p;
    pool_init(&p, 1);
    CHECK_EQ_INT(p.size, 8);
    size_t n = 2 * p.per_page;
    void **r = calloc(n, sizeof *r);
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < n; i++)
            CHECK((r[i] = pool_alloc(&p)) != NULL);
        CHECK_EQ_INT(pool_pages(&p), 2);
        pool_free(&p, r[0]);       /* page 1 has a free slot again */
        CHECK((r[0] = pool_alloc(&p)) != NULL);
        CHECK_EQ_INT(pool_pages(&p), 2);
        for (size_t i = 0; i < n; i++)
            pool_free(&p, r[(i * 7919) % n]); /* n is even and 7919 prime: a permutation */
        CHECK_EQ_INT(pool_pages(&p), 1);
    }
    pool_close(&p);
    CHECK_EQ_INT(pool_pages(&p), 0);
    free(r);
}

static void test_poisoned(void)
{
#ifdef TEST_ASAN
    struct pool p;
    pool_init(&p, RECORD);
    char *a = pool_alloc(&p), *b = pool_alloc(&p);
    CHECK(!__asan_address_is_poisoned(a) && !__asan_address_is_poisoned(a + RECORD - 1));
    CHECK(__asan_address_is_poisoned(b + RECORD)); /* the next slot, never handed out */
    pool_free(&p, a);
    CHECK(__asan_address_is_poisoned(a) && __asan_address_is_poisoned(a + RECORD - 1));
    CHECK(!__asan_address_is_poisoned(b));
    pool_free(&p, b);
    pool_close(&p);
    CHECK_EQ_INT(pool_pages(&p), 0);
#else
    CHECK(1); /* poisoning exists only under AddressSanitizer */
#endif
}

/* Two pools share an index: their pages come from its blocks; a record's pool is found from its
 * address, anything else (a malloc chunk, a stack address, NULL, an address in a page already
 * released) is not claimed; blocks go when their last page does. */
static void test_index(void)
{
    struct pool_index ix;
    pool_index_init(&ix);
    CHECK(pool_index_owner(&ix, &ix) == NULL); /* empty: no table yet */
    struct pool a, b;
    pool_init(&a, RECORD);
    pool_init(&b, 24);
    pool_set_index(&a, &ix);
    pool_set_index(&b, &ix);
    size_t n = 40 * a.per_page; /* 40 pages of a: the table grows past its first size */
    char **ra = calloc(n, sizeof *ra), **rb = calloc(n, sizeof *rb);
    for (size_t i = 0; i < n; i++) {
        ra[i] = pool_alloc(&a);
        rb[i] = pool_alloc(&b);
        CHECK(ra[i] && rb[i]);
    }
    CHECK_EQ_INT(pool_index_count(&ix), pool_pages(&a) + pool_pages(&b));
    /* pages come from mapped blocks, 64 each: 40 + a few pages of a, n 24-byte records of b */
    CHECK_EQ_INT(pool_index_blocks(&ix), (pool_index_count(&ix) + POOL_BLOCK_PAGES - 1) / POOL_BLOCK_PAGES);
    for (size_t i = 0; i < n; i++) {
        CHECK(pool_index_owner(&ix, ra[i]) == &a);
        CHECK(pool_index_owner(&ix, ra[i] + RECORD - 1) == &a); /* any byte of the record */
        CHECK(pool_index_owner(&ix, rb[i]) == &b);
    }
    for (int k = 0; k < 100; k++) { /* malloc chunks of assorted sizes are never claimed */
        void *m = malloc((size_t)k * 97 + 1);
        CHECK(pool_index_owner(&ix, m) == NULL);
        free(m);
    }
    int local;
    CHECK(pool_index_owner(&ix, &local) == NULL);
    CHECK(pool_index_owner(&ix, NULL) == NULL);
    /* free a's records in a scattered order: each released page leaves the index, the others
     * stay found (deletion shifts the probe runs back correctly) */
    uintptr_t first = (uintptr_t)ra[0];
    for (size_t i = 0; i < n; i++) {
        size_t j = (i * 7919) % n;
        pool_free(&a, ra[j]);
        ra[j] = NULL;
        if (i % 97 == 0)
            for (size_t k = 0; k < n; k++)
                if (ra[k])
                    CHECK(pool_index_owner(&ix, ra[k]) == &a);
    }
    CHECK_EQ_INT(pool_pages(&a), 1); /* one empty page kept */
    CHECK_EQ_INT(pool_index_count(&ix), 1 + pool_pages(&b));
    for (size_t i = 0; i < n; i++)
        CHECK(pool_index_owner(&ix, rb[i]) == &b);
    pool_close(&a);
    CHECK(pool_index_owner(&ix, (const void *)first) == NULL || pool_pages(&a) == 1);
    for (size_t i = 0; i < n; i++)
        pool_free(&b, rb[i]);
    pool_close(&b);
    CHECK_EQ_INT(pool_pages(&a) + pool_pages(&b), 0);
    CHECK_EQ_INT(pool_index_count(&ix), 0);
    CHECK_EQ_INT(pool_index_blocks(&ix), 0); /* every block unmapped with its last page */
    CHECK(pool_index_owner(&ix, (const void *)first) == NULL); /* released: no longer claimed */
    pool_index_free(&ix);
    free(ra);
    free(rb);
}

/* A pool alone takes its pages from an index of its own: blocks mapped, unmapped with their last
 * page; closing it frees its table (LeakSanitizer would report it otherwise). */
static void test_own_index(void)
{
    struct pool p;
    pool_init(&p, RECORD);
    CHECK(p.index == &p.own);
    CHECK_EQ_INT(pool_index_blocks(&p.own), 0); /* maps nothing until asked */
    size_t n = (POOL_BLOCK_PAGES + 2) * p.per_page; /* two blocks */
    void **r = calloc(n, sizeof *r);
    for (size_t i = 0; i < n; i++)
        CHECK((r[i] = pool_alloc(&p)) != NULL);
    CHECK_EQ_INT(pool_pages(&p), POOL_BLOCK_PAGES + 2);
    CHECK_EQ_INT(pool_index_blocks(&p.own), 2);
    CHECK(pool_index_owner(&p.own, r[n - 1]) == &p);
    for (size_t i = 0; i < n; i++)
        pool_free(&p, r[i]);
    CHECK_EQ_INT(pool_pages(&p), 1); /* one empty page kept, in one block */
    CHECK_EQ_INT(pool_index_blocks(&p.own), 1);
    CHECK((r[0] = pool_alloc(&p)) != NULL);
    pool_close(&p);
    CHECK(p.own.slots != NULL); /* a page is still lent */
    pool_free(&p, r[0]);
    CHECK_EQ_INT(pool_pages(&p), 0);
    CHECK(p.own.slots == NULL && pool_index_blocks(&p.own) == 0);
    struct pool q; /* closed without ever allocating */
    pool_init(&q, 8);
    pool_close(&q);
    CHECK(q.own.slots == NULL);
    free(r);
}

int main(void)
{
    test_fill_and_release();
    test_churn();
    test_poisoned();
    test_index();
    test_own_index();
    return test_main_result("test_pool");
}
