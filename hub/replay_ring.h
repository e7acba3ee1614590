/* replay_ring.h - a legacy connection's recent outgoing messages, kept for /reconnect.
 *
 * Legacy SignalR clients resume with the cursor (messageId) of the last frame
 * they saw; the server replays what came after it. Every message the relay
 * sends to a legacy connection is appended here with the next sequence number,
 * whether or not a socket is open at that moment. The ring is bounded both in
 * messages and in bytes: the oldest entries go first. A cursor older than the
 * oldest entry still held means messages were lost, and replay says so
 * (REPLAY_GAP) instead of silently skipping them. An entry holds a reference
 * to its message's bytes (struct replay_text), which a fan-out's many
 * connections share: one translated element, one reference per ring. */
#ifndef SR_REPLAY_RING_H
#define SR_REPLAY_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/list.h"

/* One message's bytes, immutable once made, shared by every ring holding it; freed with its last
 * reference. */
struct replay_text {
    size_t refs;
    size_t len;
    char data[];
};

/* A text holding a copy of data, with one reference (the caller's); NULL when out of memory. */
struct replay_text *replay_text_new(const char *data, size_t len);
static inline struct replay_text *replay_text_ref(struct replay_text *t)
{
    t->refs++;
    return t;
}
/* Drops one reference; t may be NULL. */
void replay_text_unref(struct replay_text *t);

struct replay_entry {
    struct list_node link;
    uint64_t seq;
    struct replay_text *text; /* a reference of the ring's */
};

struct replay_ring {
    struct list_node entries; /* oldest first */
    uint64_t next_seq;        /* the first message gets 1, so cursor 0 means "nothing seen" */
    size_t count, bytes;
    size_t max_count, max_bytes;
};

void replay_ring_init(struct replay_ring *r, size_t max_count, size_t max_bytes);
void replay_ring_free(struct replay_ring *r);

/* Copies the message in and returns its sequence number; 0 when out of memory
 * (nothing is appended then). Evicts the oldest entries beyond the limits. */
uint64_t replay_ring_append(struct replay_ring *r, const char *data, size_t len);
/* As replay_ring_append, taking a new reference to t instead of a copy. */
uint64_t replay_ring_append_text(struct replay_ring *r, struct replay_text *t);

/* The sequence number of the last message appended (0 if none yet). */
static inline uint64_t replay_ring_last_seq(const struct replay_ring *r) { return r->next_seq - 1; }

enum replay_result {
    REPLAY_OK,  /* every message after the cursor is still held (maybe none) */
    REPLAY_GAP, /* some were evicted, or the cursor is from the future: replay is impossible */
};

/* Calls visit for each held message with seq > cursor, oldest first, unless
 * that would leave a gap. visit may be NULL to only ask whether replay is possible. */
enum replay_result replay_ring_after(const struct replay_ring *r, uint64_t cursor,
                                     void (*visit)(void *ctx, const struct replay_entry *e), void *ctx);

#endif
