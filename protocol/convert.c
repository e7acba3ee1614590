/* convert.c - JSON <-> MessagePack payload conversion (see convert.h for the mapping). */
#include "protocol/convert.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <msgpack.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/msgpack_check.h"
#include "protocol/msgpack_sink.h"

/* ---- JSON -> MessagePack ------------------------------------------------------ */

/* cJSON decodes "\u0000" into a NUL byte and then treats its strings as C
 * strings, silently cutting them there. Spot the escape in the raw text first:
 * it is "\u0000" whose backslash is not itself escaped (an odd-length run). */
static bool json_has_nul_escape(struct span json)
{
    const char *p = json.ptr;
    size_t i = 0;
    while (i < json.len) {
        if (p[i] != '\\') {
            i++;
            continue;
        }
        size_t run = 0;
        while (i < json.len && p[i] == '\\') {
            run++;
            i++;
        }
        if (run % 2 == 1 && json.len - i >= 5 && memcmp(p + i, "u0000", 5) == 0)
            return true;
    }
    return false;
}

static enum proto_status pack_json(msgpack_packer *pk, const cJSON *item, unsigned depth,
                                   struct proto_error *err);

static enum proto_status pack_json_number(msgpack_packer *pk, double d, struct proto_error *err)
{
    if (!isfinite(d))
        return proto_fail(err, PROTO_ERR_VALUE, "JSON number is outside the float64 range");
    if (d == trunc(d)) {
        if (d >= -9223372036854775808.0 && d < 0) {
            msgpack_pack_int64(pk, (int64_t)d);
            return PROTO_OK;
        }
        if (d >= 0 && d < 18446744073709551616.0) {
            msgpack_pack_uint64(pk, (uint64_t)d);
            return PROTO_OK;
        }
    }
    msgpack_pack_double(pk, d);
    return PROTO_OK;
}

static enum proto_status pack_json_string(msgpack_packer *pk, const char *s,
                                          struct proto_error *err)
{
    size_t len = strlen(s);
    if (!utf8_is_valid(s, len))
        return proto_fail(err, PROTO_ERR_UTF8, "JSON string is not valid UTF-8");
    msgpack_pack_str_with_body(pk, s, len);
    return PROTO_OK;
}

static unsigned json_child_count(const cJSON *item)
{
    unsigned n = 0;
    for (const cJSON *c = item->child; c; c = c->next)
        n++;
    return n;
}

static enum proto_status pack_json_container(msgpack_packer *pk, const cJSON *item,
                                             unsigned depth, struct proto_error *err)
{
    if (depth > MSGPACK_PAYLOAD_MAX_DEPTH)
        return proto_fail(err, PROTO_ERR_TOO_DEEP, "JSON nesting too deep for MessagePack");
    bool object = cJSON_IsObject(item);
    unsigned n = json_child_count(item);
    if (object)
        msgpack_pack_map(pk, n);
    else
        msgpack_pack_array(pk, n);
    for (const cJSON *c = item->child; c; c = c->next) {
        enum proto_status st;
        if (object && (st = pack_json_string(pk, c->string, err)) != PROTO_OK)
            return st;
        if ((st = pack_json(pk, c, depth + 1, err)) != PROTO_OK)
            return st;
    }
    return PROTO_OK;
}

/* depth = nesting of item counted from 1 for the payload's own value. */
static enum proto_status pack_json(msgpack_packer *pk, const cJSON *item, unsigned depth,
                                   struct proto_error *err)
{
    if (cJSON_IsNull(item))
        msgpack_pack_nil(pk);
    else if (cJSON_IsTrue(item))
        msgpack_pack_true(pk);
    else if (cJSON_IsFalse(item))
        msgpack_pack_false(pk);
    else if (cJSON_IsNumber(item))
        return pack_json_number(pk, item->valuedouble, err);
    else if (cJSON_IsString(item))
        return pack_json_string(pk, item->valuestring, err);
    else if (cJSON_IsArray(item) || cJSON_IsObject(item))
        return pack_json_container(pk, item, depth, err);
    else
        return proto_fail(err, PROTO_ERR_SYNTAX, "unexpected JSON value");
    return PROTO_OK;
}

