/* test_handshake.c - handshake request/response and the server's error texts,
 * against specs/core-signalr.md sections 4, 12 (E2, E4, E12) and HandshakeProtocol.cs. */
#include <stdlib.h>

#include "check.h"
#include "protocol/core_json.h"
#include "protocol/handshake.h"

#define RS "\x1e"
#define CHECK_SPAN(s, text) CHECK_BYTES((s).ptr, (s).len, text)

static enum proto_status decode_request(const char *text, struct handshake_request *req)
{
    return handshake_decode_request(text, strlen(text), req, NULL);
}

static void test_requests(void)
{
    struct handshake_request req;
    /* E2, E4, E12 */
    CHECK_EQ_INT(decode_request("{\"protocol\":\"json\",\"version\":1}", &req), PROTO_OK);
    CHECK_SPAN(req.protocol, "json");
    CHECK_EQ_INT(req.version, 1);
    enum hub_protocol p = HUB_PROTOCOL_MSGPACK;
    CHECK(hub_protocol_from_name(req.protocol, &p) && p == HUB_PROTOCOL_JSON);
    CHECK(hub_protocol_version_supported(p, req.version));
    handshake_request_release(&req);

    CHECK_EQ_INT(decode_request("{\"protocol\":\"messagepack\",\"version\":1}", &req), PROTO_OK);
    CHECK(hub_protocol_from_name(req.protocol, &p) && p == HUB_PROTOCOL_MSGPACK);
    CHECK(hub_protocol_is_binary(p));
    handshake_request_release(&req);

    CHECK_EQ_INT(decode_request("{\"protocol\":\"json\",\"version\":2}", &req), PROTO_OK);
    CHECK_EQ_INT(req.version, 2);
    CHECK(hub_protocol_version_supported(HUB_PROTOCOL_JSON, 2));
    CHECK(!hub_protocol_version_supported(HUB_PROTOCOL_JSON, 3));
    handshake_request_release(&req);

    /* order free, other properties ignored, escapes decoded, case kept as sent */
    CHECK_EQ_INT(decode_request(" { \"version\" : 1 , \"x\":{\"y\":[1]}, \"protocol\" : \"J\\u0053ON\" } ", &req),
                 PROTO_OK);
    CHECK_SPAN(req.protocol, "JSON");
    CHECK(req.owned != NULL);
    CHECK(hub_protocol_from_name(req.protocol, &p) && p == HUB_PROTOCOL_JSON); /* case-insensitive */
    handshake_request_release(&req);
    CHECK(req.owned == NULL);

    CHECK(!hub_protocol_from_name(SPAN_LIT("xml"), &p));
    CHECK(!hub_protocol_from_name(SPAN_LIT("jsonx"), &p));
    CHECK(hub_protocol_from_name(SPAN_LIT("MessagePack"), &p) && p == HUB_PROTOCOL_MSGPACK);
    CHECK(strcmp(hub_protocol_name(HUB_PROTOCOL_MSGPACK), "messagepack") == 0);

    /* failures: every one is "An unexpected error occurred during connection handshake." at the server */
    static const struct {
        const char *text;
        enum proto_status status;
    } bad[] = {
        { "{\"protocol\":\"json\",\"version\":1.0}", PROTO_ERR_TYPE }, /* the C++ client's old bug */
        { "{\"protocol\":\"json\",\"version\":\"1\"}", PROTO_ERR_TYPE },
        { "{\"protocol\":\"json\",\"version\":1e0}", PROTO_ERR_TYPE },
        { "{\"protocol\":\"json\",\"version\":4294967297}", PROTO_ERR_VALUE },
        { "{\"protocol\":\"json\"}", PROTO_ERR_MISSING },
        { "{\"protocol\":\"json\",\"version\":null}", PROTO_ERR_MISSING },
        { "{\"version\":1}", PROTO_ERR_MISSING },
        { "{\"protocol\":null,\"version\":1}", PROTO_ERR_TYPE },
        { "{\"protocol\":1,\"version\":1}", PROTO_ERR_TYPE },
        { "{\"protocol\":\"js\\u0000on\",\"version\":1}", PROTO_ERR_VALUE },
        { "{\"protocol\\u0000x\":\"json\",\"version\":1}", PROTO_ERR_VALUE }, /* not "protocol" */
        { "{\"protocol\":\"\xff\",\"version\":1}", PROTO_ERR_UTF8 },
        { "[\"json\",1]", PROTO_ERR_TYPE },
        { "", PROTO_ERR_SYNTAX },
        { "{\"protocol\":\"json\",\"version\":1", PROTO_ERR_SYNTAX },
        { "{\"protocol\":\"json\",\"version\":1}x", PROTO_ERR_SYNTAX },
        { "{\"type\":6}", PROTO_ERR_MISSING }, /* a hub message is not a handshake */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct proto_error err = { 0 };
        enum proto_status st = handshake_decode_request(bad[i].text, strlen(bad[i].text), &req, &err);
        CHECK_EQ_INT(st, bad[i].status);
        if (st != bad[i].status)
            fprintf(stderr, "  case %zu: %s (%s)\n", i, bad[i].text, err.detail ? err.detail : "-");
        CHECK(err.detail != NULL);
        CHECK(req.owned == NULL && req.protocol.ptr == NULL);
    }

    /* a nesting bomb in an ignored property */
    size_t n = 100000;
    char *bomb = malloc(n + 64);
    int k = sprintf(bomb, "{\"protocol\":\"json\",\"version\":1,\"x\":");
    memset(bomb + k, '[', n);
    bomb[k + n] = '\0';
    CHECK_EQ_INT(decode_request(bomb, &req), PROTO_ERR_TOO_DEEP);
    free(bomb);

    /* every prefix of a request fails cleanly */
    const char *full = "{\"protocol\":\"messagepack\",\"version\":1}";
    for (size_t cut = 0; cut < strlen(full); cut++) {
        char *copy = malloc(cut ? cut : 1);
        memcpy(copy, full, cut);
        CHECK(proto_status_is_error(handshake_decode_request(copy, cut, &req, NULL)));
        free(copy);
    }
}

