/* fuzz_convert.c - JSON <-> MessagePack payload conversion.
 *
 * The first input byte picks the direction (even: the rest is JSON, odd: the
 * rest is MessagePack). Properties:
 *   - a failure has a detail and appends nothing;
 *   - whatever converts one way converts back without error;
 *   - after one pass through JSON the MessagePack form is a fixed point:
 *     MessagePack -> JSON -> MessagePack gives the same bytes again (the first
 *     pass may round big integers through a double, turn bin into base64
 *     strings and timestamps into ISO strings; after that nothing changes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "containers/buf.h"
#include "protocol/convert.h"

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

static void json_first(struct span json)
{
    struct buf b1, b2, b3;
    buf_init(&b1);
    buf_init(&b2);
    buf_init(&b3);
    struct payload mp, back, mp2;
    if (convert((struct payload){ PAYLOAD_JSON, json }, PAYLOAD_MSGPACK, &b1, &mp)) {
        must_convert(mp, PAYLOAD_JSON, &b2, &back, "MessagePack made from JSON does not convert back");
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
        must_convert(json, PAYLOAD_MSGPACK, &b2, &mp, "JSON made from MessagePack does not convert back");
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
