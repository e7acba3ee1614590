/* fuzz_core_peek.c - core_peek_kinds on arbitrary bytes, as JSON records and as
 * MessagePack frames.
 *
 * The buffer is also split message by message with the framing functions and
 * each message decoded in full. Properties:
 *   - when peek accepts the buffer, the split consumes it exactly (peek
 *     accepts only whole messages), and every kind the full decoder finds in
 *     a message is in the peeked union;
 *   - when, moreover, every message decodes (or is of an unknown type), the
 *     peeked union is exactly the union of the decoded kinds;
 *   - when every message decodes, peek accepts the buffer (it never refuses
 *     what the full decoder takes).
 *   - core_peek_next, message by message, frames exactly as the split does, and
 *     for a message that decodes gives the decoded kind and (Ack, Sequence) sequenceId.
 * A message the full decoder refuses may still set a bit (peek only glances
 * at the ASP.NET Core server's type-first messages).
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 900000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "protocol/core_json.h"
#include "protocol/core_msgpack.h"
#include "protocol/core_peek.h"

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_core_peek: property violated: %s\n", what);
    abort();
}

static void check(int binary, const char *data, size_t size)
{
    unsigned peeked = 0;
    enum proto_status peek = core_peek_kinds(binary, data, size, &peeked, NULL);

    unsigned decoded = 0;
    bool whole = true, all_decode = true;
    size_t pos = 0;
    while (pos < size) {
        struct span message;
        size_t consumed = 0;
        enum proto_status st = binary ? core_binary_next_frame(data + pos, size - pos, SIZE_MAX, &message, &consumed, NULL)
                                      : core_text_next_record(data + pos, size - pos, SIZE_MAX, &message, &consumed, NULL);
        if (st != PROTO_OK) {
            whole = false;
            break;
        }
        if (consumed == 0 || consumed > size - pos)
            fail("framing bounds");
        size_t next_used = 0;
        enum hub_msg_kind next_kind;
        int64_t next_id;
        enum proto_status next = core_peek_next(binary, data + pos, size - pos, &next_used, &next_kind, &next_id, NULL);
        if (next_used != consumed)
            fail("core_peek_next frames differently");
        struct hub_msg msg;
        hub_msg_init(&msg);
        st = binary ? core_msgpack_decode(message.ptr, message.len, &msg, NULL)
                    : core_json_decode(message.ptr, message.len, &msg, NULL);
        if (st == PROTO_OK) {
            if (next != PROTO_OK || next_kind != msg.kind)
                fail("core_peek_next's kind differs from the decoded kind");
            if ((msg.kind == HUB_MSG_ACK || msg.kind == HUB_MSG_SEQUENCE) && next_id != msg.sequence_id)
                fail("core_peek_next's sequenceId differs from the decoded one");
            decoded |= CORE_KIND_BIT(msg.kind);
            hub_msg_release(&msg);
        } else if (st != PROTO_UNKNOWN_TYPE) {
            all_decode = false;
        }
        pos += consumed;
    }

    if (peek == PROTO_OK) {
        if (!whole)
            fail("peek accepted a buffer that is not whole messages");
        if ((decoded & ~peeked) != 0)
            fail("a decoded kind is missing from the peeked kinds");
        if (all_decode && decoded != peeked)
            fail("peeked kinds differ from the decoded kinds");
    } else if (whole && all_decode) {
        fail("peek refused a buffer of messages that all decode");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(0, (const char *)data, size);
    check(1, (const char *)data, size);
    return 0;
}
