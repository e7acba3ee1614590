/* test_convert.c - JSON <-> MessagePack payload and hub message conversion.
 *
 * Expected MessagePack bytes follow the MessagePack format specification
 * (smallest encodings); expected JSON is what System.Text.Json writes for the
 * same value (numbers, base64 for bin, ISO-8601 for timestamps). The message
 * level tests tie the JSON examples E3/E7 of specs/core-signalr.md to their
 * MessagePack twins E4/E7. */
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>

#include "containers/buf.h"
#include "check.h"
#include "hex.h"
#include "protocol/convert.h"
#include "protocol/core_msgpack.h"
#include "protocol/hub_msg.h"

static void print_hex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %02x", (unsigned char)p[i]);
    fprintf(stderr, "\n");
}

/* MessagePack (hex) -> JSON must give exactly `json`. */
static void check_to_json(const char *file, int line, const char *mp_hex, const char *json)
{
    char mp[256];
    size_t n = hex(mp_hex, mp, sizeof mp);
    struct buf out;
    buf_init(&out);
    struct payload conv;
    struct proto_error err = { 0 };
    enum proto_status st = payload_convert((struct payload){ PAYLOAD_MSGPACK, span_make(mp, n) },
                                           PAYLOAD_JSON, &out, &conv, &err);
    check_count++;
    if (st != PROTO_OK || conv.encoding != PAYLOAD_JSON || conv.bytes.len != strlen(json) ||
        memcmp(conv.bytes.ptr, json, conv.bytes.len)) {
        check_failures++;
        fprintf(stderr, "%s:%d: %s -> JSON: %s %s, got '%.*s', expected '%s'\n", file, line, mp_hex,
                proto_status_name(st), err.detail ? err.detail : "", (int)out.len,
                out.data ? out.data : "", json);
    }
    buf_free(&out);
}

/* JSON -> MessagePack must give exactly mp_hex. */
static void check_to_msgpack(const char *file, int line, const char *json, const char *mp_hex)
{
    char mp[256];
    size_t n = hex(mp_hex, mp, sizeof mp);
    struct buf out;
    buf_init(&out);
    struct payload conv;
    struct proto_error err = { 0 };
    enum proto_status st = payload_convert((struct payload){ PAYLOAD_JSON, span_from_cstr(json) },
                                           PAYLOAD_MSGPACK, &out, &conv, &err);
    check_count++;
    if (st != PROTO_OK || conv.encoding != PAYLOAD_MSGPACK || conv.bytes.len != n ||
        memcmp(conv.bytes.ptr, mp, n)) {
        check_failures++;
        fprintf(stderr, "%s:%d: '%s' -> MessagePack: %s %s, expected %s, got", file, line, json,
                proto_status_name(st), err.detail ? err.detail : "", mp_hex);
        print_hex(out.data, out.len);
    }
    buf_free(&out);
}

#define CHECK_TO_JSON(mp, json) check_to_json(__FILE__, __LINE__, (mp), (json))
#define CHECK_TO_MSGPACK(json, mp) check_to_msgpack(__FILE__, __LINE__, (json), (mp))
/* Both directions: the value survives a round trip byte for byte. */
#define CHECK_BOTH(mp, json)      \
    do {                          \
        CHECK_TO_JSON(mp, json);  \
        CHECK_TO_MSGPACK(json, mp); \
    } while (0)

static enum proto_status convert_raw(enum payload_encoding from, const char *bytes, size_t len,
                                     struct buf *out, struct proto_error *err)
{
    struct payload conv;
    return payload_convert((struct payload){ from, span_make(bytes, len) },
                           from == PAYLOAD_JSON ? PAYLOAD_MSGPACK : PAYLOAD_JSON, out, &conv, err);
}

static enum proto_status msgpack_hex_fails(const char *mp_hex)
{
    char mp[256];
    size_t n = hex(mp_hex, mp, sizeof mp);
    struct buf out;
    buf_init(&out);
    struct proto_error err = { 0 };
    enum proto_status st = convert_raw(PAYLOAD_MSGPACK, mp, n, &out, &err);
    if (st != PROTO_OK && (!err.detail || out.len != 0))
        st = PROTO_OK; /* a failure must say why and leave nothing behind */
    buf_free(&out);
    return st;
}

