/* service_msg.c - the service protocol codec and its framer (see service_msg.h). */
#include "protocol/service_msg.h"

#include <msgpack.h>
#include <string.h>

#include "protocol/core_msgpack.h"
#include "protocol/msgpack_check.h"
#include "protocol/msgpack_sink.h"

/* ---- reading validated raw bytes -------------------------------------------
 * The iterators walk lists that svc_msg_decode has already checked element by
 * element, so these readers only need the header shapes the checks allowed:
 * array/map headers, str (or nil) and bin. */

static uint32_t load_be(const unsigned char *p, size_t n)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* Array (maps: entries) header at *p; advances *p. */
static uint32_t raw_container_header(const char **p)
{
    const unsigned char *b = (const unsigned char *)*p;
    if ((b[0] >= 0x80 && b[0] <= 0x9f)) {
        *p += 1;
        return b[0] & 0x0f;
    }
    size_t n = (b[0] == 0xdc || b[0] == 0xde) ? 2 : 4;
    *p += 1 + n;
    return load_be(b + 1, n);
}

/* A str, bin or nil at *p (nil gives an absent span); advances *p. */
static struct span raw_bytes(const char **p)
{
    const unsigned char *b = (const unsigned char *)*p;
    size_t header, len;
    if (b[0] == 0xc0) {
        *p += 1;
        return SPAN_NONE;
    }
    if (b[0] >= 0xa0 && b[0] <= 0xbf) {
        header = 1;
        len = b[0] & 0x1f;
    } else {
        size_t n = (b[0] == 0xd9 || b[0] == 0xc4) ? 1 : (b[0] == 0xda || b[0] == 0xc5) ? 2 : 4;
        header = 1 + n;
        len = load_be(b + 1, n);
    }
    *p += header + len;
    return span_make(*p - len, len);
}

void svc_list_iter_begin(struct svc_list_iter *it, const struct svc_list *list)
{
    it->p = list->raw.ptr;
    it->end = list->raw.ptr ? list->raw.ptr + list->raw.len : NULL;
    it->left = 0;
    it->kind = list->kind;
    if (list->raw.ptr && list->raw.len > 0)
        it->left = list->bare ? list->count : raw_container_header(&it->p);
}

bool svc_list_iter_next(struct svc_list_iter *it, struct span *key, struct span *value)
{
    if (it->left == 0)
        return false;
    it->left--;
    *key = raw_bytes(&it->p);
    if (it->kind == SVC_LIST_STRINGS) {
        if (value)
            *value = SPAN_NONE;
        return true;
    }
    if (it->kind == SVC_LIST_HEADERS) {
        /* the value is an array of str: skip over it, yielding its raw bytes */
        const char *start = it->p;
        uint32_t n = raw_container_header(&it->p);
        for (uint32_t i = 0; i < n; i++)
            (void)raw_bytes(&it->p);
        if (value)
            *value = span_make(start, (size_t)(it->p - start));
        return true;
    }
    struct span v = raw_bytes(&it->p);
    if (value)
        *value = v;
    return true;
}

struct svc_list svc_list_of_values(struct span raw_values)
{
    struct svc_list l = { raw_values, 0, SVC_LIST_STRINGS, false };
    if (raw_values.ptr && raw_values.len > 0) {
        const char *p = raw_values.ptr;
        l.count = raw_container_header(&p);
    }
    return l;
}

bool svc_payloads_find(const struct svc_list *payloads, struct span protocol, struct span *bytes)
{
    struct svc_list_iter it;
    struct span key, value;
    svc_list_iter_begin(&it, payloads);
    while (svc_list_iter_next(&it, &key, &value)) {
        if (key.ptr && span_eq_nocase(key, protocol)) {
            *bytes = value.ptr ? value : span_make("", 0);
            return true;
        }
    }
    return false;
}

bool svc_ping_get(const struct svc_msg *ping, const char *key, struct span *value)
{
    struct svc_list_iter it;
    struct span k, v;
    if (ping->type != SVC_PING)
        return false;
    svc_list_iter_begin(&it, &ping->ids);
    while (svc_list_iter_next(&it, &k, NULL)) {
        if (!svc_list_iter_next(&it, &v, NULL))
            return false; /* a key without a value */
        if (k.ptr && span_eq_cstr(k, key)) {
            *value = v.ptr ? v : span_make("", 0);
            return true;
        }
    }
    return false;
}

/* ---- decoding ---------------------------------------------------------------- */

/* Elements of the top-level array, each unpacked by msgpack-c into one zone
 * that is cleared per element (as in core_msgpack.c). */
struct reader {
    const char *body;
    size_t len;
    size_t pos;
    uint32_t count, used;
    msgpack_zone zone;
    msgpack_object obj;
};

#define READER_ZONE_CHUNK 1024

static bool read_array_header(const unsigned char *p, size_t len, uint32_t *count, size_t *header_len)
{
    if (len >= 1 && p[0] >= 0x90 && p[0] <= 0x9f) {
        *count = p[0] & 0x0f;
        *header_len = 1;
    } else if (len >= 3 && p[0] == 0xdc) {
        *count = load_be(p + 1, 2);
        *header_len = 3;
    } else if (len >= 5 && p[0] == 0xdd) {
        *count = load_be(p + 1, 4);
        *header_len = 5;
    } else {
        return false;
    }
    return true;
}

static bool has_more(const struct reader *r) { return r->used < r->count; }

