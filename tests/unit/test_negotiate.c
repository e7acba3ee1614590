/* test_negotiate.c - negotiate on both sides, against specs/core-signalr.md
 * sections 1.2-1.4 and E1, and NegotiateProtocol.cs / HttpConnectionDispatcher.cs. */
#include <stdlib.h>

#include "check.h"
#include "protocol/negotiate.h"

#define CHECK_SPAN(s, text) CHECK_BYTES((s).ptr, (s).len, text)

/* E1's body, which the spec gives with Content-Length: 316. */
static const char e1_body[] =
    "{\"negotiateVersion\":1,\"connectionId\":\"lO-PZ9Xs7AYT3Y2vG0zLhw\",\"connectionToken\":\"2H3c0x3v9d3yXz4GnXCq5A\","
    "\"availableTransports\":[{\"transport\":\"WebSockets\",\"transferFormats\":[\"Text\",\"Binary\"]},"
    "{\"transport\":\"ServerSentEvents\",\"transferFormats\":[\"Text\"]},"
    "{\"transport\":\"LongPolling\",\"transferFormats\":[\"Text\",\"Binary\"]}]}";

static enum proto_status parse_version(const char *value, int min, int *version, struct buf *text)
{
    buf_reset(text);
    return negotiate_parse_version(span_from_cstr(value), min, version, text, NULL);
}

static void test_version_query(void)
{
    struct buf text;
    buf_init(&text);
    int v = -1;
    CHECK_EQ_INT(parse_version(NULL, 0, &v, &text), PROTO_OK);
    CHECK_EQ_INT(v, 0);
    CHECK_EQ_INT(parse_version("1", 0, &v, &text), PROTO_OK);
    CHECK_EQ_INT(v, 1);
    CHECK_EQ_INT(parse_version("0", 0, &v, &text), PROTO_OK);
    CHECK_EQ_INT(v, 0);
    CHECK_EQ_INT(parse_version("2", 0, &v, &text), PROTO_OK); /* answered as 1 */
    CHECK_EQ_INT(v, 1);
    CHECK_EQ_INT(parse_version("2147483647", 0, &v, &text), PROTO_OK);
    CHECK_EQ_INT(v, 1);
    /* int.TryParse accepts white space around and a sign */
    CHECK_EQ_INT(parse_version(" +1 ", 0, &v, &text), PROTO_OK);
    CHECK_EQ_INT(v, 1);
    CHECK_EQ_INT(parse_version("007", 0, &v, &text), PROTO_OK);
    CHECK_EQ_INT(v, 1);

    const char *non_integer[] = { "x", "", " ", "1.0", "1e0", "0x1", "2147483648", "1,1", "+", "1 2" };
    for (size_t i = 0; i < sizeof non_integer / sizeof non_integer[0]; i++) {
        CHECK_EQ_INT(parse_version(non_integer[i], 0, &v, &text), PROTO_ERR_VALUE);
        CHECK_BYTES(text.data, text.len, "The client requested a non-integer protocol version.");
    }
    CHECK_EQ_INT(parse_version("-1", 0, &v, &text), PROTO_ERR_VALUE);
    CHECK_BYTES(text.data, text.len, "The client requested version '-1', but the server does not support this version.");
    CHECK_EQ_INT(parse_version("0", 1, &v, &text), PROTO_ERR_VALUE);
    CHECK_BYTES(text.data, text.len, "The client requested version '0', but the server does not support this version.");
    CHECK_EQ_INT(parse_version(NULL, 1, &v, &text), PROTO_ERR_VALUE);
    CHECK_BYTES(text.data, text.len, "The client requested version '0', but the server does not support this version.");
    CHECK_EQ_INT(parse_version("-2147483648", 0, &v, &text), PROTO_ERR_VALUE);
    CHECK_BYTES(text.data, text.len,
                "The client requested version '-2147483648', but the server does not support this version.");
    buf_free(&text);

    CHECK(negotiate_query_bool(SPAN_LIT("true")));
    CHECK(negotiate_query_bool(SPAN_LIT("True")));
    CHECK(negotiate_query_bool(SPAN_LIT(" TRUE ")));
    CHECK(!negotiate_query_bool(SPAN_LIT("false")));
    CHECK(!negotiate_query_bool(SPAN_LIT("1")));
    CHECK(!negotiate_query_bool(SPAN_LIT("")));
    CHECK(!negotiate_query_bool(SPAN_NONE));
}