static void test_request_encoding(void)
{
    struct buf out;
    buf_init(&out);
    CHECK_EQ_INT(handshake_encode_request(SPAN_LIT("json"), 1, &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{\"protocol\":\"json\",\"version\":1}" RS);
    buf_reset(&out);
    CHECK_EQ_INT(handshake_encode_request(SPAN_LIT("messagepack"), 1, &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{\"protocol\":\"messagepack\",\"version\":1}" RS);
    buf_reset(&out);
    CHECK_EQ_INT(handshake_encode_request(SPAN_LIT("json"), 2, &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{\"protocol\":\"json\",\"version\":2}" RS);
    buf_free(&out);
}

static void test_responses(void)
{
    struct handshake_response resp;
    struct proto_error err = { 0 };
    CHECK_EQ_INT(handshake_decode_response("{}", 2, &resp, NULL), PROTO_OK);
    CHECK(!span_is_set(resp.error));
    handshake_response_release(&resp);
    /* older servers added minorVersion: ignored */
    const char *old = "{\"minorVersion\":0}";
    CHECK_EQ_INT(handshake_decode_response(old, strlen(old), &resp, NULL), PROTO_OK);
    CHECK(!span_is_set(resp.error));
    handshake_response_release(&resp);

    const char *refused = "{\"error\":\"The protocol 'xml' is not supported.\"}";
    CHECK_EQ_INT(handshake_decode_response(refused, strlen(refused), &resp, NULL), PROTO_OK);
    CHECK_SPAN(resp.error, "The protocol 'xml' is not supported.");
    handshake_response_release(&resp);

    /* a hub message where the handshake response should be */
    const char *ping = "{\"type\":6}";
    CHECK_EQ_INT(handshake_decode_response(ping, strlen(ping), &resp, &err), PROTO_ERR_VALUE);
    CHECK(strcmp(err.detail, "Expected a handshake response from the server.") == 0);
    const char *late_type = "{\"error\":\"x\",\"type\":1}";
    CHECK_EQ_INT(handshake_decode_response(late_type, strlen(late_type), &resp, &err), PROTO_ERR_VALUE);
    CHECK(resp.owned == NULL && !span_is_set(resp.error));
    const char *null_error = "{\"error\":null}";
    CHECK_EQ_INT(handshake_decode_response(null_error, strlen(null_error), &resp, NULL), PROTO_ERR_TYPE);
    CHECK_EQ_INT(handshake_decode_response("", 0, &resp, NULL), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(handshake_decode_response("{", 1, &resp, NULL), PROTO_ERR_SYNTAX);

    /* E2: the response and the first hub message may share one buffer (section 3.3) */
    const char *stream = "{}" RS "{\"type\":6}" RS;
    struct span rec;
    size_t used;
    CHECK_EQ_INT(core_text_next_record(stream, strlen(stream), SIZE_MAX, &rec, &used, NULL), PROTO_OK);
    CHECK_EQ_INT(handshake_decode_response(rec.ptr, rec.len, &resp, NULL), PROTO_OK);
    CHECK_EQ_INT(used, 3);
    handshake_response_release(&resp);

    struct buf out;
    buf_init(&out);
    CHECK_EQ_INT(handshake_encode_response(SPAN_NONE, &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{}" RS);
    buf_reset(&out);
    CHECK_EQ_INT(handshake_encode_response(SPAN_LIT(""), &out, NULL), PROTO_OK); /* empty = success */
    CHECK_BYTES(out.data, out.len, "{}" RS);
    buf_reset(&out);
    CHECK_EQ_INT(handshake_encode_response(SPAN_LIT("The protocol 'xml' is not supported."), &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{\"error\":\"The protocol 'xml' is not supported.\"}" RS);
    buf_free(&out);
}

/* The texts of section 4, built and then sent the way E2's failure variant shows. */
static void test_error_texts(void)
{
    struct buf text, out;
    buf_init(&text);
    buf_init(&out);

    CHECK(handshake_text_protocol_unsupported(&text, SPAN_LIT("xml")));
    CHECK_BYTES(text.data, text.len, "The protocol 'xml' is not supported.");
    CHECK_EQ_INT(handshake_encode_response(buf_span(&text), &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{\"error\":\"The protocol 'xml' is not supported.\"}" RS);
    buf_reset(&text);
    buf_reset(&out);

    CHECK(handshake_text_version_unsupported(&text, SPAN_LIT("json"), 3));
    CHECK_BYTES(text.data, text.len, "The server does not support version 3 of the 'json' protocol.");
    buf_reset(&text);

    CHECK(handshake_text_transfer_format(&text, HUB_PROTOCOL_MSGPACK));
    CHECK_BYTES(text.data, text.len,
                "Cannot use the 'messagepack' protocol on the current transport. The transport does not "
                "support 'Binary' transfer format.");
    buf_reset(&text);

    CHECK_EQ_INT(handshake_encode_response(SPAN_LIT(HANDSHAKE_TEXT_CANCELED), &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{\"error\":\"Handshake was canceled.\"}" RS);
    buf_reset(&out);
    CHECK_EQ_INT(handshake_encode_response(SPAN_LIT(HANDSHAKE_TEXT_UNEXPECTED), &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{\"error\":\"An unexpected error occurred during connection handshake.\"}" RS);

    /* a protocol name with a quote is escaped in the JSON, not in the text */
    buf_reset(&out);
    CHECK(handshake_text_protocol_unsupported(&text, SPAN_LIT("x\"y")));
    CHECK_EQ_INT(handshake_encode_response(buf_span(&text), &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{\"error\":\"The protocol 'x\\\"y' is not supported.\"}" RS);
    buf_free(&text);
    buf_free(&out);
}

int main(void)
{
    test_requests();
    test_request_encoding();
    test_responses();
    test_error_texts();
    return test_main_result("test_handshake");
}