static enum proto_status json_fails(const char *json)
{
    struct buf out;
    buf_init(&out);
    struct proto_error err = { 0 };
    enum proto_status st = convert_raw(PAYLOAD_JSON, json, strlen(json), &out, &err);
    if (st != PROTO_OK && (!err.detail || out.len != 0))
        st = PROTO_OK;
    buf_free(&out);
    return st;
}

static void test_scalars(void)
{
    CHECK_BOTH("c0", "null");
    CHECK_BOTH("c3", "true");
    CHECK_BOTH("c2", "false");
    /* integers at every encoding boundary */
    CHECK_BOTH("00", "0");
    CHECK_BOTH("7f", "127");
    CHECK_BOTH("cc 80", "128");
    CHECK_BOTH("cc ff", "255");
    CHECK_BOTH("cd 01 00", "256");
    CHECK_BOTH("cd ff ff", "65535");
    CHECK_BOTH("ce 00 01 00 00", "65536");
    CHECK_BOTH("ce ff ff ff ff", "4294967295");
    CHECK_BOTH("cf 00 00 00 01 00 00 00 00", "4294967296");
    CHECK_BOTH("cf 00 20 00 00 00 00 00 00", "9007199254740992"); /* 2^53 */
    CHECK_BOTH("ff", "-1");
    CHECK_BOTH("e0", "-32");
    CHECK_BOTH("d0 df", "-33");
    CHECK_BOTH("d0 80", "-128");
    CHECK_BOTH("d1 ff 7f", "-129");
    CHECK_BOTH("d1 80 00", "-32768");
    CHECK_BOTH("d2 ff ff 7f ff", "-32769");
    CHECK_BOTH("d2 80 00 00 00", "-2147483648");
    CHECK_BOTH("d3 ff ff ff ff 7f ff ff ff", "-2147483649");
    CHECK_BOTH("d3 80 00 00 00 00 00 00 00", "-9223372036854775808"); /* INT64_MIN is a double */
    /* wider-than-needed integers read fine and come back smallest */
    CHECK_TO_JSON("d3 00 00 00 00 00 00 00 05", "5");
    CHECK_TO_JSON("cd 00 05", "5");

    /* MessagePack -> JSON prints 64-bit integers exactly ... */
    CHECK_TO_JSON("cf ff ff ff ff ff ff ff ff", "18446744073709551615");
    CHECK_TO_JSON("cf 7f ff ff ff ff ff ff ff", "9223372036854775807");
    CHECK_TO_JSON("cf 00 20 00 00 00 00 00 01", "9007199254740993");
    /* ... but cJSON reads every JSON number as a double: beyond 2^53 they round */
    CHECK_TO_MSGPACK("9007199254740993", "cf 00 20 00 00 00 00 00 00");
    CHECK_TO_MSGPACK("9223372036854775807", "cf 80 00 00 00 00 00 00 00"); /* 2^63 */
    CHECK_TO_MSGPACK("18446744073709551615", "cb 43 f0 00 00 00 00 00 00"); /* 2^64: float64 */

    /* floats: shortest text that reads back as the same double */
    CHECK_BOTH("cb 3f b9 99 99 99 99 99 9a", "0.1");
    CHECK_BOTH("cb 3f f8 00 00 00 00 00 00", "1.5");
    CHECK_BOTH("cb bf f8 00 00 00 00 00 00", "-1.5");
    CHECK_BOTH("cb 3f d3 33 33 33 33 33 34", "0.30000000000000004"); /* 0.1 + 0.2, not 0.3 */
    CHECK_BOTH("cb 44 15 af 1d 78 b5 8c 40", "1e+20"); /* above 2^64: stays float64 */
    CHECK_BOTH("cb 00 00 00 00 00 00 00 01", "4.94065645841247e-324"); /* smallest denormal */
    /* float32 is widened to float64; integral floats become integers */
    CHECK_TO_JSON("ca 3f c0 00 00", "1.5");
    CHECK_TO_MSGPACK("1.5", "cb 3f f8 00 00 00 00 00 00");
    CHECK_TO_JSON("cb 40 00 00 00 00 00 00 00", "2");
    CHECK_TO_MSGPACK("2.0", "02");
    CHECK_TO_MSGPACK("1e3", "cd 03 e8");
    CHECK_TO_MSGPACK("-0", "00");
    CHECK_TO_MSGPACK(" 42 \n", "2a"); /* surrounding whitespace is fine */
}

