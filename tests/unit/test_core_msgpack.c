/* test_core_msgpack.c - Core MessagePack framing, decoding and encoding.
 *
 * The hex vectors are the examples of specs/core-signalr.md section 12
 * (E4-E8) and the VarInt examples of section 3.2 / BinaryMessageParser.cs;
 * the layouts of Ack and Sequence follow section 5.2 with MessagePack's
 * smallest integer encodings. */
#include <stdint.h>
#include <stdlib.h>

#include "containers/buf.h"
#include "check.h"
#include "hex.h"
#include "protocol/core_msgpack.h"
#include "protocol/hub_msg.h"

#define CHECK_SPAN(s, text) CHECK_BYTES((s).ptr, (s).len, text)

/* The raw bytes of a payload compared with a hex string. */
static void check_payload_hex(const char *file, int line, struct payload p, const char *hex_text)
{
    char expected[256];
    size_t n = hex(hex_text, expected, sizeof expected);
    check_count++;
    if (p.encoding != PAYLOAD_MSGPACK || p.bytes.len != n || memcmp(p.bytes.ptr, expected, n)) {
        check_failures++;
        fprintf(stderr, "%s:%d: payload differs from %s\n", file, line, hex_text);
    }
}
#define CHECK_PAYLOAD(p, h) check_payload_hex(__FILE__, __LINE__, (p), (h))

/* A whole frame (prefix + body) in hex: splits it and decodes the body. */
struct frame_case {
    char bytes[512];
    size_t len;
    struct span body;
    struct hub_msg msg;
    enum proto_status status;
    struct proto_error err;
};

static void decode_frame_hex(struct frame_case *c, const char *hex_text)
{
    size_t consumed = 0;
    memset(c, 0, sizeof *c);
    c->len = hex(hex_text, c->bytes, sizeof c->bytes);
    c->status = core_binary_next_frame(c->bytes, c->len, 1 << 20, &c->body, &consumed, &c->err);
    CHECK_EQ_INT(c->status, PROTO_OK);
    CHECK_EQ_INT(consumed, c->len);
    if (c->status == PROTO_OK)
        c->status = core_msgpack_decode(c->body.ptr, c->body.len, &c->msg, &c->err);
}

/* Encodes msg and compares the full frame with hex_text. */
static void check_encodes_to(const char *file, int line, const struct hub_msg *msg,
                             const char *hex_text)
{
    char expected[512];
    size_t n = hex(hex_text, expected, sizeof expected);
    struct buf out;
    buf_init(&out);
    struct proto_error err = { 0 };
    enum proto_status st = core_msgpack_encode(msg, &out, &err);
    check_count++;
    if (st != PROTO_OK || out.len != n || memcmp(out.data, expected, n)) {
        check_failures++;
        fprintf(stderr, "%s:%d: encoding (%s%s%s) differs from %s\n  got:", file, line,
                proto_status_name(st), err.detail ? ": " : "", err.detail ? err.detail : "",
                hex_text);
        for (size_t i = 0; i < out.len; i++)
            fprintf(stderr, " %02x", (unsigned char)out.data[i]);
        fprintf(stderr, "\n");
    }
    buf_free(&out);
}
#define CHECK_ENCODES_TO(msg, h) check_encodes_to(__FILE__, __LINE__, (msg), (h))

/* Decodes a body given in hex (no prefix) and returns the status. */
static enum proto_status decode_body_hex(const char *hex_text, char *storage, size_t cap,
                                         struct hub_msg *msg, struct proto_error *err)
{
    size_t n = hex(hex_text, storage, cap);
    return core_msgpack_decode(storage, n, msg, err);
}

/* ---- VarInt framing ---- */