/* The next element into *o (valid until the next call), its raw bytes into *raw. */
static enum proto_status next_element(struct reader *r, const msgpack_object **o, struct span *raw,
                                      const char *missing, struct proto_error *err)
{
    if (r->used >= r->count)
        return proto_fail(err, PROTO_ERR_MISSING, missing);
    size_t start = r->pos;
    msgpack_zone_clear(&r->zone);
    msgpack_unpack_return ret = msgpack_unpack(r->body, r->len, &r->pos, &r->zone, &r->obj);
    if (ret == MSGPACK_UNPACK_NOMEM_ERROR)
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory unpacking MessagePack");
    if (ret != MSGPACK_UNPACK_SUCCESS && ret != MSGPACK_UNPACK_EXTRA_BYTES)
        return proto_fail(err, PROTO_ERR_SYNTAX, "invalid MessagePack element");
    r->used++;
    *o = &r->obj;
    if (raw)
        *raw = span_make(r->body + start, r->pos - start);
    return PROTO_OK;
}

static bool to_i64(const msgpack_object *o, int64_t *v)
{
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *v = o->via.i64;
        return true;
    }
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
        *v = (int64_t)o->via.u64;
        return true;
    }
    return false;
}

static bool to_i32(const msgpack_object *o, int32_t *v)
{
    int64_t wide;
    if (!to_i64(o, &wide) || wide < INT32_MIN || wide > INT32_MAX)
        return false;
    *v = (int32_t)wide;
    return true;
}

/* str -> span (checked UTF-8), nil -> absent; other types fail. */
static enum proto_status to_string(const msgpack_object *o, struct span *out, const char *what,
                                   struct proto_error *err)
{
    if (o->type == MSGPACK_OBJECT_NIL) {
        *out = SPAN_NONE;
        return PROTO_OK;
    }
    if (o->type != MSGPACK_OBJECT_STR)
        return proto_fail(err, PROTO_ERR_TYPE, what);
    if (!utf8_is_valid(o->via.str.ptr, o->via.str.size))
        return proto_fail(err, PROTO_ERR_UTF8, "string is not valid UTF-8");
    /* msgpack-c may leave ptr NULL for a zero-length str: present but empty. */
    *out = o->via.str.size ? span_make(o->via.str.ptr, o->via.str.size) : span_make("", 0);
    return PROTO_OK;
}

static enum proto_status read_string(struct reader *r, struct span *out, const char *what,
                                     struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = next_element(r, &o, NULL, what, err);
    return st == PROTO_OK ? to_string(o, out, what, err) : st;
}

/* A string that may not be nil (ids, user ids, group names of joins). */
static enum proto_status read_required_string(struct reader *r, struct span *out, const char *what,
                                              struct proto_error *err)
{
    enum proto_status st = read_string(r, out, what, err);
    if (st == PROTO_OK && !out->ptr)
        return proto_fail(err, PROTO_ERR_MISSING, what);
    return st;
}

static enum proto_status read_i32(struct reader *r, int32_t *v, const char *what,
                                  struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = next_element(r, &o, NULL, what, err);
    if (st == PROTO_OK && !to_i32(o, v))
        return proto_fail(err, PROTO_ERR_TYPE, what);
    return st;
}

static enum proto_status read_i64(struct reader *r, int64_t *v, const char *what,
                                  struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = next_element(r, &o, NULL, what, err);
    if (st == PROTO_OK && !to_i64(o, v))
        return proto_fail(err, PROTO_ERR_TYPE, what);
    return st;
}

static enum proto_status read_bin(struct reader *r, struct span *out, const char *what,
                                  struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = next_element(r, &o, NULL, what, err);
    if (st != PROTO_OK)
        return st;
    if (o->type != MSGPACK_OBJECT_BIN)
        return proto_fail(err, PROTO_ERR_TYPE, what);
    *out = o->via.bin.size ? span_make(o->via.bin.ptr, o->via.bin.size) : span_make("", 0);
    return PROTO_OK;
}

/* Every element of an array must be str or nil. */
static enum proto_status check_strings(const msgpack_object *items, uint32_t n, const char *what,
                                       struct proto_error *err)
{
    for (uint32_t i = 0; i < n; i++) {
        struct span ignored;
        enum proto_status st = to_string(&items[i], &ignored, what, err);
        if (st != PROTO_OK)
            return st;
    }
    return PROTO_OK;
}

/* A list element: an array of strings (nil = empty list, kept absent). */
static enum proto_status read_string_list(struct reader *r, struct svc_list *out, const char *what,
                                          struct proto_error *err)
{
    const msgpack_object *o;
    struct span raw;
    enum proto_status st = next_element(r, &o, &raw, what, err);
    if (st != PROTO_OK)
        return st;
    *out = (struct svc_list){ SPAN_NONE, 0, SVC_LIST_STRINGS, false };
    if (o->type == MSGPACK_OBJECT_NIL)
        return PROTO_OK;
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return proto_fail(err, PROTO_ERR_TYPE, what);
    st = check_strings(o->via.array.ptr, o->via.array.size, what, err);
    if (st == PROTO_OK)
        *out = (struct svc_list){ raw, o->via.array.size, SVC_LIST_STRINGS, false };
    return st;
}