static void test_strings_and_bin(void)
{
    CHECK_BOTH("a0", "\"\"");
    CHECK_BOTH("a5 68 65 6c 6c 6f", "\"hello\"");
    /* "héllo €😀": UTF-8 passes through unescaped */
    CHECK_BOTH("af 68 c3 a9 6c 6c 6f 20 e2 82 ac 20 f0 9f 98 80", "\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\"");
    CHECK_BOTH("a5 61 0a 22 5c 62", "\"a\\n\\\"\\\\b\"");
    CHECK_TO_MSGPACK("\"\\u00e9\\ud83d\\ude00\"", "a6 c3 a9 f0 9f 98 80");
    /* str 8 from 32 bytes on */
    CHECK_BOTH("d9 20 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 "
               "61 61 61 61 61",
               "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"");
    /* bin -> base64 (System.Text.Json's byte[]), which comes back as a str */
    CHECK_TO_JSON("c4 03 01 02 03", "\"AQID\"");
    CHECK_TO_JSON("c4 01 ff", "\"/w==\"");
    CHECK_TO_JSON("c4 00", "\"\"");
    CHECK_TO_JSON("c5 00 02 fb ff", "\"+/8=\"");
    CHECK_TO_MSGPACK("\"AQID\"", "a4 41 51 49 44");
}

static void test_containers(void)
{
    CHECK_BOTH("90", "[]");
    CHECK_BOTH("80", "{}");
    CHECK_BOTH("92 28 02", "[40,2]");
    CHECK_BOTH("82 a1 61 91 01 a1 62 81 a1 63 c0", "{\"a\":[1],\"b\":{\"c\":null}}");
    /* key order is kept, duplicates too */
    CHECK_BOTH("82 a1 62 01 a1 61 02", "{\"b\":1,\"a\":2}");
    CHECK_BOTH("82 a1 61 01 a1 61 02", "{\"a\":1,\"a\":2}");
    /* integer keys become decimal strings (Dictionary<int,T> in System.Text.Json) */
    CHECK_TO_JSON("82 01 a1 61 fb a1 62", "{\"1\":\"a\",\"-5\":\"b\"}");
    /* array 16 / map 16 headers from 16 elements on */
    CHECK_BOTH("dc 00 10 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f",
               "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]");
    CHECK_TO_JSON("dd 00 00 00 01 05", "[5]");
    CHECK_TO_JSON("de 00 01 a1 61 05", "{\"a\":5}");

    /* nesting: 31 levels are a payload's limit in both directions */
    char mp[64], json[128];
    for (int i = 0; i < 31; i++) {
        mp[i] = (char)0x91;
        json[i] = '[';
        json[31 + 1 + i] = ']';
    }
    mp[31] = 0x01;
    json[31] = '1';
    json[63] = '\0';
    struct buf out;
    buf_init(&out);
    struct proto_error err = { 0 };
    CHECK_EQ_INT(convert_raw(PAYLOAD_MSGPACK, mp, 32, &out, &err), PROTO_OK);
    CHECK_BYTES(out.data, out.len, json);
    buf_reset(&out);
    CHECK_EQ_INT(convert_raw(PAYLOAD_JSON, json, 63, &out, &err), PROTO_OK);
    CHECK(out.len == 32 && memcmp(out.data, mp, 32) == 0);
    buf_reset(&out);
    /* 32 levels: too deep for a payload */
    char mp32[64];
    memset(mp32, 0x91, 32);
    mp32[32] = 0x01;
    CHECK_EQ_INT(convert_raw(PAYLOAD_MSGPACK, mp32, 33, &out, &err), PROTO_ERR_TOO_DEEP);
    char deep[256];
    memset(deep, '[', 40);
    deep[40] = '1';
    memset(deep + 41, ']', 40);
    CHECK_EQ_INT(convert_raw(PAYLOAD_JSON, deep, 81, &out, &err), PROTO_ERR_TOO_DEEP);
    CHECK_EQ_INT(out.len, 0);
    buf_free(&out);
}

/* Packs a timestamp with msgpack-c (to build the ext bytes) and converts it. */
static void check_timestamp(const char *file, int line, int64_t sec, uint32_t nsec,
                            const char *expected_json, enum proto_status expected_status)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_timestamp ts = { sec, nsec };
    msgpack_pack_timestamp(&pk, &ts);
    struct buf out;
    buf_init(&out);
    struct proto_error err = { 0 };
    enum proto_status st = convert_raw(PAYLOAD_MSGPACK, sb.data, sb.size, &out, &err);
    check_count++;
    if (st != expected_status ||
        (expected_json && (out.len != strlen(expected_json) || memcmp(out.data, expected_json, out.len)))) {
        check_failures++;
        fprintf(stderr, "%s:%d: timestamp %lld.%09u -> %s '%.*s', expected '%s'\n", file, line,
                (long long)sec, nsec, proto_status_name(st), (int)out.len, out.data ? out.data : "",
                expected_json ? expected_json : "(failure)");
    }
    buf_free(&out);
    msgpack_sbuffer_destroy(&sb);
}
#define CHECK_TIMESTAMP(sec, nsec, json) check_timestamp(__FILE__, __LINE__, sec, nsec, json, PROTO_OK)
#define CHECK_TIMESTAMP_FAILS(sec, nsec) check_timestamp(__FILE__, __LINE__, sec, nsec, NULL, PROTO_ERR_VALUE)

