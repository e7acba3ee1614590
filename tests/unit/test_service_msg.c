/* test_service_msg.c - the service protocol codec and framer.
 *
 * Golden vectors: specs/service-protocol.md section 2.9 (worked bytes) and the
 * messages its appendix (A, B, C) quotes from live 1.34.0 traffic, written
 * out by hand in hex. Then the forms the SDK's readers accept (4/5/7-element
 * GroupBroadcastData, nil lists, extra trailing elements), hostile input
 * (every truncation, wrong types, huge declared counts) and the framer fed
 * in every possible split. */
#include <msgpack.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "containers/buf.h"
#include "hex.h"
#include "protocol/msgpack_sink.h"
#include "protocol/service_msg.h"

#define CHECK_SPAN(s, text) CHECK_BYTES((s).ptr, (s).len, text)

static void dump(const char *what, const char *p, size_t n)
{
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %02x", (unsigned char)p[i]);
    fprintf(stderr, "\n");
}

static void check_buf_hex(const char *file, int line, const struct buf *b, const char *hex_text)
{
    static char expected[1 << 17];
    size_t n = hex(hex_text, expected, sizeof expected);
    check_count++;
    if (b->len != n || memcmp(b->data, expected, n)) {
        check_failures++;
        fprintf(stderr, "%s:%d: bytes differ\n", file, line);
        dump("got", b->data, b->len);
        dump("expected", expected, n < 64 ? n : 64);
    }
}
#define CHECK_BUF_HEX(b, h) check_buf_hex(__FILE__, __LINE__, (b), (h))

/* A frame in hex: prefix + body. Splits it (exactly one frame) and decodes. */
struct frame {
    char bytes[4096];
    size_t len;
    struct span body;
    struct svc_msg msg;
    enum proto_status status;
    struct proto_error err;
};

static void decode_frame(struct frame *f, const char *hex_text)
{
    struct svc_framer fr;
    memset(f, 0, sizeof *f);
    f->len = hex(hex_text, f->bytes, sizeof f->bytes);
    svc_framer_init(&fr, 1 << 20);
    svc_framer_push(&fr, f->bytes, f->len);
    CHECK_EQ_INT(svc_framer_next(&fr, &f->body, &f->err), PROTO_OK);
    CHECK(f->body.ptr + f->body.len == f->bytes + f->len); /* in place, one whole frame */
    struct span more;
    CHECK_EQ_INT(svc_framer_next(&fr, &more, NULL), PROTO_INCOMPLETE);
    CHECK_EQ_INT(svc_framer_buffered(&fr), 0);
    svc_framer_free(&fr);
    f->status = svc_msg_decode(f->body.ptr, f->body.len, &f->msg, &f->err);
}

/* Encoding the decoded message gives the very same frame. */
static void check_reencodes(const char *file, int line, const struct frame *f)
{
    struct buf out;
    buf_init(&out);
    enum proto_status st = svc_msg_encode(&f->msg, &out, NULL);
    check_count++;
    if (st != PROTO_OK || out.len != f->len || memcmp(out.data, f->bytes, f->len)) {
        check_failures++;
        fprintf(stderr, "%s:%d: re-encoding differs (%s)\n", file, line, proto_status_name(st));
        dump("got", out.data, out.len);
        dump("expected", f->bytes, f->len);
    }
    buf_free(&out);
}
#define CHECK_REENCODES(f) check_reencodes(__FILE__, __LINE__, (f))

static size_t list_strings(const struct svc_list *l, struct span *out, size_t cap)
{
    struct svc_list_iter it;
    struct span s;
    size_t n = 0;
    svc_list_iter_begin(&it, l);
    while (svc_list_iter_next(&it, &s, NULL)) {
        if (n < cap)
            out[n] = s;
        n++;
    }
    return n;
}

/* ---- section 2.9 ---- */

