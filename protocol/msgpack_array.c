/* msgpack_array.c - one MessagePack message array, read element by element (see msgpack_array.h). */
#include "protocol/msgpack_array.h"

#include "protocol/msgpack_check.h"

#define ZONE_CHUNK 1024

/* The array header at the start of body: fixarray, array 16, array 32. */
static bool read_array_header(const unsigned char *p, size_t len, uint32_t *count, size_t *header_len)
{
    if (len >= 1 && p[0] >= 0x90 && p[0] <= 0x9f) {
        *count = p[0] & 0x0f;
        *header_len = 1;
        return true;
    }
    if (len >= 3 && p[0] == 0xdc) {
        *count = (uint32_t)p[1] << 8 | p[2];
        *header_len = 3;
        return true;
    }
    if (len >= 5 && p[0] == 0xdd) {
        *count = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
        *header_len = 5;
        return true;
    }
    return false;
}

enum proto_status msgpack_array_open(struct msgpack_array *a, const char *body, size_t len, unsigned max_depth,
                                     const char *what, struct proto_error *err)
{
    *a = (struct msgpack_array){ .body = body, .len = len };
    /* Hostile counts and depth are refused before msgpack-c allocates anything. */
    size_t value_len;
    enum proto_status st = msgpack_check_value(body, len, max_depth, &value_len, err);
    if (st != PROTO_OK)
        return st;
    if (value_len != len)
        return proto_fail(err, PROTO_ERR_SYNTAX, "unexpected bytes after the message array");
    if (!read_array_header((const unsigned char *)body, len, &a->count, &a->pos))
        return proto_fail(err, PROTO_ERR_TYPE, what);
    if (!msgpack_zone_init(&a->zone, ZONE_CHUNK))
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory unpacking MessagePack");
    return PROTO_OK;
}

void msgpack_array_close(struct msgpack_array *a)
{
    msgpack_zone_destroy(&a->zone);
}

enum proto_status msgpack_array_next(struct msgpack_array *a, const msgpack_object **obj, struct span *raw,
                                     const char *missing, struct proto_error *err)
{
    if (a->used >= a->count)
        return proto_fail(err, PROTO_ERR_MISSING, missing);
    size_t start = a->pos;
    msgpack_zone_clear(&a->zone);
    msgpack_unpack_return ret = msgpack_unpack(a->body, a->len, &a->pos, &a->zone, &a->obj);
    if (ret == MSGPACK_UNPACK_NOMEM_ERROR)
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory unpacking MessagePack");
    /* EXTRA_BYTES is the normal case: more elements follow this one. */
    if (ret != MSGPACK_UNPACK_SUCCESS && ret != MSGPACK_UNPACK_EXTRA_BYTES)
        return proto_fail(err, PROTO_ERR_SYNTAX, "invalid MessagePack element");
    a->used++;
    *obj = &a->obj;
    if (raw)
        *raw = span_make(a->body + start, a->pos - start);
    return PROTO_OK;
}

enum proto_status msgpack_object_to_string(const msgpack_object *o, struct span *out, const char *type_detail,
                                           struct proto_error *err)
{
    if (o->type == MSGPACK_OBJECT_NIL) {
        *out = SPAN_NONE;
        return PROTO_OK;
    }
    if (o->type != MSGPACK_OBJECT_STR)
        return proto_fail(err, PROTO_ERR_TYPE, type_detail);
    if (!utf8_is_valid(o->via.str.ptr, o->via.str.size))
        return proto_fail(err, PROTO_ERR_UTF8, "string is not valid UTF-8");
    /* msgpack-c may leave ptr NULL (or stale) for a zero-length str: present but empty. */
    *out = o->via.str.size ? span_make(o->via.str.ptr, o->via.str.size) : span_make("", 0);
    return PROTO_OK;
}

bool msgpack_object_to_i64(const msgpack_object *o, int64_t *v)
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

bool msgpack_object_to_i32(const msgpack_object *o, int32_t *v)
{
    int64_t wide;
    if (!msgpack_object_to_i64(o, &wide) || wide < INT32_MIN || wide > INT32_MAX)
        return false;
    *v = (int32_t)wide;
    return true;
}
