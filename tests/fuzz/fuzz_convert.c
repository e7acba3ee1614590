/* fuzz_convert.c - JSON <-> MessagePack payload conversion.
 *
 * The first input byte picks the direction (even: the rest is JSON, odd: the
 * rest is MessagePack). Properties:
 *   - a failure has a detail and appends nothing;
 *   - whatever converts one way converts back without error;
 *   - meaning is kept, judged by readers the converter does not use: the
 *     JSON side is read with the strict oracle (tests/fuzz/json_oracle.h),
 *     the MessagePack side with msgpack-c's unpacker, and the two trees are
 *     compared node by node against the mapping convert.h documents
 *     (means() below): nil/bool/str as they are, integers exactly, floats as
 *     the same double, bin as padded base64, timestamps as ISO-8601 UTC,
 *     integer map keys as decimal strings, arrays and maps in order;
 *   - JSON -> MessagePack -> JSON gives a tree equal to the input's, numbers
 *     compared as the doubles they read as (1.0 and 1 are the same number,
 *     9007199254740993 reads as 9007199254740992 on both sides), everything
 *     else exactly;
 *   - JSON the relay's strict check accepts (json_strict_check_text: what a
 *     hub message's payload has passed) converts only if it is JSON;
 *   - after one pass through JSON the MessagePack form is a fixed point:
 *     MessagePack -> JSON -> MessagePack gives the same bytes again.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 700000 (about 10-12 s on the shared two-core machine at load 4). */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "containers/buf.h"
#include "protocol/convert.h"
#include "protocol/json_strict.h"
#include "json_oracle.h"

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_convert: property violated: %s\n", what);
    abort();
}

/* Converts in -> to into out; returns false (after checking the failure is
 * clean) when it does not convert. */
static bool convert(struct payload in, enum payload_encoding to, struct buf *out,
                    struct payload *converted)
{
    struct proto_error err = { 0 };
    size_t before = out->len;
    if (payload_convert(in, to, out, converted, &err) == PROTO_OK) {
        if (converted->encoding != to)
            fail("wrong encoding tag");
        return true;
    }
    if (!err.detail || out->len != before)
        fail("failure without detail or with leftovers");
    return false;
}

static void must_convert(struct payload in, enum payload_encoding to, struct buf *out,
                         struct payload *converted, const char *what)
{
    if (!convert(in, to, out, converted))
        fail(what);
}

/* ---- the mapping, written out independently of convert.c ---- */

static bool string_is(const struct jo_value *j, const char *p, size_t n)
{
    return j->type == JO_STRING && j->str_len == n && (n == 0 || memcmp(j->str, p, n) == 0);
}

static bool base64_is(const struct jo_value *j, const unsigned char *p, size_t n)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (j->type != JO_STRING || j->str_len != (n + 2) / 3 * 4)
        return false;
    for (size_t i = 0, o = 0; i < n; i += 3, o += 4) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char q[4] = { alphabet[v >> 18], alphabet[(v >> 12) & 63],
                      i + 1 < n ? alphabet[(v >> 6) & 63] : '=', i + 2 < n ? alphabet[v & 63] : '=' };
        if (memcmp(j->str + o, q, 4) != 0)
            return false;
    }
    return true;
}

static uint64_t be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* ext -1 (the MessagePack timestamp) as the ISO string convert.h promises,
 * with the civil calendar computed here (days from civil, H. Hinnant). */
static bool timestamp_is(const struct jo_value *j, const msgpack_object_ext *ext)
{
    const unsigned char *p = (const unsigned char *)ext->ptr;
    int64_t sec;
    uint32_t nsec;
    if (ext->size == 4) {
        sec = (int64_t)be(p, 4);
        nsec = 0;
    } else if (ext->size == 8) {
        uint64_t v = be(p, 8);
        nsec = (uint32_t)(v >> 34);
        sec = (int64_t)(v & 0x3FFFFFFFFull);
    } else if (ext->size == 12) {
        nsec = (uint32_t)be(p, 4);
        sec = (int64_t)be(p + 4, 8);
    } else {
        return false; /* not a timestamp: must not have converted */
    }
    if (nsec >= 1000000000u || sec < -62135596800 || sec >= 253402300800)
        return false;
    int64_t days = sec >= 0 ? sec / 86400 : -((-sec + 86399) / 86400);
    int64_t secs = sec - days * 86400;
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    char text[64];
    int n = snprintf(text, sizeof text, "%04" PRId64 "-%02" PRId64 "-%02" PRId64 "T%02" PRId64 ":%02" PRId64 ":%02" PRId64,
                     y, m, d, secs / 3600, secs / 60 % 60, secs % 60);
    if (nsec) {
        char frac[16];
        snprintf(frac, sizeof frac, "%09" PRIu32, nsec);
        size_t len = 9;
        while (frac[len - 1] == '0')
            len--;
        n += snprintf(text + n, sizeof text - (size_t)n, ".%.*s", (int)len, frac);
    }
    n += snprintf(text + n, sizeof text - (size_t)n, "Z");
    return string_is(j, text, (size_t)n);
}

