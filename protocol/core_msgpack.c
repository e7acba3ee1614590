/* core_msgpack.c - Core SignalR MessagePack framing, decoder and encoder (see core_msgpack.h). */
#include "protocol/core_msgpack.h"

#include <msgpack.h>
#include <stdint.h>
#include <string.h>

#include "protocol/msgpack_array.h"
#include "protocol/msgpack_check.h"
#include "protocol/msgpack_sink.h"

/* ---- VarInt framing ------------------------------------------------------ */

#define VARINT_MAX_BYTES 5

enum proto_status core_binary_next_frame(const char *data, size_t len, size_t max_frame,
                                         struct span *frame, size_t *consumed,
                                         struct proto_error *err)
{
    const unsigned char *p = (const unsigned char *)data;
    size_t avail = len < VARINT_MAX_BYTES ? len : VARINT_MAX_BYTES;
    uint32_t length = 0;
    size_t n = 0;
    unsigned char byte = 0x80;

    while (n < avail && (byte & 0x80)) {
        byte = p[n];
        length |= (uint32_t)(byte & 0x7f) << (7 * n);
        n++;
    }
    if (byte & 0x80) {
        if (n < VARINT_MAX_BYTES)
            return PROTO_INCOMPLETE; /* prefix not complete yet (or no bytes at all) */
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "Messages over 2GB in size are not supported.");
    }
    /* Only 3 bits of the 5th byte fit into 31 bits (0x7FFFFFFF = FF FF FF FF 07). */
    if (n == VARINT_MAX_BYTES && byte > 7)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "Messages over 2GB in size are not supported.");
    if (length > max_frame)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "message exceeds the maximum message size");
    if (len - n < length)
        return PROTO_INCOMPLETE;
    *frame = span_make(data + n, length);
    *consumed = n + length;
    return PROTO_OK;
}

/* Writes the VarInt for len into tmp (at least 5 bytes); returns its size. */
static size_t varint_encode(uint32_t len, unsigned char *tmp)
{
    size_t n = 0;
    do {
        unsigned char b = len & 0x7f;
        len >>= 7;
        tmp[n++] = len ? (unsigned char)(b | 0x80) : b;
    } while (len);
    return n;
}

bool core_binary_write_length(struct buf *out, size_t len)
{
    unsigned char tmp[VARINT_MAX_BYTES];
    if (len > CORE_BINARY_MAX_LENGTH)
        return false;
    return buf_append(out, tmp, varint_encode((uint32_t)len, tmp));
}

/* ---- decoding -------------------------------------------------------------- */

/* A string that must be present and non-empty (the server's ThrowIfNullOrEmpty). */
static enum proto_status read_required_string(struct msgpack_array *r, struct span *out,
                                              const char *missing, const char *type_detail,
                                              const char *empty_detail, struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = msgpack_array_next(r, &o, NULL, missing, err);
    if (st == PROTO_OK)
        st = msgpack_object_to_string(o, out, type_detail, err);
    if (st == PROTO_OK && span_is_empty(*out))
        return proto_fail(err, PROTO_ERR_MISSING, empty_detail);
    return st;
}

static enum proto_status read_headers(struct msgpack_array *r, struct hub_msg *out,
                                      struct proto_error *err)
{
    const msgpack_object *o;
    struct span raw;
    enum proto_status st = msgpack_array_next(r, &o, &raw, "message is missing its headers", err);
    if (st != PROTO_OK)
        return st;
    if (o->type != MSGPACK_OBJECT_MAP)
        return proto_fail(err, PROTO_ERR_TYPE, "Reading map length for 'headers' failed.");
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object_kv *kv = &o->via.map.ptr[i];
        struct span key, value;
        st = msgpack_object_to_string(&kv->key, &key, "header key must be a string", err);
        if (st != PROTO_OK)
            return st;
        if (span_is_empty(key))
            return proto_fail(err, PROTO_ERR_VALUE, "Null or empty key in header.");
        st = msgpack_object_to_string(&kv->val, &value, "header value must be a string", err);
        if (st != PROTO_OK)
            return st;
        if (span_is_empty(value))
            return proto_fail(err, PROTO_ERR_VALUE, "Null or empty value in header.");
    }
    if (o->via.map.size > 0)
        out->headers = (struct payload){ PAYLOAD_MSGPACK, raw };
    return PROTO_OK;
}