static void test_varint_examples(void)
{
    /* 35 = 53, 80 29 = 5248, ac 02 = 300 (section 3.2, BinaryMessageParser.cs) */
    static char data[6000];
    struct span frame;
    size_t consumed;
    struct proto_error err = { 0 };

    struct { const char *prefix; size_t value; } ex[] = {
        { "35", 53 }, { "80 29", 5248 }, { "ac 02", 300 },
    };
    for (size_t i = 0; i < 3; i++) {
        size_t n = hex(ex[i].prefix, data, sizeof data);
        memset(data + n, 'x', ex[i].value + 1);
        CHECK_EQ_INT(core_binary_next_frame(data, n + ex[i].value + 1, 1 << 20, &frame, &consumed, &err),
                     PROTO_OK);
        CHECK_EQ_INT(frame.len, ex[i].value);
        CHECK(frame.ptr == data + n);
        CHECK_EQ_INT(consumed, n + ex[i].value);
        /* one byte short of the body: incomplete */
        CHECK_EQ_INT(core_binary_next_frame(data, n + ex[i].value - 1, 1 << 20, &frame, &consumed, &err),
                     PROTO_INCOMPLETE);

        struct buf b;
        buf_init(&b);
        CHECK(core_binary_write_length(&b, ex[i].value));
        CHECK_EQ_INT(b.len, n);
        CHECK(memcmp(b.data, data, n) == 0);
        buf_free(&b);
    }

    /* FF FF FF FF 07 = 0x7FFFFFFF, the largest length */
    size_t n = hex("ff ff ff ff 07", data, sizeof data);
    CHECK_EQ_INT(core_binary_next_frame(data, n, 0x7FFFFFFF, &frame, &consumed, &err), PROTO_INCOMPLETE);
    CHECK_EQ_INT(core_binary_next_frame(data, n, 0x7FFFFFFE, &frame, &consumed, &err),
                 PROTO_ERR_TOO_LARGE);
    struct buf b;
    buf_init(&b);
    CHECK(core_binary_write_length(&b, 0x7FFFFFFF));
    CHECK_BYTES(b.data, b.len, "\xff\xff\xff\xff\x07");
    CHECK(!core_binary_write_length(&b, 0x80000000u));
    CHECK_EQ_INT(b.len, 5);
    buf_reset(&b);
    CHECK(core_binary_write_length(&b, 0));
    CHECK(b.len == 1 && b.data[0] == 0);
    buf_free(&b);

    /* over 2 GB: a 5th byte above 7, or a continuation bit on the 5th byte */
    const char *over[] = { "ff ff ff ff 08", "80 80 80 80 10", "ff ff ff ff 80", "80 80 80 80 80 01" };
    for (size_t i = 0; i < 4; i++) {
        n = hex(over[i], data, sizeof data);
        err.detail = NULL;
        CHECK_EQ_INT(core_binary_next_frame(data, n, SIZE_MAX, &frame, &consumed, &err),
                     PROTO_ERR_TOO_LARGE);
        CHECK(err.detail && strcmp(err.detail, "Messages over 2GB in size are not supported.") == 0);
    }

    /* prefix not complete yet */
    CHECK_EQ_INT(core_binary_next_frame(data, 0, 100, &frame, &consumed, &err), PROTO_INCOMPLETE);
    n = hex("ff ff ff ff", data, sizeof data);
    for (size_t cut = 1; cut <= n; cut++)
        CHECK_EQ_INT(core_binary_next_frame(data, cut, SIZE_MAX, &frame, &consumed, &err),
                     PROTO_INCOMPLETE);

    /* max_frame is enforced as soon as the prefix is known, before the body arrives */
    n = hex("ac 02", data, sizeof data);
    CHECK_EQ_INT(core_binary_next_frame(data, n, 299, &frame, &consumed, &err), PROTO_ERR_TOO_LARGE);
    CHECK_EQ_INT(core_binary_next_frame(data, n, 300, &frame, &consumed, &err), PROTO_INCOMPLETE);

    /* a non-minimal VarInt is accepted, as BinaryMessageParser does */
    n = hex("80 00", data, sizeof data);
    CHECK_EQ_INT(core_binary_next_frame(data, n, 100, &frame, &consumed, &err), PROTO_OK);
    CHECK_EQ_INT(frame.len, 0);
    CHECK_EQ_INT(consumed, 2);
    /* and the empty body it frames is not a message */
    struct hub_msg msg;
    CHECK_EQ_INT(core_msgpack_decode(frame.ptr, frame.len, &msg, &err), PROTO_ERR_SYNTAX);
}

/* ---- E4: Invocation and Completions ---- */

static void test_e4_invocation(void)
{
    struct frame_case c;
    const char *six = "0d 96 01 80 a1 30 a3 41 64 64 92 28 02 90";
    decode_frame_hex(&c, six);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.kind, HUB_MSG_INVOCATION);
    CHECK_EQ_INT(c.msg.headers.encoding, PAYLOAD_NONE);
    CHECK_SPAN(c.msg.invocation_id, "0");
    CHECK_SPAN(c.msg.target, "Add");
    CHECK_PAYLOAD(c.msg.args, "92 28 02");
    CHECK_EQ_INT(c.msg.stream_ids.encoding, PAYLOAD_NONE);
    CHECK(!span_is_set(c.msg.hub));
    /* zero copy: spans point into the frame */
    CHECK(c.msg.target.ptr == c.bytes + 7);
    CHECK(c.msg.args.bytes.ptr == c.bytes + 10);
    CHECK_ENCODES_TO(&c.msg, six);

    /* The JS msgpack client sends 5 elements; the server writes 6. */
    decode_frame_hex(&c, "0c 95 01 80 a1 30 a3 41 64 64 92 28 02");
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.kind, HUB_MSG_INVOCATION);
    CHECK_SPAN(c.msg.invocation_id, "0");
    CHECK_SPAN(c.msg.target, "Add");
    CHECK_PAYLOAD(c.msg.args, "92 28 02");
    CHECK_EQ_INT(c.msg.stream_ids.encoding, PAYLOAD_NONE);
    CHECK_ENCODES_TO(&c.msg, six);
}