static void test_timestamps(void)
{
    /* 32-bit form, by hand: ext -1 of 4 bytes */
    CHECK_TO_JSON("d6 ff 00 00 00 00", "\"1970-01-01T00:00:00Z\"");
    CHECK_TO_JSON("d6 ff 65 93 7d 25", "\"2024-01-02T03:04:05Z\""); /* 0x65937d25 = 1704164645 */
    /* 64-bit form (seconds < 2^34 with a fraction) */
    CHECK_TIMESTAMP(1704164645, 500000000, "\"2024-01-02T03:04:05.5Z\"");
    CHECK_TIMESTAMP(1704164645, 1234500, "\"2024-01-02T03:04:05.0012345Z\"");
    CHECK_TIMESTAMP(1704164645, 1, "\"2024-01-02T03:04:05.000000001Z\"");
    /* 96-bit form: before 1970 and the ends of .NET's DateTime range */
    CHECK_TIMESTAMP(-1, 0, "\"1969-12-31T23:59:59Z\"");
    CHECK_TIMESTAMP(-62135596800, 0, "\"0001-01-01T00:00:00Z\"");
    CHECK_TIMESTAMP(253402300799, 999999999, "\"9999-12-31T23:59:59.999999999Z\"");
    CHECK_TIMESTAMP(951782400, 0, "\"2000-02-29T00:00:00Z\"");
    CHECK_TIMESTAMP_FAILS(-62135596801, 0);
    CHECK_TIMESTAMP_FAILS(253402300800, 0);
    /* nanoseconds >= 1e9 in the 96-bit form */
    CHECK(msgpack_hex_fails("c7 0c ff 3b 9a ca 00 00 00 00 00 00 00 00 00") == PROTO_ERR_VALUE);
    /* ext -1 of a size that is no timestamp */
    CHECK(msgpack_hex_fails("d4 ff 00") == PROTO_ERR_VALUE);
    /* the ISO text comes back as a plain string */
    CHECK_TO_MSGPACK("\"1970-01-01T00:00:00Z\"",
                     "b4 31 39 37 30 2d 30 31 2d 30 31 54 30 30 3a 30 30 3a 30 30 5a");
}