static void test_server_bodies(void)
{
    struct buf out;
    buf_init(&out);
    struct negotiate_reply r = {
        .version = 1,
        .connection_id = SPAN_LIT("lO-PZ9Xs7AYT3Y2vG0zLhw"),
        .connection_token = SPAN_LIT("2H3c0x3v9d3yXz4GnXCq5A"),
        .transports = NEGOTIATE_TRANSPORT_ALL,
    };
    CHECK_EQ_INT(negotiate_encode_response(&r, &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len, e1_body);
    CHECK_EQ_INT(out.len, 316);

    /* stateful reconnect asked and allowed: first property */
    buf_reset(&out);
    r.use_stateful_reconnect = true;
    CHECK_EQ_INT(negotiate_encode_response(&r, &out, NULL), PROTO_OK);
    char stateful[400];
    snprintf(stateful, sizeof stateful, "{\"useStatefulReconnect\":true,%s", e1_body + 1);
    CHECK_BYTES(out.data, out.len, stateful);

    /* v0: no connectionToken */
    buf_reset(&out);
    r.use_stateful_reconnect = false;
    r.version = 0;
    r.transports = NEGOTIATE_TRANSPORT_LONG_POLLING | NEGOTIATE_TRANSPORT_WEBSOCKETS;
    CHECK_EQ_INT(negotiate_encode_response(&r, &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len,
                "{\"negotiateVersion\":0,\"connectionId\":\"lO-PZ9Xs7AYT3Y2vG0zLhw\",\"availableTransports\":["
                "{\"transport\":\"WebSockets\",\"transferFormats\":[\"Text\",\"Binary\"]},"
                "{\"transport\":\"LongPolling\",\"transferFormats\":[\"Text\",\"Binary\"]}]}");

    /* nothing offered is still an array; a redirect carries url + accessToken */
    buf_reset(&out);
    struct negotiate_reply redirect = { .version = 1,
                                        .url = SPAN_LIT("https://svc/chat?hub=x"),
                                        .access_token = SPAN_LIT("tok\"en") };
    CHECK_EQ_INT(negotiate_encode_response(&redirect, &out, NULL), PROTO_OK);
    CHECK_BYTES(out.data, out.len,
                "{\"negotiateVersion\":1,\"url\":\"https://svc/chat?hub=x\",\"accessToken\":\"tok\\\"en\","
                "\"availableTransports\":[]}");

    /* E1 version error */
    buf_reset(&out);
    CHECK_EQ_INT(negotiate_encode_error(SPAN_LIT("The client requested a non-integer protocol version."), &out, NULL),
                 PROTO_OK);
    CHECK_BYTES(out.data, out.len, "{\"error\":\"The client requested a non-integer protocol version.\"}");
    buf_free(&out);
}

static enum proto_status decode(const char *body, struct negotiate_response *r, struct proto_error *err)
{
    return negotiate_decode_response(body, strlen(body), r, err);
}

static void test_client_decode(void)
{
    struct negotiate_response r;
    /* E1, decoded from a copy that is freed before the response is used */
    char *copy = strdup(e1_body);
    CHECK_EQ_INT(negotiate_decode_response(copy, strlen(copy), &r, NULL), PROTO_OK);
    memset(copy, 'x', strlen(copy));
    free(copy);
    CHECK_EQ_INT(r.version, 1);
    CHECK_SPAN(r.connection_id, "lO-PZ9Xs7AYT3Y2vG0zLhw");
    CHECK_SPAN(r.connection_token, "2H3c0x3v9d3yXz4GnXCq5A");
    CHECK(!span_is_set(r.error) && !span_is_set(r.url) && !span_is_set(r.access_token));
    CHECK(!r.use_stateful_reconnect);
    CHECK(r.has_transports);
    CHECK_EQ_INT(r.transport_count, 3);
    CHECK_EQ_INT(r.transports[0].transport, NEGOTIATE_TRANSPORT_WEBSOCKETS);
    CHECK_EQ_INT(r.transports[0].formats, NEGOTIATE_FORMAT_TEXT | NEGOTIATE_FORMAT_BINARY);
    CHECK_SPAN(r.transports[1].name, "ServerSentEvents");
    CHECK_EQ_INT(r.transports[1].transport, NEGOTIATE_TRANSPORT_SSE);
    CHECK_EQ_INT(r.transports[1].formats, NEGOTIATE_FORMAT_TEXT);
    CHECK_EQ_INT(r.transports[2].transport, NEGOTIATE_TRANSPORT_LONG_POLLING);
    negotiate_response_release(&r);
    CHECK(r.strings == NULL);

    /* v0 without token; stateful; unknown properties and transports; escapes */
    const char *v0 = "{\"useStatefulReconnect\":true,\"connectionId\":\"a\\u002fb\",\"tokenLifetimeSeconds\":60,"
                     "\"availableTransports\":[\"junk\",{\"transport\":\"HttpStreaming\",\"transferFormats\":[\"Text\",\"Morse\"],\"x\":1}]}";
    CHECK_EQ_INT(decode(v0, &r, NULL), PROTO_OK);
    CHECK_EQ_INT(r.version, 0);
    CHECK(r.use_stateful_reconnect);
    CHECK_SPAN(r.connection_id, "a/b");
    CHECK(!span_is_set(r.connection_token));
    CHECK_EQ_INT(r.transport_count, 1);
    CHECK_SPAN(r.transports[0].name, "HttpStreaming");
    CHECK_EQ_INT(r.transports[0].transport, 0);
    CHECK_EQ_INT(r.transports[0].formats, NEGOTIATE_FORMAT_TEXT);
    negotiate_response_release(&r);

    /* error: nothing else required */
    CHECK_EQ_INT(decode("{\"error\":\"The client requested a non-integer protocol version.\"}", &r, NULL), PROTO_OK);
    CHECK_SPAN(r.error, "The client requested a non-integer protocol version.");
    negotiate_response_release(&r);

    /* redirect (Azure SignalR style): url + accessToken, nothing else required */
    CHECK_EQ_INT(decode("{\"url\":\"https://x.service.signalr.net/client/?hub=chat\",\"accessToken\":\"eyJ\"}", &r, NULL),
                 PROTO_OK);
    CHECK_SPAN(r.url, "https://x.service.signalr.net/client/?hub=chat");
    CHECK_SPAN(r.access_token, "eyJ");
    negotiate_response_release(&r);

    /* negotiateVersion null is 0; an empty transport list is present */
    CHECK_EQ_INT(decode("{\"negotiateVersion\":null,\"connectionId\":\"c\",\"availableTransports\":[]}", &r, NULL),
                 PROTO_OK);
    CHECK_EQ_INT(r.version, 0);
    CHECK(r.has_transports && r.transport_count == 0);
    negotiate_response_release(&r);

    /* classic ASP.NET SignalR answers its own negotiate */
    struct proto_error err = { 0 };
    const char *legacy = "{\"Url\":\"/signalr\",\"ConnectionToken\":\"x\",\"ConnectionId\":\"y\",\"ProtocolVersion\":\"1.5\"}";
    CHECK_EQ_INT(decode(legacy, &r, &err), PROTO_ERR_VALUE);
    CHECK(strcmp(err.detail, "Detected a connection attempt to an ASP.NET SignalR Server. This client only supports "
                             "connecting to an ASP.NET Core SignalR Server. See "
                             "https://aka.ms/signalr-core-differences for details.") == 0);
    CHECK(r.strings == NULL);

    static const struct {
        const char *text;
        enum proto_status status;
    } bad[] = {
        { "{\"negotiateVersion\":1,\"availableTransports\":[]}", PROTO_ERR_MISSING },
        { "{\"negotiateVersion\":1,\"connectionId\":\"c\",\"availableTransports\":[]}", PROTO_ERR_MISSING },
        { "{\"negotiateVersion\":1,\"connectionId\":\"c\",\"connectionToken\":\"t\"}", PROTO_ERR_MISSING },
        { "{\"connectionId\":\"c\",\"availableTransports\":[{\"transferFormats\":[]}]}", PROTO_ERR_MISSING },
        { "{\"connectionId\":\"c\",\"availableTransports\":[{\"transport\":\"WebSockets\"}]}", PROTO_ERR_MISSING },
        { "{\"connectionId\":\"c\",\"availableTransports\":[{\"transport\":null,\"transferFormats\":[]}]}", PROTO_ERR_TYPE },
        { "{\"connectionId\":\"c\",\"availableTransports\":[{\"transport\":\"L\",\"transferFormats\":[1]}]}", PROTO_ERR_TYPE },
        { "{\"connectionId\":\"c\",\"availableTransports\":[{\"transport\":\"L\",\"transferFormats\":\"Text\"}]}", PROTO_ERR_TYPE },
        { "{\"connectionId\":\"c\",\"availableTransports\":[[]]}", PROTO_ERR_TYPE },
        { "{\"connectionId\":\"c\",\"availableTransports\":{}}", PROTO_ERR_TYPE },
        { "{\"connectionId\":null,\"availableTransports\":[]}", PROTO_ERR_TYPE },
        { "{\"connectionId\":1,\"availableTransports\":[]}", PROTO_ERR_TYPE },
        { "{\"error\":null}", PROTO_ERR_TYPE },
        { "{\"url\":false}", PROTO_ERR_TYPE },
        { "{\"negotiateVersion\":\"1\",\"connectionId\":\"c\",\"availableTransports\":[]}", PROTO_ERR_TYPE },
        { "{\"negotiateVersion\":1.5,\"connectionId\":\"c\",\"availableTransports\":[]}", PROTO_ERR_TYPE },
        { "{\"useStatefulReconnect\":\"true\",\"connectionId\":\"c\",\"availableTransports\":[]}", PROTO_ERR_TYPE },
        { "{\"connectionId\":\"c\\u0000\",\"availableTransports\":[]}", PROTO_ERR_VALUE },
        { "{\"url\\u0000\":\"http://h/\",\"connectionId\":\"c\",\"availableTransports\":[]}", PROTO_ERR_VALUE },
        { "{\"connectionId\":\"\xe2\x82\",\"availableTransports\":[]}", PROTO_ERR_UTF8 },
        { "", PROTO_ERR_SYNTAX },
        { "[]", PROTO_ERR_TYPE },
        { "<html>", PROTO_ERR_TYPE },
        { "{\"connectionId\":\"c\",\"availableTransports\":[]", PROTO_ERR_SYNTAX },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct proto_error e = { 0 };
        enum proto_status st = decode(bad[i].text, &r, &e);
        CHECK_EQ_INT(st, bad[i].status);
        if (st != bad[i].status)
            fprintf(stderr, "  case %zu: %s (%s)\n", i, bad[i].text, e.detail ? e.detail : "-");
        CHECK(e.detail != NULL);
        CHECK(r.strings == NULL);
    }

    /* more transports than the fixed array holds */
    struct buf many;
    buf_init(&many);
    buf_append_cstr(&many, "{\"connectionId\":\"c\",\"availableTransports\":[");
    for (int i = 0; i <= NEGOTIATE_MAX_TRANSPORTS; i++)
        buf_append_cstr(&many, i ? ",{\"transport\":\"LongPolling\",\"transferFormats\":[]}"
                                 : "{\"transport\":\"LongPolling\",\"transferFormats\":[]}");
    buf_append_cstr(&many, "]}");
    CHECK_EQ_INT(negotiate_decode_response(many.data, many.len, &r, NULL), PROTO_ERR_TOO_LARGE);
    buf_free(&many);

    /* nesting bomb in an unknown property */
    size_t n = 100000;
    char *bomb = malloc(n + 32);
    memcpy(bomb, "{\"connectionId\":\"c\",\"x\":", 24);
    memset(bomb + 24, '[', n);
    CHECK_EQ_INT(negotiate_decode_response(bomb, n + 24, &r, NULL), PROTO_ERR_TOO_DEEP);
    free(bomb);

    /* every prefix of E1 fails cleanly */
    for (size_t cut = 0; cut < sizeof e1_body - 1; cut++) {
        char *part = malloc(cut ? cut : 1);
        memcpy(part, e1_body, cut);
        CHECK(proto_status_is_error(negotiate_decode_response(part, cut, &r, NULL)));
        free(part);
    }
}

int main(void)
{
    test_version_query();
    test_server_bodies();
    test_client_decode();
    return test_main_result("test_negotiate");
}