/* The exact value of an integer-literal JSON number against a 64-bit integer. */
static bool integer_text_is(const struct jo_value *j, const char *decimal)
{
    return j->type == JO_NUMBER && span_eq(j->raw, span_from_cstr(decimal));
}

static bool key_means(const msgpack_object *k, const struct jo_value *j)
{
    char text[32];
    switch (k->type) {
    case MSGPACK_OBJECT_STR:
        return string_is(j, k->via.str.ptr, k->via.str.size);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(text, sizeof text, "%" PRIu64, k->via.u64);
        return string_is(j, text, strlen(text));
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        snprintf(text, sizeof text, "%" PRId64, k->via.i64);
        return string_is(j, text, strlen(text));
    default:
        return false;
    }
}

enum direction { FROM_MSGPACK, FROM_JSON };

/* True if the MessagePack value o and the JSON value j mean the same under
 * convert.h's mapping. From MessagePack, integers must be printed exactly;
 * from JSON, a number becomes the integer its double is when that is
 * integral and fits 64 bits, and float64 otherwise. */
static bool means(const msgpack_object *o, const struct jo_value *j, enum direction dir)
{
    char text[32];
    double d;
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        return j->type == JO_NULL;
    case MSGPACK_OBJECT_BOOLEAN:
        return j->type == (o->via.boolean ? JO_TRUE : JO_FALSE);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (dir == FROM_MSGPACK) {
            snprintf(text, sizeof text, "%" PRIu64, o->via.u64);
            return integer_text_is(j, text);
        }
        if (j->type != JO_NUMBER)
            return false;
        d = jo_number_value(j);
        return d >= 0 && d < 18446744073709551616.0 && d == trunc(d) && (uint64_t)d == o->via.u64;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        if (dir == FROM_MSGPACK) {
            snprintf(text, sizeof text, "%" PRId64, o->via.i64);
            return integer_text_is(j, text);
        }
        if (j->type != JO_NUMBER)
            return false;
        d = jo_number_value(j);
        return d < 0 && d >= -9223372036854775808.0 && d == trunc(d) && (int64_t)d == o->via.i64;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (j->type != JO_NUMBER || !isfinite(o->via.f64))
            return false;
        d = jo_number_value(j);
        if (d != o->via.f64)
            return false;
        /* from JSON, a float64 is only written for what is no 64-bit integer */
        return dir == FROM_MSGPACK || d != trunc(d) || d < -9223372036854775808.0 ||
               d >= 18446744073709551616.0;
    case MSGPACK_OBJECT_STR:
        return string_is(j, o->via.str.ptr, o->via.str.size);
    case MSGPACK_OBJECT_BIN:
        return dir == FROM_MSGPACK && base64_is(j, (const unsigned char *)o->via.bin.ptr, o->via.bin.size);
    case MSGPACK_OBJECT_EXT:
        return dir == FROM_MSGPACK && o->via.ext.type == -1 && timestamp_is(j, &o->via.ext);
    case MSGPACK_OBJECT_ARRAY:
        if (j->type != JO_ARRAY || j->count != o->via.array.size)
            return false;
        for (size_t i = 0; i < j->count; i++)
            if (!means(&o->via.array.ptr[i], &j->items[i], dir))
                return false;
        return true;
    case MSGPACK_OBJECT_MAP:
        if (j->type != JO_OBJECT || j->count != o->via.map.size)
            return false;
        for (size_t i = 0; i < j->count; i++) {
            if (dir == FROM_JSON && o->via.map.ptr[i].key.type != MSGPACK_OBJECT_STR)
                return false;
            if (!key_means(&o->via.map.ptr[i].key, &j->keys[i]) ||
                !means(&o->via.map.ptr[i].val, &j->items[i], dir))
                return false;
        }
        return true;
    }
    return false;
}

