/* fuzz_core_peek.c - core_peek_kinds on arbitrary bytes, as JSON records and as
 * MessagePack frames. Property: for a buffer holding exactly one message that
 * the full decoder accepts, the peeked kind is the decoded kind. */
#include <stdint.h>
#include <stdlib.h>

#include "protocol/core_json.h"
#include "protocol/core_msgpack.h"
#include "protocol/core_peek.h"

static void check_one(int binary, const char *data, size_t size)
{
    unsigned kinds = 0;
    if (core_peek_kinds(binary, data, size, &kinds, NULL) != PROTO_OK)
        return;
    struct span message;
    size_t consumed = 0;
    enum proto_status st = binary ? core_binary_next_frame(data, size, SIZE_MAX, &message, &consumed, NULL)
                                  : core_text_next_record(data, size, SIZE_MAX, &message, &consumed, NULL);
    if (st != PROTO_OK || consumed != size)
        return; /* several messages: the union was checked message by message */
    struct hub_msg msg;
    hub_msg_init(&msg);
    st = binary ? core_msgpack_decode(message.ptr, message.len, &msg, NULL)
                : core_json_decode(message.ptr, message.len, &msg, NULL);
    if (st == PROTO_OK && kinds != CORE_KIND_BIT(msg.kind))
        abort();
    hub_msg_release(&msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_one(0, (const char *)data, size);
    check_one(1, (const char *)data, size);
    return 0;
}
