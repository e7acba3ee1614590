/* lws_memory.h - the allocator the relay gives libwebsockets: its long-lived per-connection chunks
 * from dense pools, everything else from libc.
 *
 * libwebsockets allocates a connection's `struct lws` (with its event library's watchers), its
 * WebSocket state and its receive buffer once, and keeps them as long as the connection: ~1.5 KiB
 * per idle client. From malloc they interleave with what each handshake allocates for a moment
 * (lws' header table, the relay's handshake-time copies), and the holes those leave between the
 * long-lived chunks stay (docs/BENCHMARKS.md, service mode's memory). lws_set_allocator routes
 * every lws allocation through one function with a reason string; this one serves the chunks of
 * the long-lived reasons from one containers/pool per size (sizes are fixed per build and per
 * protocol's rx_buffer_size), in 16 KiB pages of their own, and passes the rest to libc.
 *
 * OWNERSHIP: the pools own their pages; libwebsockets owns each chunk from its allocation until
 * it frees it (through this allocator: lws never frees its chunks with libc's free). */
#ifndef SR_LWS_MEMORY_H
#define SR_LWS_MEMORY_H

#include <stddef.h>

/* Makes lws_memory_realloc libwebsockets' allocator: before the first lws call. */
void lws_memory_install(void);
/* After lws_context_destroy: the pools give back their pages (every pooled chunk was freed by
 * then; one still live is left to LeakSanitizer). Allocations from now on go to libc. */
void lws_memory_release(void);

/* The allocator itself (lws' hook): realloc(ptr, size) for the chunk `reason` names; size 0
 * frees. A pooled chunk is recognised by its page, and a realloc of one to another size moves
 * it (to its new size's pool, or to libc). */
void *lws_memory_realloc(void *ptr, size_t size, const char *reason);

/* Chunks now in the pools, and the pools' pages (for tests and /metrics). */
size_t lws_memory_pooled(void);
size_t lws_memory_pages(void);

#endif