static void test_worked_bytes(void)
{
    struct frame f;
    struct buf out;
    buf_init(&out);

    /* keep-alive [3] */
    decode_frame(&f, "02 91 03");
    CHECK_EQ_INT(f.status, PROTO_OK);
    CHECK_EQ_INT(f.msg.type, SVC_PING);
    CHECK_EQ_INT(f.msg.ids.count, 0);
    CHECK_REENCODES(&f);
    CHECK_EQ_INT(svc_encode_ping(&out, NULL, 0, NULL), PROTO_OK);
    CHECK_BUF_HEX(&out, "02 91 03");

    /* the SDK's HandshakeRequest [1,1,0,"",0,{},false] */
    decode_frame(&f, "08 97 01 01 00 A0 00 80 C2");
    CHECK_EQ_INT(f.status, PROTO_OK);
    CHECK_EQ_INT(f.msg.type, SVC_HANDSHAKE_REQUEST);
    CHECK_EQ_INT(f.msg.version, 1);
    CHECK_EQ_INT(f.msg.conn_type, SVC_CONN_DEFAULT);
    CHECK(f.msg.target.ptr && f.msg.target.len == 0);
    CHECK_EQ_INT(f.msg.migration_level, 0);
    CHECK(f.msg.has_ext && !f.msg.allow_stateful_reconnect);
    CHECK_REENCODES(&f);

    /* HandshakeResponse [2,nil,{},"c1"] */
    buf_reset(&out);
    CHECK_EQ_INT(svc_encode_handshake_response(&out, SPAN_NONE, SPAN_LIT("c1"), NULL), PROTO_OK);
    CHECK_BUF_HEX(&out, "07 94 02 C0 80 A2 63 31");
    decode_frame(&f, "07 94 02 C0 80 A2 63 31");
    CHECK_EQ_INT(f.status, PROTO_OK);
    CHECK(!f.msg.error.ptr);
    CHECK_SPAN(f.msg.connection_id, "c1");

    /* Ack [20,7,1,"",{}] */
    buf_reset(&out);
    CHECK_EQ_INT(svc_encode_ack(&out, 7, SVC_ACK_OK, SPAN_NONE, NULL), PROTO_OK);
    CHECK_BUF_HEX(&out, "06 95 14 07 01 A0 80");
    decode_frame(&f, "06 95 14 07 01 A0 80");
    CHECK_EQ_INT(f.status, PROTO_OK);
    CHECK_EQ_INT(f.msg.ack_id, 7);
    CHECK_EQ_INT(f.msg.ack_status, 1);
    CHECK_REENCODES(&f);

    /* status reply [3,"status","1"] */
    buf_reset(&out);
    struct span status[] = { SPAN_LIT("status"), SPAN_LIT("1") };
    CHECK_EQ_INT(svc_encode_ping(&out, status, 2, NULL), PROTO_OK);
    CHECK_BUF_HEX(&out, "0B 93 03 A6 73 74 61 74 75 73 A1 31");
    decode_frame(&f, "0B 93 03 A6 73 74 61 74 75 73 A1 31");
    struct span v;
    CHECK(svc_ping_get(&f.msg, "status", &v) && span_eq_cstr(v, "1"));
    CHECK(!svc_ping_get(&f.msg, "1", &v));
    CHECK_REENCODES(&f);

    /* OpenConnection ends with ext {3:"json"}: 81 03 A4 6A 73 6F 6E */
    buf_reset(&out);
    CHECK_EQ_INT(svc_encode_open_connection(&out, SPAN_LIT("c1"), NULL, 0, NULL, 0, SPAN_NONE,
                                            SPAN_LIT("json"), NULL),
                 PROTO_OK);
    CHECK_BUF_HEX(&out, "0F 96 04 A2 63 31 80 80 A0 81 03 A4 6A 73 6F 6E");

    /* ConnectionData [6,"c1",bin(n),{}] with bin 8, 16 and 32 */
    static const size_t sizes[] = { 3, 300, 70000 };
    static const char *const bin_header[] = { "C4 03", "C5 01 2C", "C6 00 01 11 70" };
    for (size_t i = 0; i < 3; i++) {
        char *payload = malloc(sizes[i]);
        memset(payload, 'x', sizes[i]);
        buf_reset(&out);
        CHECK_EQ_INT(svc_encode_connection_data(&out, SPAN_LIT("c1"), span_make(payload, sizes[i]),
                                                false, NULL),
                     PROTO_OK);
        /* body = 94 06 A2 63 31 <bin header> <n bytes> 80 */
        char head[16];
        size_t hl = hex(bin_header[i], head, sizeof head);
        size_t body_len = 5 + hl + sizes[i] + 1;
        size_t prefix = body_len < 128 ? 1 : body_len < 16384 ? 2 : 3;
        CHECK_EQ_INT(out.len, prefix + body_len);
        CHECK(memcmp(out.data + prefix, "\x94\x06\xa2\x63\x31", 5) == 0);
        CHECK(memcmp(out.data + prefix + 5, head, hl) == 0);
        CHECK((unsigned char)out.data[out.len - 1] == 0x80);
        struct svc_msg m;
        struct svc_framer fr;
        struct span body;
        svc_framer_init(&fr, 1 << 20);
        svc_framer_push(&fr, out.data, out.len);
        CHECK_EQ_INT(svc_framer_next(&fr, &body, NULL), PROTO_OK);
        CHECK_EQ_INT(svc_msg_decode(body.ptr, body.len, &m, NULL), PROTO_OK);
        CHECK_EQ_INT(m.payload.len, sizes[i]);
        CHECK(!m.ext.has_partial);
        svc_framer_free(&fr);
        free(payload);
    }
    buf_free(&out);
}