static enum proto_status read_invocation_id(struct msgpack_array *r, struct span *id,
                                            struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = msgpack_array_next(r, &o, NULL, "message is missing its invocation id", err);
    if (st != PROTO_OK)
        return st;
    return msgpack_object_to_string(o, id, "Reading 'invocationId' as String failed.", err);
}

static enum proto_status read_stream_ids(struct msgpack_array *r, struct hub_msg *out,
                                         struct proto_error *err)
{
    const msgpack_object *o;
    struct span raw;
    enum proto_status st = msgpack_array_next(r, &o, &raw, "message is missing its stream ids", err);
    if (st != PROTO_OK)
        return st;
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return proto_fail(err, PROTO_ERR_TYPE, "Reading array length for 'streamIds' failed.");
    for (uint32_t i = 0; i < o->via.array.size; i++) {
        struct span id;
        st = msgpack_object_to_string(&o->via.array.ptr[i], &id, "stream ids must be strings", err);
        if (st != PROTO_OK)
            return st;
        if (span_is_empty(id))
            return proto_fail(err, PROTO_ERR_VALUE, "Null or empty value in streamIds received.");
    }
    /* Like the server, an empty list means "no streams". */
    if (o->via.array.size > 0)
        out->stream_ids = (struct payload){ PAYLOAD_MSGPACK, raw };
    return PROTO_OK;
}

/* Types 1 and 4: [type, headers, id, target, arguments, streamIds?] */
static enum proto_status decode_invocation(struct msgpack_array *r, struct hub_msg *out,
                                           struct proto_error *err)
{
    bool streaming = out->kind == HUB_MSG_STREAM_INVOCATION;
    enum proto_status st = read_headers(r, out, err);
    if (st == PROTO_OK)
        st = read_invocation_id(r, &out->invocation_id, err);
    if (st != PROTO_OK)
        return st;
    if (span_is_empty(out->invocation_id)) {
        if (streaming)
            return proto_fail(err, PROTO_ERR_MISSING,
                              "Null or empty invocation ID for StreamInvocation message.");
        out->invocation_id = SPAN_NONE; /* "" means non-blocking, as nil does */
    }
    st = read_required_string(r, &out->target, "invocation is missing its target",
                              "Reading 'target' as String failed.",
                              streaming ? "Null or empty target for StreamInvocation message."
                                        : "Null or empty target for Invocation message.",
                              err);
    if (st != PROTO_OK)
        return st;

    const msgpack_object *o;
    struct span raw;
    st = msgpack_array_next(r, &o, &raw, "invocation is missing its arguments", err);
    if (st != PROTO_OK)
        return st;
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return proto_fail(err, PROTO_ERR_TYPE, "Reading array length for 'arguments' failed.");
    out->args = (struct payload){ PAYLOAD_MSGPACK, raw };

    /* Older clients (JS msgpack without streams) send 5 elements. */
    if (r->count > 5)
        return read_stream_ids(r, out, err);
    return PROTO_OK;
}

/* Types 2, 3 and 5 start with [type, headers, id] and need a non-empty id. */
static enum proto_status decode_required_id(struct msgpack_array *r, struct hub_msg *out,
                                            const char *empty_detail, struct proto_error *err)
{
    enum proto_status st = read_headers(r, out, err);
    if (st == PROTO_OK)
        st = read_invocation_id(r, &out->invocation_id, err);
    if (st == PROTO_OK && span_is_empty(out->invocation_id))
        return proto_fail(err, PROTO_ERR_MISSING, empty_detail);
    return st;
}