/* A map whose keys are non-nil strings and whose values are checked per kind. */
static enum proto_status read_map(struct reader *r, struct svc_list *out, enum svc_list_kind kind,
                                  bool nil_is_empty, const char *what, struct proto_error *err)
{
    const msgpack_object *o;
    struct span raw;
    enum proto_status st = next_element(r, &o, &raw, what, err);
    if (st != PROTO_OK)
        return st;
    *out = (struct svc_list){ SPAN_NONE, 0, kind, false };
    if (o->type == MSGPACK_OBJECT_NIL && nil_is_empty)
        return PROTO_OK;
    if (o->type != MSGPACK_OBJECT_MAP)
        return proto_fail(err, PROTO_ERR_TYPE, what);
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object_kv *kv = &o->via.map.ptr[i];
        struct span key;
        st = to_string(&kv->key, &key, what, err);
        if (st != PROTO_OK)
            return st;
        if (!key.ptr)
            return proto_fail(err, PROTO_ERR_TYPE, what);
        switch (kind) {
        case SVC_LIST_PAYLOADS:
            if (kv->val.type != MSGPACK_OBJECT_BIN)
                return proto_fail(err, PROTO_ERR_TYPE, "payload must be binary");
            break;
        case SVC_LIST_CLAIMS:
            st = to_string(&kv->val, &key, what, err);
            break;
        case SVC_LIST_HEADERS:
            if (kv->val.type != MSGPACK_OBJECT_ARRAY)
                return proto_fail(err, PROTO_ERR_TYPE, "header values must be an array");
            st = check_strings(kv->val.via.array.ptr, kv->val.via.array.size, what, err);
            break;
        case SVC_LIST_STRINGS:
            break;
        }
        if (st != PROTO_OK)
            return st;
    }
    *out = (struct svc_list){ raw, o->via.map.size, kind, false };
    return PROTO_OK;
}

static enum proto_status read_payloads(struct reader *r, struct svc_list *out, struct proto_error *err)
{
    return read_map(r, out, SVC_LIST_PAYLOADS, false, "payloads must be a map of protocol -> bin", err);
}

static enum proto_status ext_entry(const msgpack_object_kv *kv, struct svc_ext *ext,
                                   struct proto_error *err)
{
    int64_t key;
    if (!to_i64(&kv->key, &key))
        return proto_fail(err, PROTO_ERR_TYPE, "extension keys must be integers");
    const msgpack_object *v = &kv->val;
    switch (key) {
    case 1:
        if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
            return proto_fail(err, PROTO_ERR_TYPE, "tracing id must be an unsigned integer");
        ext->has_tracing_id = true;
        ext->tracing_id = v->via.u64;
        return PROTO_OK;
    case 2:
        if (!to_i32(v, &ext->ttl))
            return proto_fail(err, PROTO_ERR_TYPE, "ttl must be an Int32");
        ext->has_ttl = true;
        return PROTO_OK;
    case 3:
        return to_string(v, &ext->protocol, "protocol must be a string", err);
    case 4:
        return to_string(v, &ext->filter, "filter must be a string", err);
    case 5:
        if (!to_i32(v, &ext->data_type))
            return proto_fail(err, PROTO_ERR_TYPE, "data message type must be an Int32");
        return PROTO_OK;
    case 6:
        if (v->type != MSGPACK_OBJECT_BOOLEAN)
            return proto_fail(err, PROTO_ERR_TYPE, "isPartial must be a boolean");
        ext->has_partial = true;
        ext->partial = v->via.boolean;
        return PROTO_OK;
    default:
        return PROTO_OK; /* unknown keys are skipped, as the SDK does */
    }
}

/* The optional ext element: absent or nil means empty. */
static enum proto_status read_ext(struct reader *r, struct svc_msg *m, struct proto_error *err)
{
    if (!has_more(r))
        return PROTO_OK;
    const msgpack_object *o;
    enum proto_status st = next_element(r, &o, NULL, "missing ext", err);
    if (st != PROTO_OK)
        return st;
    m->has_ext = true;
    if (o->type == MSGPACK_OBJECT_NIL)
        return PROTO_OK;
    if (o->type != MSGPACK_OBJECT_MAP)
        return proto_fail(err, PROTO_ERR_TYPE, "ext must be a map");
    for (uint32_t i = 0; i < o->via.map.size && st == PROTO_OK; i++)
        st = ext_entry(&o->via.map.ptr[i], &m->ext, err);
    return st;
}

