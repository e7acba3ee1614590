/* test_core_json.c - the Core JSON hub protocol against the frames of
 * specs/core-signalr.md section 12 and the rules of JsonHubProtocol.cs.
 *
 * Expected bytes are the spec's examples. Frames the spec shows as written by
 * the server must re-encode to exactly themselves; client frames (JS writes
 * keys alphabetically) must decode and re-encode in the server's order. */
#include <stdlib.h>

#include "check.h"
#include "protocol/core_json.h"

#define RS "\x1e"

static enum proto_status decode(const char *text, struct hub_msg *msg, struct proto_error *err)
{
    return core_json_decode(text, strlen(text), msg, err);
}

/* Decodes `in`, re-encodes it and compares with `expected` (RS appended here). */
static void check_reencode(const char *in, const char *expected)
{
    struct hub_msg msg;
    struct proto_error err = { 0 };
    enum proto_status st = decode(in, &msg, &err);
    CHECK_EQ_INT(st, PROTO_OK);
    if (st != PROTO_OK) {
        fprintf(stderr, "  decoding %s: %s\n", in, err.detail);
        return;
    }
    struct buf out;
    buf_init(&out);
    CHECK_EQ_INT(core_json_encode(&msg, &out, &err), PROTO_OK);
    size_t n = strlen(expected);
    char *want = malloc(n + 2);
    memcpy(want, expected, n);
    memcpy(want + n, RS, 2);
    CHECK_BYTES(out.data, out.len, want);
    free(want);
    buf_free(&out);
    hub_msg_release(&msg);
}

/* Server-written frames re-encode to themselves. */
static void check_server_frame(const char *frame)
{
    check_reencode(frame, frame);
}

#define CHECK_SPAN(s, text) CHECK_BYTES((s).ptr, (s).len, text)

/* ---- section 12 examples ---------------------------------------------- */

