/* stateful_buffer.c - unacked messages toward a Core client and the counters of its own (see stateful_buffer.h). */
#include "hub/stateful_buffer.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/hub_msg.h"

void stateful_buffer_init(struct stateful_buffer *b, size_t limit)
{
    list_init_head(&b->entries);
    b->bytes = 0;
    b->limit = limit;
    b->sent_count = 0;
    b->next_receiving = 1;
    b->latest_received = 0;
    b->last_acked = 0;
}

static void drop_oldest(struct stateful_buffer *b)
{
    struct stateful_entry *e = list_container_of(b->entries.next, struct stateful_entry, link);
    list_unlink(&e->link);
    b->bytes -= e->len;
    free(e);
}

void stateful_buffer_free(struct stateful_buffer *b)
{
    while (!list_is_empty(&b->entries))
        drop_oldest(b);
}

bool stateful_buffer_sent(struct stateful_buffer *b, const char *data, size_t len, uint32_t count)
{
    if (count == 0)
        return true;
    struct stateful_entry *e = malloc(sizeof *e + len);
    if (!e)
        return false;
    e->first_id = b->sent_count + 1;
    e->count = count;
    e->len = len;
    memcpy(e->data, data, len);
    list_push_back(&b->entries, &e->link);
    b->bytes += len;
    b->sent_count += count;
    return true;
}

void stateful_buffer_ack(struct stateful_buffer *b, uint64_t sequence_id)
{
    while (!list_is_empty(&b->entries)) {
        struct stateful_entry *e = list_container_of(b->entries.next, struct stateful_entry, link);
        if (e->first_id + e->count - 1 > sequence_id)
            return;
        drop_oldest(b);
    }
}

uint64_t stateful_buffer_reconnected(struct stateful_buffer *b)
{
    b->last_acked = 0; /* an Ack may have been lost with the old socket: the next tick sends one */
    if (list_is_empty(&b->entries))
        return b->sent_count + 1;
    return list_container_of(b->entries.next, struct stateful_entry, link)->first_id;
}

bool stateful_kind_numbered(int kind)
{
    switch (kind) {
    case HUB_MSG_INVOCATION:
    case HUB_MSG_STREAM_ITEM:
    case HUB_MSG_COMPLETION:
    case HUB_MSG_STREAM_INVOCATION:
    case HUB_MSG_CANCEL_INVOCATION:
        return true;
    default:
        return false;
    }
}

enum stateful_verdict stateful_buffer_received(struct stateful_buffer *b, int kind, int64_t sequence_id)
{
    if (kind == HUB_MSG_ACK) {
        if (sequence_id > 0)
            stateful_buffer_ack(b, (uint64_t)sequence_id);
        return STATEFUL_TAKEN;
    }
    if (kind == HUB_MSG_SEQUENCE) {
        /* The server's rule: it may not name a message never received. */
        if (sequence_id < 1 || (uint64_t)sequence_id > b->next_receiving)
            return STATEFUL_INVALID;
        b->next_receiving = (uint64_t)sequence_id;
        return STATEFUL_TAKEN;
    }
    if (!stateful_kind_numbered(kind))
        return STATEFUL_FORWARD;
    uint64_t id = b->next_receiving++;
    if (id <= b->latest_received)
        return STATEFUL_DROP; /* had it before the reconnect */
    b->latest_received = id;
    return STATEFUL_FORWARD;
}

bool stateful_buffer_ack_due(struct stateful_buffer *b, uint64_t *sequence_id)
{
    if (b->latest_received <= b->last_acked)
        return false;
    b->last_acked = b->latest_received;
    *sequence_id = b->latest_received;
    return true;
}
