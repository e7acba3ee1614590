/* test_stateful_buffer.c - stateful reconnect's buffer and counters (hub/stateful_buffer.c) against MessageBuffer's rules. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "hub/stateful_buffer.h"
#include "protocol/hub_msg.h"

static size_t entries(const struct stateful_buffer *b)
{
    size_t n = 0;
    for (const struct list_node *p = b->entries.next; p != &b->entries; p = p->next)
        n++;
    return n;
}

static const struct stateful_entry *first(const struct stateful_buffer *b)
{
    return list_container_of(b->entries.next, struct stateful_entry, link);
}

/* Ids from 1, one per numbered message; entries leave on an Ack covering all of them. */
static void test_send_and_ack(void)
{
    struct stateful_buffer b;
    stateful_buffer_init(&b, 100);
    CHECK(stateful_buffer_sent(&b, "ping", 4, 0)); /* nothing numbered: not kept */
    CHECK_EQ_INT(entries(&b), 0);
    CHECK(stateful_buffer_sent(&b, "aaaa", 4, 1)); /* id 1 */
    CHECK(stateful_buffer_sent(&b, "bbbbbb", 6, 3)); /* ids 2..4 */
    CHECK(stateful_buffer_sent(&b, "cc", 2, 1)); /* id 5 */
    CHECK_EQ_INT(b.sent_count, 5);
    CHECK_EQ_INT(b.bytes, 12);
    CHECK_EQ_INT(entries(&b), 3);
    stateful_buffer_ack(&b, 0);
    CHECK_EQ_INT(entries(&b), 3);
    stateful_buffer_ack(&b, 1);
    CHECK_EQ_INT(entries(&b), 2);
    CHECK_EQ_INT(first(&b)->first_id, 2);
    stateful_buffer_ack(&b, 3); /* part of 2..4: kept whole */
    CHECK_EQ_INT(entries(&b), 2);
    CHECK_EQ_INT(b.bytes, 8);
    stateful_buffer_ack(&b, 4);
    CHECK_EQ_INT(entries(&b), 1);
    CHECK_EQ_INT(first(&b)->first_id, 5);
    CHECK_BYTES(first(&b)->data, first(&b)->len, "cc");
    stateful_buffer_ack(&b, 1000); /* beyond what was sent: everything goes, as in MessageBuffer */
    CHECK_EQ_INT(entries(&b), 0);
    CHECK_EQ_INT(b.bytes, 0);
    stateful_buffer_free(&b);
}

/* Full once over the limit (not at it), free again after an Ack. */
static void test_limit(void)
{
    struct stateful_buffer b;
    stateful_buffer_init(&b, 10);
    CHECK(stateful_buffer_sent(&b, "0123456789", 10, 1));
    CHECK(!stateful_buffer_full(&b));
    CHECK(stateful_buffer_sent(&b, "x", 1, 1));
    CHECK(stateful_buffer_full(&b));
    stateful_buffer_ack(&b, 1);
    CHECK(!stateful_buffer_full(&b));
    stateful_buffer_free(&b);
}

/* The Sequence after a reconnect names the first kept message, or the next id. */
static void test_reconnect_sequence(void)
{
    struct stateful_buffer b;
    stateful_buffer_init(&b, 100);
    CHECK_EQ_INT(stateful_buffer_reconnected(&b), 1);
    CHECK(stateful_buffer_received(&b, HUB_MSG_SEQUENCE, 1) == STATEFUL_TAKEN);
    CHECK(stateful_buffer_sent(&b, "a", 1, 2));
    CHECK(stateful_buffer_sent(&b, "b", 1, 1));
    stateful_buffer_ack(&b, 2);
    CHECK_EQ_INT(stateful_buffer_reconnected(&b), 3);
    stateful_buffer_ack(&b, 3);
    CHECK_EQ_INT(stateful_buffer_reconnected(&b), 4);
    stateful_buffer_free(&b);
}

/* The client's side: numbered messages counted, duplicates after its Sequence skipped,
 * counting going on between the reconnect and its Sequence, Acks due once per news. */
static void test_receiving(void)
{
    struct stateful_buffer b;
    stateful_buffer_init(&b, 100);
    uint64_t id = 0;
    CHECK(!stateful_buffer_ack_due(&b, &id));
    CHECK(stateful_buffer_received(&b, HUB_MSG_PING, 0) == STATEFUL_FORWARD);
    CHECK(stateful_buffer_received(&b, HUB_MSG_INVOCATION, 0) == STATEFUL_FORWARD);     /* 1 */
    CHECK(stateful_buffer_received(&b, HUB_MSG_STREAM_ITEM, 0) == STATEFUL_FORWARD);    /* 2 */
    CHECK(stateful_buffer_received(&b, HUB_MSG_COMPLETION, 0) == STATEFUL_FORWARD);     /* 3 */
    CHECK(stateful_buffer_ack_due(&b, &id));
    CHECK_EQ_INT(id, 3);
    CHECK(!stateful_buffer_ack_due(&b, &id));
    CHECK(stateful_buffer_received(&b, HUB_MSG_ACK, 0) == STATEFUL_TAKEN);
    stateful_buffer_reconnected(&b);
    CHECK(stateful_buffer_received(&b, HUB_MSG_SEQUENCE, 5) == STATEFUL_INVALID); /* 4 is the next */
    stateful_buffer_reconnected(&b);
    CHECK(stateful_buffer_received(&b, HUB_MSG_SEQUENCE, 2) == STATEFUL_TAKEN);
    CHECK(stateful_buffer_received(&b, HUB_MSG_INVOCATION, 0) == STATEFUL_DROP);    /* 2 again */
    CHECK(stateful_buffer_received(&b, HUB_MSG_STREAM_ITEM, 0) == STATEFUL_DROP);   /* 3 again */
    CHECK(stateful_buffer_received(&b, HUB_MSG_PING, 0) == STATEFUL_FORWARD);
    CHECK(stateful_buffer_received(&b, HUB_MSG_CANCEL_INVOCATION, 0) == STATEFUL_FORWARD); /* 4 */
    CHECK(stateful_buffer_received(&b, HUB_MSG_STREAM_INVOCATION, 0) == STATEFUL_FORWARD); /* 5 */
    CHECK(stateful_buffer_ack_due(&b, &id));
    CHECK_EQ_INT(id, 5);
    CHECK_EQ_INT(b.latest_received, 5);
    /* A reconnect re-arms the Ack even with nothing new: the last one may have been lost. */
    stateful_buffer_reconnected(&b);
    CHECK(stateful_buffer_received(&b, HUB_MSG_SEQUENCE, 6) == STATEFUL_TAKEN);
    CHECK(stateful_buffer_ack_due(&b, &id));
    CHECK_EQ_INT(id, 5);
    CHECK(stateful_buffer_received(&b, HUB_MSG_SEQUENCE, 0) == STATEFUL_INVALID);
    /* Before its Sequence, a message counts as if the connection had never dropped (id 6). */
    stateful_buffer_reconnected(&b);
    CHECK(stateful_buffer_received(&b, HUB_MSG_INVOCATION, 0) == STATEFUL_FORWARD);
    CHECK_EQ_INT(b.latest_received, 6);
    stateful_buffer_free(&b);
}

int main(void)
{
    test_send_and_ack();
    test_limit();
    test_reconnect_sequence();
    test_receiving();
    return test_main_result("test_stateful_buffer");
}