/* Type 2: [2, headers, id, item] */
static enum proto_status decode_stream_item(struct msgpack_array *r, struct hub_msg *out,
                                            struct proto_error *err)
{
    enum proto_status st = decode_required_id(
        r, out, "Null or empty invocation ID for StreamItem message.", err);
    if (st != PROTO_OK)
        return st;
    const msgpack_object *o;
    struct span raw;
    st = msgpack_array_next(r, &o, &raw, "stream item is missing its item", err);
    if (st == PROTO_OK)
        out->item = (struct payload){ PAYLOAD_MSGPACK, raw };
    return st;
}

/* Type 3: [3, headers, id, kind, result?] */
static enum proto_status decode_completion(struct msgpack_array *r, struct hub_msg *out,
                                           struct proto_error *err)
{
    enum proto_status st = decode_required_id(
        r, out, "Null or empty invocation ID for Completion message.", err);
    if (st != PROTO_OK)
        return st;
    const msgpack_object *o;
    struct span raw;
    st = msgpack_array_next(r, &o, NULL, "completion is missing its result kind", err);
    if (st != PROTO_OK)
        return st;
    int32_t kind;
    if (!msgpack_object_to_i32(o, &kind))
        return proto_fail(err, PROTO_ERR_TYPE, "Reading 'resultKind' as Int32 failed.");

    switch (kind) {
    case COMPLETION_ERROR:
        st = msgpack_array_next(r, &o, NULL, "error completion is missing its error", err);
        if (st == PROTO_OK)
            st = msgpack_object_to_string(o, &out->error, "Reading 'error' as String failed.", err);
        if (st != PROTO_OK)
            return st;
        /* The server reads a nil error as "no error, no result": a void completion. */
        out->completion = span_is_set(out->error) ? COMPLETION_ERROR : COMPLETION_VOID;
        return PROTO_OK;
    case COMPLETION_VOID:
        out->completion = COMPLETION_VOID;
        return PROTO_OK;
    case COMPLETION_RESULT:
        st = msgpack_array_next(r, &o, &raw, "completion is missing its result", err);
        if (st != PROTO_OK)
            return st;
        out->completion = COMPLETION_RESULT;
        out->result = (struct payload){ PAYLOAD_MSGPACK, raw };
        return PROTO_OK;
    default:
        return proto_fail(err, PROTO_ERR_VALUE, "Invalid invocation result kind.");
    }
}

/* Type 7: [7, error|nil, allowReconnect?] */
static enum proto_status decode_close(struct msgpack_array *r, struct hub_msg *out,
                                      struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = msgpack_array_next(r, &o, NULL, "close message is missing its error", err);
    if (st == PROTO_OK)
        st = msgpack_object_to_string(o, &out->error, "Reading 'error' as String failed.", err);
    if (st != PROTO_OK || r->count <= 2)
        return st;
    st = msgpack_array_next(r, &o, NULL, "close message is missing allowReconnect", err);
    if (st != PROTO_OK)
        return st;
    if (o->type != MSGPACK_OBJECT_BOOLEAN)
        return proto_fail(err, PROTO_ERR_TYPE, "Reading 'allowReconnect' as Boolean failed.");
    out->allow_reconnect = o->via.boolean;
    return PROTO_OK;
}

/* Types 8 and 9: [type, sequenceId] */
static enum proto_status decode_sequence_id(struct msgpack_array *r, struct hub_msg *out,
                                            struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = msgpack_array_next(r, &o, NULL, "message is missing its sequence id", err);
    if (st != PROTO_OK)
        return st;
    if (!msgpack_object_to_i64(o, &out->sequence_id))
        return proto_fail(err, PROTO_ERR_TYPE, "Reading 'sequenceId' as Int64 failed.");
    return PROTO_OK;
}