/* ---- appendix A/B/C ---- */

static void test_appendix_messages(void)
{
    struct frame f;
    struct span s[4];
    struct span payload;

    /* A.1: Clients.Caller as [7,["c-alice"],{"json":<bytes>},{}] */
    decode_frame(&f, "19 94 07 91 A7 63 2D 61 6C 69 63 65 81 A4 6A 73 6F 6E C4 05 7B 22 61 22 7D 80");
    CHECK_EQ_INT(f.status, PROTO_OK);
    CHECK_EQ_INT(f.msg.type, SVC_MULTI_CONNECTION_DATA);
    CHECK_EQ_INT(list_strings(&f.msg.ids, s, 4), 1);
    CHECK_SPAN(s[0], "c-alice");
    CHECK(svc_payloads_find(&f.msg.payloads, SPAN_LIT("JSON"), &payload));
    CHECK_SPAN(payload, "{\"a\"}");
    CHECK(!svc_payloads_find(&f.msg.payloads, SPAN_LIT("messagepack"), &payload));
    CHECK_REENCODES(&f);

    /* A.3: [3,"shutdown","fin:0"], answered by [3,"shutdown","finack"] */
    decode_frame(&f, "11 93 03 A8 73 68 75 74 64 6F 77 6E A5 66 69 6E 3A 30");
    struct span v;
    CHECK(svc_ping_get(&f.msg, "shutdown", &v) && span_eq_cstr(v, "fin:0"));
    struct buf out;
    buf_init(&out);
    struct span finack[] = { SPAN_LIT("shutdown"), SPAN_LIT("finack") };
    CHECK_EQ_INT(svc_encode_ping(&out, finack, 2, NULL), PROTO_OK);
    CHECK_BUF_HEX(&out, "12 93 03 A8 73 68 75 74 64 6F 77 6E A6 66 69 6E 61 63 6B");

    /* A.4: [6, conn, "{\"type\":7,\"allowReconnect\":true}\x1e", {5:4}] */
    decode_frame(&f, "2B 94 06 A2 63 31 C4 21"
                     "7B 22 74 79 70 65 22 3A 37 2C 22 61 6C 6C 6F 77 52 65 63 6F 6E 6E 65 63 74 22 3A 74 72 75 65 7D 1E"
                     "81 05 04");
    CHECK_EQ_INT(f.status, PROTO_OK);
    CHECK_SPAN(f.msg.payload, "{\"type\":7,\"allowReconnect\":true}\x1e");
    CHECK_EQ_INT(f.msg.ext.data_type, SVC_DATA_CLOSE);
    CHECK_REENCODES(&f);

    /* A.5: [5, conn, "", {}, {}]: the SDK's CloseConnection (error "") */
    decode_frame(&f, "08 95 05 A2 63 31 A0 80 80");
    CHECK_EQ_INT(f.status, PROTO_OK);
    CHECK(f.msg.error.ptr && f.msg.error.len == 0);
    CHECK_REENCODES(&f);
    buf_reset(&out);
    CHECK_EQ_INT(svc_encode_close_connection(&out, SPAN_LIT("c1"), SPAN_LIT(""), NULL), PROTO_OK);
    CHECK_BUF_HEX(&out, "08 95 05 A2 63 31 A0 80 80");

    /* B: handshake response ext key 5 = 1 */
    decode_frame(&f, "0D 94 06 A2 63 31 C4 03 7B 7D 1E 81 05 01");
    CHECK_EQ_INT(f.msg.ext.data_type, SVC_DATA_HANDSHAKE);

    /* B: 13 in its 7-element form with nil/[] user exclusions */
    decode_frame(&f, "11 97 0D A1 67 90 81 A4 6A 73 6F 6E C4 01 78 80 90 C0");
    CHECK_EQ_INT(f.status, PROTO_OK);
    CHECK_SPAN(f.msg.group, "g");
    CHECK_EQ_INT(f.msg.ids.count, 0);
    CHECK_EQ_INT(f.msg.excluded_users.count, 0);
    CHECK(!f.msg.caller_user_id.ptr);
    CHECK_REENCODES(&f);
    buf_free(&out);
}

/* ---- OpenConnection with claims, headers, query ---- */

