/* core_peek.c - message kinds in a buffer of whole Core messages (see core_peek.h). */
#include "protocol/core_peek.h"

#include <stdbool.h>
#include <string.h>

#include "protocol/core_json.h"
#include "protocol/core_msgpack.h"

/* Large enough for any message the relay forwards; the framing functions
 * only use it to reject absurd lengths. */
#define PEEK_MAX_MESSAGE ((size_t)1 << 31)

/* Whether the rest of a record that began {"type":N may hold another "type"
 * key, which the decoder (as ASP.NET Core's) would let win: a literal "type",
 * or a \u escape that could spell one. Then the full decoder decides. */
static bool may_repeat_type(const char *rest, size_t len)
{
    static const char key[] = "\"type\"";
    const char *end = rest + len;
    for (const char *p = rest; (p = memchr(p, '"', (size_t)(end - p))) != NULL; p++)
        if ((size_t)(end - p) >= sizeof key - 1 && memcmp(p, key, sizeof key - 1) == 0)
            return true;
    for (const char *p = rest; (p = memchr(p, '\\', (size_t)(end - p))) != NULL; p++)
        if (p + 1 < end && p[1] == 'u')
            return true;
    return false;
}

static enum hub_msg_kind json_kind(const char *rec, size_t len, struct proto_error *err,
                                   enum proto_status *status)
{
    static const char prefix[] = "{\"type\":";
    size_t p = sizeof prefix - 1;
    *status = PROTO_OK;
    if (len > p + 1 && memcmp(rec, prefix, p) == 0 && rec[p] >= '1' && rec[p] <= '9' &&
        (rec[p + 1] == ',' || rec[p + 1] == '}') && !may_repeat_type(rec + p + 2, len - p - 2))
        return (enum hub_msg_kind)(rec[p] - '0');
    struct hub_msg msg;
    hub_msg_init(&msg);
    *status = core_json_decode(rec, len, &msg, err);
    enum hub_msg_kind kind = *status == PROTO_OK ? msg.kind : HUB_MSG_NONE;
    if (*status == PROTO_UNKNOWN_TYPE)
        *status = PROTO_OK;
    hub_msg_release(&msg);
    return kind;
}

static enum hub_msg_kind msgpack_kind(const char *body, size_t len, struct proto_error *err,
                                      enum proto_status *status)
{
    const unsigned char *b = (const unsigned char *)body;
    *status = PROTO_OK;
    if (len >= 2 && b[0] >= 0x91 && b[0] <= 0x9f && b[1] >= 1 && b[1] <= 9)
        return (enum hub_msg_kind)b[1];
    struct hub_msg msg;
    hub_msg_init(&msg);
    *status = core_msgpack_decode(body, len, &msg, err);
    enum hub_msg_kind kind = *status == PROTO_OK ? msg.kind : HUB_MSG_NONE;
    if (*status == PROTO_UNKNOWN_TYPE)
        *status = PROTO_OK;
    hub_msg_release(&msg);
    return kind;
}

/* Ack and Sequence: decoded whole for their sequenceId. */
static enum proto_status sequence_id_of(int binary, const char *body, size_t len, int64_t *sequence_id,
                                        struct proto_error *err)
{
    struct hub_msg msg;
    hub_msg_init(&msg);
    enum proto_status st = binary ? core_msgpack_decode(body, len, &msg, err) : core_json_decode(body, len, &msg, err);
    *sequence_id = st == PROTO_OK ? msg.sequence_id : 0;
    hub_msg_release(&msg);
    return st;
}

enum proto_status core_peek_next(int binary, const char *data, size_t len, size_t *consumed,
                                 enum hub_msg_kind *kind, int64_t *sequence_id, struct proto_error *err)
{
    struct span message;
    *kind = HUB_MSG_NONE;
    *sequence_id = 0;
    enum proto_status st = binary ? core_binary_next_frame(data, len, PEEK_MAX_MESSAGE, &message, consumed, err)
                                  : core_text_next_record(data, len, PEEK_MAX_MESSAGE, &message, consumed, err);
    if (st != PROTO_OK)
        return st;
    *kind = binary ? msgpack_kind(message.ptr, message.len, err, &st) : json_kind(message.ptr, message.len, err, &st);
    if (st == PROTO_OK && (*kind == HUB_MSG_ACK || *kind == HUB_MSG_SEQUENCE))
        st = sequence_id_of(binary, message.ptr, message.len, sequence_id, err);
    return st;
}

enum proto_status core_peek_kinds(int binary, const char *data, size_t len, unsigned *kinds,
                                  struct proto_error *err)
{
    *kinds = 0;
    while (len > 0) {
        struct span message;
        size_t consumed = 0;
        enum proto_status st = binary
            ? core_binary_next_frame(data, len, PEEK_MAX_MESSAGE, &message, &consumed, err)
            : core_text_next_record(data, len, PEEK_MAX_MESSAGE, &message, &consumed, err);
        if (st != PROTO_OK)
            return st;
        enum hub_msg_kind kind = binary ? msgpack_kind(message.ptr, message.len, err, &st)
                                        : json_kind(message.ptr, message.len, err, &st);
        if (st != PROTO_OK)
            return st;
        if (kind != HUB_MSG_NONE)
            *kinds |= CORE_KIND_BIT(kind);
        data += consumed;
        len -= consumed;
    }
    return PROTO_OK;
}