static enum proto_status decode_elements(struct msgpack_array *r, struct hub_msg *out,
                                         struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = msgpack_array_next(r, &o, NULL, "empty message array", err);
    if (st != PROTO_OK)
        return st;
    int32_t type;
    if (!msgpack_object_to_i32(o, &type))
        return proto_fail(err, PROTO_ERR_TYPE, "Reading 'messageType' as Int32 failed.");
    if (type < HUB_MSG_INVOCATION || type > HUB_MSG_SEQUENCE)
        return PROTO_UNKNOWN_TYPE;
    out->kind = (enum hub_msg_kind)type;

    switch (out->kind) {
    case HUB_MSG_INVOCATION:
    case HUB_MSG_STREAM_INVOCATION:
        return decode_invocation(r, out, err);
    case HUB_MSG_STREAM_ITEM:
        return decode_stream_item(r, out, err);
    case HUB_MSG_COMPLETION:
        return decode_completion(r, out, err);
    case HUB_MSG_CANCEL_INVOCATION:
        return decode_required_id(r, out, "Null or empty invocation ID for CancelInvocation message.",
                                  err);
    case HUB_MSG_PING:
        return PROTO_OK;
    case HUB_MSG_CLOSE:
        return decode_close(r, out, err);
    case HUB_MSG_ACK:
    case HUB_MSG_SEQUENCE:
        return decode_sequence_id(r, out, err);
    case HUB_MSG_NONE:
        break;
    }
    return PROTO_UNKNOWN_TYPE;
}

enum proto_status core_msgpack_decode(const char *body, size_t len, struct hub_msg *out,
                                      struct proto_error *err)
{
    hub_msg_init(out);
    if (len == 0)
        return proto_fail(err, PROTO_ERR_SYNTAX, "empty MessagePack message");

    struct msgpack_array r;
    enum proto_status st = msgpack_array_open(&r, body, len, MSGPACK_MAX_DEPTH, "message is not a MessagePack array", err);
    if (st != PROTO_OK)
        return st;
    st = decode_elements(&r, out, err);
    msgpack_array_close(&r);
    if (st != PROTO_OK)
        hub_msg_init(out); /* no half-decoded message (kind NONE for unknown types) */
    return st;
}

/* ---- encoding -------------------------------------------------------------- */

static void sink_raw(struct buf_sink *s, struct span bytes)
{
    (void)msgpack_sink_write(s, bytes.ptr, bytes.len);
}

static void pack_string(msgpack_packer *pk, struct span s)
{
    msgpack_pack_str_with_body(pk, s.ptr, s.len);
}

/* nil when absent or empty (how the server writes optional ids and errors). */
static void pack_optional_string(msgpack_packer *pk, struct span s)
{
    if (span_is_empty(s))
        msgpack_pack_nil(pk);
    else
        pack_string(pk, s);
}

/* A payload the encoder will splice in must be NONE or MessagePack whose first
 * byte has the expected shape. Only the first byte is looked at: payloads come
 * from our decoders or convert.c, this catches mixed-up fields, not forgery. */
enum payload_shape { SHAPE_ANY, SHAPE_ARRAY, SHAPE_MAP };

static bool is_shape(unsigned char b, enum payload_shape shape)
{
    switch (shape) {
    case SHAPE_ARRAY: return (b >= 0x90 && b <= 0x9f) || b == 0xdc || b == 0xdd;
    case SHAPE_MAP: return (b >= 0x80 && b <= 0x8f) || b == 0xde || b == 0xdf;
    case SHAPE_ANY: break;
    }
    return true;
}