static enum proto_status decode_handshake_request(struct reader *r, struct svc_msg *m,
                                                  struct proto_error *err)
{
    const msgpack_object *o;
    enum proto_status st = read_i32(r, &m->version, "handshake version must be an Int32", err);
    if (st == PROTO_OK && has_more(r))
        st = read_i32(r, &m->conn_type, "connection type must be an Int32", err);
    if (st == PROTO_OK && has_more(r))
        st = read_string(r, &m->target, "target must be a string", err);
    if (st == PROTO_OK && has_more(r))
        st = read_i32(r, &m->migration_level, "migration level must be an Int32", err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    if (st == PROTO_OK && has_more(r)) {
        st = next_element(r, &o, NULL, "", err);
        if (st == PROTO_OK && o->type != MSGPACK_OBJECT_BOOLEAN)
            return proto_fail(err, PROTO_ERR_TYPE, "allowStatefulReconnects must be a boolean");
        if (st == PROTO_OK)
            m->allow_stateful_reconnect = o->via.boolean;
    }
    return st;
}

static enum proto_status decode_handshake_response(struct reader *r, struct svc_msg *m,
                                                   struct proto_error *err)
{
    enum proto_status st = read_string(r, &m->error, "handshake error must be a string", err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    if (st == PROTO_OK && has_more(r))
        st = read_string(r, &m->connection_id, "connection id must be a string", err);
    return st;
}

/* [3, s...]: the strings stay where they are, as a bare list. */
static enum proto_status decode_ping(struct reader *r, struct svc_msg *m, struct proto_error *err)
{
    size_t start = r->pos;
    uint32_t n = 0;
    while (has_more(r)) {
        struct span s;
        enum proto_status st = read_string(r, &s, "ping values must be strings", err);
        if (st != PROTO_OK)
            return st;
        n++;
    }
    m->ids = (struct svc_list){ span_make(r->body + start, r->pos - start), n, SVC_LIST_STRINGS, true };
    return PROTO_OK;
}

#define CONN_ID_WHAT "connection id must be a non-nil string"
#define GROUP_WHAT "group name must be a string"

static enum proto_status decode_open_connection(struct reader *r, struct svc_msg *m,
                                                struct proto_error *err)
{
    enum proto_status st = read_required_string(r, &m->connection_id, CONN_ID_WHAT, err);
    if (st == PROTO_OK)
        st = read_map(r, &m->claims, SVC_LIST_CLAIMS, true, "claims must be a map of str -> str", err);
    if (st == PROTO_OK)
        st = read_map(r, &m->headers, SVC_LIST_HEADERS, true, "headers must be a map of str -> [str]", err);
    if (st == PROTO_OK)
        st = read_string(r, &m->query, "query string must be a string", err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    return st;
}

static enum proto_status decode_close_connection(struct reader *r, struct svc_msg *m,
                                                 struct proto_error *err)
{
    enum proto_status st = read_required_string(r, &m->connection_id, CONN_ID_WHAT, err);
    if (st == PROTO_OK && has_more(r))
        st = read_string(r, &m->error, "close error must be a string", err);
    if (st == PROTO_OK && has_more(r))
        st = read_map(r, &m->headers, SVC_LIST_HEADERS, true, "headers must be a map of str -> [str]", err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    return st;
}

static enum proto_status decode_connection_data(struct reader *r, struct svc_msg *m,
                                                struct proto_error *err)
{
    enum proto_status st = read_required_string(r, &m->connection_id, CONN_ID_WHAT, err);
    if (st == PROTO_OK)
        st = read_bin(r, &m->payload, "connection data payload must be binary", err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    return st;
}

/* 7, 9, 10, 14: [type, [str], payloads, ext] */
static enum proto_status decode_list_send(struct reader *r, struct svc_msg *m, struct proto_error *err)
{
    enum proto_status st = read_string_list(r, &m->ids, "id list must be an array of strings", err);
    if (st == PROTO_OK)
        st = read_payloads(r, &m->payloads, err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    return st;
}

static enum proto_status decode_user_data(struct reader *r, struct svc_msg *m, struct proto_error *err)
{
    enum proto_status st = read_required_string(r, &m->user_id, "user id must be a non-nil string", err);
    if (st == PROTO_OK)
        st = read_payloads(r, &m->payloads, err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    return st;
}

static enum proto_status decode_group_broadcast(struct reader *r, struct svc_msg *m,
                                                struct proto_error *err)
{
    enum proto_status st = read_required_string(r, &m->group, GROUP_WHAT, err);
    if (st == PROTO_OK)
        st = read_string_list(r, &m->ids, "excluded ids must be an array of strings", err);
    if (st == PROTO_OK)
        st = read_payloads(r, &m->payloads, err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    if (st == PROTO_OK && has_more(r))
        st = read_string_list(r, &m->excluded_users, "excluded users must be an array of strings", err);
    if (st == PROTO_OK && has_more(r))
        st = read_string(r, &m->caller_user_id, "caller user id must be a string", err);
    return st;
}

/* 11, 12, 18, 19: [type, connId, group, (ackId,) ext]; 12 and 19 allow a nil group. */
static enum proto_status decode_group_op(struct reader *r, struct svc_msg *m, struct proto_error *err)
{
    bool nil_group = m->type == SVC_LEAVE_GROUP || m->type == SVC_LEAVE_GROUP_WITH_ACK;
    bool with_ack = m->type == SVC_JOIN_GROUP_WITH_ACK || m->type == SVC_LEAVE_GROUP_WITH_ACK;
    enum proto_status st = read_required_string(r, &m->connection_id, CONN_ID_WHAT, err);
    if (st == PROTO_OK)
        st = nil_group ? read_string(r, &m->group, GROUP_WHAT, err)
                       : read_required_string(r, &m->group, GROUP_WHAT, err);
    if (st == PROTO_OK && with_ack)
        st = read_i64(r, &m->ack_id, "ack id must be an integer", err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    return st;
}

static enum proto_status decode_ack(struct reader *r, struct svc_msg *m, struct proto_error *err)
{
    enum proto_status st = read_i64(r, &m->ack_id, "ack id must be an integer", err);
    if (st == PROTO_OK)
        st = read_i32(r, &m->ack_status, "ack status must be an Int32", err);
    if (st == PROTO_OK && has_more(r))
        st = read_string(r, &m->ack_message, "ack message must be a string", err);
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    if (st == PROTO_OK && has_more(r)) {
        const msgpack_object *o;
        st = next_element(r, &o, NULL, "", err);
        if (st == PROTO_OK && o->type == MSGPACK_OBJECT_BIN)
            m->payload = o->via.bin.size ? span_make(o->via.bin.ptr, o->via.bin.size) : span_make("", 0);
        else if (st == PROTO_OK && o->type != MSGPACK_OBJECT_NIL)
            return proto_fail(err, PROTO_ERR_TYPE, "ack payload must be binary");
    }
    return st;
}

/* 34, 35, 36: [type, invocationId, connId, callerServerId, ...] */
static enum proto_status decode_client_result(struct reader *r, struct svc_msg *m,
                                              struct proto_error *err)
{
    enum proto_status st = read_required_string(r, &m->invocation_id, "invocation id must be a string", err);
    if (st == PROTO_OK)
        st = read_required_string(r, &m->connection_id, CONN_ID_WHAT, err);
    if (st == PROTO_OK)
        st = read_string(r, &m->caller_server_id, "caller server id must be a string", err);
    if (st != PROTO_OK)
        return st;
    if (m->type == SVC_CLIENT_INVOCATION) {
        st = read_payloads(r, &m->payloads, err);
    } else if (m->type == SVC_CLIENT_COMPLETION) {
        st = read_string(r, &m->protocol, "protocol must be a string", err);
        if (st == PROTO_OK)
            st = read_bin(r, &m->payload, "completion payload must be binary", err);
    } else {
        st = read_string(r, &m->error, "error must be a string", err);
    }
    if (st == PROTO_OK)
        st = read_ext(r, m, err);
    return st;
}

static enum proto_status decode_elements(struct reader *r, struct svc_msg *m, struct proto_error *err)
{
    int32_t type;
    enum proto_status st = read_i32(r, &type, "message type must be an Int32", err);
    if (st != PROTO_OK)
        return st;
    m->type = (enum svc_msg_type)type;
    switch (type) {
    case SVC_HANDSHAKE_REQUEST: return decode_handshake_request(r, m, err);
    case SVC_HANDSHAKE_RESPONSE: return decode_handshake_response(r, m, err);
    case SVC_PING: return decode_ping(r, m, err);
    case SVC_OPEN_CONNECTION: return decode_open_connection(r, m, err);
    case SVC_CLOSE_CONNECTION: return decode_close_connection(r, m, err);
    case SVC_CONNECTION_DATA: return decode_connection_data(r, m, err);
    case SVC_MULTI_CONNECTION_DATA:
    case SVC_MULTI_USER_DATA:
    case SVC_BROADCAST_DATA:
    case SVC_MULTI_GROUP_BROADCAST_DATA: return decode_list_send(r, m, err);
    case SVC_USER_DATA: return decode_user_data(r, m, err);
    case SVC_GROUP_BROADCAST_DATA: return decode_group_broadcast(r, m, err);
    case SVC_JOIN_GROUP:
    case SVC_LEAVE_GROUP:
    case SVC_JOIN_GROUP_WITH_ACK:
    case SVC_LEAVE_GROUP_WITH_ACK: return decode_group_op(r, m, err);
    case SVC_SERVICE_ERROR: return read_string(r, &m->error, "service error must be a string", err);
    case SVC_ACK: return decode_ack(r, m, err);
    case SVC_CLIENT_INVOCATION:
    case SVC_CLIENT_COMPLETION:
    case SVC_ERROR_COMPLETION: return decode_client_result(r, m, err);
    default:
        return PROTO_UNKNOWN_TYPE;
    }
}

enum proto_status svc_msg_decode(const char *body, size_t len, struct svc_msg *out,
                                 struct proto_error *err)
{
    memset(out, 0, sizeof(*out));
    if (len == 0)
        return proto_fail(err, PROTO_ERR_SYNTAX, "empty service message");
    /* Hostile counts and depth are refused before msgpack-c allocates. */
    size_t value_len;
    enum proto_status st = msgpack_check_value(body, len, MSGPACK_MAX_DEPTH, &value_len, err);
    if (st != PROTO_OK)
        return st;
    if (value_len != len)
        return proto_fail(err, PROTO_ERR_SYNTAX, "unexpected bytes after the message array");

