/* test_lws_memory.c - libwebsockets' allocator without libwebsockets: which chunks it pools, that
 * it recognises them on free and realloc, that a realloc moves a pooled chunk, that libc's chunks
 * stay libc's, and that release gives every page back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "relay/lws_memory.h"

#define WSI 952   /* sizeof(struct lws) + libev's part in Debian's 4.1.6 */
#define WS 224    /* the WebSocket state */
#define RX 276    /* rx_buffer_size 256 + LWS_PRE + 4 */

static void test_long_lived_pooled(void)
{
    void *wsi = lws_memory_realloc(NULL, WSI, "new server wsi");
    void *ws = lws_memory_realloc(NULL, WS, "ws struct");
    void *rx = lws_memory_realloc(NULL, RX, "rx_ubuf");
    void *link = lws_memory_realloc(NULL, WSI, "client wsi");
    void *cws = lws_memory_realloc(NULL, WS, "client ws struct");
    CHECK(wsi && ws && rx && link && cws);
    CHECK_EQ_INT(lws_memory_pooled(), 5);
    CHECK_EQ_INT(lws_memory_pages(), 3); /* one pool per size: 952, 224, 280 */
    CHECK(((uintptr_t)wsi & 7u) == 0 && ((uintptr_t)rx & 7u) == 0);
    /* a server and a client wsi of one size share the pool: consecutive slots */
    CHECK((char *)link - (char *)wsi == WSI);
    memset(wsi, 1, WSI); /* the whole chunk is writable (ASan would say otherwise) */
    memset(rx, 2, RX);
    lws_memory_realloc(wsi, 0, "lws_free");
    lws_memory_realloc(ws, 0, "free");
    lws_memory_realloc(rx, 0, "lws_free");
    lws_memory_realloc(link, 0, "lws_free");
    lws_memory_realloc(cws, 0, "lws_free");
    CHECK_EQ_INT(lws_memory_pooled(), 0);
}

static void test_others_libc(void)
{
    /* transient and unknown reasons, a NULL reason, and a long-lived reason too large for a pool */
    const char *reasons[] = { "ah struct", "ah data", "vhost", NULL, "rx_ubuf" };
    size_t sizes[] = { 512, 4096, 100, 64, 16404 };
    for (size_t i = 0; i < 5; i++) {
        void *p = lws_memory_realloc(NULL, sizes[i], reasons[i]);
        CHECK(p != NULL);
        memset(p, 3, sizes[i]);
        p = lws_memory_realloc(p, sizes[i] * 2, reasons[i]); /* libc's realloc */
        CHECK(p != NULL);
        lws_memory_realloc(p, 0, "lws_free"); /* libc's free: ASan/LSan would see a mismatch */
    }
    CHECK_EQ_INT(lws_memory_pooled(), 0);
    CHECK(lws_memory_realloc(NULL, 0, "x") == NULL);
    lws_memory_realloc(NULL, 0, "lws_free"); /* freeing NULL: nothing */
    /* a chunk from libc's malloc (as lws' own strdup-like helpers make) is freed by libc */
    char *m = malloc(WS);
    lws_memory_realloc(m, 0, "lws_free");
}

static void test_realloc_moves(void)
{
    unsigned char *a = lws_memory_realloc(NULL, WS, "ws struct");
    for (int i = 0; i < WS; i++)
        a[i] = (unsigned char)i;
    /* the same slot size: stays */
    CHECK(lws_memory_realloc(a, WS - 3, "ws struct") == a);
    /* another pooled size: moves, contents kept */
    unsigned char *b = lws_memory_realloc(a, RX, "rx_ubuf");
    CHECK(b != NULL && b != a);
    for (int i = 0; i < WS; i++)
        CHECK_EQ_INT(b[i], (unsigned char)i);
    /* smaller, into another pool: the first bytes kept */
    unsigned char *c = lws_memory_realloc(b, 40, "ws struct");
    CHECK(c != NULL && c != b);
    for (int i = 0; i < 40; i++)
        CHECK_EQ_INT(c[i], (unsigned char)i);
    /* too large for any pool: moves to libc, then libc's realloc and free */
    unsigned char *d = lws_memory_realloc(c, 8000, "rx_ubuf");
    CHECK(d != NULL);
    for (int i = 0; i < 40; i++)
        CHECK_EQ_INT(d[i], (unsigned char)i);
    CHECK_EQ_INT(lws_memory_pooled(), 0);
    d = lws_memory_realloc(d, 9000, "rx_ubuf");
    CHECK(d && d[39] == 39);
    lws_memory_realloc(d, 0, "lws_free");
}

static void test_churn_and_release(void)
{
    enum { N = 3000 };
    void **wsi = calloc(N, sizeof *wsi);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            wsi[i] = lws_memory_realloc(NULL, WSI, "new server wsi");
            void *ah = lws_memory_realloc(NULL, 700, "ah struct"); /* transient, between them */
            CHECK(wsi[i] && ah);
            lws_memory_realloc(ah, 0, "lws_free");
        }
        CHECK_EQ_INT(lws_memory_pooled(), N);
        for (int i = 0; i < N; i++)
            lws_memory_realloc(wsi[(i * 7919) % N], 0, "lws_free");
        CHECK_EQ_INT(lws_memory_pooled(), 0);
    }
    free(wsi);
    lws_memory_release();
    CHECK_EQ_INT(lws_memory_pages(), 0); /* every page given back: nothing for LeakSanitizer */
    /* after release: libc for everything */
    void *late = lws_memory_realloc(NULL, WSI, "new server wsi");
    CHECK(late != NULL);
    CHECK_EQ_INT(lws_memory_pooled(), 0);
    lws_memory_realloc(late, 0, "lws_free");
}

int main(void)
{
    test_long_lived_pooled();
    test_others_libc();
    test_realloc_moves();
    test_churn_and_release();
    return test_main_result("test_lws_memory");
}
