/* lws_memory.c - libwebsockets' allocator: long-lived per-connection chunks pooled (see lws_memory.h).
 *
 * lws' hook takes no context argument, so the allocator's state is necessarily file-scope: the
 * one struct `mem` below, and nothing else. It is used from one thread only: libwebsockets runs
 * on the relay's loop thread (the capture writer's thread, the only other one, never calls lws). */
#include "relay/lws_memory.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "containers/pool.h"

/* Distinct sizes pooled: a server and a client wsi, their WebSocket states, a receive buffer per
 * rx_buffer_size in use; more sizes than this go to libc. */
#define LWS_MEMORY_POOLS 8
/* The largest chunk pooled (a pool's records are at most a quarter page): a service server
 * connection's 16 KiB receive buffer goes to libc. */
#define LWS_MEMORY_MAX_CHUNK (POOL_PAGE_BYTES / 4)

/* lws 4.1.6's reasons for the chunks a connection keeps as long as it lives
 * (lib/core-net/adopt.c, connect.c, lib/roles/ws/server-ws.c, client-ws.c, ops-ws.c). */
static const char *const long_lived[] = {
    "new server wsi", "client wsi", "ws struct", "client ws struct", "rx_ubuf",
};

static struct {
    struct pool_index index;              /* every pool's pages */
    struct pool pools[LWS_MEMORY_POOLS];  /* pools[0..pool_count), one per slot size */
    size_t pool_count;
    bool released;                        /* lws_memory_release ran: libc only from now on */
} mem;

static bool is_long_lived(const char *reason)
{
    if (!reason)
        return false;
    for (size_t i = 0; i < sizeof long_lived / sizeof long_lived[0]; i++)
        if (!strcmp(reason, long_lived[i]))
            return true;
    return false;
}

/* The pool for a chunk of `size` bytes under `reason`, made on first use; NULL: libc's. */
static struct pool *pool_for(size_t size, const char *reason)
{
    if (mem.released || size == 0 || size > LWS_MEMORY_MAX_CHUNK || !is_long_lived(reason))
        return NULL;
    size_t slot = (size + 7u) & ~(size_t)7u;
    for (size_t i = 0; i < mem.pool_count; i++)
        if (mem.pools[i].size == slot)
            return &mem.pools[i];
    if (mem.pool_count == LWS_MEMORY_POOLS)
        return NULL;
    if (mem.pool_count == 0)
        pool_index_init(&mem.index); /* no pool yet: the index is empty */
    struct pool *p = &mem.pools[mem.pool_count++];
    pool_init(p, slot);
    pool_set_index(p, &mem.index);
    return p;
}

static void *allocate(size_t size, const char *reason)
{
    struct pool *p = pool_for(size, reason);
    void *chunk = p ? pool_alloc(p) : NULL;
    return chunk ? chunk : malloc(size); /* a pool out of memory: libc may still have some */
}

void *lws_memory_realloc(void *ptr, size_t size, const char *reason)
{
    struct pool *owner = pool_index_owner(&mem.index, ptr);
    if (!owner) { /* NULL or libc's chunk: it stays libc's */
        if (!ptr)
            return size ? allocate(size, reason) : NULL;
        if (!size) {
            free(ptr);
            return NULL;
        }
        return realloc(ptr, size);
    }
    if (!size) {
        pool_free(owner, ptr);
        return NULL;
    }
    if (pool_for(size, reason) == owner)
        return ptr; /* the same slot size */
    void *moved = allocate(size, reason);
    if (!moved)
        return NULL; /* as realloc: the old chunk stays */
    memcpy(moved, ptr, size < owner->size ? size : owner->size);
    pool_free(owner, ptr);
    return moved;
}

void lws_memory_install(void)
{
    mem.released = false;
    lws_set_allocator(lws_memory_realloc);
}

void lws_memory_release(void)
{
    mem.released = true;
    size_t live = 0;
    for (size_t i = 0; i < mem.pool_count; i++) {
        pool_close(&mem.pools[i]);
        live += pool_in_use(&mem.pools[i]);
    }
    if (live)
        return; /* a chunk lws never freed: its page stays, for LeakSanitizer to report */
    pool_index_free(&mem.index);
    mem.pool_count = 0;
}

size_t lws_memory_pooled(void)
{
    size_t n = 0;
    for (size_t i = 0; i < mem.pool_count; i++)
        n += pool_in_use(&mem.pools[i]);
    return n;
}

size_t lws_memory_pages(void)
{
    return pool_index_count(&mem.index);
}