static enum proto_status json_to_msgpack(struct span json, struct buf *out, struct proto_error *err)
{
    if (json_has_nul_escape(json))
        return proto_fail(err, PROTO_ERR_VALUE, "JSON string contains \\u0000, which cannot be converted");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json.ptr, json.len, &end, 0);
    if (!root)
        return proto_fail(err, PROTO_ERR_SYNTAX, "invalid JSON payload");
    const char *stop = json.ptr + json.len;
    while (end < stop && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (end != stop) {
        cJSON_Delete(root);
        return proto_fail(err, PROTO_ERR_SYNTAX, "unexpected bytes after the JSON value");
    }

    struct buf_sink sink = { out, false };
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sink, msgpack_sink_write);
    enum proto_status st = pack_json(&pk, root, 1, err);
    cJSON_Delete(root);
    if (st == PROTO_OK && sink.failed)
        st = proto_fail(err, PROTO_ERR_NOMEM, "out of memory converting to MessagePack");
    return st;
}

/* ---- MessagePack -> JSON ------------------------------------------------------ */

static enum proto_status object_to_json(const msgpack_object *o, cJSON **out,
                                        struct proto_error *err);

/* A NUL-terminated copy of a MessagePack str, refused if cJSON could not keep it. */
static enum proto_status str_to_cstring(const char *p, size_t len, char **out,
                                        struct proto_error *err)
{
    if (len && memchr(p, '\0', len)) /* p may be NULL when len is 0 */
        return proto_fail(err, PROTO_ERR_VALUE, "string contains U+0000, which cannot be converted");
    if (!utf8_is_valid(p, len))
        return proto_fail(err, PROTO_ERR_UTF8, "MessagePack string is not valid UTF-8");
    char *copy = malloc(len + 1);
    if (!copy)
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory converting to JSON");
    if (len)
        memcpy(copy, p, len);
    copy[len] = '\0';
    *out = copy;
    return PROTO_OK;
}

/* cJSON prints a double with %1.15g and accepts it when it reads back
 * *approximately* equal, which can change the last bit. Print the shortest of
 * %.15g/%.16g/%.17g that reads back exactly instead (%.17g always does). */
static void format_double(double d, char *text, size_t size)
{
    for (int precision = 15; precision <= 17; precision++) {
        snprintf(text, size, "%.*g", precision, d);
        if (strtod(text, NULL) == d)
            return;
    }
}

/* ext -1 as "yyyy-mm-ddThh:mm:ss[.fffffffff]Z" (fraction trimmed of trailing zeros). */
static enum proto_status timestamp_to_iso(const msgpack_object *o, char *text, size_t size,
                                          struct proto_error *err)
{
    const int64_t year_0001 = -62135596800;        /* 0001-01-01T00:00:00Z */
    const int64_t year_10000 = 253402300800;       /* 10000-01-01T00:00:00Z */
    msgpack_timestamp ts;
    if (!msgpack_object_to_timestamp(o, &ts) || ts.tv_nsec >= 1000000000u)
        return proto_fail(err, PROTO_ERR_VALUE, "invalid MessagePack timestamp");
    if (ts.tv_sec < year_0001 || ts.tv_sec >= year_10000)
        return proto_fail(err, PROTO_ERR_VALUE, "timestamp outside the years 0001-9999");
    time_t t = (time_t)ts.tv_sec;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return proto_fail(err, PROTO_ERR_VALUE, "timestamp cannot be represented");
    int n = snprintf(text, size, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (ts.tv_nsec) {
        uint32_t fraction = ts.tv_nsec;
        int digits = 9;
        while (fraction % 10 == 0) { /* drop trailing zeros: .5, not .500000000 */
            fraction /= 10;
            digits--;
        }
        n += snprintf(text + n, size - (size_t)n, ".%0*" PRIu32, digits, fraction);
    }
    snprintf(text + n, size - (size_t)n, "Z");
    return PROTO_OK;
}

static enum proto_status bin_to_base64(const char *p, size_t len, cJSON **out,
                                       struct proto_error *err)
{
    if (len > INT32_MAX / 4 * 3)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "bin value too large for base64");
    char *text = malloc(4 * ((len + 2) / 3) + 1);
    if (!text)
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory converting to JSON");
    EVP_EncodeBlock((unsigned char *)text, (const unsigned char *)p, (int)len);
    *out = cJSON_CreateString(text);
    free(text);
    return *out ? PROTO_OK : proto_fail(err, PROTO_ERR_NOMEM, "out of memory converting to JSON");
}

static enum proto_status scalar_to_json(const msgpack_object *o, cJSON **out,
                                        struct proto_error *err)
{
    char text[64];
    char *copy = NULL;
    enum proto_status st;

