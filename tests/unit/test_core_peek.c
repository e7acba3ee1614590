/* test_core_peek.c - finding Ping and Close among whole Core messages without forwarding changes. */
#include "check.h"
#include "protocol/core_peek.h"

static unsigned kinds_of(int binary, const char *data, size_t len, enum proto_status *st)
{
    unsigned kinds = 0;
    *st = core_peek_kinds(binary, data, len, &kinds, NULL);
    return kinds;
}

int main(void)
{
    enum proto_status st;
    /* Server order (type first): the fast path. */
    const char server[] = "{\"type\":1,\"target\":\"x\",\"arguments\":[]}\x1e{\"type\":7,\"error\":\"bye\"}\x1e";
    unsigned k = kinds_of(0, server, sizeof server - 1, &st);
    CHECK_EQ_INT(st, PROTO_OK);
    CHECK_EQ_INT(k, CORE_KIND_BIT(HUB_MSG_INVOCATION) | CORE_KIND_BIT(HUB_MSG_CLOSE));
    /* Client order (type last): decoded fully. */
    const char client[] = "{\"arguments\":[1],\"invocationId\":\"0\",\"target\":\"Add\",\"type\":1}\x1e{\"type\":6}\x1e";
    k = kinds_of(0, client, sizeof client - 1, &st);
    CHECK_EQ_INT(k, CORE_KIND_BIT(HUB_MSG_INVOCATION) | CORE_KIND_BIT(HUB_MSG_PING));
    /* A type beyond 9 (e.g. 10) is not mistaken for 1. */
    const char ten[] = "{\"type\":10}\x1e";
    k = kinds_of(0, ten, sizeof ten - 1, &st);
    CHECK_EQ_INT(st, PROTO_OK);
    CHECK_EQ_INT(k, 0);
    /* A repeated "type" wins, as in the decoder (and ASP.NET Core): the fast path must not answer
     * from the first one, literal or spelt with \u escapes (found by fuzz_core_peek). */
    const char repeated[] = "{\"type\":6,\"type\":7,\"error\":\"be\"}\x1e";
    k = kinds_of(0, repeated, sizeof repeated - 1, &st);
    CHECK_EQ_INT(st, PROTO_OK);
    CHECK_EQ_INT(k, CORE_KIND_BIT(HUB_MSG_CLOSE));
    const char escaped[] = "{\"type\":6,\"typ\\u0065\":7}\x1e";
    k = kinds_of(0, escaped, sizeof escaped - 1, &st);
    CHECK_EQ_INT(st, PROTO_OK);
    CHECK_EQ_INT(k, CORE_KIND_BIT(HUB_MSG_CLOSE));
    /* A partial record is reported, not guessed. */
    k = kinds_of(0, "{\"type\":6}", 10, &st);
    CHECK_EQ_INT(st, PROTO_INCOMPLETE);
    /* Malformed JSON. */
    k = kinds_of(0, "{\"arguments\":[}\x1e", 16, &st);
    CHECK(proto_status_is_error(st));

    /* MessagePack: Ping (02 91 06), Close with error (spec E6), 3-element Close. */
    const char mp[] = "\x02\x91\x06"
                      "\x04\x93\x07\xc0\xc2";
    k = kinds_of(1, mp, sizeof mp - 1, &st);
    CHECK_EQ_INT(st, PROTO_OK);
    CHECK_EQ_INT(k, CORE_KIND_BIT(HUB_MSG_PING) | CORE_KIND_BIT(HUB_MSG_CLOSE));
    /* Completion with result 42 (spec E4). */
    const char completion[] = "\x07\x95\x03\x80\xa1\x30\x03\x2a";
    k = kinds_of(1, completion, sizeof completion - 1, &st);
    CHECK_EQ_INT(k, CORE_KIND_BIT(HUB_MSG_COMPLETION));
    /* Truncated frame. */
    k = kinds_of(1, "\x07\x95\x03", 3, &st);
    CHECK_EQ_INT(st, PROTO_INCOMPLETE);

    /* core_peek_next: one message at a time, with Ack's and Sequence's sequenceId (stateful reconnect). */
    const char seq[] = "{\"type\":9,\"sequenceId\":12}\x1e{\"sequenceId\":3,\"type\":8}\x1e{\"type\":6}\x1e";
    size_t used = 0;
    enum hub_msg_kind kind;
    int64_t id = -1;
    CHECK_EQ_INT(core_peek_next(0, seq, sizeof seq - 1, &used, &kind, &id, NULL), PROTO_OK);
    CHECK_EQ_INT(kind, HUB_MSG_SEQUENCE);
    CHECK_EQ_INT(id, 12);
    CHECK_EQ_INT(used, 27);
    size_t off = used;
    CHECK_EQ_INT(core_peek_next(0, seq + off, sizeof seq - 1 - off, &used, &kind, &id, NULL), PROTO_OK);
    CHECK_EQ_INT(kind, HUB_MSG_ACK);
    CHECK_EQ_INT(id, 3);
    off += used;
    CHECK_EQ_INT(core_peek_next(0, seq + off, sizeof seq - 1 - off, &used, &kind, &id, NULL), PROTO_OK);
    CHECK_EQ_INT(kind, HUB_MSG_PING);
    CHECK_EQ_INT(id, 0);
    CHECK_EQ_INT(off + used, sizeof seq - 1);
    /* An Ack without its sequenceId is an error, not id 0. */
    CHECK(proto_status_is_error(core_peek_next(0, "{\"type\":8}\x1e", 11, &used, &kind, &id, NULL)));
    /* MessagePack: Ack 5 (03 92 08 05), Sequence 300 (05 92 09 cd 01 2c), Ping. */
    const char mpseq[] = "\x03\x92\x08\x05"
                         "\x05\x92\x09\xcd\x01\x2c"
                         "\x02\x91\x06";
    CHECK_EQ_INT(core_peek_next(1, mpseq, sizeof mpseq - 1, &used, &kind, &id, NULL), PROTO_OK);
    CHECK_EQ_INT(kind, HUB_MSG_ACK);
    CHECK_EQ_INT(id, 5);
    CHECK_EQ_INT(used, 4);
    CHECK_EQ_INT(core_peek_next(1, mpseq + 4, sizeof mpseq - 5, &used, &kind, &id, NULL), PROTO_OK);
    CHECK_EQ_INT(kind, HUB_MSG_SEQUENCE);
    CHECK_EQ_INT(id, 300);
    CHECK_EQ_INT(used, 6);
    CHECK_EQ_INT(core_peek_next(1, mpseq + 10, 3, &used, &kind, &id, NULL), PROTO_OK);
    CHECK_EQ_INT(kind, HUB_MSG_PING);
    CHECK_EQ_INT(core_peek_next(1, "\x07\x95\x03", 3, &used, &kind, &id, NULL), PROTO_INCOMPLETE);
    return test_main_result("test_core_peek");
}