static void test_json_round_trip(void)
{
    /* JSON -> MessagePack -> JSON gives the same text for values JSON and
     * MessagePack both hold exactly. */
    const char *docs[] = {
        "{\"a\":[1,-2,3.25,\"x\",true,false,null,{\"b\":[]}],\"c\":\"\xc3\xa9\",\"d\":{}}",
        "[\"bob\",\"hi\"]",
        "[{\"Name\":\"x\",\"Values\":[0.5,-7,4294967296]},[[[]]]]",
        "\"\\u0001\\u001f\"",
        "-9007199254740992",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        struct buf mp, json;
        buf_init(&mp);
        buf_init(&json);
        struct payload a, b;
        struct proto_error err = { 0 };
        CHECK_EQ_INT(payload_convert((struct payload){ PAYLOAD_JSON, span_from_cstr(docs[i]) },
                                     PAYLOAD_MSGPACK, &mp, &a, &err), PROTO_OK);
        CHECK_EQ_INT(payload_convert(a, PAYLOAD_JSON, &json, &b, &err), PROTO_OK);
        CHECK_BYTES(b.bytes.ptr, b.bytes.len, docs[i]);
        buf_free(&mp);
        buf_free(&json);
    }
}

static void test_failures(void)
{
    /* JSON side */
    CHECK_EQ_INT(json_fails("[1,"), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(json_fails("1 2"), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(json_fails("{\"a\":1}x"), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(json_fails(""), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(json_fails("1e400"), PROTO_ERR_VALUE);
    CHECK_EQ_INT(json_fails("\"a\\u0000b\""), PROTO_ERR_VALUE);
    CHECK_EQ_INT(json_fails("{\"k\\u0000\":1}"), PROTO_ERR_VALUE);
    CHECK_EQ_INT(json_fails("\"\\\\\\u0000\""), PROTO_ERR_VALUE);  /* \\ then \u0000 */
    CHECK_TO_MSGPACK("\"\\\\u0000\"", "a6 5c 75 30 30 30 30");      /* \\ then text u0000 */
    CHECK_EQ_INT(json_fails("\"\xff\""), PROTO_ERR_UTF8);
    CHECK_EQ_INT(json_fails("{\"\xc3\x28\":1}"), PROTO_ERR_UTF8);
    CHECK_EQ_INT(json_fails("\"\\ud800\""), PROTO_ERR_SYNTAX); /* lone surrogate */

    /* MessagePack side */
    CHECK_EQ_INT(msgpack_hex_fails("c1"), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(msgpack_hex_fails("c0 c0"), PROTO_ERR_SYNTAX);              /* two values */
    CHECK_EQ_INT(msgpack_hex_fails("a3 61 62"), PROTO_ERR_SYNTAX);           /* truncated */
    CHECK_EQ_INT(msgpack_hex_fails("dd ff ff ff ff 00"), PROTO_ERR_SYNTAX);  /* hostile count */
    CHECK_EQ_INT(msgpack_hex_fails("a1 ff"), PROTO_ERR_UTF8);
    CHECK_EQ_INT(msgpack_hex_fails("a3 61 00 62"), PROTO_ERR_VALUE);          /* NUL in a string */
    CHECK_EQ_INT(msgpack_hex_fails("81 a2 61 00 01"), PROTO_ERR_VALUE);       /* NUL in a key */
    CHECK_EQ_INT(msgpack_hex_fails("cb 7f f8 00 00 00 00 00 00"), PROTO_ERR_VALUE); /* NaN */
    CHECK_EQ_INT(msgpack_hex_fails("cb 7f f0 00 00 00 00 00 00"), PROTO_ERR_VALUE); /* +inf */
    CHECK_EQ_INT(msgpack_hex_fails("ca ff 80 00 00"), PROTO_ERR_VALUE);       /* -inf float32 */
    CHECK_EQ_INT(msgpack_hex_fails("d4 01 00"), PROTO_ERR_TYPE);              /* other ext */
    CHECK_EQ_INT(msgpack_hex_fails("91 c7 00 05"), PROTO_ERR_TYPE);
    CHECK_EQ_INT(msgpack_hex_fails("81 c3 01"), PROTO_ERR_TYPE);              /* bool key */
    CHECK_EQ_INT(msgpack_hex_fails("81 c0 01"), PROTO_ERR_TYPE);              /* nil key */
    CHECK_EQ_INT(msgpack_hex_fails("81 90 01"), PROTO_ERR_TYPE);              /* array key */
    CHECK_EQ_INT(msgpack_hex_fails("92 01 cb 7f f8 00 00 00 00 00 00"), PROTO_ERR_VALUE); /* deep NaN */

    /* a failure leaves what was already in out untouched */
    struct buf out;
    buf_init(&out);
    CHECK(buf_append(&out, "abc", 3));
    struct payload conv;
    struct proto_error err = { 0 };
    CHECK_EQ_INT(payload_convert((struct payload){ PAYLOAD_MSGPACK, span_make("\x92\x01\xc1", 3) },
                                 PAYLOAD_JSON, &out, &conv, &err), PROTO_ERR_SYNTAX);
    CHECK_BYTES(out.data, out.len, "abc");
    CHECK_EQ_INT(payload_convert((struct payload){ PAYLOAD_JSON, SPAN_LIT("[1,\"\xff\"]") },
                                 PAYLOAD_MSGPACK, &out, &conv, &err), PROTO_ERR_UTF8);
    CHECK_BYTES(out.data, out.len, "abc");
    /* same encoding or absent: passed through, nothing appended, not even checked */
    CHECK_EQ_INT(payload_convert((struct payload){ PAYLOAD_JSON, SPAN_LIT("[1") }, PAYLOAD_JSON,
                                 &out, &conv, &err), PROTO_OK);
    CHECK(conv.encoding == PAYLOAD_JSON && conv.bytes.len == 2);
    CHECK_EQ_INT(payload_convert((struct payload){ PAYLOAD_NONE, SPAN_NONE }, PAYLOAD_MSGPACK, &out,
                                 &conv, &err), PROTO_OK);
    CHECK_EQ_INT(conv.encoding, PAYLOAD_NONE);
    CHECK_EQ_INT(out.len, 3);
    /* appending after existing bytes: the converted span is the new part only */
    CHECK_EQ_INT(payload_convert((struct payload){ PAYLOAD_JSON, SPAN_LIT("[40,2]") }, PAYLOAD_MSGPACK,
                                 &out, &conv, &err), PROTO_OK);
    CHECK(conv.bytes.ptr == out.data + 3);
    CHECK_BYTES(conv.bytes.ptr, conv.bytes.len, "\x92\x28\x02");
    buf_free(&out);
}

/* ---- whole messages ---- */

static void check_frame(const char *file, int line, const struct buf *b, const char *frame_hex)
{
    char expected[256];
    size_t n = hex(frame_hex, expected, sizeof expected);
    check_count++;
    if (b->len != n || memcmp(b->data, expected, n)) {
        check_failures++;
        fprintf(stderr, "%s:%d: frame differs from %s, got", file, line, frame_hex);
        print_hex(b->data, b->len);
    }
}
#define CHECK_FRAME(b, h) check_frame(__FILE__, __LINE__, (b), (h))

static void test_json_message_to_msgpack(void)
{
    struct buf scratch, frame;
    buf_init(&scratch);
    buf_init(&frame);
    struct hub_msg in, out;
    struct proto_error err = { 0 };

    /* E3 {"arguments":[40,2],"invocationId":"0","target":"Add","type":1} -> E4 */
    hub_msg_init(&in);
    in.kind = HUB_MSG_INVOCATION;
    in.invocation_id = SPAN_LIT("0");
    in.target = SPAN_LIT("Add");
    in.args = (struct payload){ PAYLOAD_JSON, SPAN_LIT("[40,2]") };
    CHECK_EQ_INT(hub_msg_convert(&in, PAYLOAD_MSGPACK, &scratch, &out, &err), PROTO_OK);
    CHECK_EQ_INT(out.args.encoding, PAYLOAD_MSGPACK);
    CHECK_EQ_INT(core_msgpack_encode(&out, &frame, &err), PROTO_OK);
    CHECK_FRAME(&frame, "0d 96 01 80 a1 30 a3 41 64 64 92 28 02 90");

    /* E3 {"type":3,"invocationId":"0","result":42} -> E4 07 95 03 80 a1 30 03 2a */
    hub_msg_init(&in);
    in.kind = HUB_MSG_COMPLETION;
    in.invocation_id = SPAN_LIT("0");
    in.completion = COMPLETION_RESULT;
    in.result = (struct payload){ PAYLOAD_JSON, SPAN_LIT("42") };
    buf_reset(&scratch);
    buf_reset(&frame);
    CHECK_EQ_INT(hub_msg_convert(&in, PAYLOAD_MSGPACK, &scratch, &out, &err), PROTO_OK);
    CHECK_EQ_INT(core_msgpack_encode(&out, &frame, &err), PROTO_OK);
    CHECK_FRAME(&frame, "07 95 03 80 a1 30 03 2a");
    in.result = (struct payload){ PAYLOAD_JSON, SPAN_LIT("null") }; /* void method */
    buf_reset(&scratch);
    buf_reset(&frame);
    CHECK_EQ_INT(hub_msg_convert(&in, PAYLOAD_MSGPACK, &scratch, &out, &err), PROTO_OK);
    CHECK_EQ_INT(core_msgpack_encode(&out, &frame, &err), PROTO_OK);
    CHECK_FRAME(&frame, "07 95 03 80 a1 30 03 c0");

    /* E7 {"type":1,"target":"ReceiveMessage","arguments":["bob","hi"]} */
    hub_msg_init(&in);
    in.kind = HUB_MSG_INVOCATION;
    in.target = SPAN_LIT("ReceiveMessage");
    in.args = (struct payload){ PAYLOAD_JSON, SPAN_LIT("[\"bob\",\"hi\"]") };
    buf_reset(&scratch);
    buf_reset(&frame);
    CHECK_EQ_INT(hub_msg_convert(&in, PAYLOAD_MSGPACK, &scratch, &out, &err), PROTO_OK);
    CHECK_EQ_INT(core_msgpack_encode(&out, &frame, &err), PROTO_OK);
    CHECK_FRAME(&frame, "1c 96 01 80 c0 ae 52 65 63 65 69 76 65 4d 65 73 73 61 67 65 92 a3 62 6f 62 "
                        "a2 68 69 90");
    buf_free(&scratch);
    buf_free(&frame);
}

static void test_hub_msg_convert_all_payloads(void)
{
    /* Every payload converted, with scratch reallocated along the way (a
     * 2 KB argument into an empty buffer): spans must be fixed up afterwards. */
    struct buf big, scratch, back_scratch;
    buf_init(&big);
    buf_init(&scratch);
    buf_init(&back_scratch);
    CHECK(buf_append_cstr(&big, "["));
    for (int i = 0; i < 200; i++) {
        char item[32];
        snprintf(item, sizeof item, "%s\"item-%03d\"", i ? "," : "", i);
        CHECK(buf_append_cstr(&big, item));
    }
    CHECK(buf_append_cstr(&big, "]"));

    struct hub_msg in, mp, back;
    struct proto_error err = { 0 };
    hub_msg_init(&in);
    in.kind = HUB_MSG_INVOCATION;
    in.invocation_id = SPAN_LIT("7");
    in.target = SPAN_LIT("Upload");
    in.headers = (struct payload){ PAYLOAD_JSON, SPAN_LIT("{\"traceparent\":\"00-ab-cd-01\"}") };
    in.args = (struct payload){ PAYLOAD_JSON, buf_span(&big) };
    in.stream_ids = (struct payload){ PAYLOAD_JSON, SPAN_LIT("[\"0\",\"1\"]") };
    in.item = (struct payload){ PAYLOAD_JSON, SPAN_LIT("{\"x\":1.25}") };
    in.result = (struct payload){ PAYLOAD_JSON, SPAN_LIT("[true,null]") };
    in.state = (struct payload){ PAYLOAD_JSON, SPAN_LIT("{\"legacy\":1}") };

    CHECK_EQ_INT(hub_msg_convert(&in, PAYLOAD_MSGPACK, &scratch, &mp, &err), PROTO_OK);
    CHECK(scratch.cap > 64); /* it did grow */
    CHECK_EQ_INT(mp.owned_count, 0);
    CHECK(span_eq(mp.target, in.target) && span_eq(mp.invocation_id, in.invocation_id));
    CHECK_BYTES(mp.headers.bytes.ptr, mp.headers.bytes.len,
                "\x81\xabtraceparent\xab" "00-ab-cd-01");
    CHECK_BYTES(mp.stream_ids.bytes.ptr, mp.stream_ids.bytes.len, "\x92\xa1" "0\xa1" "1");
    CHECK(span_eq(mp.item.bytes, SPAN_LIT("\x81\xa1x\xcb\x3f\xf4\0\0\0\0\0\0"))); /* has NULs */
    CHECK_BYTES(mp.result.bytes.ptr, mp.result.bytes.len, "\x92\xc3\xc0");
    CHECK((unsigned char)mp.args.bytes.ptr[0] == 0xdc); /* array 16 of 200 */
    CHECK_EQ_INT(mp.state.encoding, PAYLOAD_JSON);      /* legacy state untouched */
    const char *all[] = { mp.headers.bytes.ptr, mp.args.bytes.ptr, mp.stream_ids.bytes.ptr,
                          mp.item.bytes.ptr, mp.result.bytes.ptr };
    for (int i = 0; i < 5; i++)
        CHECK(all[i] >= scratch.data && all[i] < scratch.data + scratch.len);

    /* ... through the wire and back */
    struct buf frame;
    buf_init(&frame);
    CHECK_EQ_INT(core_msgpack_encode(&mp, &frame, &err), PROTO_OK);
    struct span body;
    size_t consumed;
    CHECK_EQ_INT(core_binary_next_frame(frame.data, frame.len, 1 << 20, &body, &consumed, &err), PROTO_OK);
    struct hub_msg wire;
    CHECK_EQ_INT(core_msgpack_decode(body.ptr, body.len, &wire, &err), PROTO_OK);
    CHECK(span_eq(wire.args.bytes, mp.args.bytes));
    CHECK(span_eq(wire.headers.bytes, mp.headers.bytes));
    CHECK(span_eq(wire.stream_ids.bytes, mp.stream_ids.bytes));

    /* ... and back to JSON: the same text as the input */
    CHECK_EQ_INT(hub_msg_convert(&wire, PAYLOAD_JSON, &back_scratch, &back, &err), PROTO_OK);
    CHECK(span_eq(back.args.bytes, in.args.bytes));
    CHECK(span_eq(back.headers.bytes, in.headers.bytes));
    CHECK(span_eq(back.stream_ids.bytes, in.stream_ids.bytes));

    /* a payload that cannot convert: nothing left in scratch, out empty */
    size_t before = scratch.len;
    in.result = (struct payload){ PAYLOAD_JSON, SPAN_LIT("[1e400]") };
    CHECK_EQ_INT(hub_msg_convert(&in, PAYLOAD_MSGPACK, &scratch, &mp, &err), PROTO_ERR_VALUE);
    CHECK_EQ_INT(scratch.len, before);
    CHECK_EQ_INT(mp.kind, HUB_MSG_NONE);
    /* inputs living in scratch are refused (appending could move them) */
    struct hub_msg again;
    CHECK_EQ_INT(hub_msg_convert(&back, PAYLOAD_MSGPACK, &back_scratch, &again, &err), PROTO_ERR_VALUE);

    buf_free(&frame);
    buf_free(&big);
    buf_free(&scratch);
    buf_free(&back_scratch);
}

int main(void)
{
    test_scalars();
    test_strings_and_bin();
    test_containers();
    test_timestamps();
    test_json_round_trip();
    test_failures();
    test_json_message_to_msgpack();
    test_hub_msg_convert_all_payloads();
    return test_main_result("test_convert");
}