static enum proto_status check_payload(struct payload p, enum payload_shape shape,
                                       struct proto_error *err)
{
    if (p.encoding == PAYLOAD_NONE)
        return PROTO_OK;
    if (p.encoding == PAYLOAD_JSON)
        return proto_fail(err, PROTO_ERR_VALUE, "payload is JSON; convert it first");
    if (p.encoding != PAYLOAD_MSGPACK || !p.bytes.ptr || p.bytes.len == 0)
        return proto_fail(err, PROTO_ERR_VALUE, "payload is not a MessagePack value");
    if (!is_shape((unsigned char)p.bytes.ptr[0], shape))
        return proto_fail(err, PROTO_ERR_TYPE, shape == SHAPE_MAP ? "headers payload is not a map"
                                                                  : "payload is not an array");
    return PROTO_OK;
}

static bool string_fits(struct span s)
{
    return s.len <= UINT32_MAX;
}

/* Checks everything that can be wrong before a byte is written. */
static enum proto_status validate_for_encode(const struct hub_msg *msg, struct proto_error *err)
{
    enum proto_status st = PROTO_OK;
    bool needs_id = false;

    switch (msg->kind) {
    case HUB_MSG_INVOCATION:
    case HUB_MSG_STREAM_INVOCATION:
        if (span_is_empty(msg->target))
            return proto_fail(err, PROTO_ERR_MISSING, "invocation needs a target");
        needs_id = msg->kind == HUB_MSG_STREAM_INVOCATION;
        st = check_payload(msg->args, SHAPE_ARRAY, err);
        if (st == PROTO_OK)
            st = check_payload(msg->stream_ids, SHAPE_ARRAY, err);
        break;
    case HUB_MSG_STREAM_ITEM:
        needs_id = true;
        st = check_payload(msg->item, SHAPE_ANY, err);
        break;
    case HUB_MSG_COMPLETION:
        needs_id = true;
        if (!span_is_set(msg->error) && msg->completion == COMPLETION_RESULT)
            st = check_payload(msg->result, SHAPE_ANY, err);
        break;
    case HUB_MSG_CANCEL_INVOCATION:
        needs_id = true;
        break;
    case HUB_MSG_PING:
    case HUB_MSG_CLOSE:
    case HUB_MSG_ACK:
    case HUB_MSG_SEQUENCE:
        return string_fits(msg->error) ? PROTO_OK
                                       : proto_fail(err, PROTO_ERR_TOO_LARGE, "error text too long");
    case HUB_MSG_NONE:
    default:
        return proto_fail(err, PROTO_ERR_VALUE, "cannot encode this message kind");
    }
    if (st != PROTO_OK)
        return st;
    if (needs_id && span_is_empty(msg->invocation_id))
        return proto_fail(err, PROTO_ERR_MISSING, "message needs an invocation id");
    if (!string_fits(msg->target) || !string_fits(msg->invocation_id) || !string_fits(msg->error))
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "string too long for MessagePack");
    return check_payload(msg->headers, SHAPE_MAP, err);
}

static void pack_headers(msgpack_packer *pk, struct buf_sink *s, struct payload headers)
{
    if (headers.encoding == PAYLOAD_MSGPACK)
        sink_raw(s, headers.bytes);
    else
        msgpack_pack_map(pk, 0);
}

/* arguments, stream ids: raw array or an empty one */
static void pack_array_payload(msgpack_packer *pk, struct buf_sink *s, struct payload p)
{
    if (p.encoding == PAYLOAD_MSGPACK)
        sink_raw(s, p.bytes);
    else
        msgpack_pack_array(pk, 0);
}

/* item, result: raw value or nil */
static void pack_value_payload(msgpack_packer *pk, struct buf_sink *s, struct payload p)
{
    if (p.encoding == PAYLOAD_MSGPACK)
        sink_raw(s, p.bytes);
    else
        msgpack_pack_nil(pk);
}

