/* stateful_buffer.h - one Core connection's stateful reconnect state: what the client has not acked yet, and which of its messages were seen.
 *
 * ASP.NET Core SignalR's stateful reconnect (MessageBuffer.cs on the server,
 * MessageBuffer.ts in the client) numbers the "invocation" messages each side
 * sends (Invocation, StreamItem, Completion, StreamInvocation,
 * CancelInvocation), from 1. The sender keeps what it sent until the peer's
 * Ack(sequenceId) says it arrived; after a dropped WebSocket, the new one
 * starts with a Sequence(sequenceId) naming the first message resent, and
 * the receiver skips the ones it already has. Pings, Close, Ack and Sequence
 * are not numbered.
 *
 * This is the relay's server side of it, pure state: the bytes the relay sent
 * toward the client (one entry per WebSocket message that held numbered
 * messages, with the id of its first one and how many), and the receiving
 * counters for the client's messages. The relay resends whole entries: an
 * entry acked in part is resent whole, its Sequence naming its first id, and
 * the client skips what it already had, as it does for the real server. */
#ifndef SR_STATEFUL_BUFFER_H
#define SR_STATEFUL_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/list.h"

struct stateful_entry {
    struct list_node link;
    uint64_t first_id;  /* sequence id of its first numbered message */
    uint32_t count;     /* numbered messages in it (at least 1) */
    size_t len;
    char data[];
};

struct stateful_buffer {
    struct list_node entries; /* oldest first; owned */
    size_t bytes;             /* sum of the entries' len */
    size_t limit;             /* over it, the sender waits for an Ack (stateful_buffer_full) */
    uint64_t sent_count;      /* numbered messages sent so far (the last one's id) */

    /* Receiving (the client's messages). */
    uint64_t next_receiving;  /* the id the next numbered message has */
    uint64_t latest_received; /* the highest id taken (0: none) */
    uint64_t last_acked;      /* the latest_received the last Ack carried */
};

void stateful_buffer_init(struct stateful_buffer *b, size_t limit);
void stateful_buffer_free(struct stateful_buffer *b);

/* A WebSocket message toward the client that holds `count` numbered messages:
 * they get the next ids; with count > 0 a copy of data is kept until acked.
 * False when out of memory (nothing changes then). */
bool stateful_buffer_sent(struct stateful_buffer *b, const char *data, size_t len, uint32_t count);
/* Ack(sequence_id) from the client: entries whose messages all have ids <= it go. */
void stateful_buffer_ack(struct stateful_buffer *b, uint64_t sequence_id);
/* Over the limit: stop taking more from the hub until an Ack. */
static inline bool stateful_buffer_full(const struct stateful_buffer *b)
{
    return b->bytes > b->limit;
}
/* A reconnect: the Sequence id to send (the first kept message's, or the
 * next id when nothing is kept); entries are then resent oldest first. The
 * client's messages go on being counted as if nothing happened until its own
 * Sequence resets the count (ASP.NET Core 8's server, since it dropped its
 * wait for the Sequence: dotnet/aspnetcore#50409). */
uint64_t stateful_buffer_reconnected(struct stateful_buffer *b);

enum stateful_verdict {
    STATEFUL_FORWARD, /* pass it on to the hub */
    STATEFUL_DROP,    /* a duplicate */
    STATEFUL_TAKEN,   /* Ack or Sequence: handled here, not for the hub */
    STATEFUL_INVALID, /* Sequence id beyond what was received: the connection ends */
};
/* One message from the client, of kind (enum hub_msg_kind) with, for Ack
 * and Sequence, its sequence id. */
enum stateful_verdict stateful_buffer_received(struct stateful_buffer *b, int kind, int64_t sequence_id);
/* Whether an Ack is due (something new received since the last one); sets
 * *sequence_id and counts it as sent. */
bool stateful_buffer_ack_due(struct stateful_buffer *b, uint64_t *sequence_id);
/* Whether kind (enum hub_msg_kind) is numbered. */
bool stateful_kind_numbered(int kind);

#endif
