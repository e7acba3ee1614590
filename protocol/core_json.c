/* core_json.c - ASP.NET Core SignalR JSON hub protocol: 0x1E framing, decode, encode.
 *
 * Decoding is two steps. walk_record() visits every top-level member once, in
 * arrival order, checks the type of every property the server knows (the
 * server does this before it looks at `type`), and remembers the last
 * occurrence of each. build_message() then applies the per-type rules of
 * JsonHubProtocol (required fields, error/result exclusivity) and fills the
 * hub_msg. String members are kept as parsed json_members until the end so
 * that duplicate keys never cost more than one owned copy each. */
#include "protocol/core_json.h"

#include <stdint.h>
#include <string.h>

#include "protocol/json_scan.h"
#include "protocol/json_strict.h"
#include "protocol/json_write.h"

/* ---- framing ------------------------------------------------------------ */

enum proto_status core_text_next_record(const char *data, size_t len, size_t max_record,
                                        struct span *record, size_t *consumed,
                                        struct proto_error *err)
{
    if (len == 0)
        return PROTO_INCOMPLETE;
    /* A separator further than max_record bytes in would end a record that is
     * too long anyway, so never look past max_record + 1 bytes. */
    size_t window = len;
    if (max_record < SIZE_MAX && window > max_record + 1)
        window = max_record + 1;
    const char *rs = memchr(data, CORE_RECORD_SEPARATOR, window);
    if (!rs) {
        if (len > max_record)
            return proto_fail(err, PROTO_ERR_TOO_LARGE,
                              "message exceeds the maximum size without a record separator");
        return PROTO_INCOMPLETE;
    }
    *record = span_make(data, (size_t)(rs - data));
    *consumed = record->len + 1;
    return PROTO_OK;
}

/* ---- decoding ----------------------------------------------------------- */

/* What the walk found; the last occurrence of each property wins. */
struct fields {
    bool has_type;
    int type;
    struct json_member target;        /* string members, kept parsed; key_item NULL = absent */
    struct json_member invocation_id;
    struct json_member error;
    struct payload args;
    struct payload item;
    struct payload result;
    struct payload headers;           /* NONE when absent or `{}` */
    struct payload stream_ids;
    bool allow_reconnect;
    bool has_sequence_id;
    int64_t sequence_id;
};

static void fields_release(struct fields *f)
{
    json_member_release(&f->target);
    json_member_release(&f->invocation_id);
    json_member_release(&f->error);
}