static void test_e4_completions(void)
{
    struct frame_case c;
    const char *result42 = "07 95 03 80 a1 30 03 2a";
    decode_frame_hex(&c, result42);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.kind, HUB_MSG_COMPLETION);
    CHECK_SPAN(c.msg.invocation_id, "0");
    CHECK_EQ_INT(c.msg.completion, COMPLETION_RESULT);
    CHECK_PAYLOAD(c.msg.result, "2a");
    CHECK(!span_is_set(c.msg.error));
    CHECK_ENCODES_TO(&c.msg, result42);

    const char *void_method = "07 95 03 80 a1 30 03 c0";
    decode_frame_hex(&c, void_method);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.completion, COMPLETION_RESULT);
    CHECK_PAYLOAD(c.msg.result, "c0");
    CHECK_ENCODES_TO(&c.msg, void_method);

    const char *stream_end = "06 94 03 80 a1 30 02";
    decode_frame_hex(&c, stream_end);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.completion, COMPLETION_VOID);
    CHECK_EQ_INT(c.msg.result.encoding, PAYLOAD_NONE);
    CHECK_ENCODES_TO(&c.msg, stream_end);

    const char *boom = "0b 95 03 80 a1 30 01 a4 62 6f 6f 6d";
    decode_frame_hex(&c, boom);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.completion, COMPLETION_ERROR);
    CHECK_SPAN(c.msg.error, "boom");
    CHECK_EQ_INT(c.msg.result.encoding, PAYLOAD_NONE);
    CHECK_ENCODES_TO(&c.msg, boom);

    /* Built by hand: how the server chooses the kind. */
    struct hub_msg m;
    hub_msg_init(&m);
    m.kind = HUB_MSG_COMPLETION;
    m.invocation_id = SPAN_LIT("0");
    m.completion = COMPLETION_RESULT; /* void method: has a result, which is null */
    CHECK_ENCODES_TO(&m, void_method);
    m.completion = COMPLETION_VOID;
    CHECK_ENCODES_TO(&m, stream_end);
    m.error = SPAN_LIT("boom"); /* an error wins over anything else */
    m.completion = COMPLETION_RESULT;
    CHECK_ENCODES_TO(&m, boom);
}