/* Reads mp with msgpack-c (one value, every byte) and json with the oracle,
 * and requires them to mean the same. */
static void require_same_meaning(struct span mp, struct span json, enum direction dir)
{
    msgpack_zone zone;
    msgpack_zone_init(&zone, 4096);
    msgpack_object o;
    size_t off = 0;
    if (msgpack_unpack(mp.ptr, mp.len, &off, &zone, &o) != MSGPACK_UNPACK_SUCCESS || off != mp.len)
        fail("converted MessagePack is not one MessagePack value");
    struct jo_value j;
    if (!jo_parse(json.ptr, json.len, JO_MAX_DEPTH, &j))
        fail("converted JSON is not strict JSON");
    if (!means(&o, &j, dir))
        fail(dir == FROM_JSON ? "MessagePack made from JSON means something else"
                              : "JSON made from MessagePack means something else");
    jo_free(&j);
    msgpack_zone_destroy(&zone);
}

static void json_first(struct span json)
{
    struct buf b1, b2, b3;
    buf_init(&b1);
    buf_init(&b2);
    buf_init(&b3);
    struct payload mp, back, mp2;
    if (convert((struct payload){ PAYLOAD_JSON, json }, PAYLOAD_MSGPACK, &b1, &mp)) {
        struct jo_value in;
        bool is_json = jo_parse(json.ptr, json.len, JO_MAX_DEPTH, &in);
        if (!is_json && json_strict_check_text(json.ptr, json.len, INT_MAX, NULL) == PROTO_OK)
            fail("strictly checked text that is not JSON converted");
        must_convert(mp, PAYLOAD_JSON, &b2, &back, "MessagePack made from JSON does not convert back");
        require_same_meaning(mp.bytes, back.bytes, FROM_MSGPACK);
        if (is_json) {
            require_same_meaning(mp.bytes, json, FROM_JSON);
            struct jo_value out;
            if (!jo_parse(back.bytes.ptr, back.bytes.len, JO_MAX_DEPTH, &out))
                fail("JSON made from MessagePack is not strict JSON");
            if (!jo_equal(&in, &out, JO_NUMBERS_AS_DOUBLES))
                fail("JSON -> MessagePack -> JSON changed the value");
            jo_free(&out);
            jo_free(&in);
        }
        must_convert(back, PAYLOAD_MSGPACK, &b3, &mp2, "JSON made from MessagePack does not convert back");
        if (!span_eq(mp.bytes, mp2.bytes))
            fail("MessagePack -> JSON -> MessagePack is not a fixed point");
    }
    buf_free(&b1);
    buf_free(&b2);
    buf_free(&b3);
}

static void msgpack_first(struct span mp_in)
{
    struct buf b1, b2, b3, b4;
    buf_init(&b1);
    buf_init(&b2);
    buf_init(&b3);
    buf_init(&b4);
    struct payload json, mp, json2, mp2;
    if (convert((struct payload){ PAYLOAD_MSGPACK, mp_in }, PAYLOAD_JSON, &b1, &json)) {
        require_same_meaning(mp_in, json.bytes, FROM_MSGPACK);
        must_convert(json, PAYLOAD_MSGPACK, &b2, &mp, "JSON made from MessagePack does not convert back");
        require_same_meaning(mp.bytes, json.bytes, FROM_JSON);
        must_convert(mp, PAYLOAD_JSON, &b3, &json2, "second pass to JSON failed");
        must_convert(json2, PAYLOAD_MSGPACK, &b4, &mp2, "second pass to MessagePack failed");
        if (!span_eq(mp.bytes, mp2.bytes))
            fail("MessagePack -> JSON -> MessagePack is not a fixed point");
        if (!span_eq(json.bytes, json2.bytes) && span_eq(mp_in, mp.bytes))
            fail("JSON text changed although the MessagePack did not");
    }
    buf_free(&b1);
    buf_free(&b2);
    buf_free(&b3);
    buf_free(&b4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    struct span rest = span_make((const char *)data + 1, size - 1);
    if (data[0] & 1)
        msgpack_first(rest);
    else
        json_first(rest);
    return 0;
}