/* Keeps *m as the latest value of a string property; *m is left empty. */
static enum proto_status keep_string(struct json_member *slot, struct json_member *m,
                                     const char *type_detail, struct proto_error *err)
{
    if (!cJSON_IsString(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, type_detail);
    json_member_release(slot);
    *slot = *m;
    memset(m, 0, sizeof *m);
    return PROTO_OK;
}

static enum proto_status read_type(struct fields *f, const struct json_member *m,
                                   struct proto_error *err)
{
    /* ReadAsInt32 turns null into "no type", which the server rejects at once. */
    if (!cJSON_IsNumber(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, "Expected 'type' to be of type Number.");
    long long type;
    enum proto_status st = json_strict_integer(m->raw, INT32_MIN, INT32_MAX, &type, err);
    if (st != PROTO_OK)
        return proto_fail(err, st, "'type' must be a 32-bit integer literal");
    f->has_type = true;
    f->type = (int)type;
    return PROTO_OK;
}

static enum proto_status read_sequence_id(struct fields *f, const struct json_member *m,
                                          struct proto_error *err)
{
    if (cJSON_IsNull(m->value)) { /* ReadAsInt64: null means absent */
        f->has_sequence_id = false;
        return PROTO_OK;
    }
    if (!cJSON_IsNumber(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, "Expected 'sequenceId' to be of type Number.");
    long long id;
    enum proto_status st = json_strict_integer(m->raw, INT64_MIN, INT64_MAX, &id, err);
    if (st != PROTO_OK)
        return proto_fail(err, st, "'sequenceId' must be a 64-bit integer literal");
    f->has_sequence_id = true;
    f->sequence_id = id;
    return PROTO_OK;
}

static enum proto_status read_headers(struct fields *f, const struct json_member *m,
                                      struct proto_error *err)
{
    if (!cJSON_IsObject(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, "Expected 'headers' to be of type Object.");
    for (const cJSON *h = m->value->child; h; h = h->next)
        if (!cJSON_IsString(h))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected every header to be of type String.");
    f->headers = m->value->child ? json_member_payload(m) : (struct payload){ PAYLOAD_NONE, SPAN_NONE };
    return PROTO_OK;
}

static enum proto_status read_stream_ids(struct fields *f, const struct json_member *m,
                                         struct proto_error *err)
{
    if (!cJSON_IsArray(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, "Expected 'streamIds' to be of type Array.");
    for (const cJSON *id = m->value->child; id; id = id->next)
        if (!cJSON_IsString(id))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected every stream id to be of type String.");
    f->stream_ids = json_member_payload(m);
    return PROTO_OK;
}

/* Records one member. String members are moved into *f (m is then empty). */
static enum proto_status read_member(struct fields *f, struct json_member *m,
                                     struct proto_error *err)
{
    const char *key = m->key;
    if (strcmp(key, "type") == 0)
        return read_type(f, m, err);
    if (strcmp(key, "invocationId") == 0)
        return keep_string(&f->invocation_id, m, "Expected 'invocationId' to be of type String.", err);
    if (strcmp(key, "target") == 0)
        return keep_string(&f->target, m, "Expected 'target' to be of type String.", err);
    if (strcmp(key, "error") == 0)
        return keep_string(&f->error, m, "Expected 'error' to be of type String.", err);
    if (strcmp(key, "arguments") == 0) {
        if (!cJSON_IsArray(m->value))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected 'arguments' to be of type Array.");
        f->args = json_member_payload(m);
        return PROTO_OK;
    }
    if (strcmp(key, "item") == 0) {
        f->item = json_member_payload(m);
        return PROTO_OK;
    }
    if (strcmp(key, "result") == 0) {
        f->result = json_member_payload(m);
        return PROTO_OK;
    }
    if (strcmp(key, "allowReconnect") == 0) {
        if (!cJSON_IsBool(m->value))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected 'allowReconnect' to be true or false.");
        f->allow_reconnect = cJSON_IsTrue(m->value);
        return PROTO_OK;
    }
    if (strcmp(key, "headers") == 0)
        return read_headers(f, m, err);
    if (strcmp(key, "streamIds") == 0)
        return read_stream_ids(f, m, err);
    if (strcmp(key, "sequenceId") == 0)
        return read_sequence_id(f, m, err);
    return PROTO_OK; /* unknown properties are skipped */
}

static enum proto_status walk_record(const char *record, size_t len, struct fields *f,
                                     struct proto_error *err)
{
    struct json_object_iter it;
    enum proto_status st = json_object_begin(&it, record, len, err);
    if (st != PROTO_OK)
        return st;
    for (;;) {
        struct json_member m;
        st = json_object_next(&it, &m, err);
        if (st == PROTO_INCOMPLETE)
            return PROTO_OK; /* the object ended cleanly */
        if (st != PROTO_OK)
            return st;
        st = read_member(f, &m, err);
        json_member_release(&m);
        if (st != PROTO_OK)
            return st;
    }
}

/* The kept string member as a span into the record (or an owned copy when it
 * had escapes). Absent members give SPAN_NONE. */
static enum proto_status take_string(const struct json_member *m, struct hub_msg *msg,
                                     struct span *out, struct proto_error *err)
{
    *out = SPAN_NONE;
    if (!m->value)
        return PROTO_OK;
    return json_member_string(m, msg, out, err);
}

static enum proto_status missing(struct proto_error *err, const char *detail)
{
    return proto_fail(err, PROTO_ERR_MISSING, detail);
}

#define MISSING_ID "Missing required property 'invocationId'."
#define MISSING_TARGET "Missing required property 'target'."
#define MISSING_ARGS "Missing required property 'arguments'."

/* Invocation (1) and StreamInvocation (4); `needs_id` for the latter. */
static enum proto_status build_invocation(const struct fields *f, struct hub_msg *msg,
                                          bool needs_id, struct proto_error *err)
{
    /* The server's order of checks: target absent, id, arguments, target empty. */
    if (!span_is_set(msg->target))
        return missing(err, MISSING_TARGET);
    if (needs_id && span_is_empty(msg->invocation_id))
        return missing(err, MISSING_ID);
    if (f->args.encoding == PAYLOAD_NONE)
        return missing(err, MISSING_ARGS);
    if (span_is_empty(msg->target))
        return missing(err, MISSING_TARGET);
    msg->args = f->args;
    msg->stream_ids = f->stream_ids;
    return PROTO_OK;
}

static enum proto_status build_completion(const struct fields *f, struct hub_msg *msg,
                                          struct proto_error *err)
{
    if (span_is_empty(msg->invocation_id))
        return missing(err, MISSING_ID);
    if (span_is_set(msg->error) && f->result.encoding != PAYLOAD_NONE)
        return proto_fail(err, PROTO_ERR_VALUE,
                          "The 'error' and 'result' properties are mutually exclusive.");
    if (span_is_set(msg->error)) {
        msg->completion = COMPLETION_ERROR;
    } else if (f->result.encoding != PAYLOAD_NONE) {
        msg->completion = COMPLETION_RESULT;
        msg->result = f->result;
    } else {
        msg->completion = COMPLETION_VOID;
    }
    return PROTO_OK;
}

/* Applies the rules of a known type; strings are already in msg. */
static enum proto_status build_message(const struct fields *f, struct hub_msg *msg,
                                       struct proto_error *err)
{
    enum proto_status st = PROTO_OK;
    switch (f->type) {
    case HUB_MSG_INVOCATION:
        st = build_invocation(f, msg, false, err);
        break;
    case HUB_MSG_STREAM_INVOCATION:
        st = build_invocation(f, msg, true, err);
        break;
    case HUB_MSG_STREAM_ITEM:
        if (span_is_empty(msg->invocation_id))
            return missing(err, MISSING_ID);
        if (f->item.encoding == PAYLOAD_NONE)
            return missing(err, "Missing required property 'item'.");
        msg->item = f->item;
        break;
    case HUB_MSG_COMPLETION:
        st = build_completion(f, msg, err);
        break;
    case HUB_MSG_CANCEL_INVOCATION:
        if (span_is_empty(msg->invocation_id))
            return missing(err, MISSING_ID);
        break;
    case HUB_MSG_PING:
        break;
    case HUB_MSG_CLOSE:
        msg->allow_reconnect = f->allow_reconnect;
        break;
    case HUB_MSG_ACK:
    case HUB_MSG_SEQUENCE:
        if (!f->has_sequence_id)
            return missing(err, "Missing required property 'sequenceId'.");
        msg->sequence_id = f->sequence_id;
        break;
    default:
        return PROTO_UNKNOWN_TYPE; /* fill_message filtered these out already */
    }
    if (st != PROTO_OK)
        return st;
    msg->kind = (enum hub_msg_kind)f->type;
    if (msg->kind <= HUB_MSG_CANCEL_INVOCATION)
        msg->headers = f->headers; /* only invocation messages carry headers */
    return PROTO_OK;
}

/* Moves the fields that matter for f->type into msg. */
static enum proto_status fill_message(const struct fields *f, struct hub_msg *msg,
                                      struct proto_error *err)
{
    if (!f->has_type)
        return missing(err, "Missing required property 'type'.");
    /* Future message types: the server returns "no message" and moves on. */
    if (f->type < HUB_MSG_INVOCATION || f->type > HUB_MSG_SEQUENCE)
        return PROTO_UNKNOWN_TYPE;

    enum proto_status st = take_string(&f->invocation_id, msg, &msg->invocation_id, err);
    if (st == PROTO_OK)
        st = take_string(&f->target, msg, &msg->target, err);
    if (st == PROTO_OK)
        st = take_string(&f->error, msg, &msg->error, err);
    if (st == PROTO_OK)
        st = build_message(f, msg, err);
    if (st != PROTO_OK)
        return st;

    /* Fields the type does not define are not part of the message. */
    enum hub_msg_kind k = msg->kind;
    if (k != HUB_MSG_INVOCATION && k != HUB_MSG_STREAM_INVOCATION)
        msg->target = SPAN_NONE;
    if (k > HUB_MSG_CANCEL_INVOCATION)
        msg->invocation_id = SPAN_NONE;
    if (k != HUB_MSG_COMPLETION && k != HUB_MSG_CLOSE)
        msg->error = SPAN_NONE;
    return PROTO_OK;
}

enum proto_status core_json_decode(const char *record, size_t len, struct hub_msg *out,
                                   struct proto_error *err)
{
    hub_msg_init(out);
    enum proto_status st = json_strict_check_text(record, len, JSON_STRICT_MAX_DEPTH, err);
    if (st != PROTO_OK)
        return st;

    struct fields f;
    memset(&f, 0, sizeof f);
    st = walk_record(record, len, &f, err);
    if (st == PROTO_OK)
        st = fill_message(&f, out, err);
    fields_release(&f);
    if (st != PROTO_OK)
        hub_msg_release(out);
    return st;
}

/* ---- encoding ----------------------------------------------------------- */

static bool payload_present(const struct payload *p)
{
    return p->encoding != PAYLOAD_NONE && p->bytes.ptr && p->bytes.len > 0;
}

/* First byte that is not JSON whitespace, or 0. */
static char first_token(struct span s)
{
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return c;
    }
    return 0;
}

/* Checks a payload we are about to splice in: JSON, and (when `opener` is not
 * 0) starting with that bracket. Absent payloads pass. */
static enum proto_status check_payload(const struct payload *p, char opener, const char *detail,
                                       struct proto_error *err)
{
    if (!payload_present(p))
        return PROTO_OK;
    if (p->encoding != PAYLOAD_JSON)
        return proto_fail(err, PROTO_ERR_VALUE, "payload is MessagePack; convert it first");
    if (opener && first_token(p->bytes) != opener)
        return proto_fail(err, PROTO_ERR_VALUE, detail);
    return PROTO_OK;
}

static bool headers_non_empty(const struct payload *h)
{
    if (!payload_present(h))
        return false;
    const char *brace = memchr(h->bytes.ptr, '{', h->bytes.len);
    struct span rest = span_make(brace + 1, h->bytes.len - (size_t)(brace + 1 - h->bytes.ptr));
    return first_token(rest) != '}';
}

static enum proto_status check_message(const struct hub_msg *msg, struct proto_error *err)
{
    enum hub_msg_kind k = msg->kind;
    if (k < HUB_MSG_INVOCATION || k > HUB_MSG_SEQUENCE)
        return proto_fail(err, PROTO_ERR_VALUE, "unknown hub message kind");
    bool invocation = k == HUB_MSG_INVOCATION || k == HUB_MSG_STREAM_INVOCATION;
    if (k <= HUB_MSG_CANCEL_INVOCATION) {
        enum proto_status st = check_payload(&msg->headers, '{', "headers must be a JSON object", err);
        if (st != PROTO_OK)
            return st;
    }
    if (k != HUB_MSG_INVOCATION && k <= HUB_MSG_CANCEL_INVOCATION && span_is_empty(msg->invocation_id))
        return proto_fail(err, PROTO_ERR_MISSING, MISSING_ID);
    if (invocation) {
        if (span_is_empty(msg->target))
            return proto_fail(err, PROTO_ERR_MISSING, MISSING_TARGET);
        enum proto_status st = check_payload(&msg->args, '[', "arguments must be a JSON array", err);
        if (st == PROTO_OK)
            st = check_payload(&msg->stream_ids, '[', "streamIds must be a JSON array", err);
        return st;
    }
    if (k == HUB_MSG_STREAM_ITEM)
        return check_payload(&msg->item, 0, NULL, err);
    if (k == HUB_MSG_COMPLETION)
        return check_payload(&msg->result, 0, NULL, err);
    return PROTO_OK;
}

static bool write_raw_or(struct buf *b, const struct payload *p, const char *fallback)
{
    return payload_present(p) ? buf_append_span(b, p->bytes) : buf_append_cstr(b, fallback);
}

static bool write_string_member(struct buf *b, const char *key, struct span value)
{
    return json_write_key(b, key, false) && json_write_string(b, value);
}

static bool write_completion(struct buf *b, const struct hub_msg *msg)
{
    enum completion_kind kind = msg->completion;
    if (kind == COMPLETION_NONE)
        kind = span_is_set(msg->error) ? COMPLETION_ERROR
             : payload_present(&msg->result) ? COMPLETION_RESULT : COMPLETION_VOID;
    switch (kind) {
    case COMPLETION_ERROR:
        return write_string_member(b, "error", msg->error);
    case COMPLETION_RESULT:
        return json_write_key(b, "result", false) && write_raw_or(b, &msg->result, "null");
    default:
        return true;
    }
}

static bool write_body(struct buf *b, const struct hub_msg *msg)
{
    enum hub_msg_kind k = msg->kind;
    switch (k) {
    case HUB_MSG_INVOCATION:
    case HUB_MSG_STREAM_INVOCATION:
        if (!write_string_member(b, "target", msg->target) ||
            !json_write_key(b, "arguments", false) || !write_raw_or(b, &msg->args, "[]"))
            return false;
        if (payload_present(&msg->stream_ids))
            return json_write_key(b, "streamIds", false) && buf_append_span(b, msg->stream_ids.bytes);
        return true;
    case HUB_MSG_STREAM_ITEM:
        return json_write_key(b, "item", false) && write_raw_or(b, &msg->item, "null");
    case HUB_MSG_COMPLETION:
        return write_completion(b, msg);
    case HUB_MSG_CLOSE:
        if (span_is_set(msg->error) && !write_string_member(b, "error", msg->error))
            return false;
        return !msg->allow_reconnect || (json_write_key(b, "allowReconnect", false) &&
                                         buf_append_cstr(b, "true"));
    case HUB_MSG_ACK:
    case HUB_MSG_SEQUENCE:
        return json_write_key(b, "sequenceId", false) && buf_append_i64(b, msg->sequence_id);
    default:
        return true; /* Cancel and Ping have nothing after the id */
    }
}

static bool write_message(struct buf *b, const struct hub_msg *msg)
{
    enum hub_msg_kind k = msg->kind;
    if (!buf_append_byte(b, '{') || !json_write_key(b, "type", true) || !buf_append_i64(b, k))
        return false;
    if (k <= HUB_MSG_CANCEL_INVOCATION) {
        if (headers_non_empty(&msg->headers) &&
            !(json_write_key(b, "headers", false) && buf_append_span(b, msg->headers.bytes)))
            return false;
        if (!span_is_empty(msg->invocation_id) &&
            !write_string_member(b, "invocationId", msg->invocation_id))
            return false;
    }
    return write_body(b, msg) && buf_append_byte(b, '}') &&
           buf_append_byte(b, CORE_RECORD_SEPARATOR);
}

enum proto_status core_json_encode(const struct hub_msg *msg, struct buf *out,
                                   struct proto_error *err)
{
    size_t start = out->len;
    enum proto_status st = check_message(msg, err);
    if (st != PROTO_OK)
        return st;
    if (!write_message(out, msg)) {
        out->len = start;
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory encoding a JSON message");
    }
    return PROTO_OK;
}