    struct reader r = { .body = body, .len = len };
    if (!read_array_header((const unsigned char *)body, len, &r.count, &r.pos))
        return proto_fail(err, PROTO_ERR_TYPE, "service message is not a MessagePack array");
    if (!msgpack_zone_init(&r.zone, READER_ZONE_CHUNK))
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory unpacking MessagePack");
    out->elements = r.count;
    st = decode_elements(&r, out, err);
    msgpack_zone_destroy(&r.zone);
    if (st != PROTO_OK)
        memset(out, 0, sizeof(*out)); /* no half-decoded message */
    return st;
}

/* ---- encoding ---------------------------------------------------------------- */

struct writer {
    struct buf_sink sink;
    msgpack_packer pk;
};

static void writer_init(struct writer *w, struct buf *out)
{
    w->sink = (struct buf_sink){ out, false };
    msgpack_packer_init(&w->pk, &w->sink, msgpack_sink_write);
}

static void put_string(struct writer *w, struct span s)
{
    msgpack_pack_str_with_body(&w->pk, s.ptr ? s.ptr : "", s.len);
}

/* nil when absent */
static void put_optional_string(struct writer *w, struct span s)
{
    if (s.ptr)
        put_string(w, s);
    else
        msgpack_pack_nil(&w->pk);
}

static void put_bin(struct writer *w, struct span s)
{
    msgpack_pack_bin_with_body(&w->pk, s.ptr ? s.ptr : "", s.len);
}

static void put_raw(struct writer *w, struct span s)
{
    (void)msgpack_sink_write(&w->sink, s.ptr, s.len);
}

/* A decoded list, written back as it came; absent lists become empty ones. */
static void put_list(struct writer *w, const struct svc_list *l, enum svc_list_kind kind)
{
    if (l->raw.ptr && l->raw.len > 0 && !l->bare)
        put_raw(w, l->raw);
    else if (kind == SVC_LIST_STRINGS)
        msgpack_pack_array(&w->pk, 0);
    else
        msgpack_pack_map(&w->pk, 0);
}

/* Known keys in key order; an empty ext is 0x80. */
static void put_ext(struct writer *w, const struct svc_ext *e)
{
    uint32_t n = e->has_tracing_id + e->has_ttl + (e->protocol.ptr != NULL) + (e->filter.ptr != NULL) +
                 (e->data_type != 0) + e->has_partial;
    msgpack_pack_map(&w->pk, n);
    if (e->has_tracing_id) {
        msgpack_pack_int(&w->pk, 1);
        msgpack_pack_uint64(&w->pk, e->tracing_id);
    }
    if (e->has_ttl) {
        msgpack_pack_int(&w->pk, 2);
        msgpack_pack_int32(&w->pk, e->ttl);
    }
    if (e->protocol.ptr) {
        msgpack_pack_int(&w->pk, 3);
        put_string(w, e->protocol);
    }
    if (e->filter.ptr) {
        msgpack_pack_int(&w->pk, 4);
        put_string(w, e->filter);
    }
    if (e->data_type != 0) {
        msgpack_pack_int(&w->pk, 5);
        msgpack_pack_int32(&w->pk, e->data_type);
    }
    if (e->has_partial) {
        msgpack_pack_int(&w->pk, 6);
        if (e->partial)
            msgpack_pack_true(&w->pk);
        else
            msgpack_pack_false(&w->pk);
    }
}

#define VARINT_MAX 5

/* Moves the body written from `start` right and puts its varint in front;
 * restores out->len on any failure (including one while packing). */
static enum proto_status finish_frame(struct writer *w, size_t start, struct proto_error *err)
{
    struct buf *out = w->sink.out;
    if (w->sink.failed) {
        out->len = start;
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory encoding a service message");
    }
    size_t body_len = out->len - start;
    if (body_len > CORE_BINARY_MAX_LENGTH) {
        out->len = start;
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "service message over 2 GB");
    }
    unsigned char prefix[VARINT_MAX];
    size_t n = 0;
    uint32_t v = (uint32_t)body_len;
    do {
        unsigned char b = v & 0x7f;
        v >>= 7;
        prefix[n++] = v ? (unsigned char)(b | 0x80) : b;
    } while (v);
    if (!buf_reserve(out, n)) {
        out->len = start;
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory encoding a service message");
    }
    memmove(out->data + start + n, out->data + start, body_len);
    memcpy(out->data + start, prefix, n);
    out->len += n;
    return PROTO_OK;
}

static bool fits(struct span s) { return s.len <= UINT32_MAX; }

static void pack_body(struct writer *w, const struct svc_msg *m)
{
    msgpack_packer *pk = &w->pk;
    switch (m->type) {
    case SVC_HANDSHAKE_REQUEST:
        msgpack_pack_array(pk, 7);
        msgpack_pack_int(pk, m->type);
        msgpack_pack_int32(pk, m->version);
        msgpack_pack_int32(pk, m->conn_type);
        put_optional_string(w, m->target);
        msgpack_pack_int32(pk, m->migration_level);
        put_ext(w, &m->ext);
        if (m->allow_stateful_reconnect)
            msgpack_pack_true(pk);
        else
            msgpack_pack_false(pk);
        break;
    case SVC_HANDSHAKE_RESPONSE:
        msgpack_pack_array(pk, 4);
        msgpack_pack_int(pk, m->type);
        put_optional_string(w, m->error);
        put_ext(w, &m->ext);
        put_optional_string(w, m->connection_id);
        break;
    case SVC_PING: {
        msgpack_pack_array(pk, 1 + m->ids.count);
        msgpack_pack_int(pk, m->type);
        struct svc_list_iter it;
        struct span s;
        svc_list_iter_begin(&it, &m->ids);
        while (svc_list_iter_next(&it, &s, NULL))
            put_optional_string(w, s);
        break;
    }
    case SVC_OPEN_CONNECTION:
        msgpack_pack_array(pk, 6);
        msgpack_pack_int(pk, m->type);
        put_string(w, m->connection_id);
        put_list(w, &m->claims, SVC_LIST_CLAIMS);
        put_list(w, &m->headers, SVC_LIST_HEADERS);
        put_optional_string(w, m->query);
        put_ext(w, &m->ext);
        break;
    case SVC_CLOSE_CONNECTION:
        msgpack_pack_array(pk, 5);
        msgpack_pack_int(pk, m->type);
        put_string(w, m->connection_id);
        put_optional_string(w, m->error);
        put_list(w, &m->headers, SVC_LIST_HEADERS);
        put_ext(w, &m->ext);
        break;
    case SVC_CONNECTION_DATA:
        msgpack_pack_array(pk, 4);
        msgpack_pack_int(pk, m->type);
        put_string(w, m->connection_id);
        put_bin(w, m->payload);
        put_ext(w, &m->ext);
        break;
    case SVC_MULTI_CONNECTION_DATA:
    case SVC_MULTI_USER_DATA:
    case SVC_BROADCAST_DATA:
    case SVC_MULTI_GROUP_BROADCAST_DATA:
        msgpack_pack_array(pk, 4);
        msgpack_pack_int(pk, m->type);
        put_list(w, &m->ids, SVC_LIST_STRINGS);
        put_list(w, &m->payloads, SVC_LIST_PAYLOADS);
        put_ext(w, &m->ext);
        break;
    case SVC_USER_DATA:
        msgpack_pack_array(pk, 4);
        msgpack_pack_int(pk, m->type);
        put_string(w, m->user_id);
        put_list(w, &m->payloads, SVC_LIST_PAYLOADS);
        put_ext(w, &m->ext);
        break;
    case SVC_GROUP_BROADCAST_DATA:
        msgpack_pack_array(pk, 7);
        msgpack_pack_int(pk, m->type);
        put_string(w, m->group);
        put_list(w, &m->ids, SVC_LIST_STRINGS);
        put_list(w, &m->payloads, SVC_LIST_PAYLOADS);
        put_ext(w, &m->ext);
        put_list(w, &m->excluded_users, SVC_LIST_STRINGS);
        put_optional_string(w, m->caller_user_id);
        break;
    case SVC_JOIN_GROUP:
    case SVC_LEAVE_GROUP:
    case SVC_JOIN_GROUP_WITH_ACK:
    case SVC_LEAVE_GROUP_WITH_ACK: {
        bool with_ack = m->type == SVC_JOIN_GROUP_WITH_ACK || m->type == SVC_LEAVE_GROUP_WITH_ACK;
        msgpack_pack_array(pk, with_ack ? 5 : 4);
        msgpack_pack_int(pk, m->type);
        put_string(w, m->connection_id);
        put_optional_string(w, m->group);
        if (with_ack)
            msgpack_pack_int64(pk, m->ack_id);
        put_ext(w, &m->ext);
        break;
    }
    case SVC_SERVICE_ERROR:
        msgpack_pack_array(pk, 2);
        msgpack_pack_int(pk, m->type);
        put_optional_string(w, m->error);
        break;
    case SVC_ACK:
        msgpack_pack_array(pk, m->payload.ptr ? 6 : 5);
        msgpack_pack_int(pk, m->type);
        msgpack_pack_int64(pk, m->ack_id);
        msgpack_pack_int32(pk, m->ack_status);
        put_optional_string(w, m->ack_message);
        put_ext(w, &m->ext);
        if (m->payload.ptr)
            put_bin(w, m->payload);
        break;
    case SVC_CLIENT_INVOCATION:
    case SVC_CLIENT_COMPLETION:
    case SVC_ERROR_COMPLETION:
        msgpack_pack_array(pk, m->type == SVC_CLIENT_COMPLETION ? 7 : 6);
        msgpack_pack_int(pk, m->type);
        put_string(w, m->invocation_id);
        put_string(w, m->connection_id);
        put_optional_string(w, m->caller_server_id);
        if (m->type == SVC_CLIENT_INVOCATION) {
            put_list(w, &m->payloads, SVC_LIST_PAYLOADS);
        } else if (m->type == SVC_CLIENT_COMPLETION) {
            put_optional_string(w, m->protocol);
            put_bin(w, m->payload);
        } else {
            put_optional_string(w, m->error);
        }
        put_ext(w, &m->ext);
        break;
    case SVC_NONE:
        break;
    }
}

static bool is_known_type(enum svc_msg_type t)
{
    return (t >= SVC_HANDSHAKE_REQUEST && t <= SVC_SERVICE_ERROR) ||
           (t >= SVC_JOIN_GROUP_WITH_ACK && t <= SVC_ACK) ||
           (t >= SVC_CLIENT_INVOCATION && t <= SVC_ERROR_COMPLETION);
}

enum proto_status svc_msg_encode(const struct svc_msg *m, struct buf *out, struct proto_error *err)
{
    if (!is_known_type(m->type))
        return proto_fail(err, PROTO_ERR_VALUE, "cannot encode this service message type");
    const struct span strings[] = { m->target, m->connection_id, m->error, m->user_id, m->group,
                                    m->payload, m->caller_user_id, m->query, m->ack_message,
                                    m->invocation_id, m->caller_server_id, m->protocol,
                                    m->ext.protocol, m->ext.filter };
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        if (!fits(strings[i]))
            return proto_fail(err, PROTO_ERR_TOO_LARGE, "string too long for MessagePack");
    size_t start = out->len;
    struct writer w;
    writer_init(&w, out);
    pack_body(&w, m);
    return finish_frame(&w, start, err);
}

/* ---- the relay's messages ----------------------------------------------------- */

enum proto_status svc_encode_handshake_response(struct buf *out, struct span error,
                                                struct span connection_id, struct proto_error *err)
{
    struct svc_msg m = { .type = SVC_HANDSHAKE_RESPONSE, .error = error, .connection_id = connection_id };
    return svc_msg_encode(&m, out, err);
}

enum proto_status svc_encode_ping(struct buf *out, const struct span *strings, size_t n,
                                  struct proto_error *err)
{
    if (n > UINT32_MAX - 1)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "too many ping values");
    size_t start = out->len;
    struct writer w;
    writer_init(&w, out);
    msgpack_pack_array(&w.pk, (uint32_t)(n + 1));
    msgpack_pack_int(&w.pk, SVC_PING);
    for (size_t i = 0; i < n; i++)
        put_string(&w, strings[i]);
    return finish_frame(&w, start, err);
}

enum proto_status svc_encode_open_connection(struct buf *out, struct span connection_id,
                                             const struct svc_claim *claims, size_t claim_count,
                                             const struct svc_header *headers, size_t header_count,
                                             struct span query, struct span protocol,
                                             struct proto_error *err)
{
    if (!connection_id.ptr || connection_id.len == 0)
        return proto_fail(err, PROTO_ERR_MISSING, "OpenConnection needs a connection id");
    if (!protocol.ptr || protocol.len == 0)
        return proto_fail(err, PROTO_ERR_MISSING, "OpenConnection needs the client's protocol");
    if (claim_count > UINT32_MAX || header_count > UINT32_MAX || !fits(connection_id) ||
        !fits(protocol) || query.len >= UINT32_MAX)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "too many claims or headers, or a string too long");
    size_t start = out->len;
    struct writer w;
    writer_init(&w, out);
    msgpack_pack_array(&w.pk, 6);
    msgpack_pack_int(&w.pk, SVC_OPEN_CONNECTION);
    put_string(&w, connection_id);
    /* A map whose keys may repeat: the SDK reads entry by entry into a list of claims. */
    msgpack_pack_map(&w.pk, (uint32_t)claim_count);
    for (size_t i = 0; i < claim_count; i++) {
        put_string(&w, claims[i].type);
        put_string(&w, claims[i].value);
    }
    msgpack_pack_map(&w.pk, (uint32_t)header_count);
    for (size_t i = 0; i < header_count; i++) {
        put_string(&w, headers[i].name);
        msgpack_pack_array(&w.pk, (uint32_t)headers[i].value_count);
        for (size_t j = 0; j < headers[i].value_count; j++)
            put_string(&w, headers[i].values[j]);
    }
    bool add_mark = query.len > 0 && query.ptr[0] != '?';
    msgpack_pack_str(&w.pk, query.len + add_mark);
    if (add_mark)
        msgpack_pack_str_body(&w.pk, "?", 1);
    msgpack_pack_str_body(&w.pk, query.ptr ? query.ptr : "", query.len);
    msgpack_pack_map(&w.pk, 1);
    msgpack_pack_int(&w.pk, 3);
    put_string(&w, protocol);
    return finish_frame(&w, start, err);
}

enum proto_status svc_encode_close_connection(struct buf *out, struct span connection_id,
                                              struct span error, struct proto_error *err)
{
    if (!connection_id.ptr)
        return proto_fail(err, PROTO_ERR_MISSING, "CloseConnection needs a connection id");
    struct svc_msg m = { .type = SVC_CLOSE_CONNECTION, .connection_id = connection_id, .error = error };
    return svc_msg_encode(&m, out, err);
}

enum proto_status svc_encode_connection_data(struct buf *out, struct span connection_id,
                                             struct span payload, bool partial,
                                             struct proto_error *err)
{
    if (!connection_id.ptr)
        return proto_fail(err, PROTO_ERR_MISSING, "ConnectionData needs a connection id");
    struct svc_msg m = { .type = SVC_CONNECTION_DATA, .connection_id = connection_id,
                         .payload = payload };
    m.ext.has_partial = partial;
    m.ext.partial = partial;
    return svc_msg_encode(&m, out, err);
}

enum proto_status svc_encode_ack(struct buf *out, int64_t ack_id, int32_t status,
                                 struct span message, struct proto_error *err)
{
    /* The SDK reads the message as a string; send "" rather than nil. */
    struct svc_msg m = { .type = SVC_ACK, .ack_id = ack_id, .ack_status = status,
                         .ack_message = message.ptr ? message : span_make("", 0) };
    return svc_msg_encode(&m, out, err);
}

enum proto_status svc_encode_service_error(struct buf *out, struct span error,
                                           struct proto_error *err)
{
    struct svc_msg m = { .type = SVC_SERVICE_ERROR, .error = error };
    return svc_msg_encode(&m, out, err);
}

/* ---- the framer ------------------------------------------------------------------ */

void svc_framer_init(struct svc_framer *f, size_t max_message)
{
    memset(f, 0, sizeof(*f));
    buf_init(&f->pending);
    f->max_message = max_message;
}

void svc_framer_free(struct svc_framer *f)
{
    buf_free(&f->pending);
    f->in = NULL;
    f->in_len = f->in_pos = 0;
    f->pending_done = false;
}

void svc_framer_push(struct svc_framer *f, const char *data, size_t len)
{
    f->in = data;
    f->in_len = len;
    f->in_pos = 0;
}

static enum proto_status framer_fail(struct svc_framer *f, enum proto_status st, const char *detail,
                                     struct proto_error *err)
{
    f->error = (struct proto_error){ st, detail };
    buf_free(&f->pending);
    f->pending_done = false;
    return proto_fail(err, st, detail);
}

/* Moves up to n bytes of the pushed chunk into pending. */
static bool take(struct svc_framer *f, size_t n)
{
    size_t left = f->in_len - f->in_pos;
    if (n > left)
        n = left;
    if (!buf_append(&f->pending, f->in + f->in_pos, n))
        return false;
    f->in_pos += n;
    return true;
}

/* Completes the message in pending from the chunk. */
static enum proto_status framer_next_pending(struct svc_framer *f, struct span *body,
                                             struct proto_error *err)
{
    for (;;) {
        struct proto_error e = { 0 };
        size_t consumed;
        enum proto_status st = core_binary_next_frame(f->pending.data, f->pending.len, f->max_message,
                                                      body, &consumed, &e);
        if (st == PROTO_OK) {
            f->pending_done = true;
            return PROTO_OK;
        }
        if (st != PROTO_INCOMPLETE)
            return framer_fail(f, st, e.detail, err);
        if (f->in_pos == f->in_len)
            return PROTO_INCOMPLETE;
        /* Still in the prefix: one byte at a time (at most 5). Prefix
         * complete: exactly the rest of the body. */
        size_t need = 1;
        size_t prefix = 0;
        while (prefix < f->pending.len && ((unsigned char)f->pending.data[prefix] & 0x80))
            prefix++;
        if (prefix < f->pending.len) {
            uint32_t length = 0;
            for (size_t i = 0; i <= prefix; i++)
                length |= (uint32_t)((unsigned char)f->pending.data[i] & 0x7f) << (7 * i);
            need = prefix + 1 + length - f->pending.len;
        }
        if (!take(f, need))
            return framer_fail(f, PROTO_ERR_NOMEM, "out of memory buffering a service message", err);
    }
}

enum proto_status svc_framer_next(struct svc_framer *f, struct span *body, struct proto_error *err)
{
    if (f->error.status != PROTO_OK)
        return proto_fail(err, f->error.status, f->error.detail);
    if (f->pending_done) {
        /* the message returned last lived here: give the memory back */
        buf_free(&f->pending);
        f->pending_done = false;
    }
    if (f->pending.len > 0)
        return framer_next_pending(f, body, err);
    if (f->in_pos == f->in_len)
        return PROTO_INCOMPLETE;

    struct proto_error e = { 0 };
    size_t consumed;
    enum proto_status st = core_binary_next_frame(f->in + f->in_pos, f->in_len - f->in_pos,
                                                  f->max_message, body, &consumed, &e);
    if (st == PROTO_OK) {
        f->in_pos += consumed;
        return PROTO_OK;
    }
    if (st != PROTO_INCOMPLETE)
        return framer_fail(f, st, e.detail, err);
    /* The chunk ends inside a message: keep its tail. */
    if (!take(f, f->in_len - f->in_pos))
        return framer_fail(f, PROTO_ERR_NOMEM, "out of memory buffering a service message", err);
    return PROTO_INCOMPLETE;
}