    switch (o->type) {
    case MSGPACK_OBJECT_NIL: *out = cJSON_CreateNull(); break;
    case MSGPACK_OBJECT_BOOLEAN: *out = cJSON_CreateBool(o->via.boolean); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(text, sizeof text, "%" PRIu64, o->via.u64);
        *out = cJSON_CreateRaw(text);
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        snprintf(text, sizeof text, "%" PRId64, o->via.i64);
        *out = cJSON_CreateRaw(text);
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (!isfinite(o->via.f64))
            return proto_fail(err, PROTO_ERR_VALUE, "NaN and infinity have no JSON form");
        format_double(o->via.f64, text, sizeof text);
        *out = cJSON_CreateRaw(text);
        break;
    case MSGPACK_OBJECT_STR:
        if ((st = str_to_cstring(o->via.str.ptr, o->via.str.size, &copy, err)) != PROTO_OK)
            return st;
        *out = cJSON_CreateString(copy);
        free(copy);
        break;
    case MSGPACK_OBJECT_BIN:
        return bin_to_base64(o->via.bin.ptr, o->via.bin.size, out, err);
    case MSGPACK_OBJECT_EXT:
        if (o->via.ext.type != -1)
            return proto_fail(err, PROTO_ERR_TYPE, "MessagePack extension type has no JSON form");
        if ((st = timestamp_to_iso(o, text, sizeof text, err)) != PROTO_OK)
            return st;
        *out = cJSON_CreateString(text);
        break;
    default:
        return proto_fail(err, PROTO_ERR_TYPE, "unexpected MessagePack value");
    }
    return *out ? PROTO_OK : proto_fail(err, PROTO_ERR_NOMEM, "out of memory converting to JSON");
}

/* A map key as a NUL-terminated string: str as is, integers in decimal. */
static enum proto_status map_key_to_cstring(const msgpack_object *key, char **out,
                                            struct proto_error *err)
{
    char text[32];
    switch (key->type) {
    case MSGPACK_OBJECT_STR:
        return str_to_cstring(key->via.str.ptr, key->via.str.size, out, err);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(text, sizeof text, "%" PRIu64, key->via.u64);
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        snprintf(text, sizeof text, "%" PRId64, key->via.i64);
        break;
    default:
        return proto_fail(err, PROTO_ERR_TYPE, "map key is neither a string nor an integer");
    }
    return str_to_cstring(text, strlen(text), out, err);
}

static enum proto_status array_to_json(const msgpack_object_array *a, cJSON **out,
                                       struct proto_error *err)
{
    cJSON *array = cJSON_CreateArray();
    if (!array)
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory converting to JSON");
    for (uint32_t i = 0; i < a->size; i++) {
        cJSON *child = NULL;
        enum proto_status st = object_to_json(&a->ptr[i], &child, err);
        if (st != PROTO_OK) {
            cJSON_Delete(array);
            return st;
        }
        cJSON_AddItemToArray(array, child);
    }
    *out = array;
    return PROTO_OK;
}

static enum proto_status map_to_json(const msgpack_object_map *m, cJSON **out,
                                     struct proto_error *err)
{
    cJSON *object = cJSON_CreateObject();
    if (!object)
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory converting to JSON");
    for (uint32_t i = 0; i < m->size; i++) {
        char *key = NULL;
        cJSON *child = NULL;
        enum proto_status st = map_key_to_cstring(&m->ptr[i].key, &key, err);
        if (st == PROTO_OK)
            st = object_to_json(&m->ptr[i].val, &child, err);
        if (st == PROTO_OK && !cJSON_AddItemToObject(object, key, child)) {
            cJSON_Delete(child);
            st = proto_fail(err, PROTO_ERR_NOMEM, "out of memory converting to JSON");
        }
        free(key); /* cJSON_AddItemToObject keeps its own copy */
        if (st != PROTO_OK) {
            cJSON_Delete(object);
            return st;
        }
    }
    *out = object;
    return PROTO_OK;
}

/* Depth needs no check here: msgpack_check bounded it before unpacking. */
static enum proto_status object_to_json(const msgpack_object *o, cJSON **out,
                                        struct proto_error *err)
{
    if (o->type == MSGPACK_OBJECT_ARRAY)
        return array_to_json(&o->via.array, out, err);
    if (o->type == MSGPACK_OBJECT_MAP)
        return map_to_json(&o->via.map, out, err);
    return scalar_to_json(o, out, err);
}

static enum proto_status msgpack_to_json(struct span mp, struct buf *out, struct proto_error *err)
{
    /* The payload depth limit, not msgpack-c's: what converts to JSON must be
     * able to come back (JSON -> MessagePack stops at the same depth). */
    size_t value_len;
    enum proto_status st = msgpack_check_value(mp.ptr, mp.len, MSGPACK_PAYLOAD_MAX_DEPTH,
                                               &value_len, err);
    if (st != PROTO_OK)
        return st;
    if (value_len != mp.len)
        return proto_fail(err, PROTO_ERR_SYNTAX, "unexpected bytes after the MessagePack value");