static void test_open_connection(void)
{
    struct svc_claim claims[] = {
        { SPAN_LIT("asrs.s.uid"), SPAN_LIT("alice") },
        { SPAN_LIT("role"), SPAN_LIT("admin") },
        { SPAN_LIT("role"), SPAN_LIT("user") }, /* repeated type: repeated key */
    };
    struct span ua[] = { SPAN_LIT("test/1.0") };
    struct span xff[] = { SPAN_LIT("10.0.0.1"), SPAN_LIT("10.0.0.2") };
    struct svc_header headers[] = { { SPAN_LIT("User-Agent"), ua, 1 },
                                    { SPAN_LIT("X-Forwarded-For"), xff, 2 } };
    struct buf out;
    buf_init(&out);
    CHECK_EQ_INT(svc_encode_open_connection(&out, SPAN_LIT("c1"), claims, 3, headers, 2,
                                            SPAN_LIT("hub=chat&user=alice"), SPAN_LIT("messagepack"),
                                            NULL),
                 PROTO_OK);
    struct svc_framer fr;
    struct span body;
    struct svc_msg m;
    svc_framer_init(&fr, 1 << 20);
    svc_framer_push(&fr, out.data, out.len);
    CHECK_EQ_INT(svc_framer_next(&fr, &body, NULL), PROTO_OK);
    CHECK_EQ_INT(svc_msg_decode(body.ptr, body.len, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.type, SVC_OPEN_CONNECTION);
    CHECK_SPAN(m.query, "?hub=chat&user=alice");
    CHECK_SPAN(m.ext.protocol, "messagepack");
    CHECK_EQ_INT(m.claims.count, 3);
    struct svc_list_iter it;
    struct span k, v;
    int n = 0;
    svc_list_iter_begin(&it, &m.claims);
    while (svc_list_iter_next(&it, &k, &v)) {
        CHECK(span_eq(k, claims[n].type) && span_eq(v, claims[n].value));
        n++;
    }
    CHECK_EQ_INT(n, 3);
    n = 0;
    svc_list_iter_begin(&it, &m.headers);
    while (svc_list_iter_next(&it, &k, &v)) {
        CHECK(span_eq(k, headers[n].name));
        struct svc_list values = svc_list_of_values(v);
        struct span got[4];
        CHECK_EQ_INT(list_strings(&values, got, 4), headers[n].value_count);
        for (size_t j = 0; j < headers[n].value_count; j++)
            CHECK(span_eq(got[j], headers[n].values[j]));
        n++;
    }
    CHECK_EQ_INT(n, 2);
    svc_framer_free(&fr);

    /* A query that already has its '?' keeps one; no protocol is refused. */
    buf_reset(&out);
    CHECK_EQ_INT(svc_encode_open_connection(&out, SPAN_LIT("c1"), NULL, 0, NULL, 0, SPAN_LIT("?a=1"),
                                            SPAN_LIT("json"), NULL),
                 PROTO_OK);
    CHECK(memmem(out.data, out.len, "\xa4?a=1", 5) != NULL);
    size_t before = out.len;
    struct proto_error err = { 0 };
    CHECK_EQ_INT(svc_encode_open_connection(&out, SPAN_LIT("c1"), NULL, 0, NULL, 0, SPAN_NONE,
                                            SPAN_NONE, &err),
                 PROTO_ERR_MISSING);
    CHECK(err.detail != NULL);
    CHECK_EQ_INT(out.len, before);
    buf_free(&out);
}

/* ---- the forms the SDK's readers accept ---- */

static enum proto_status decode_hex(const char *h, char *storage, size_t cap, struct svc_msg *m,
                                    struct proto_error *err)
{
    size_t n = hex(h, storage, cap);
    return svc_msg_decode(storage, n, m, err);
}

static void test_lenient_forms(void)
{
    char b[256];
    struct svc_msg m;
    struct span s[4];

    /* 13 with 4 and 5 elements, and with excluded user ids and a caller */
    CHECK_EQ_INT(decode_hex("94 0D A1 67 90 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK(!m.has_ext);
    CHECK_EQ_INT(decode_hex("95 0D A1 67 91 A2 63 31 80 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(list_strings(&m.ids, s, 4), 1);
    CHECK_EQ_INT(decode_hex("97 0D A1 67 90 80 80 92 A1 75 A1 76 A1 75", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(list_strings(&m.excluded_users, s, 4), 2);
    CHECK_SPAN(s[1], "v");
    CHECK_SPAN(m.caller_user_id, "u");
    /* 10 with a nil excluded list; 6 without ext; extra trailing elements */
    CHECK_EQ_INT(decode_hex("94 0A C0 80 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.ids.count, 0);
    CHECK_EQ_INT(decode_hex("93 06 A1 63 C4 00", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK(m.payload.ptr && m.payload.len == 0);
    CHECK_EQ_INT(decode_hex("96 06 A1 63 C4 00 80 C3 92 01 02", b, sizeof b, &m, NULL), PROTO_OK);
    /* older handshake request: [1, 1] */
    CHECK_EQ_INT(decode_hex("92 01 01", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.version, 1);
    /* 18/19 with ack ids in other widths; 19 with nil group = leave all */
    CHECK_EQ_INT(decode_hex("95 12 A1 63 A1 67 CE 00 01 00 00 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.ack_id, 65536);
    CHECK_EQ_INT(decode_hex("95 13 A1 63 C0 2A 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK(!m.group.ptr);
    CHECK_EQ_INT(m.ack_id, 42);
    /* 11, 12 (fire and forget) */
    CHECK_EQ_INT(decode_hex("94 0B A1 63 A1 67 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(decode_hex("93 0C A1 63 C0", b, sizeof b, &m, NULL), PROTO_OK);
    /* ext: unknown keys skipped, every known key read */
    CHECK_EQ_INT(decode_hex("94 06 A1 63 C4 00 87 01 CF 00 00 00 01 00 00 00 00 02 0A 03 A4 6A 73 6F 6E"
                            " 04 A1 66 05 02 06 C3 63 C0",
                            b, sizeof b, &m, NULL),
                 PROTO_OK);
    CHECK(m.ext.has_tracing_id && m.ext.tracing_id == UINT64_C(1) << 32);
    CHECK(m.ext.has_ttl && m.ext.ttl == 10);
    CHECK_SPAN(m.ext.protocol, "json");
    CHECK_SPAN(m.ext.filter, "f");
    CHECK(m.ext.data_type == 2 && m.ext.has_partial && m.ext.partial);
    /* payload keys match case-insensitively; 8, 9, 14 */
    CHECK_EQ_INT(decode_hex("94 08 A1 75 82 A4 4A 53 4F 4E C4 01 6A AB 6D 65 73 73 61 67 65 70 61 63 6B C4 01 6D 80",
                            b, sizeof b, &m, NULL),
                 PROTO_OK);
    struct span p;
    CHECK(svc_payloads_find(&m.payloads, SPAN_LIT("json"), &p) && span_eq_cstr(p, "j"));
    CHECK(svc_payloads_find(&m.payloads, SPAN_LIT("MessagePack"), &p) && span_eq_cstr(p, "m"));
    CHECK_EQ_INT(decode_hex("94 09 92 A1 61 A1 62 80 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.ids.count, 2);
    CHECK_EQ_INT(decode_hex("94 0E 92 A1 61 A1 62 80 80", b, sizeof b, &m, NULL), PROTO_OK);
    /* 34, 35, 36 */
    CHECK_EQ_INT(decode_hex("96 22 A1 69 A1 63 A1 73 80 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_SPAN(m.caller_server_id, "s");
    CHECK_EQ_INT(decode_hex("97 23 A1 69 A1 63 A1 73 A4 6A 73 6F 6E C4 01 78 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_SPAN(m.protocol, "json");
    CHECK_EQ_INT(decode_hex("96 24 A1 69 A1 63 A1 73 A1 65 80", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_SPAN(m.error, "e");
    /* Ack with its 6th element (nil and bin) */
    CHECK_EQ_INT(decode_hex("96 14 07 01 A0 80 C0", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK(!m.payload.ptr);
    CHECK_EQ_INT(decode_hex("96 14 07 01 A0 80 C4 01 7A", b, sizeof b, &m, NULL), PROTO_OK);
    CHECK_SPAN(m.payload, "z");
    /* unknown and Management SDK types are skipped, not errors */
    CHECK_EQ_INT(decode_hex("92 10 A1 75", b, sizeof b, &m, NULL), PROTO_UNKNOWN_TYPE);
    CHECK_EQ_INT(decode_hex("91 CD 01 00", b, sizeof b, &m, NULL), PROTO_UNKNOWN_TYPE);
    CHECK_EQ_INT(decode_hex("91 FF", b, sizeof b, &m, NULL), PROTO_UNKNOWN_TYPE);
}

/* ---- hostile input ---- */

static void test_errors(void)
{
    char b[256];
    struct svc_msg m;
    struct proto_error err;
#define EXPECT_ERR(h, status)                                                       \
    do {                                                                            \
        err = (struct proto_error){ 0 };                                            \
        CHECK_EQ_INT(decode_hex((h), b, sizeof b, &m, &err), (status));             \
        CHECK(err.detail != NULL);                                                  \
        CHECK_EQ_INT(m.type, SVC_NONE);                                             \
    } while (0)
    EXPECT_ERR("", PROTO_ERR_SYNTAX);
    EXPECT_ERR("80", PROTO_ERR_TYPE);                  /* a map, not an array */
    EXPECT_ERR("90", PROTO_ERR_MISSING);               /* no type */
    EXPECT_ERR("91 A1 33", PROTO_ERR_TYPE);            /* type as a string */
    EXPECT_ERR("91 CF FF FF FF FF FF FF FF FF", PROTO_ERR_TYPE);
    EXPECT_ERR("92 03 01", PROTO_ERR_TYPE);            /* ping value an int */
    EXPECT_ERR("91 06", PROTO_ERR_MISSING);
    EXPECT_ERR("93 06 C0 C4 00", PROTO_ERR_MISSING);   /* nil connection id */
    EXPECT_ERR("93 06 A1 63 A1 78", PROTO_ERR_TYPE);   /* str payload */
    EXPECT_ERR("94 06 A1 63 C4 00 90", PROTO_ERR_TYPE); /* ext an array */
    EXPECT_ERR("94 06 A1 63 C4 00 81 A1 61 01", PROTO_ERR_TYPE); /* ext key a string */
    EXPECT_ERR("94 06 A1 63 C4 00 81 06 01", PROTO_ERR_TYPE);    /* isPartial an int */
    EXPECT_ERR("94 07 91 01 80 80", PROTO_ERR_TYPE);   /* id an int */
    EXPECT_ERR("94 07 90 81 A1 6A A1 78 80", PROTO_ERR_TYPE); /* payload a str */
    EXPECT_ERR("94 07 90 81 01 C4 00 80", PROTO_ERR_TYPE);    /* protocol an int */
    EXPECT_ERR("94 07 90 C0 80", PROTO_ERR_TYPE);      /* nil payloads */
    EXPECT_ERR("92 07 90", PROTO_ERR_MISSING);
    EXPECT_ERR("94 0B A1 63 C0 80", PROTO_ERR_MISSING); /* join a nil group */
    EXPECT_ERR("94 12 A1 63 A1 67 80", PROTO_ERR_TYPE); /* ack id missing: ext read as id */
    EXPECT_ERR("93 12 A1 63 A1 67", PROTO_ERR_MISSING);
    EXPECT_ERR("92 02 A2 C3 28", PROTO_ERR_UTF8);      /* invalid UTF-8 */
    EXPECT_ERR("94 07 91 A2 C3 28 80 80", PROTO_ERR_UTF8);
    EXPECT_ERR("91 03 C0", PROTO_ERR_SYNTAX);          /* bytes after the array */
    EXPECT_ERR("91 C1", PROTO_ERR_SYNTAX);
    /* huge declared counts and lengths: refused before anything is allocated */
    EXPECT_ERR("DD FF FF FF FF 03", PROTO_ERR_SYNTAX);
    EXPECT_ERR("94 07 DD FF FF FF FF 80 80", PROTO_ERR_SYNTAX);
    EXPECT_ERR("94 07 90 DF FF FF FF FF 80", PROTO_ERR_SYNTAX);
    EXPECT_ERR("93 06 A1 63 C6 FF FF FF FF", PROTO_ERR_SYNTAX);
    EXPECT_ERR("92 03 DB 7F FF FF FF", PROTO_ERR_SYNTAX);
#undef EXPECT_ERR

    /* deep nesting in a trailing element */
    char deep[64];
    size_t n = hex("94 06 A1 63 C4 00 80", deep, sizeof deep);
    deep[0] = (char)0x95;
    for (int i = 0; i < 40; i++)
        deep[n++] = (char)0x91;
    deep[n++] = (char)0xc0;
    CHECK_EQ_INT(svc_msg_decode(deep, n, &m, NULL), PROTO_ERR_TOO_DEEP);
}

/* Every strict prefix of every golden message fails to decode (and never
 * reads past it: ASan watches the exact-size copy). */
static void test_truncation(void)
{
    static const char *const messages[] = {
        "97 01 01 00 A0 00 80 C2",
        "94 07 91 A7 63 2D 61 6C 69 63 65 81 A4 6A 73 6F 6E C4 05 7B 22 61 22 7D 80",
        "97 0D A1 67 91 A1 63 81 A4 6A 73 6F 6E C4 01 78 80 91 A1 75 A1 76",
        "96 04 A2 63 31 81 A1 61 A1 62 81 A1 68 91 A1 76 A2 3F 71 81 03 A4 6A 73 6F 6E",
        "95 05 A2 63 31 A0 81 A1 68 90 80",
        "95 13 A1 63 A1 67 2A 81 05 01",
        "93 03 A8 73 68 75 74 64 6F 77 6E A5 66 69 6E 3A 30",
        "96 14 07 01 A0 80 C4 01 7A",
    };
    for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++) {
        char full[256];
        size_t n = hex(messages[i], full, sizeof full);
        struct svc_msg m;
        CHECK_EQ_INT(svc_msg_decode(full, n, &m, NULL), PROTO_OK);
        for (size_t cut = 0; cut < n; cut++) {
            char *copy = malloc(cut ? cut : 1);
            memcpy(copy, full, cut);
            struct proto_error err = { 0 };
            enum proto_status st = svc_msg_decode(copy, cut, &m, &err);
            check_count++;
            if (!proto_status_is_error(st) || !err.detail) {
                check_failures++;
                fprintf(stderr, "message %zu cut at %zu: %s\n", i, cut, proto_status_name(st));
            }
            free(copy);
        }
    }
}

/* ---- the framer ---- */

/* Three messages (one big enough for a 2-byte prefix) as one stream. */
static size_t make_stream(struct buf *out)
{
    static char big[5000];
    memset(big, 'b', sizeof big);
    svc_encode_ping(out, NULL, 0, NULL);
    svc_encode_connection_data(out, SPAN_LIT("c1"), span_make(big, sizeof big), false, NULL);
    svc_encode_ack(out, 9, 2, SPAN_NONE, NULL);
    return 3;
}

static void expect_stream(struct svc_framer *fr, const char *data, size_t len, int *seen)
{
    struct span body;
    enum proto_status st;
    svc_framer_push(fr, data, len);
    while ((st = svc_framer_next(fr, &body, NULL)) == PROTO_OK) {
        struct svc_msg m;
        CHECK_EQ_INT(svc_msg_decode(body.ptr, body.len, &m, NULL), PROTO_OK);
        static const enum svc_msg_type order[] = { SVC_PING, SVC_CONNECTION_DATA, SVC_ACK };
        CHECK(*seen < 3 && m.type == order[*seen]);
        if (m.type == SVC_CONNECTION_DATA)
            CHECK_EQ_INT(m.payload.len, 5000);
        (*seen)++;
    }
    CHECK_EQ_INT(st, PROTO_INCOMPLETE);
}

static void test_framer(void)
{
    struct buf stream;
    buf_init(&stream);
    make_stream(&stream);

    /* one chunk */
    struct svc_framer fr;
    int seen = 0;
    svc_framer_init(&fr, 1 << 16);
    expect_stream(&fr, stream.data, stream.len, &seen);
    CHECK_EQ_INT(seen, 3);
    CHECK_EQ_INT(svc_framer_buffered(&fr), 0);
    CHECK(fr.pending.data == NULL);
    svc_framer_free(&fr);

    /* split in two at every position */
    for (size_t cut = 0; cut <= stream.len; cut++) {
        seen = 0;
        svc_framer_init(&fr, 1 << 16);
        char *a = malloc(cut ? cut : 1), *b = malloc(stream.len - cut + 1);
        memcpy(a, stream.data, cut);
        memcpy(b, stream.data + cut, stream.len - cut);
        expect_stream(&fr, a, cut, &seen);
        free(a); /* the framer must not keep pointing into a chunk */
        expect_stream(&fr, b, stream.len - cut, &seen);
        free(b);
        CHECK_EQ_INT(seen, 3);
        CHECK(fr.pending.data == NULL);
        svc_framer_free(&fr);
    }

    /* one byte at a time, and in 4096-byte fragments as the SDK sends them */
    static const size_t steps[] = { 1, 7, 4096 };
    for (size_t s = 0; s < 3; s++) {
        seen = 0;
        svc_framer_init(&fr, 1 << 16);
        for (size_t pos = 0; pos < stream.len; pos += steps[s]) {
            size_t n = stream.len - pos < steps[s] ? stream.len - pos : steps[s];
            char *chunk = malloc(n);
            memcpy(chunk, stream.data + pos, n);
            expect_stream(&fr, chunk, n, &seen);
            free(chunk);
        }
        CHECK_EQ_INT(seen, 3);
        svc_framer_free(&fr);
    }

    /* a reader that stops after each message keeps svc_framer_unread, drops the chunk and
     * pushes what it kept later (relay/service_server.c's per-turn budget), at every cut */
    for (size_t cut = 0; cut <= stream.len; cut++) {
        seen = 0;
        svc_framer_init(&fr, 1 << 16);
        char *a = malloc(cut ? cut : 1);
        memcpy(a, stream.data, cut);
        svc_framer_push(&fr, a, cut);
        struct buf kept, rest;
        buf_init(&kept);
        buf_init(&rest);
        for (;;) {
            struct span one;
            enum proto_status st = svc_framer_next(&fr, &one, NULL);
            if (st == PROTO_INCOMPLETE && rest.len == 0 && cut < stream.len) {
                CHECK_EQ_INT(svc_framer_unread(&fr).len, 0);
                buf_append(&rest, stream.data + cut, stream.len - cut); /* the next read */
                buf_free(&kept);
                svc_framer_push(&fr, rest.data, rest.len);
                continue;
            }
            if (st != PROTO_OK)
                break;
            static const enum svc_msg_type order[] = { SVC_PING, SVC_CONNECTION_DATA, SVC_ACK };
            struct svc_msg m;
            CHECK_EQ_INT(svc_msg_decode(one.ptr, one.len, &m, NULL), PROTO_OK);
            CHECK(seen < 3 && m.type == order[seen]);
            seen++;
            /* stop here: keep the unread rest, let the chunk go, go on from the copy */
            struct span unread = svc_framer_unread(&fr);
            struct buf copy;
            buf_init(&copy);
            buf_append(&copy, unread.ptr, unread.len);
            memset(a, 0, cut);
            if (rest.len)
                memset(rest.data, 0, rest.len);
            buf_free(&kept);
            kept = copy;
            svc_framer_push(&fr, kept.data, kept.len);
        }
        CHECK_EQ_INT(seen, 3);
        free(a);
        buf_free(&kept);
        buf_free(&rest);
        svc_framer_free(&fr);
    }

    /* a message over the limit fails once its prefix is complete, and stays failed */
    struct proto_error err = { 0 };
    struct span body;
    svc_framer_init(&fr, 1000);
    svc_framer_push(&fr, stream.data, 3);
    CHECK_EQ_INT(svc_framer_next(&fr, &body, NULL), PROTO_OK);          /* [3] */
    CHECK_EQ_INT(svc_framer_next(&fr, &body, &err), PROTO_INCOMPLETE);
    svc_framer_push(&fr, stream.data + 3, 1);                            /* 1 byte of a 2-byte prefix */
    CHECK_EQ_INT(svc_framer_next(&fr, &body, &err), PROTO_INCOMPLETE);
    svc_framer_push(&fr, stream.data + 4, 1);
    CHECK_EQ_INT(svc_framer_next(&fr, &body, &err), PROTO_ERR_TOO_LARGE);
    CHECK(err.detail != NULL);
    svc_framer_push(&fr, stream.data, 3);
    CHECK_EQ_INT(svc_framer_next(&fr, &body, NULL), PROTO_ERR_TOO_LARGE);
    svc_framer_free(&fr);

    /* a prefix over 2^31-1 */
    svc_framer_init(&fr, SIZE_MAX);
    svc_framer_push(&fr, "\xff\xff\xff\xff\x0f", 5);
    CHECK_EQ_INT(svc_framer_next(&fr, &body, NULL), PROTO_ERR_TOO_LARGE);
    svc_framer_free(&fr);

    /* empty chunks are harmless */
    svc_framer_init(&fr, 100);
    svc_framer_push(&fr, NULL, 0);
    CHECK_EQ_INT(svc_framer_next(&fr, &body, NULL), PROTO_INCOMPLETE);
    svc_framer_free(&fr);
    buf_free(&stream);
}

/* Encoders leave the buffer untouched when they refuse. */
static void test_encode_refusals(void)
{
    struct buf out;
    buf_init(&out);
    buf_append_cstr(&out, "keep");
    struct svc_msg m = { .type = SVC_NONE };
    CHECK_EQ_INT(svc_msg_encode(&m, &out, NULL), PROTO_ERR_VALUE);
    m.type = 16;
    CHECK_EQ_INT(svc_msg_encode(&m, &out, NULL), PROTO_ERR_VALUE);
    CHECK_EQ_INT(svc_encode_close_connection(&out, SPAN_NONE, SPAN_NONE, NULL), PROTO_ERR_MISSING);
    CHECK_EQ_INT(svc_encode_connection_data(&out, SPAN_NONE, SPAN_NONE, false, NULL), PROTO_ERR_MISSING);
    CHECK_BYTES(out.data, out.len, "keep");
    /* partial ConnectionData carries {6: true} */
    buf_reset(&out);
    CHECK_EQ_INT(svc_encode_connection_data(&out, SPAN_LIT("c"), SPAN_LIT("x"), true, NULL), PROTO_OK);
    CHECK_BUF_HEX(&out, "0A 94 06 A1 63 C4 01 78 81 06 C3");
    buf_reset(&out);
    CHECK_EQ_INT(svc_encode_service_error(&out, SPAN_LIT("bad"), NULL), PROTO_OK);
    CHECK_BUF_HEX(&out, "06 92 0F A3 62 61 64");
    buf_free(&out);
}

int main(void)
{
    test_worked_bytes();
    test_appendix_messages();
    test_open_connection();
    test_lenient_forms();
    test_errors();
    test_truncation();
    test_framer();
    test_encode_refusals();
    return test_main_result("test_service_msg");
}