static void test_completion_kinds(void)
{
    char s[128];
    struct hub_msg m;
    struct proto_error err = { 0 };

    /* kind 1 with an empty string: still an error ("" != null on the server) */
    CHECK_EQ_INT(decode_body_hex("95 03 80 a1 30 01 a0", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_EQ_INT(m.completion, COMPLETION_ERROR);
    CHECK(span_is_set(m.error) && m.error.len == 0);
    CHECK_ENCODES_TO(&m, "07 95 03 80 a1 30 01 a0");
    /* kind 1 with nil: the server reads "no error, no result" = void */
    CHECK_EQ_INT(decode_body_hex("95 03 80 a1 30 01 c0", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_EQ_INT(m.completion, COMPLETION_VOID);
    CHECK(!span_is_set(m.error));
    /* kind 1 with a number */
    CHECK_EQ_INT(decode_body_hex("95 03 80 a1 30 01 05", s, sizeof s, &m, &err), PROTO_ERR_TYPE);
    /* kind 3 with a structured result */
    CHECK_EQ_INT(decode_body_hex("95 03 80 a1 30 03 82 a1 61 01 a1 62 92 c3 c2", s, sizeof s, &m, &err),
                 PROTO_OK);
    CHECK_PAYLOAD(m.result, "82 a1 61 01 a1 62 92 c3 c2");
    /* kind 3 / kind 1 without the element */
    CHECK_EQ_INT(decode_body_hex("94 03 80 a1 30 03", s, sizeof s, &m, &err), PROTO_ERR_MISSING);
    CHECK_EQ_INT(decode_body_hex("94 03 80 a1 30 01", s, sizeof s, &m, &err), PROTO_ERR_MISSING);
    /* kind 2 with a stray 5th element: ignored like the server does */
    CHECK_EQ_INT(decode_body_hex("95 03 80 a1 30 02 2a", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_EQ_INT(m.completion, COMPLETION_VOID);
    CHECK_EQ_INT(m.result.encoding, PAYLOAD_NONE);
    /* unknown kinds */
    const char *bad_kinds[] = { "95 03 80 a1 30 04 c0", "95 03 80 a1 30 00 c0", "95 03 80 a1 30 ff c0" };
    for (int i = 0; i < 3; i++) {
        err.detail = NULL;
        CHECK_EQ_INT(decode_body_hex(bad_kinds[i], s, sizeof s, &m, &err), PROTO_ERR_VALUE);
        CHECK(err.detail && strcmp(err.detail, "Invalid invocation result kind.") == 0);
    }
    /* kind not an integer; kind as a wider integer is fine */
    CHECK_EQ_INT(decode_body_hex("95 03 80 a1 30 a1 33 c0", s, sizeof s, &m, &err), PROTO_ERR_TYPE);
    CHECK_EQ_INT(decode_body_hex("95 03 80 a1 30 cd 00 03 c0", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_EQ_INT(m.completion, COMPLETION_RESULT);
    /* too few elements for any completion */
    CHECK_EQ_INT(decode_body_hex("93 03 80 a1 30", s, sizeof s, &m, &err), PROTO_ERR_MISSING);
}

/* ---- E5 Ping, E6 Close ---- */

static void test_e5_ping(void)
{
    struct frame_case c;
    decode_frame_hex(&c, "02 91 06");
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.kind, HUB_MSG_PING);
    struct hub_msg m;
    hub_msg_init(&m);
    m.kind = HUB_MSG_PING;
    m.headers = (struct payload){ PAYLOAD_MSGPACK, SPAN_LIT("\x81\xa1k\xa1v") }; /* never written */
    CHECK_ENCODES_TO(&m, "02 91 06");
    /* a ping with a wider integer type is still a ping */
    char s[8];
    struct hub_msg d;
    CHECK_EQ_INT(decode_body_hex("91 cc 06", s, sizeof s, &d, NULL), PROTO_OK);
    CHECK_EQ_INT(d.kind, HUB_MSG_PING);
}

static void test_e6_close(void)
{
    struct frame_case c;
    const char *empty = "04 93 07 c0 c2";
    decode_frame_hex(&c, empty);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.kind, HUB_MSG_CLOSE);
    CHECK(!span_is_set(c.msg.error));
    CHECK(!c.msg.allow_reconnect);
    CHECK_ENCODES_TO(&c.msg, empty);

    const char *with_error = "25 93 07 d9 20 43 6f 6e 6e 65 63 74 69 6f 6e 20 63 6c 6f 73 65 64 20 77 "
                             "69 74 68 20 61 6e 20 65 72 72 6f 72 2e c3";
    decode_frame_hex(&c, with_error);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_SPAN(c.msg.error, "Connection closed with an error.");
    CHECK(c.msg.allow_reconnect);
    CHECK_ENCODES_TO(&c.msg, with_error);

    struct hub_msg m;
    hub_msg_init(&m);
    m.kind = HUB_MSG_CLOSE;
    m.error = SPAN_LIT("Connection closed with an error.");
    m.allow_reconnect = true;
    CHECK_ENCODES_TO(&m, with_error);

    /* 2-element Close (accepted, written back as 3) */
    char s[64];
    CHECK_EQ_INT(decode_body_hex("92 07 c0", s, sizeof s, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_CLOSE);
    CHECK(!span_is_set(m.error));
    CHECK(!m.allow_reconnect);
    CHECK_ENCODES_TO(&m, empty);
    CHECK_EQ_INT(decode_body_hex("92 07 a3 62 61 64", s, sizeof s, &m, NULL), PROTO_OK);
    CHECK_SPAN(m.error, "bad");
    CHECK(!m.allow_reconnect);
    CHECK_ENCODES_TO(&m, "07 93 07 a3 62 61 64 c2");
    /* an empty error string is still an error when read; written as nil */
    CHECK_EQ_INT(decode_body_hex("93 07 a0 c2", s, sizeof s, &m, NULL), PROTO_OK);
    CHECK(span_is_set(m.error) && m.error.len == 0);
    CHECK_ENCODES_TO(&m, empty);

    struct proto_error err = { 0 };
    CHECK_EQ_INT(decode_body_hex("93 07 c0 01", s, sizeof s, &m, &err), PROTO_ERR_TYPE); /* not a bool */
    CHECK_EQ_INT(decode_body_hex("93 07 01 c2", s, sizeof s, &m, &err), PROTO_ERR_TYPE); /* not a str */
    CHECK_EQ_INT(decode_body_hex("91 07", s, sizeof s, &m, &err), PROTO_ERR_MISSING);
}

/* ---- E7 server-to-client invocation, E8 streaming ---- */

static void test_e7_broadcast(void)
{
    struct frame_case c;
    const char *bytes = "1c 96 01 80 c0 ae 52 65 63 65 69 76 65 4d 65 73 73 61 67 65 92 a3 62 6f 62 "
                        "a2 68 69 90";
    decode_frame_hex(&c, bytes);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.kind, HUB_MSG_INVOCATION);
    CHECK(!span_is_set(c.msg.invocation_id));
    CHECK_SPAN(c.msg.target, "ReceiveMessage");
    CHECK_PAYLOAD(c.msg.args, "92 a3 62 6f 62 a2 68 69");
    CHECK_ENCODES_TO(&c.msg, bytes);
}

static void test_e8_streaming(void)
{
    struct frame_case c;
    const char *invoke = "10 96 04 80 a1 31 a7 43 6f 75 6e 74 65 72 91 03 90";
    decode_frame_hex(&c, invoke);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.kind, HUB_MSG_STREAM_INVOCATION);
    CHECK_SPAN(c.msg.invocation_id, "1");
    CHECK_SPAN(c.msg.target, "Counter");
    CHECK_PAYLOAD(c.msg.args, "91 03");
    CHECK_ENCODES_TO(&c.msg, invoke);

    const char *item = "06 94 02 80 a1 31 05";
    decode_frame_hex(&c, item);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.kind, HUB_MSG_STREAM_ITEM);
    CHECK_SPAN(c.msg.invocation_id, "1");
    CHECK_PAYLOAD(c.msg.item, "05");
    CHECK_ENCODES_TO(&c.msg, item);

    const char *cancel = "05 93 05 80 a1 31";
    decode_frame_hex(&c, cancel);
    CHECK_EQ_INT(c.status, PROTO_OK);
    CHECK_EQ_INT(c.msg.kind, HUB_MSG_CANCEL_INVOCATION);
    CHECK_SPAN(c.msg.invocation_id, "1");
    CHECK_ENCODES_TO(&c.msg, cancel);

    /* a stream item whose item is nil is still an item */
    char s[32];
    struct hub_msg m;
    CHECK_EQ_INT(decode_body_hex("94 02 80 a1 31 c0", s, sizeof s, &m, NULL), PROTO_OK);
    CHECK_PAYLOAD(m.item, "c0");
}

static void test_ack_sequence(void)
{
    struct hub_msg m;
    hub_msg_init(&m);
    m.kind = HUB_MSG_ACK;
    m.sequence_id = 1;
    CHECK_ENCODES_TO(&m, "03 92 08 01");
    m.kind = HUB_MSG_SEQUENCE;
    m.sequence_id = 300;
    CHECK_ENCODES_TO(&m, "05 92 09 cd 01 2c");
    m.sequence_id = INT64_MAX;
    CHECK_ENCODES_TO(&m, "0b 92 09 cf 7f ff ff ff ff ff ff ff");

    char s[32];
    struct proto_error err = { 0 };
    CHECK_EQ_INT(decode_body_hex("92 08 cd 01 2c", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_ACK);
    CHECK_EQ_INT(m.sequence_id, 300);
    CHECK_EQ_INT(decode_body_hex("92 09 d3 ff ff ff ff ff ff ff fe", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_EQ_INT(m.sequence_id, -2);
    /* beyond int64 */
    CHECK_EQ_INT(decode_body_hex("92 09 cf 80 00 00 00 00 00 00 00", s, sizeof s, &m, &err), PROTO_ERR_TYPE);
    CHECK_EQ_INT(decode_body_hex("92 08 a1 31", s, sizeof s, &m, &err), PROTO_ERR_TYPE);
    CHECK_EQ_INT(decode_body_hex("91 08", s, sizeof s, &m, &err), PROTO_ERR_MISSING);
}

/* ---- invocation ids: nil, "", missing ---- */

static void test_invocation_ids(void)
{
    char s[64];
    struct hub_msg m;
    struct proto_error err = { 0 };

    /* Invocation: nil and "" both mean non-blocking; both are written as nil. */
    CHECK_EQ_INT(decode_body_hex("96 01 80 c0 a1 41 90 90", s, sizeof s, &m, &err), PROTO_OK);
    CHECK(!span_is_set(m.invocation_id));
    CHECK_EQ_INT(decode_body_hex("96 01 80 a0 a1 41 90 90", s, sizeof s, &m, &err), PROTO_OK);
    CHECK(!span_is_set(m.invocation_id));
    CHECK_ENCODES_TO(&m, "08 96 01 80 c0 a1 41 90 90");
    hub_msg_init(&m);
    m.kind = HUB_MSG_INVOCATION;
    m.target = SPAN_LIT("A");
    m.invocation_id = span_make("", 0); /* present but empty */
    CHECK_ENCODES_TO(&m, "08 96 01 80 c0 a1 41 90 90"); /* missing args -> [] */
    /* missing (array ends before it) */
    CHECK_EQ_INT(decode_body_hex("92 01 80", s, sizeof s, &m, &err), PROTO_ERR_MISSING);
    /* not a string */
    CHECK_EQ_INT(decode_body_hex("96 01 80 01 a1 41 90 90", s, sizeof s, &m, &err), PROTO_ERR_TYPE);

    /* Required ids: nil and "" are both refused. */
    const char *required_bad[] = {
        "96 04 80 c0 a1 41 90 90", "96 04 80 a0 a1 41 90 90", /* StreamInvocation */
        "94 02 80 c0 01", "94 02 80 a0 01",                   /* StreamItem */
        "94 03 80 c0 02", "94 03 80 a0 02",                   /* Completion */
        "93 05 80 c0", "93 05 80 a0",                         /* CancelInvocation */
    };
    for (size_t i = 0; i < sizeof required_bad / sizeof required_bad[0]; i++) {
        err.detail = NULL;
        CHECK_EQ_INT(decode_body_hex(required_bad[i], s, sizeof s, &m, &err), PROTO_ERR_MISSING);
        CHECK(err.detail && strstr(err.detail, "Null or empty invocation ID") != NULL);
    }
    CHECK_EQ_INT(decode_body_hex("92 05 80", s, sizeof s, &m, &err), PROTO_ERR_MISSING);

    /* The encoder refuses what the decoder would refuse. */
    hub_msg_init(&m);
    m.kind = HUB_MSG_STREAM_INVOCATION;
    m.target = SPAN_LIT("A");
    struct buf out;
    buf_init(&out);
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_ERR_MISSING);
    m.kind = HUB_MSG_CANCEL_INVOCATION;
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_ERR_MISSING);
    m.kind = HUB_MSG_INVOCATION;
    m.target = SPAN_NONE;
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_ERR_MISSING);
    CHECK_EQ_INT(out.len, 0);
    buf_free(&out);
}

/* ---- headers and stream ids ---- */

static void test_headers_and_streams(void)
{
    char s[128];
    struct hub_msg m;
    struct proto_error err = { 0 };

    /* headers {"k":"v"} kept raw and written back raw */
    CHECK_EQ_INT(decode_body_hex("96 01 80 c0 a1 41 90 90", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_EQ_INT(m.headers.encoding, PAYLOAD_NONE);
    CHECK_EQ_INT(decode_body_hex("96 01 81 a1 6b a1 76 c0 a1 41 90 90", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_PAYLOAD(m.headers, "81 a1 6b a1 76");
    CHECK_ENCODES_TO(&m, "0c 96 01 81 a1 6b a1 76 c0 a1 41 90 90");
    CHECK_EQ_INT(decode_body_hex("94 02 81 a1 6b a1 76 a1 31 c0", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_PAYLOAD(m.headers, "81 a1 6b a1 76");
    CHECK_ENCODES_TO(&m, "0a 94 02 81 a1 6b a1 76 a1 31 c0");

    /* what the server refuses in headers */
    struct { const char *hex; enum proto_status st; } bad[] = {
        { "96 01 81 01 a1 76 c0 a1 41 90 90", PROTO_ERR_TYPE },  /* int key */
        { "96 01 81 a1 6b 01 c0 a1 41 90 90", PROTO_ERR_TYPE },  /* int value */
        { "96 01 81 a0 a1 76 c0 a1 41 90 90", PROTO_ERR_VALUE }, /* empty key */
        { "96 01 81 c0 a1 76 c0 a1 41 90 90", PROTO_ERR_VALUE }, /* nil key */
        { "96 01 81 a1 6b a0 c0 a1 41 90 90", PROTO_ERR_VALUE }, /* empty value */
        { "96 01 c0 c0 a1 41 90 90", PROTO_ERR_TYPE },           /* nil headers */
        { "96 01 90 c0 a1 41 90 90", PROTO_ERR_TYPE },           /* array headers */
        { "96 01 81 a1 ff a1 76 c0 a1 41 90 90", PROTO_ERR_UTF8 }, /* bad UTF-8 key */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.detail = NULL;
        CHECK_EQ_INT(decode_body_hex(bad[i].hex, s, sizeof s, &m, &err), bad[i].st);
        CHECK(err.detail != NULL);
        CHECK_EQ_INT(m.kind, HUB_MSG_NONE); /* nothing half-decoded */
    }

    /* stream ids: ["0"] raw; [] means none, as on the server */
    CHECK_EQ_INT(decode_body_hex("96 01 80 a1 31 a3 53 75 6d 90 91 a1 30", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_PAYLOAD(m.stream_ids, "91 a1 30");
    CHECK_PAYLOAD(m.args, "90");
    CHECK_ENCODES_TO(&m, "0d 96 01 80 a1 31 a3 53 75 6d 90 91 a1 30");
    CHECK_EQ_INT(decode_body_hex("96 01 80 a1 31 a3 53 75 6d 90 90", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_EQ_INT(m.stream_ids.encoding, PAYLOAD_NONE);
    CHECK_EQ_INT(decode_body_hex("96 01 80 a1 31 a3 53 75 6d 90 91 01", s, sizeof s, &m, &err), PROTO_ERR_TYPE);
    CHECK_EQ_INT(decode_body_hex("96 01 80 a1 31 a3 53 75 6d 90 91 a0", s, sizeof s, &m, &err), PROTO_ERR_VALUE);
    CHECK_EQ_INT(decode_body_hex("96 01 80 a1 31 a3 53 75 6d 90 91 c0", s, sizeof s, &m, &err), PROTO_ERR_VALUE);
    CHECK_EQ_INT(decode_body_hex("96 01 80 a1 31 a3 53 75 6d 90 c0", s, sizeof s, &m, &err), PROTO_ERR_TYPE);
    /* a 7th element is ignored, as the server ignores it */
    CHECK_EQ_INT(decode_body_hex("97 01 80 a1 31 a3 53 75 6d 90 90 c3", s, sizeof s, &m, &err), PROTO_OK);
}

/* ---- targets, arguments, message shape ---- */

static void test_invocation_validation(void)
{
    char s[128];
    struct hub_msg m;
    struct proto_error err = { 0 };
    struct { const char *hex; enum proto_status st; const char *detail; } bad[] = {
        { "96 01 80 c0 c0 90 90", PROTO_ERR_MISSING, "Null or empty target for Invocation message." },
        { "96 01 80 c0 a0 90 90", PROTO_ERR_MISSING, "Null or empty target for Invocation message." },
        { "96 04 80 a1 31 a0 90 90", PROTO_ERR_MISSING, "Null or empty target for StreamInvocation message." },
        { "96 01 80 c0 01 90 90", PROTO_ERR_TYPE, NULL },     /* target not a string */
        { "95 01 80 c0 a2 c3 28 90", PROTO_ERR_UTF8, NULL },  /* bad UTF-8 target */
        { "96 01 80 a2 c3 28 a1 41 90 90", PROTO_ERR_UTF8, NULL }, /* bad UTF-8 id */
        { "96 01 80 c0 a1 41 c0 90", PROTO_ERR_TYPE, NULL },  /* arguments nil */
        { "96 01 80 c0 a1 41 81 01 02 90", PROTO_ERR_TYPE, NULL }, /* arguments a map */
        { "94 01 80 c0 a1 41", PROTO_ERR_MISSING, NULL },      /* no arguments */
        { "93 01 80 c0", PROTO_ERR_MISSING, NULL },            /* no target */
        { "90", PROTO_ERR_MISSING, NULL },                     /* empty array */
        { "81 01 02", PROTO_ERR_TYPE, NULL },                  /* not an array */
        { "01", PROTO_ERR_TYPE, NULL },
        { "91 a1 31", PROTO_ERR_TYPE, NULL },                  /* type not an integer */
        { "91 ce 80 00 00 00", PROTO_ERR_TYPE, NULL },         /* type beyond int32 */
        { "91 06 06", PROTO_ERR_SYNTAX, NULL },                /* bytes after the array */
        { "91 c1", PROTO_ERR_SYNTAX, NULL },                   /* reserved byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.detail = NULL;
        enum proto_status st = decode_body_hex(bad[i].hex, s, sizeof s, &m, &err);
        CHECK_EQ_INT(st, bad[i].st);
        if (st != bad[i].st)
            fprintf(stderr, "  case %zu: %s\n", i, bad[i].hex);
        CHECK(err.detail != NULL);
        if (bad[i].detail)
            CHECK(err.detail && strcmp(err.detail, bad[i].detail) == 0);
    }

    /* unknown types are skipped, not errors, whatever follows */
    CHECK_EQ_INT(decode_body_hex("92 0a 80", s, sizeof s, &m, &err), PROTO_UNKNOWN_TYPE);
    CHECK_EQ_INT(m.kind, HUB_MSG_NONE);
    CHECK_EQ_INT(decode_body_hex("91 00", s, sizeof s, &m, &err), PROTO_UNKNOWN_TYPE);
    CHECK_EQ_INT(decode_body_hex("91 ff", s, sizeof s, &m, &err), PROTO_UNKNOWN_TYPE);

    /* array 16 as the top-level header works too */
    CHECK_EQ_INT(decode_body_hex("dc 00 01 06", s, sizeof s, &m, &err), PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_PING);
}

/* ---- hostile input ---- */

static void test_hostile(void)
{
    char s[128];
    struct hub_msg m;
    struct proto_error err = { 0 };

    /* arrays/maps claiming 2^32-1 elements, at the top and inside */
    CHECK_EQ_INT(decode_body_hex("dd ff ff ff ff 06", s, sizeof s, &m, &err), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(decode_body_hex("96 01 80 c0 a1 41 dd ff ff ff ff 90", s, sizeof s, &m, &err),
                 PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(decode_body_hex("95 01 df ff ff ff ff c0 a1 41 90", s, sizeof s, &m, &err),
                 PROTO_ERR_SYNTAX);
    /* truncated str (target declares 5 bytes, 2 follow) and str32 past the end */
    CHECK_EQ_INT(decode_body_hex("95 01 80 c0 a5 41 64", s, sizeof s, &m, &err), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(decode_body_hex("95 01 80 c0 db 7f ff ff ff 41", s, sizeof s, &m, &err), PROTO_ERR_SYNTAX);
    /* truncated array */
    CHECK_EQ_INT(decode_body_hex("96 01 80 c0 a1 41", s, sizeof s, &m, &err), PROTO_ERR_SYNTAX);

    /* nesting: the message array + arguments + 30 more = 32 is fine, 33 is not */
    char body[128];
    size_t n = hex("96 01 80 c0 a1 41", body, sizeof body);
    for (int i = 0; i < 31; i++)
        body[n++] = (char)0x91;
    body[n++] = (char)0xc0;
    body[n++] = (char)0x90;
    CHECK_EQ_INT(core_msgpack_decode(body, n, &m, &err), PROTO_OK);
    n = hex("96 01 80 c0 a1 41", body, sizeof body);
    for (int i = 0; i < 32; i++)
        body[n++] = (char)0x91;
    body[n++] = (char)0xc0;
    body[n++] = (char)0x90;
    CHECK_EQ_INT(core_msgpack_decode(body, n, &m, &err), PROTO_ERR_TOO_DEEP);

    /* a nesting bomb as big as a frame */
    size_t big = 100000;
    char *bomb = malloc(big);
    memcpy(bomb, "\x95\x01\x80\xc0\xa1\x41", 6);
    memset(bomb + 6, 0x91, big - 6);
    CHECK_EQ_INT(core_msgpack_decode(bomb, big, &m, &err), PROTO_ERR_TOO_DEEP);
    free(bomb);
}

/* ---- several frames per buffer, frames split across buffers ---- */

static void test_frame_stream(void)
{
    const char *stream_hex = "02 91 06"                                    /* Ping */
                             "0d 96 01 80 a1 30 a3 41 64 64 92 28 02 90"   /* Invocation */
                             "06 94 02 80 a1 31 05"                        /* StreamItem */
                             "04 93 07 c0 c2";                             /* Close */
    const enum hub_msg_kind kinds[] = { HUB_MSG_PING, HUB_MSG_INVOCATION, HUB_MSG_STREAM_ITEM,
                                        HUB_MSG_CLOSE };
    char stream[64];
    size_t len = hex(stream_hex, stream, sizeof stream);

    /* all in one buffer */
    size_t pos = 0, count = 0;
    for (;;) {
        struct span frame;
        size_t consumed;
        enum proto_status st = core_binary_next_frame(stream + pos, len - pos, 1024, &frame, &consumed, NULL);
        if (st != PROTO_OK) {
            CHECK_EQ_INT(st, PROTO_INCOMPLETE);
            break;
        }
        struct hub_msg m;
        CHECK_EQ_INT(core_msgpack_decode(frame.ptr, frame.len, &m, NULL), PROTO_OK);
        CHECK(count < 4 && m.kind == kinds[count]);
        count++;
        pos += consumed;
    }
    CHECK_EQ_INT(count, 4);
    CHECK_EQ_INT(pos, len);

    /* arriving one byte at a time into a receive buffer */
    struct buf rx;
    buf_init(&rx);
    count = 0;
    for (size_t i = 0; i < len; i++) {
        CHECK(buf_append(&rx, stream + i, 1));
        struct span frame;
        size_t consumed;
        enum proto_status st;
        while ((st = core_binary_next_frame(rx.data, rx.len, 1024, &frame, &consumed, NULL)) == PROTO_OK) {
            struct hub_msg m;
            CHECK_EQ_INT(core_msgpack_decode(frame.ptr, frame.len, &m, NULL), PROTO_OK);
            CHECK(count < 4 && m.kind == kinds[count]);
            count++;
            buf_consume(&rx, consumed);
        }
        CHECK_EQ_INT(st, PROTO_INCOMPLETE);
    }
    CHECK_EQ_INT(count, 4);
    CHECK_EQ_INT(rx.len, 0);
    buf_free(&rx);
}

/* ---- encoder rules ---- */

static void test_encode_rules(void)
{
    struct hub_msg m;
    struct buf out;
    struct proto_error err = { 0 };
    buf_init(&out);
    CHECK(buf_append(&out, "keep", 4));

    /* JSON payloads must be converted first; out is left as it was */
    hub_msg_init(&m);
    m.kind = HUB_MSG_INVOCATION;
    m.target = SPAN_LIT("Add");
    m.args = (struct payload){ PAYLOAD_JSON, SPAN_LIT("[40,2]") };
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_ERR_VALUE);
    CHECK(err.detail && strcmp(err.detail, "payload is JSON; convert it first") == 0);
    CHECK_BYTES(out.data, out.len, "keep");
    m.args = (struct payload){ PAYLOAD_MSGPACK, SPAN_LIT("\x81\x01\x02") }; /* a map is not arguments */
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_ERR_TYPE);
    m.args.encoding = PAYLOAD_NONE;
    m.headers = (struct payload){ PAYLOAD_JSON, SPAN_LIT("{\"k\":\"v\"}") };
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_ERR_VALUE);
    CHECK_EQ_INT(out.len, 4);
    hub_msg_init(&m);
    m.kind = HUB_MSG_STREAM_ITEM;
    m.invocation_id = SPAN_LIT("1");
    m.item = (struct payload){ PAYLOAD_JSON, SPAN_LIT("5") };
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_ERR_VALUE);
    m.item.encoding = PAYLOAD_NONE; /* an absent item is written as nil */
    buf_reset(&out);
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "\x06\x94\x02\x80\xa1\x31\xc0");
    hub_msg_init(&m);
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_ERR_VALUE); /* kind NONE */

    /* encodes append: two messages in one buffer */
    buf_reset(&out);
    m.kind = HUB_MSG_PING;
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_OK);
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "\x02\x91\x06\x02\x91\x06");

    /* a body over 127 bytes gets a 2-byte prefix */
    static char args[300];
    args[0] = (char)0x91;
    args[1] = (char)0xd9;
    args[2] = (char)200;
    memset(args + 3, 'x', 200);
    hub_msg_init(&m);
    m.kind = HUB_MSG_INVOCATION;
    m.target = SPAN_LIT("A");
    m.args = (struct payload){ PAYLOAD_MSGPACK, span_make(args, 203) };
    buf_reset(&out);
    CHECK_EQ_INT(core_msgpack_encode(&m, &out, &err), PROTO_OK);
    /* body: 96 01 80 c0 a1 41 <203> 90 = 210 bytes = VarInt d2 01 */
    CHECK_EQ_INT(out.len, 212);
    CHECK((unsigned char)out.data[0] == 0xd2 && out.data[1] == 0x01);
    struct span frame;
    size_t consumed;
    CHECK_EQ_INT(core_binary_next_frame(out.data, out.len, 1024, &frame, &consumed, NULL), PROTO_OK);
    struct hub_msg d;
    CHECK_EQ_INT(core_msgpack_decode(frame.ptr, frame.len, &d, NULL), PROTO_OK);
    CHECK(d.args.bytes.len == 203 && memcmp(d.args.bytes.ptr, args, 203) == 0);
    buf_free(&out);
}

int main(void)
{
    test_varint_examples();
    test_e4_invocation();
    test_e4_completions();
    test_completion_kinds();
    test_e5_ping();
    test_e6_close();
    test_e7_broadcast();
    test_e8_streaming();
    test_ack_sequence();
    test_invocation_ids();
    test_headers_and_streams();
    test_invocation_validation();
    test_hostile();
    test_frame_stream();
    test_encode_rules();
    return test_main_result("test_core_msgpack");
}