static void test_e3_invocation_and_completions(void)
{
    struct hub_msg m;
    CHECK_EQ_INT(decode("{\"arguments\":[40,2],\"invocationId\":\"0\",\"target\":\"Add\",\"type\":1}", &m, NULL),
                 PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_INVOCATION);
    CHECK_SPAN(m.invocation_id, "0");
    CHECK_SPAN(m.target, "Add");
    CHECK_EQ_INT(m.args.encoding, PAYLOAD_JSON);
    CHECK_SPAN(m.args.bytes, "[40,2]");
    CHECK(!span_is_set(m.stream_ids.bytes));
    CHECK_EQ_INT(m.headers.encoding, PAYLOAD_NONE);
    hub_msg_release(&m);
    check_reencode("{\"arguments\":[40,2],\"invocationId\":\"0\",\"target\":\"Add\",\"type\":1}",
                   "{\"type\":1,\"invocationId\":\"0\",\"target\":\"Add\",\"arguments\":[40,2]}");

    CHECK_EQ_INT(decode("{\"type\":3,\"invocationId\":\"0\",\"result\":42}", &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_COMPLETION);
    CHECK_EQ_INT(m.completion, COMPLETION_RESULT);
    CHECK_SPAN(m.result.bytes, "42");
    CHECK(!span_is_set(m.error));
    hub_msg_release(&m);
    check_server_frame("{\"type\":3,\"invocationId\":\"0\",\"result\":42}");

    CHECK_EQ_INT(decode("{\"type\":3,\"invocationId\":\"1\",\"result\":null}", &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.completion, COMPLETION_RESULT); /* void method: result null, not "no result" */
    CHECK_SPAN(m.result.bytes, "null");
    hub_msg_release(&m);
    check_server_frame("{\"type\":3,\"invocationId\":\"1\",\"result\":null}");

    const char *exception =
        "{\"type\":3,\"invocationId\":\"2\",\"error\":\"An unexpected error occurred invoking 'Add' on the server.\"}";
    CHECK_EQ_INT(decode(exception, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.completion, COMPLETION_ERROR);
    CHECK_SPAN(m.error, "An unexpected error occurred invoking 'Add' on the server.");
    CHECK_EQ_INT(m.result.encoding, PAYLOAD_NONE);
    hub_msg_release(&m);
    check_server_frame(exception);
    check_server_frame("{\"type\":3,\"invocationId\":\"3\",\"error\":\"Failed to invoke 'Nope' due to an error "
                       "on the server. HubException: Method does not exist.\"}");

    /* fire and forget: no invocationId, and none written back */
    CHECK_EQ_INT(decode("{\"arguments\":[\"hi\"],\"target\":\"Send\",\"type\":1}", &m, NULL), PROTO_OK);
    CHECK(!span_is_set(m.invocation_id));
    CHECK_SPAN(m.args.bytes, "[\"hi\"]");
    hub_msg_release(&m);
    check_reencode("{\"arguments\":[\"hi\"],\"target\":\"Send\",\"type\":1}",
                   "{\"type\":1,\"target\":\"Send\",\"arguments\":[\"hi\"]}");
}

static void test_e5_e6_ping_and_close(void)
{
    struct hub_msg m;
    CHECK_EQ_INT(decode("{\"type\":6}", &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_PING);
    hub_msg_release(&m);

    /* E5 gives the bytes: 7b 22 74 79 70 65 22 3a 36 7d 1e */
    hub_msg_init(&m);
    m.kind = HUB_MSG_PING;
    struct buf out;
    buf_init(&out);
    CHECK_EQ_INT(core_json_encode(&m, &out, NULL), PROTO_OK);
    static const unsigned char ping[] = { 0x7b, 0x22, 0x74, 0x79, 0x70, 0x65, 0x22, 0x3a, 0x36, 0x7d, 0x1e };
    CHECK(out.len == sizeof ping && memcmp(out.data, ping, sizeof ping) == 0);
    buf_free(&out);

    check_server_frame("{\"type\":7}");
    const char *timeout = "{\"type\":7,\"error\":\"Connection closed with an error.\",\"allowReconnect\":true}";
    CHECK_EQ_INT(decode(timeout, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_CLOSE);
    CHECK_SPAN(m.error, "Connection closed with an error.");
    CHECK(m.allow_reconnect);
    hub_msg_release(&m);
    check_server_frame(timeout);
    check_server_frame("{\"type\":7,\"allowReconnect\":true}");
    /* allowReconnect:false is not written */
    check_reencode("{\"type\":7,\"allowReconnect\":false}", "{\"type\":7}");
}

static void test_e7_server_invocations(void)
{
    struct hub_msg m;
    const char *broadcast = "{\"type\":1,\"target\":\"ReceiveMessage\",\"arguments\":[\"bob\",\"hi\"]}";
    CHECK_EQ_INT(decode(broadcast, &m, NULL), PROTO_OK);
    CHECK_SPAN(m.target, "ReceiveMessage");
    CHECK(!span_is_set(m.invocation_id));
    hub_msg_release(&m);
    check_server_frame(broadcast);
    check_server_frame("{\"type\":1,\"invocationId\":\"s1\",\"target\":\"GetName\",\"arguments\":[]}");

    check_server_frame("{\"type\":3,\"invocationId\":\"s1\",\"result\":\"alice\"}");
    check_reencode("{\"error\":\"Client didn't provide a result.\",\"invocationId\":\"s1\",\"type\":3}",
                   "{\"type\":3,\"invocationId\":\"s1\",\"error\":\"Client didn't provide a result.\"}");
}

static void test_e8_stream_with_cancel(void)
{
    struct hub_msg m;
    CHECK_EQ_INT(decode("{\"arguments\":[3],\"invocationId\":\"1\",\"target\":\"Counter\",\"type\":4}", &m, NULL),
                 PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_STREAM_INVOCATION);
    CHECK_SPAN(m.target, "Counter");
    CHECK_SPAN(m.invocation_id, "1");
    CHECK_SPAN(m.args.bytes, "[3]");
    hub_msg_release(&m);
    check_reencode("{\"arguments\":[3],\"invocationId\":\"1\",\"target\":\"Counter\",\"type\":4}",
                   "{\"type\":4,\"invocationId\":\"1\",\"target\":\"Counter\",\"arguments\":[3]}");

    CHECK_EQ_INT(decode("{\"type\":2,\"invocationId\":\"1\",\"item\":0}", &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_STREAM_ITEM);
    CHECK_SPAN(m.item.bytes, "0");
    hub_msg_release(&m);
    check_server_frame("{\"type\":2,\"invocationId\":\"1\",\"item\":0}");
    check_server_frame("{\"type\":2,\"invocationId\":\"1\",\"item\":1}");

    CHECK_EQ_INT(decode("{\"invocationId\":\"1\",\"type\":5}", &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.kind, HUB_MSG_CANCEL_INVOCATION);
    CHECK_SPAN(m.invocation_id, "1");
    hub_msg_release(&m);
    check_reencode("{\"invocationId\":\"1\",\"type\":5}", "{\"type\":5,\"invocationId\":\"1\"}");

    CHECK_EQ_INT(decode("{\"type\":3,\"invocationId\":\"1\"}", &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.completion, COMPLETION_VOID);
    CHECK_EQ_INT(m.result.encoding, PAYLOAD_NONE);
    CHECK(!span_is_set(m.error));
    hub_msg_release(&m);
    check_server_frame("{\"type\":3,\"invocationId\":\"1\"}");
}

static void test_e9_upload_stream(void)
{
    struct hub_msg m;
    const char *call = "{\"arguments\":[],\"invocationId\":\"1\",\"streamIds\":[\"0\"],\"target\":\"Sum\",\"type\":1}";
    CHECK_EQ_INT(decode(call, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.stream_ids.encoding, PAYLOAD_JSON);
    CHECK_SPAN(m.stream_ids.bytes, "[\"0\"]");
    CHECK_SPAN(m.args.bytes, "[]");
    hub_msg_release(&m);
    check_reencode(call, "{\"type\":1,\"invocationId\":\"1\",\"target\":\"Sum\",\"arguments\":[],\"streamIds\":[\"0\"]}");

    check_reencode("{\"invocationId\":\"0\",\"item\":5,\"type\":2}", "{\"type\":2,\"invocationId\":\"0\",\"item\":5}");
    check_reencode("{\"invocationId\":\"0\",\"type\":3}", "{\"type\":3,\"invocationId\":\"0\"}");
    CHECK_EQ_INT(decode("{\"error\":\"msg\",\"invocationId\":\"0\",\"type\":3}", &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.completion, COMPLETION_ERROR);
    CHECK_SPAN(m.error, "msg");
    hub_msg_release(&m);
    check_reencode("{\"error\":\"msg\",\"invocationId\":\"0\",\"type\":3}",
                   "{\"type\":3,\"invocationId\":\"0\",\"error\":\"msg\"}");
    check_server_frame("{\"type\":3,\"invocationId\":\"1\",\"result\":11}");
}

static void test_e10_e12_batches(void)
{
    /* E10: one poll body with two whole records */
    const char *poll = "{\"type\":3,\"invocationId\":\"0\",\"result\":\"hi\"}" RS
                       "{\"type\":1,\"target\":\"Tick\",\"arguments\":[]}" RS;
    struct span rec;
    size_t used, off = 0, len = strlen(poll);
    struct hub_msg m;
    CHECK_EQ_INT(core_text_next_record(poll, len, SIZE_MAX, &rec, &used, NULL), PROTO_OK);
    CHECK_SPAN(rec, "{\"type\":3,\"invocationId\":\"0\",\"result\":\"hi\"}");
    CHECK_EQ_INT(used, rec.len + 1);
    CHECK_EQ_INT(core_json_decode(rec.ptr, rec.len, &m, NULL), PROTO_OK);
    CHECK_SPAN(m.result.bytes, "\"hi\"");
    hub_msg_release(&m);
    off += used;
    CHECK_EQ_INT(core_text_next_record(poll + off, len - off, SIZE_MAX, &rec, &used, NULL), PROTO_OK);
    CHECK_EQ_INT(core_json_decode(rec.ptr, rec.len, &m, NULL), PROTO_OK);
    CHECK_SPAN(m.target, "Tick");
    hub_msg_release(&m);
    off += used;
    CHECK_EQ_INT(off, len);
    CHECK_EQ_INT(core_text_next_record(poll + off, len - off, SIZE_MAX, &rec, &used, NULL), PROTO_INCOMPLETE);
    check_reencode("{\"arguments\":[\"hi\"],\"invocationId\":\"0\",\"target\":\"Echo\",\"type\":1}",
                   "{\"type\":1,\"invocationId\":\"0\",\"target\":\"Echo\",\"arguments\":[\"hi\"]}");

    /* E12: the reconnect burst; re-encoding every record gives back the burst */
    const char *burst = "{\"type\":9,\"sequenceId\":1}" RS "{\"type\":3,\"invocationId\":\"0\",\"result\":1}" RS
                        "{\"type\":1,\"target\":\"News\",\"arguments\":[\"x\"]}" RS;
    static const enum hub_msg_kind kinds[] = { HUB_MSG_SEQUENCE, HUB_MSG_COMPLETION, HUB_MSG_INVOCATION };
    struct buf out;
    buf_init(&out);
    len = strlen(burst);
    off = 0;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(core_text_next_record(burst + off, len - off, SIZE_MAX, &rec, &used, NULL), PROTO_OK);
        CHECK_EQ_INT(core_json_decode(rec.ptr, rec.len, &m, NULL), PROTO_OK);
        CHECK_EQ_INT(m.kind, kinds[i]);
        if (i == 0)
            CHECK_EQ_INT(m.sequence_id, 1);
        CHECK_EQ_INT(core_json_encode(&m, &out, NULL), PROTO_OK);
        hub_msg_release(&m);
        off += used;
    }
    CHECK_BYTES(out.data, out.len, burst);
    buf_free(&out);

    check_server_frame("{\"type\":8,\"sequenceId\":1}");
    check_server_frame("{\"type\":9,\"sequenceId\":2}");
    check_server_frame("{\"type\":8,\"sequenceId\":2}");
    check_reencode("{\"arguments\":[1],\"invocationId\":\"0\",\"target\":\"A\",\"type\":1}",
                   "{\"type\":1,\"invocationId\":\"0\",\"target\":\"A\",\"arguments\":[1]}");
}

/* ---- framing ------------------------------------------------------------ */

static void test_framing(void)
{
    struct span rec;
    size_t used = 0;
    struct proto_error err = { 0 };
    /* a partial record waits */
    CHECK_EQ_INT(core_text_next_record("{\"type\":", 8, SIZE_MAX, &rec, &used, NULL), PROTO_INCOMPLETE);
    CHECK_EQ_INT(core_text_next_record("", 0, SIZE_MAX, &rec, &used, NULL), PROTO_INCOMPLETE);
    /* an empty record is a record, and an empty record does not decode */
    CHECK_EQ_INT(core_text_next_record(RS "{}", 3, SIZE_MAX, &rec, &used, NULL), PROTO_OK);
    CHECK_EQ_INT(rec.len, 0);
    CHECK_EQ_INT(used, 1);
    struct hub_msg m;
    CHECK_EQ_INT(core_json_decode(rec.ptr, rec.len, &m, &err), PROTO_ERR_SYNTAX);

    /* limits: a record of exactly max bytes passes, one more byte does not */
    const char *rec10 = "0123456789" RS;
    CHECK_EQ_INT(core_text_next_record(rec10, 11, 10, &rec, &used, NULL), PROTO_OK);
    CHECK_EQ_INT(rec.len, 10);
    CHECK_EQ_INT(core_text_next_record(rec10, 11, 9, &rec, &used, &err), PROTO_ERR_TOO_LARGE);
    CHECK_EQ_INT(err.status, PROTO_ERR_TOO_LARGE);
    /* no separator: wait while at most max bytes arrived, fail beyond */
    CHECK_EQ_INT(core_text_next_record(rec10, 10, 10, &rec, &used, NULL), PROTO_INCOMPLETE);
    CHECK_EQ_INT(core_text_next_record(rec10, 10, 9, &rec, &used, NULL), PROTO_ERR_TOO_LARGE);
    /* a separator beyond the window is not looked for */
    CHECK_EQ_INT(core_text_next_record("0123456789012" RS, 14, 4, &rec, &used, NULL), PROTO_ERR_TOO_LARGE);

    /* handshake and first messages in one buffer (section 3.3 / 4) */
    const char *mixed = "{\"protocol\":\"json\",\"version\":1}" RS "{\"type\":6}" RS "{\"ty";
    size_t len = strlen(mixed), off = 0;
    CHECK_EQ_INT(core_text_next_record(mixed, len, SIZE_MAX, &rec, &used, NULL), PROTO_OK);
    off += used;
    CHECK_EQ_INT(core_text_next_record(mixed + off, len - off, SIZE_MAX, &rec, &used, NULL), PROTO_OK);
    CHECK_SPAN(rec, "{\"type\":6}");
    off += used;
    CHECK_EQ_INT(core_text_next_record(mixed + off, len - off, SIZE_MAX, &rec, &used, NULL), PROTO_INCOMPLETE);
}

/* ---- tolerance ------------------------------------------------------------ */

static void test_tolerance(void)
{
    struct hub_msg m;
    /* whitespace, unknown properties of any shape, escaped names */
    const char *loose = " { \"x\" : {\"a\":[1,{\"b\":null}]} , \"target\" : \"Se\\u006ed\" ,\n"
                        "\"arguments\" : [ 1 , 2 ] , \"type\" : 1 , \"invocationId\" : \"7\" } ";
    CHECK_EQ_INT(decode(loose, &m, NULL), PROTO_OK);
    CHECK_SPAN(m.target, "Send");
    CHECK_SPAN(m.args.bytes, "[ 1 , 2 ]"); /* raw bytes, untouched */
    hub_msg_release(&m);
    check_reencode(loose, "{\"type\":1,\"invocationId\":\"7\",\"target\":\"Send\",\"arguments\":[ 1 , 2 ]}");

    /* duplicates: last one wins, as with the server's reader */
    check_reencode("{\"type\":5,\"invocationId\":\"a\",\"invocationId\":\"b\",\"type\":2,\"item\":1}",
                   "{\"type\":2,\"invocationId\":\"b\",\"item\":1}");
    /* many escaped duplicates never run out of owned slots */
    check_reencode("{\"type\":5,\"invocationId\":\"\\u0061\",\"invocationId\":\"\\u0062\",\"invocationId\":\"\\u0063\","
                   "\"invocationId\":\"\\u0064\",\"invocationId\":\"\\u0065\",\"invocationId\":\"\\u0066\","
                   "\"invocationId\":\"\\u0067\",\"target\":\"\\u0068\"}",
                   "{\"type\":5,\"invocationId\":\"g\"}");

    /* an escaped backslash before "u0000" is not a NUL, in a value or a name */
    check_reencode("{\"type\":1,\"target\":\"a\\\\u0000\",\"arguments\":[],\"\\\\u0000\":1}",
                   "{\"type\":1,\"target\":\"a\\\\u0000\",\"arguments\":[]}");

    /* escapes are decoded and written back escaped the server's way */
    check_reencode("{\"type\":3,\"invocationId\":\"1\",\"error\":\"a\\\"b\\\\c\\nd\\u00e9\"}",
                   "{\"type\":3,\"invocationId\":\"1\",\"error\":\"a\\\"b\\\\c\\nd\xc3\xa9\"}");

    /* headers: kept raw on invocation messages, `{}` is the same as none */
    const char *traced = "{\"type\":1,\"headers\":{\"traceparent\":\"00-ab-cd-01\"},\"target\":\"T\",\"arguments\":[]}";
    CHECK_EQ_INT(decode(traced, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.headers.encoding, PAYLOAD_JSON);
    CHECK_SPAN(m.headers.bytes, "{\"traceparent\":\"00-ab-cd-01\"}");
    hub_msg_release(&m);
    check_server_frame(traced);
    check_reencode("{\"type\":1,\"headers\":{},\"target\":\"T\",\"arguments\":[]}",
                   "{\"type\":1,\"target\":\"T\",\"arguments\":[]}");
    /* headers on a Ping are read (and checked) but not part of the message */
    check_reencode("{\"type\":6,\"headers\":{\"a\":\"b\"},\"invocationId\":\"1\",\"target\":\"x\"}", "{\"type\":6}");

    /* "invocationId":"" on an Invocation is fire-and-forget (string.IsNullOrEmpty) */
    check_reencode("{\"type\":1,\"invocationId\":\"\",\"target\":\"T\",\"arguments\":[]}",
                   "{\"type\":1,\"target\":\"T\",\"arguments\":[]}");
    /* sequenceId: null counts as absent; int64 range */
    check_server_frame("{\"type\":8,\"sequenceId\":9223372036854775807}");
    check_server_frame("{\"type\":9,\"sequenceId\":-9223372036854775808}");
    /* `item` may be null and must still be written */
    check_server_frame("{\"type\":2,\"invocationId\":\"1\",\"item\":null}");
    /* an empty streamIds array is present, and written back */
    check_server_frame("{\"type\":4,\"invocationId\":\"1\",\"target\":\"S\",\"arguments\":[],\"streamIds\":[]}");
    /* a Close with an empty error keeps it (the server writes `error` when not null) */
    check_server_frame("{\"type\":7,\"error\":\"\"}");
}

/* ---- failures --------------------------------------------------------- */

struct bad_case {
    const char *text;
    enum proto_status status;
};

static void test_failures(void)
{
    static const struct bad_case cases[] = {
        /* type */
        { "{\"target\":\"T\",\"arguments\":[]}", PROTO_ERR_MISSING },
        { "{\"type\":null}", PROTO_ERR_TYPE },
        { "{\"type\":\"1\"}", PROTO_ERR_TYPE },
        { "{\"type\":1.0,\"target\":\"T\",\"arguments\":[]}", PROTO_ERR_TYPE },
        { "{\"type\":1e0}", PROTO_ERR_TYPE },
        { "{\"type\":2147483648}", PROTO_ERR_VALUE },
        { "{\"type\":true}", PROTO_ERR_TYPE },
        /* unknown types are not errors */
        { "{\"type\":10}", PROTO_UNKNOWN_TYPE },
        { "{\"type\":0,\"whatever\":[1]}", PROTO_UNKNOWN_TYPE },
        { "{\"type\":-1}", PROTO_UNKNOWN_TYPE },
        /* ... but their known properties are still checked, as the server does */
        { "{\"type\":42,\"invocationId\":5}", PROTO_ERR_TYPE },
        /* required fields */
        { "{\"type\":1,\"arguments\":[]}", PROTO_ERR_MISSING },
        { "{\"type\":1,\"target\":\"\",\"arguments\":[]}", PROTO_ERR_MISSING },
        { "{\"type\":1,\"target\":\"T\"}", PROTO_ERR_MISSING },
        { "{\"type\":4,\"target\":\"T\",\"arguments\":[]}", PROTO_ERR_MISSING },
        { "{\"type\":4,\"invocationId\":\"\",\"target\":\"T\",\"arguments\":[]}", PROTO_ERR_MISSING },
        { "{\"type\":2,\"item\":1}", PROTO_ERR_MISSING },
        { "{\"type\":2,\"invocationId\":\"1\"}", PROTO_ERR_MISSING },
        { "{\"type\":3,\"result\":1}", PROTO_ERR_MISSING },
        { "{\"type\":3,\"invocationId\":\"\"}", PROTO_ERR_MISSING },
        { "{\"type\":5}", PROTO_ERR_MISSING },
        { "{\"type\":8}", PROTO_ERR_MISSING },
        { "{\"type\":9,\"sequenceId\":null}", PROTO_ERR_MISSING },
        /* wrong types (null is not a string for the server) */
        { "{\"type\":1,\"invocationId\":null,\"target\":\"T\",\"arguments\":[]}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":null,\"arguments\":[]}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":7,\"arguments\":[]}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":{}}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":null}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[],\"streamIds\":\"0\"}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[],\"streamIds\":[\"0\",null]}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[],\"streamIds\":[1]}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[],\"headers\":[]}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[],\"headers\":{\"a\":1}}", PROTO_ERR_TYPE },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[],\"headers\":{\"a\":null}}", PROTO_ERR_TYPE },
        { "{\"type\":3,\"invocationId\":\"1\",\"error\":null}", PROTO_ERR_TYPE },
        { "{\"type\":7,\"allowReconnect\":\"true\"}", PROTO_ERR_TYPE },
        { "{\"type\":7,\"allowReconnect\":1}", PROTO_ERR_TYPE },
        { "{\"type\":8,\"sequenceId\":\"1\"}", PROTO_ERR_TYPE },
        { "{\"type\":8,\"sequenceId\":1.5}", PROTO_ERR_TYPE },
        { "{\"type\":8,\"sequenceId\":9223372036854775808}", PROTO_ERR_VALUE },
        /* error and result together, even a null result or an empty error */
        { "{\"type\":3,\"invocationId\":\"1\",\"error\":\"e\",\"result\":1}", PROTO_ERR_VALUE },
        { "{\"type\":3,\"invocationId\":\"1\",\"result\":null,\"error\":\"\"}", PROTO_ERR_VALUE },
        /* NUL inside a name/id */
        { "{\"type\":1,\"target\":\"Se\\u0000nd\",\"arguments\":[]}", PROTO_ERR_VALUE },
        /* NUL inside a property name: refused, never read as the name before it */
        { "{\"type\\u0000x\":1,\"target\":\"T\",\"arguments\":[]}", PROTO_ERR_VALUE },
        { "{\"type\":6,\"x\\u0000\":1}", PROTO_ERR_VALUE },
        /* not an object / not JSON / truncated */
        { "", PROTO_ERR_SYNTAX },
        { "   ", PROTO_ERR_SYNTAX },
        { "[]", PROTO_ERR_TYPE },
        { "\"type\"", PROTO_ERR_TYPE },
        { "{", PROTO_ERR_SYNTAX },
        { "{\"type\":6", PROTO_ERR_SYNTAX },
        { "{\"type\":", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[1,2}", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"T", PROTO_ERR_SYNTAX },
        { "{\"type\":6}}", PROTO_ERR_SYNTAX },
        { "{\"type\":6} {}", PROTO_ERR_SYNTAX },
        { "{'type':6}", PROTO_ERR_SYNTAX },
        { "{\"type\":6,}", PROTO_ERR_SYNTAX },
        { "{\"type\":6 /* c */}", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"a\tb\",\"arguments\":[]}", PROTO_ERR_SYNTAX }, /* raw control char */
        /* white space cJSON would skip but JSON does not allow (found by fuzz_core_json) */
        { "{\"type\":1,\"target\":\"T\",\"arguments\":\x01[]}", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[1,\x0b" "2]}", PROTO_ERR_SYNTAX },
        { "\xef\xbb\xbf{\"type\":6}", PROTO_ERR_SYNTAX },
        { "{\"type\":\xef\xbb\xbf" "6}", PROTO_ERR_SYNTAX },
        /* bad UTF-8: in a name, in a payload, overlong, surrogate */
        { "{\"type\":1,\"target\":\"\xff\",\"arguments\":[]}", PROTO_ERR_UTF8 },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[\"\xc3\"]}", PROTO_ERR_UTF8 },
        { "{\"type\":7,\"error\":\"\xc0\xaf\"}", PROTO_ERR_UTF8 },
        { "{\"type\":7,\"error\":\"\xed\xa0\x80\"}", PROTO_ERR_UTF8 },
        /* a lone surrogate escape is not a string */
        { "{\"type\":7,\"error\":\"\\ud800\"}", PROTO_ERR_SYNTAX },
        /* escapes and numbers outside RFC 8259 that cJSON takes and System.Text.Json
         * refuses (found by the strict oracle of fuzz_legacy_invocation): a \u
         * with non-hex digits reads as U+0000 to cJSON and cut "ab\u12;x" to "ab" */
        { "{\"type\":7,\"error\":\"ab\\u12;x\"}", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[\"\\q\"]}", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[01]}", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[-01]}", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[1.]}", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[1e]}", PROTO_ERR_SYNTAX },
        { "{\"type\":1,\"target\":\"T\",\"arguments\":[1.5e+-3]}", PROTO_ERR_SYNTAX },
        { "{\"type\":01}", PROTO_ERR_SYNTAX },
        /* depth: 64 open containers are fine, 65 are not (System.Text.Json MaxDepth) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct hub_msg m;
        struct proto_error err = { PROTO_OK, NULL };
        enum proto_status st = decode(cases[i].text, &m, &err);
        CHECK_EQ_INT(st, cases[i].status);
        if (st != cases[i].status)
            fprintf(stderr, "  case %zu: %s (%s)\n", i, cases[i].text, err.detail ? err.detail : "-");
        if (proto_status_is_error(st))
            CHECK(err.detail != NULL && err.status == st);
        CHECK_EQ_INT(m.kind, HUB_MSG_NONE);
        CHECK_EQ_INT(m.owned_count, 0);
        hub_msg_release(&m);
    }
}

/* Builds {"type":1,"target":"T","arguments":<depth-1 nested arrays>} so that
 * `depth` containers are open at the innermost point. */
static char *nested_invocation(size_t depth)
{
    const char *head = "{\"type\":1,\"target\":\"T\",\"arguments\":";
    size_t arrays = depth - 1, hl = strlen(head);
    char *s = malloc(hl + 2 * arrays + 2);
    memcpy(s, head, hl);
    memset(s + hl, '[', arrays);
    memset(s + hl + arrays, ']', arrays);
    s[hl + 2 * arrays] = '}';
    s[hl + 2 * arrays + 1] = '\0';
    return s;
}

static void test_nesting(void)
{
    struct hub_msg m;
    char *ok64 = nested_invocation(64);
    CHECK_EQ_INT(decode(ok64, &m, NULL), PROTO_OK);
    hub_msg_release(&m);
    free(ok64);
    char *deep65 = nested_invocation(65);
    CHECK_EQ_INT(decode(deep65, &m, NULL), PROTO_ERR_TOO_DEEP);
    free(deep65);

    /* a 100k-deep bomb, closed and unclosed, inside a payload and inside an unknown property */
    size_t n = 100000;
    char *bomb = nested_invocation(n);
    CHECK_EQ_INT(decode(bomb, &m, NULL), PROTO_ERR_TOO_DEEP);
    free(bomb);
    char *open = malloc(n + 16);
    memcpy(open, "{\"x\":", 5);
    memset(open + 5, '[', n);
    open[n + 5] = '\0';
    CHECK_EQ_INT(decode(open, &m, NULL), PROTO_ERR_TOO_DEEP);
    free(open);
    /* brackets inside strings do not count */
    char *quoted = malloc(n + 64);
    int k = sprintf(quoted, "{\"type\":7,\"error\":\"");
    memset(quoted + k, '[', n);
    strcpy(quoted + k + n, "\"}");
    CHECK_EQ_INT(decode(quoted, &m, NULL), PROTO_OK);
    CHECK_EQ_INT(m.error.len, n);
    hub_msg_release(&m);
    free(quoted);
}

/* Every prefix of valid frames fails cleanly (never OK, never a crash). */
static void test_truncation(void)
{
    const char *frames[] = {
        "{\"type\":1,\"headers\":{\"a\":\"b\"},\"invocationId\":\"1\",\"target\":\"T\",\"arguments\":[1,\"x\",{\"y\":null}],\"streamIds\":[\"2\"]}",
        "{\"type\":3,\"invocationId\":\"\\u0031\",\"error\":\"e\\n\"}",
        "{\"type\":7,\"error\":\"Connection closed with an error.\",\"allowReconnect\":true}",
    };
    for (size_t f = 0; f < sizeof frames / sizeof frames[0]; f++) {
        size_t len = strlen(frames[f]);
        for (size_t cut = 0; cut < len; cut++) {
            char *copy = malloc(cut ? cut : 1); /* exact-size copy: ASan sees any over-read */
            memcpy(copy, frames[f], cut);
            struct hub_msg m;
            enum proto_status st = core_json_decode(copy, cut, &m, NULL);
            CHECK(proto_status_is_error(st));
            hub_msg_release(&m);
            free(copy);
        }
    }
}

/* ---- encoder -------------------------------------------------------------- */

static void test_encoder(void)
{
    struct buf out;
    buf_init(&out);
    buf_append_cstr(&out, "prefix");
    struct proto_error err = { 0 };
    struct hub_msg m;

    /* missing arguments are written as [] */
    hub_msg_init(&m);
    m.kind = HUB_MSG_INVOCATION;
    m.target = SPAN_LIT("Tick");
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "prefix{\"type\":1,\"target\":\"Tick\",\"arguments\":[]}" RS);
    out.len = 6;

    /* MessagePack payloads are refused and the buffer is left as it was */
    m.args = (struct payload){ PAYLOAD_MSGPACK, SPAN_LIT("\x92\x01\x02") };
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_ERR_VALUE);
    CHECK(strcmp(err.detail, "payload is MessagePack; convert it first") == 0);
    CHECK_EQ_INT(out.len, 6);

    /* missing required fields */
    hub_msg_init(&m);
    m.kind = HUB_MSG_INVOCATION;
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_ERR_MISSING);
    m.kind = HUB_MSG_COMPLETION;
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_ERR_MISSING);
    m.kind = HUB_MSG_STREAM_INVOCATION;
    m.target = SPAN_LIT("S");
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_ERR_MISSING);
    m.kind = (enum hub_msg_kind)12;
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_ERR_VALUE);
    CHECK_EQ_INT(out.len, 6);

    /* completion kinds: error wins over a stray result; void writes neither */
    hub_msg_init(&m);
    m.kind = HUB_MSG_COMPLETION;
    m.invocation_id = SPAN_LIT("9");
    m.completion = COMPLETION_RESULT; /* no result bytes: the value is null */
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_OK);
    CHECK_BYTES(out.data + 6, out.len - 6, "{\"type\":3,\"invocationId\":\"9\",\"result\":null}" RS);
    out.len = 6;
    m.completion = COMPLETION_ERROR;
    m.error = SPAN_LIT("boom \"x\"");
    m.result = (struct payload){ PAYLOAD_JSON, SPAN_LIT("1") };
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_OK);
    CHECK_BYTES(out.data + 6, out.len - 6, "{\"type\":3,\"invocationId\":\"9\",\"error\":\"boom \\\"x\\\"\"}" RS);
    out.len = 6;
    m.completion = COMPLETION_VOID;
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_OK);
    CHECK_BYTES(out.data + 6, out.len - 6, "{\"type\":3,\"invocationId\":\"9\"}" RS);
    out.len = 6;
    /* a MessagePack result is refused even where it would not be written */
    m.result = (struct payload){ PAYLOAD_MSGPACK, SPAN_LIT("\x2a") };
    CHECK_EQ_INT(core_json_encode(&m, &out, &err), PROTO_ERR_VALUE);
    CHECK_EQ_INT(out.len, 6);
    buf_free(&out);
}

/* Every number and escape form RFC 8259 allows still decodes, raw bytes unchanged. */
static void test_strict_json_accepted(void)
{
    const char *args = "[0,-0,0.5,-1.25e-3,1E+3,2e0,1e400,123456789012345678901234567890,\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\ude00\"]";
    char text[256];
    snprintf(text, sizeof text, "{\"type\":1,\"target\":\"T\",\"arguments\":%s}", args);
    struct hub_msg m;
    CHECK_EQ_INT(decode(text, &m, NULL), PROTO_OK);
    CHECK_BYTES(m.args.bytes.ptr, m.args.bytes.len, args);
    hub_msg_release(&m);
}

int main(void)
{
    test_e3_invocation_and_completions();
    test_e5_e6_ping_and_close();
    test_e7_server_invocations();
    test_e8_stream_with_cancel();
    test_e9_upload_stream();
    test_e10_e12_batches();
    test_framing();
    test_tolerance();
    test_failures();
    test_strict_json_accepted();
    test_nesting();
    test_truncation();
    test_encoder();
    return test_main_result("test_core_json");
}