    msgpack_unpacked unpacked;
    msgpack_unpacked_init(&unpacked);
    size_t off = 0;
    msgpack_unpack_return ret = msgpack_unpack_next(&unpacked, mp.ptr, mp.len, &off);
    cJSON *root = NULL;
    if (ret == MSGPACK_UNPACK_SUCCESS)
        st = object_to_json(&unpacked.data, &root, err);
    else if (ret == MSGPACK_UNPACK_NOMEM_ERROR)
        st = proto_fail(err, PROTO_ERR_NOMEM, "out of memory unpacking MessagePack");
    else
        st = proto_fail(err, PROTO_ERR_SYNTAX, "invalid MessagePack payload");
    msgpack_unpacked_destroy(&unpacked);
    if (st != PROTO_OK)
        return st;

    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text)
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory printing JSON");
    bool ok = buf_append_cstr(out, text);
    cJSON_free(text);
    return ok ? PROTO_OK : proto_fail(err, PROTO_ERR_NOMEM, "out of memory printing JSON");
}

/* ---- public -------------------------------------------------------------------- */

enum proto_status payload_convert(struct payload in, enum payload_encoding to, struct buf *out,
                                  struct payload *converted, struct proto_error *err)
{
    if (in.encoding == PAYLOAD_NONE || in.encoding == to) {
        *converted = in;
        return PROTO_OK;
    }
    if (to != PAYLOAD_JSON && to != PAYLOAD_MSGPACK)
        return proto_fail(err, PROTO_ERR_VALUE, "unknown target payload encoding");
    if (!in.bytes.ptr || in.bytes.len == 0)
        return proto_fail(err, PROTO_ERR_SYNTAX, "empty payload");

    size_t start = out->len;
    enum proto_status st;
    if (in.encoding == PAYLOAD_JSON)
        st = json_to_msgpack(in.bytes, out, err);
    else if (in.encoding == PAYLOAD_MSGPACK)
        st = msgpack_to_json(in.bytes, out, err);
    else
        st = proto_fail(err, PROTO_ERR_VALUE, "unknown payload encoding");
    if (st != PROTO_OK) {
        out->len = start;
        return st;
    }
    *converted = (struct payload){ to, span_make(out->data + start, out->len - start) };
    return PROTO_OK;
}

static bool points_into(struct span s, const struct buf *b)
{
    uintptr_t p = (uintptr_t)s.ptr, lo = (uintptr_t)b->data;
    return s.ptr && b->data && p >= lo && p < lo + b->cap;
}

enum proto_status hub_msg_convert(const struct hub_msg *in, enum payload_encoding to,
                                  struct buf *scratch, struct hub_msg *out,
                                  struct proto_error *err)
{
    enum { FIELDS = 5 };
    struct payload *fields[FIELDS];
    size_t offsets[FIELDS];
    bool moved[FIELDS] = { false };
    size_t start = scratch->len;

    *out = *in;
    out->owned_count = 0; /* the strings stay owned by *in */
    memset(out->owned, 0, sizeof out->owned);
    fields[0] = &out->headers;
    fields[1] = &out->args;
    fields[2] = &out->stream_ids;
    fields[3] = &out->item;
    fields[4] = &out->result;

    /* Appending may move scratch: an input inside it would dangle. Checked
     * for all fields before the first append moves anything. */
    for (int i = 0; i < FIELDS; i++) {
        if (fields[i]->encoding != to && points_into(fields[i]->bytes, scratch)) {
            hub_msg_init(out);
            return proto_fail(err, PROTO_ERR_VALUE, "payload lives in the scratch buffer");
        }
    }
    for (int i = 0; i < FIELDS; i++) {
        if (fields[i]->encoding == PAYLOAD_NONE || fields[i]->encoding == to)
            continue;
        struct payload converted;
        offsets[i] = scratch->len;
        enum proto_status st = payload_convert(*fields[i], to, scratch, &converted, err);
        if (st != PROTO_OK) {
            scratch->len = start;
            hub_msg_init(out);
            return st;
        }
        /* Remember only the length now; the pointer is fixed up below. */
        fields[i]->encoding = to;
        fields[i]->bytes = span_make(NULL, converted.bytes.len);
        moved[i] = true;
    }
    for (int i = 0; i < FIELDS; i++)
        if (moved[i])
            fields[i]->bytes.ptr = scratch->data + offsets[i];
    return PROTO_OK;
}