static void pack_completion(msgpack_packer *pk, struct buf_sink *s, const struct hub_msg *msg)
{
    /* The server's rule: error if there is one, else result if it has one, else void. */
    int kind = span_is_set(msg->error) ? COMPLETION_ERROR
             : msg->completion == COMPLETION_RESULT ? COMPLETION_RESULT
             : COMPLETION_VOID;
    msgpack_pack_array(pk, kind == COMPLETION_VOID ? 4 : 5);
    msgpack_pack_int(pk, HUB_MSG_COMPLETION);
    pack_headers(pk, s, msg->headers);
    pack_string(pk, msg->invocation_id);
    msgpack_pack_int(pk, kind);
    if (kind == COMPLETION_ERROR)
        pack_string(pk, msg->error);
    else if (kind == COMPLETION_RESULT)
        pack_value_payload(pk, s, msg->result);
}

static void pack_body(msgpack_packer *pk, struct buf_sink *s, const struct hub_msg *msg)
{
    switch (msg->kind) {
    case HUB_MSG_INVOCATION:
    case HUB_MSG_STREAM_INVOCATION:
        msgpack_pack_array(pk, 6);
        msgpack_pack_int(pk, msg->kind);
        pack_headers(pk, s, msg->headers);
        pack_optional_string(pk, msg->invocation_id);
        pack_string(pk, msg->target);
        pack_array_payload(pk, s, msg->args);
        pack_array_payload(pk, s, msg->stream_ids);
        break;
    case HUB_MSG_STREAM_ITEM:
        msgpack_pack_array(pk, 4);
        msgpack_pack_int(pk, HUB_MSG_STREAM_ITEM);
        pack_headers(pk, s, msg->headers);
        pack_string(pk, msg->invocation_id);
        pack_value_payload(pk, s, msg->item);
        break;
    case HUB_MSG_COMPLETION:
        pack_completion(pk, s, msg);
        break;
    case HUB_MSG_CANCEL_INVOCATION:
        msgpack_pack_array(pk, 3);
        msgpack_pack_int(pk, HUB_MSG_CANCEL_INVOCATION);
        pack_headers(pk, s, msg->headers);
        pack_string(pk, msg->invocation_id);
        break;
    case HUB_MSG_PING:
        msgpack_pack_array(pk, 1);
        msgpack_pack_int(pk, HUB_MSG_PING);
        break;
    case HUB_MSG_CLOSE:
        msgpack_pack_array(pk, 3);
        msgpack_pack_int(pk, HUB_MSG_CLOSE);
        pack_optional_string(pk, msg->error);
        if (msg->allow_reconnect)
            msgpack_pack_true(pk);
        else
            msgpack_pack_false(pk);
        break;
    case HUB_MSG_ACK:
    case HUB_MSG_SEQUENCE:
        msgpack_pack_array(pk, 2);
        msgpack_pack_int(pk, msg->kind);
        msgpack_pack_int64(pk, msg->sequence_id);
        break;
    case HUB_MSG_NONE:
        break;
    }
}

/* Moves the body written at out->data[start..] right and puts its VarInt in front. */
static enum proto_status prepend_length(struct buf *out, size_t start, struct proto_error *err)
{
    size_t body_len = out->len - start;
    unsigned char prefix[VARINT_MAX_BYTES];
    if (body_len > CORE_BINARY_MAX_LENGTH)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "Messages over 2GB in size are not supported.");
    size_t n = varint_encode((uint32_t)body_len, prefix);
    if (!buf_reserve(out, n))
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory encoding a message");
    memmove(out->data + start + n, out->data + start, body_len);
    memcpy(out->data + start, prefix, n);
    out->len += n;
    return PROTO_OK;
}

enum proto_status core_msgpack_encode(const struct hub_msg *msg, struct buf *out,
                                      struct proto_error *err)
{
    enum proto_status st = validate_for_encode(msg, err);
    if (st != PROTO_OK)
        return st;

    size_t start = out->len;
    struct buf_sink sink = { out, false };
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sink, msgpack_sink_write);
    pack_body(&pk, &sink, msg);
    if (sink.failed)
        st = proto_fail(err, PROTO_ERR_NOMEM, "out of memory encoding a message");
    else
        st = prepend_length(out, start, err);
    if (st != PROTO_OK)
        out->len = start;
    return st;
}
