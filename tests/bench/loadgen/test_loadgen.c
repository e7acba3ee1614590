/* test_loadgen.c - self-test of the load generator's pieces, with expected bytes taken from
 * RFC 6455 (sections 1.3 and 5.7), RFC 7230's chunked example, and the SignalR specs in
 * shared/specs (core-signalr.md section 12, legacy-signalr.md section 10). */
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "check.h"
#include "lg_hist.h"
#include "lg_http.h"
#include "lg_proc.h"
#include "lg_sig.h"
#include "lg_wheel.h"
#include "lg_ws.h"

/* ---- WebSocket ---- */

static void test_ws_accept(void)
{
    char accept[29];
    /* RFC 6455 section 1.3 works this example through (its 1.2 sample response shows a
     * different, inconsistent value). */
    lg_ws_accept_for_key("dGhlIHNhbXBsZSBub25jZQ==", accept);
    CHECK(strcmp(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0);
    char key[25];
    const uint8_t raw[16] = "the sample nonce";
    lg_ws_make_key(raw, key);
    CHECK(strcmp(key, "dGhlIHNhbXBsZSBub25jZQ==") == 0);
}

static void test_ws_encode(void)
{
    uint8_t out[32];
    size_t n = lg_ws_encode_client(out, LG_WS_TEXT, (const uint8_t *)"Hello", 5, 0x37fa213du);
    static const uint8_t expected[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    CHECK_EQ_INT(n, sizeof expected);
    CHECK(memcmp(out, expected, sizeof expected) == 0);

    /* In place, as the generator uses it: payload already at dst + header length. */
    uint8_t buf[40];
    memcpy(buf + 6, "Hello", 5);
    n = lg_ws_encode_client(buf, LG_WS_TEXT, buf + 6, 5, 0x37fa213du);
    CHECK(n == sizeof expected && memcmp(buf, expected, sizeof expected) == 0);

    /* 256-byte payload uses the 16-bit length form; 65536 the 64-bit one. */
    CHECK_EQ_INT(lg_ws_client_header_len(125), 6);
    CHECK_EQ_INT(lg_ws_client_header_len(256), 8);
    CHECK_EQ_INT(lg_ws_client_header_len(65536), 14);
    uint8_t *big = calloc(1, 65536 + 14);
    n = lg_ws_encode_client(big, LG_WS_BINARY, big + 14, 65536, 0);
    CHECK_EQ_INT(n, 65536 + 14);
    static const uint8_t hdr64[] = {0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0};
    CHECK(memcmp(big, hdr64, sizeof hdr64) == 0);
    free(big);
}

static void test_ws_decode(void)
{
    struct lg_ws_frame f;
    const char *detail;
    static const uint8_t hello[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
    CHECK_EQ_INT(lg_ws_decode_server_header(hello, 1, &f, &detail), 0);
    CHECK_EQ_INT(lg_ws_decode_server_header(hello, sizeof hello, &f, &detail), 1);
    CHECK(f.fin && f.opcode == LG_WS_TEXT && f.header_len == 2 && f.payload_len == 5);

    static const uint8_t first_fragment[] = {0x01, 0x03, 0x48, 0x65, 0x6c};
    CHECK_EQ_INT(lg_ws_decode_server_header(first_fragment, sizeof first_fragment, &f, &detail), 1);
    CHECK(!f.fin && f.opcode == LG_WS_TEXT);

    static const uint8_t len256[] = {0x82, 0x7E, 0x01, 0x00};
    CHECK_EQ_INT(lg_ws_decode_server_header(len256, 3, &f, &detail), 0);
    CHECK_EQ_INT(lg_ws_decode_server_header(len256, 4, &f, &detail), 1);
    CHECK(f.header_len == 4 && f.payload_len == 256 && f.opcode == LG_WS_BINARY);

    static const uint8_t len64k[] = {0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0};
    CHECK_EQ_INT(lg_ws_decode_server_header(len64k, sizeof len64k, &f, &detail), 1);
    CHECK(f.header_len == 10 && f.payload_len == 65536);

    static const uint8_t masked[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d};
    CHECK_EQ_INT(lg_ws_decode_server_header(masked, sizeof masked, &f, &detail), -1);
    static const uint8_t rsv[] = {0xC1, 0x00};
    CHECK_EQ_INT(lg_ws_decode_server_header(rsv, sizeof rsv, &f, &detail), -1);
    static const uint8_t long_ping[] = {0x89, 0x7E, 0x00, 0x80};
    CHECK_EQ_INT(lg_ws_decode_server_header(long_ping, sizeof long_ping, &f, &detail), -1);
    static const uint8_t frag_close[] = {0x08, 0x00};
    CHECK_EQ_INT(lg_ws_decode_server_header(frag_close, sizeof frag_close, &f, &detail), -1);
    static const uint8_t bad_op[] = {0x83, 0x00};
    CHECK_EQ_INT(lg_ws_decode_server_header(bad_op, sizeof bad_op, &f, &detail), -1);
}

/* ---- HTTP ---- */

static void test_http(void)
{
    struct lg_url u;
    const char *detail;
    CHECK_EQ_INT(lg_url_parse("http://127.0.0.1:5000/chat/", &u, &detail), 0);
    CHECK(u.ip == 0x7F000001u && u.port == 5000 && strcmp(u.path, "/chat") == 0);
    CHECK_EQ_INT(lg_url_parse("http://localhost", &u, &detail), 0);
    CHECK(u.port == 80 && u.path[0] == '\0');
    CHECK_EQ_INT(lg_url_parse("http://10.0.0.1:80", &u, &detail), -1);
    CHECK_EQ_INT(lg_url_parse("https://127.0.0.1", &u, &detail), -1);
    CHECK_EQ_INT(lg_url_parse("http://example.com/", &u, &detail), -1);

    char enc[128];
    /* connectionData of legacy-signalr.md section 10 (CD). */
    lg_url_encode(enc, "[{\"name\":\"chathub\"}]", 20);
    CHECK(strcmp(enc, "%5B%7B%22name%22%3A%22chathub%22%7D%5D") == 0);
    lg_url_encode(enc, "AQAAANCMnd8BFdERjHoAwE/Cl+sBAAAA5xq0Ww==", 40);
    CHECK(strcmp(enc, "AQAAANCMnd8BFdERjHoAwE%2FCl%2BsBAAAA5xq0Ww%3D%3D") == 0);

    struct lg_http_resp r;
    const char up[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Accept: s3pPLMBiTxaYnGfQvOTpXX6ywzw=\r\n\r\n\x81\x02{}";
    CHECK_EQ_INT(lg_http_parse_head(up, 20, &r, &detail), 0);
    long hl = lg_http_parse_head(up, sizeof up - 1, &r, &detail);
    CHECK_EQ_INT(hl, sizeof up - 1 - 4);
    CHECK(r.status == 101 && r.upgrade_websocket && strcmp(r.ws_accept, "s3pPLMBiTxaYnGfQvOTpXX6ywzw=") == 0);

    char cl[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    hl = lg_http_parse_head(cl, sizeof cl - 1, &r, &detail);
    CHECK(hl > 0 && r.status == 200 && r.content_length == 2);
    char *body;
    size_t blen;
    CHECK_EQ_INT(lg_http_body(&r, cl + hl, 1, 0, &body, &blen, &detail), 0);
    CHECK_EQ_INT(lg_http_body(&r, cl + hl, 2, 0, &body, &blen, &detail), 1);
    CHECK_BYTES(body, blen, "{}");

    char ch[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n";
    hl = lg_http_parse_head(ch, sizeof ch - 1, &r, &detail);
    CHECK(hl > 0 && r.chunked);
    size_t total = sizeof ch - 1 - (size_t)hl;
    CHECK_EQ_INT(lg_http_body(&r, ch + hl, total - 2, 0, &body, &blen, &detail), 0);
    CHECK_EQ_INT(lg_http_body(&r, ch + hl, total, 0, &body, &blen, &detail), 1);
    CHECK_BYTES(body, blen, "Wikipedia");

    char eof[] = "HTTP/1.0 200 OK\r\n\r\nabc";
    hl = lg_http_parse_head(eof, sizeof eof - 1, &r, &detail);
    CHECK_EQ_INT(lg_http_body(&r, eof + hl, 3, 0, &body, &blen, &detail), 0);
    CHECK_EQ_INT(lg_http_body(&r, eof + hl, 3, 1, &body, &blen, &detail), 1);
    CHECK_EQ_INT(blen, 3);

    CHECK_EQ_INT(lg_http_parse_head("SSH-2.0-x\r\n\r\n", 13, &r, &detail), -1);
}

/* ---- SignalR messages ---- */

static struct lg_sig_event events[16];
static int nevents;

static void collect(void *ctx, const struct lg_sig_event *ev)
{
    (void)ctx;
    if (nevents < 16)
        events[nevents++] = *ev;
}

static void test_sig_build(void)
{
    char buf[512];
    size_t n = lg_sig_ping(LG_PROTO_JSON, buf);
    CHECK_BYTES(buf, n, "{\"type\":6}\x1e");
    n = lg_sig_ping(LG_PROTO_MSGPACK, buf);
    CHECK(n == 3 && memcmp(buf, "\x02\x91\x06", 3) == 0);
    n = lg_sig_close(LG_PROTO_MSGPACK, buf);
    CHECK(n == 5 && memcmp(buf, "\x04\x93\x07\xc0\xc2", 5) == 0);
    n = lg_sig_close(LG_PROTO_JSON, buf);
    CHECK_BYTES(buf, n, "{\"type\":7}\x1e");
    CHECK_EQ_INT(lg_sig_ping(LG_PROTO_LEGACY, buf), 0);
    n = lg_sig_handshake(LG_PROTO_MSGPACK, buf);
    CHECK_BYTES(buf, n, "{\"protocol\":\"messagepack\",\"version\":1}\x1e");
    n = lg_sig_handshake(LG_PROTO_JSON, buf);
    CHECK_BYTES(buf, n, "{\"protocol\":\"json\",\"version\":1}\x1e");

    n = lg_sig_invocation(LG_PROTO_JSON, buf, "chathub", "Echo", 7, NULL, "hi", 2);
    CHECK_BYTES(buf, n, "{\"type\":1,\"invocationId\":\"7\",\"target\":\"Echo\",\"arguments\":[\"hi\"]}\x1e");
    n = lg_sig_invocation(LG_PROTO_LEGACY, buf, "chathub", "Echo", 7, NULL, "hi", 2);
    CHECK_BYTES(buf, n, "{\"H\":\"chathub\",\"M\":\"Echo\",\"A\":[\"hi\"],\"I\":\"7\"}");
    /* [1, {}, "0", "Echo", ["hi"]] in the 5-element form of core-signalr.md E4 (JS client). */
    n = lg_sig_invocation(LG_PROTO_MSGPACK, buf, "chathub", "Echo", 0, NULL, "hi", 2);
    static const uint8_t mp[] = {0x0e, 0x95, 0x01, 0x80, 0xa1, 0x30, 0xa4, 'E', 'c', 'h', 'o',
                                 0x91, 0xa2, 'h', 'i'};
    CHECK(n == sizeof mp && memcmp(buf, mp, sizeof mp) == 0);
    /* Two arguments (SendToGroup(group, message), JoinGroup in --group runs). */
    n = lg_sig_invocation(LG_PROTO_JSON, buf, "chathub", "SendToGroup", 9, "g1", "t=5;", 4);
    CHECK_BYTES(buf, n, "{\"type\":1,\"invocationId\":\"9\",\"target\":\"SendToGroup\",\"arguments\":[\"g1\",\"t=5;\"]}\x1e");
    n = lg_sig_invocation(LG_PROTO_MSGPACK, buf, "chathub", "Echo", 0, "a", "hi", 2);
    static const uint8_t mp2[] = {0x10, 0x95, 0x01, 0x80, 0xa1, 0x30, 0xa4, 'E', 'c', 'h', 'o',
                                  0x92, 0xa1, 'a', 0xa2, 'h', 'i'};
    CHECK(n == sizeof mp2 && memcmp(buf, mp2, sizeof mp2) == 0);

    /* A 300-byte argument needs a two-byte VarInt (core-signalr.md 3.2: ac 02 = 300). */
    char arg[300];
    memset(arg, 'x', sizeof arg);
    char *big = malloc(sizeof arg + LG_SIG_OVERHEAD);
    n = lg_sig_invocation(LG_PROTO_MSGPACK, big, "h", "Echo", 0, NULL, arg, sizeof arg);
    size_t hdr, body;
    CHECK_EQ_INT(lg_sig_split_varint((uint8_t *)big, n, &hdr, &body), 1);
    CHECK(hdr == 2 && hdr + body == n);
    free(big);
}

static void test_sig_split(void)
{
    size_t hdr, body;
    static const uint8_t v53[] = {0x35};
    CHECK_EQ_INT(lg_sig_split_varint(v53, 1, &hdr, &body), 0);
    CHECK(hdr == 1 && body == 53);
    static const uint8_t v5248[] = {0x80, 0x29};
    lg_sig_split_varint(v5248, 2, &hdr, &body);
    CHECK(hdr == 2 && body == 5248);
    static const uint8_t vmax[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x07};
    lg_sig_split_varint(vmax, 5, &hdr, &body);
    CHECK(hdr == 5 && body == 0x7FFFFFFF);
    static const uint8_t vbad[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x08};
    CHECK_EQ_INT(lg_sig_split_varint(vbad, 5, &hdr, &body), -1);
    static const uint8_t vpart[] = {0x80};
    CHECK_EQ_INT(lg_sig_split_varint(vpart, 1, &hdr, &body), 0);
    static const uint8_t whole[] = {0x02, 0x91, 0x06};
    CHECK_EQ_INT(lg_sig_split_varint(whole, 3, &hdr, &body), 1);

    CHECK_EQ_INT(lg_sig_split_json("{}\x1e{\"type\":6}", 14), 2);
    CHECK_EQ_INT(lg_sig_split_json("{\"type\":6", 9), -1);
}

static void test_sig_core_json(void)
{
    char text[120];
    CHECK_EQ_INT(lg_sig_parse_handshake("{}", 2, text, sizeof text), 0);
    const char *refused = "{\"error\":\"The protocol 'xml' is not supported.\"}";
    CHECK_EQ_INT(lg_sig_parse_handshake(refused, strlen(refused), text, sizeof text), -1);
    CHECK(strcmp(text, "The protocol 'xml' is not supported.") == 0);
    CHECK_EQ_INT(lg_sig_parse_handshake("{\"type\":6}", 10, text, sizeof text), -1);

    const char *cases[] = {
        "{\"type\":3,\"invocationId\":\"0\",\"result\":42}",
        "{\"type\":3,\"invocationId\":\"2\",\"error\":\"An unexpected error occurred invoking 'Add' on the server.\"}",
        "{\"type\":1,\"target\":\"ReceiveMessage\",\"arguments\":[\"bob\",\"hi\"]}",
        "{\"type\":1,\"target\":\"broadcast\",\"arguments\":[\"t=123456;xxxx\"]}",
        "{\"type\":6}",
        "{\"type\":7,\"error\":\"Connection closed with an error.\",\"allowReconnect\":true}",
        "{\"type\":99}",
        "[1,2]",
        "{\"type\":1,\"target\":\"groupMessage\",\"arguments\":[\"g1\",\"t=99;xx\"]}",
    };
    nevents = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        lg_sig_parse_core_json(cases[i], strlen(cases[i]), collect, NULL);
    CHECK_EQ_INT(nevents, 9);
    CHECK(events[8].kind == LG_SIG_BROADCAST && events[8].ts_ok && events[8].ts == 99);
    CHECK(events[0].kind == LG_SIG_COMPLETION && events[0].id_ok && events[0].id == 0 && !events[0].is_error);
    CHECK(events[1].kind == LG_SIG_COMPLETION && events[1].id == 2 && events[1].is_error);
    CHECK(strcmp(events[1].text, "An unexpected error occurred invoking 'Add' on the server.") == 0);
    CHECK(events[2].kind == LG_SIG_INVOCATION);
    CHECK(events[3].kind == LG_SIG_BROADCAST && events[3].ts_ok && events[3].ts == 123456);
    CHECK(events[4].kind == LG_SIG_PING);
    CHECK(events[5].kind == LG_SIG_CLOSE && strcmp(events[5].text, "Connection closed with an error.") == 0);
    CHECK(events[6].kind == LG_SIG_OTHER);
    CHECK(events[7].kind == LG_SIG_BAD);
}

static void test_sig_core_msgpack(void)
{
    msgpack_zone zone;
    msgpack_zone_init(&zone, 1024);
    /* core-signalr.md E4 (bodies, VarInt prefix removed), E5, E6, E7. */
    static const uint8_t done42[] = {0x95, 0x03, 0x80, 0xa1, 0x30, 0x03, 0x2a};
    static const uint8_t boom[] = {0x95, 0x03, 0x80, 0xa1, 0x30, 0x01, 0xa4, 0x62, 0x6f, 0x6f, 0x6d};
    static const uint8_t recv_msg[] = {0x96, 0x01, 0x80, 0xc0, 0xae, 0x52, 0x65, 0x63, 0x65, 0x69, 0x76, 0x65,
                                       0x4d, 0x65, 0x73, 0x73, 0x61, 0x67, 0x65, 0x92, 0xa3, 0x62, 0x6f, 0x62,
                                       0xa2, 0x68, 0x69, 0x90};
    static const uint8_t ping[] = {0x91, 0x06};
    static const uint8_t close_empty[] = {0x93, 0x07, 0xc0, 0xc2};
    /* [1, {}, nil, "broadcast", ["t=77;x"], []] */
    static const uint8_t bcast[] = {0x96, 0x01, 0x80, 0xc0, 0xa9, 'b', 'r', 'o', 'a', 'd', 'c', 'a', 's', 't',
                                    0x91, 0xa6, 't', '=', '7', '7', ';', 'x', 0x90};
    static const uint8_t not_array[] = {0xa1, 0x30};
    nevents = 0;
    lg_sig_parse_core_msgpack(done42, sizeof done42, &zone, collect, NULL);
    lg_sig_parse_core_msgpack(boom, sizeof boom, &zone, collect, NULL);
    lg_sig_parse_core_msgpack(recv_msg, sizeof recv_msg, &zone, collect, NULL);
    lg_sig_parse_core_msgpack(ping, sizeof ping, &zone, collect, NULL);
    lg_sig_parse_core_msgpack(close_empty, sizeof close_empty, &zone, collect, NULL);
    lg_sig_parse_core_msgpack(bcast, sizeof bcast, &zone, collect, NULL);
    lg_sig_parse_core_msgpack(not_array, sizeof not_array, &zone, collect, NULL);
    CHECK_EQ_INT(nevents, 7);
    CHECK(events[0].kind == LG_SIG_COMPLETION && events[0].id_ok && events[0].id == 0 && !events[0].is_error);
    CHECK(events[1].kind == LG_SIG_COMPLETION && events[1].is_error && strcmp(events[1].text, "boom") == 0);
    CHECK(events[2].kind == LG_SIG_INVOCATION);
    CHECK(events[3].kind == LG_SIG_PING);
    CHECK(events[4].kind == LG_SIG_CLOSE && events[4].text[0] == '\0');
    CHECK(events[5].kind == LG_SIG_BROADCAST && events[5].ts_ok && events[5].ts == 77);
    CHECK(events[6].kind == LG_SIG_BAD);
    msgpack_zone_destroy(&zone);
}

static void test_sig_legacy(void)
{
    const char *cases[] = {
        "{\"C\":\"d-5C1B2A9F-A,0|B,0|C,1\",\"S\":1,\"M\":[]}",
        "{\"R\":3,\"I\":\"0\"}",
        "{\"I\":\"1\",\"E\":\"There was an error invoking Hub method 'chathub.Fail'.\"}",
        ("{\"C\":\"d-5C1B2A9F-A,1|B,0|C,1\",\"M\":[{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"bob\",\"hello\"]},"
         "{\"H\":\"ChatHub\",\"M\":\"broadcast\",\"A\":[\"t=99;x\"]}]}"),
        "{}",
        "{\"I\":\"P|2\",\"P\":{\"I\":\"2\",\"D\":50}}",
        /* a group send of the service app's Bench hub: the stamp is the second argument */
        "{\"C\":\"d-5C1B2A9F-A,2|B,0|C,1\",\"M\":[{\"H\":\"bench\",\"M\":\"groupMessage\",\"A\":[\"g1\",\"t=123;xx\"]}]}",
    };
    nevents = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        lg_sig_parse_legacy(cases[i], strlen(cases[i]), collect, NULL);
    CHECK_EQ_INT(nevents, 8);
    CHECK(events[0].kind == LG_SIG_INIT);
    CHECK(events[1].kind == LG_SIG_COMPLETION && events[1].id_ok && events[1].id == 0 && !events[1].is_error);
    CHECK(events[2].kind == LG_SIG_COMPLETION && events[2].id == 1 && events[2].is_error);
    CHECK(events[3].kind == LG_SIG_INVOCATION);
    CHECK(events[4].kind == LG_SIG_BROADCAST && events[4].ts == 99);
    CHECK(events[5].kind == LG_SIG_KEEPALIVE);
    CHECK(events[6].kind == LG_SIG_OTHER);
    CHECK(events[7].kind == LG_SIG_BROADCAST && events[7].ts_ok && events[7].ts == 123);

    char text[160], *token;
    const char *legacy_neg =
        "{\"Url\":\"/signalr\",\"ConnectionToken\":\"AQAAANCMnd8BFdERjHoAwE/Cl+sBAAAA5xq0Ww==\","
        "\"ConnectionId\":\"9a7c7b1e-5e1c-4f5e-b1b7-3f2c9e0a6d11\",\"KeepAliveTimeout\":20.0,"
        "\"DisconnectTimeout\":30.0,\"ConnectionTimeout\":110.0,\"TryWebSockets\":true,"
        "\"ProtocolVersion\":\"2.0\",\"TransportConnectTimeout\":5.0,\"LongPollDelay\":0.0}";
    const char *core_neg =
        "{\"negotiateVersion\":1,\"connectionId\":\"lO-PZ9Xs7AYT3Y2vG0zLhw\",\"connectionToken\":"
        "\"2H3c0x3v9d3yXz4GnXCq5A\",\"availableTransports\":[{\"transport\":\"WebSockets\","
        "\"transferFormats\":[\"Text\",\"Binary\"]}]}";
    CHECK_EQ_INT(lg_sig_parse_legacy_negotiate(legacy_neg, strlen(legacy_neg), &token, text, sizeof text), 0);
    CHECK(token && strcmp(token, "AQAAANCMnd8BFdERjHoAwE/Cl+sBAAAA5xq0Ww==") == 0);
    free(token);
    CHECK_EQ_INT(lg_sig_parse_legacy_negotiate(core_neg, strlen(core_neg), &token, text, sizeof text), -1);
    CHECK(token == NULL);
    CHECK_EQ_INT(lg_sig_parse_core_negotiate(core_neg, strlen(core_neg), &token, text, sizeof text), 0);
    CHECK(token && strcmp(token, "2H3c0x3v9d3yXz4GnXCq5A") == 0);
    free(token);
    CHECK_EQ_INT(lg_sig_parse_core_negotiate(legacy_neg, strlen(legacy_neg), &token, text, sizeof text), -1);
    const char *neg_err = "{\"error\":\"The client requested a non-integer protocol version.\"}";
    CHECK_EQ_INT(lg_sig_parse_core_negotiate(neg_err, strlen(neg_err), &token, text, sizeof text), -1);
    CHECK(strcmp(text, "The client requested a non-integer protocol version.") == 0);

    const char *started = "{ \"Response\": \"started\" }";
    CHECK_EQ_INT(lg_sig_parse_legacy_start(started, strlen(started), text, sizeof text), 0);
    CHECK_EQ_INT(lg_sig_parse_legacy_start("{}", 2, text, sizeof text), -1);
}

/* ---- histogram ---- */

static void test_hist(void)
{
    /* Every value lies inside its bucket, and buckets above 256 are at most 1/128 wide. */
    for (uint64_t v = 0; v < (UINT64_C(1) << 40); v = v * 3 / 2 + 1) {
        uint32_t b = lg_hist_bucket_of(v);
        uint64_t lo = lg_hist_bucket_low(b), hi = lg_hist_bucket_high(b);
        CHECK(lo <= v && v <= hi);
        CHECK(v < 256 ? lo == hi : (hi - lo + 1) * 128 <= lo);
        CHECK(b + 1 >= LG_HIST_BUCKETS || lg_hist_bucket_low(b + 1) == hi + 1);
    }
    CHECK(lg_hist_bucket_of(UINT64_MAX) == LG_HIST_BUCKETS - 1);

    struct lg_hist *h = malloc(sizeof *h), *g = malloc(sizeof *g);
    lg_hist_init(h);
    CHECK_EQ_INT(lg_hist_percentile(h, 50), 0);
    for (uint64_t v = 1; v <= 1000; v++)
        lg_hist_record(h, v);
    CHECK_EQ_INT(h->count, 1000);
    CHECK_EQ_INT(h->min, 1);
    CHECK_EQ_INT(h->max, 1000);
    uint64_t p50 = lg_hist_percentile(h, 50), p99 = lg_hist_percentile(h, 99);
    CHECK(p50 >= 500 && p50 <= 500 + 500 / 128 + 1);
    CHECK(p99 >= 990 && p99 <= 990 + 990 / 128 + 1);
    CHECK_EQ_INT(lg_hist_percentile(h, 100), 1000);
    CHECK(lg_hist_mean(h) > 500.4 && lg_hist_mean(h) < 500.6);

    /* Merging two halves gives the same percentiles as recording everything in one. */
    lg_hist_init(g);
    struct lg_hist *a = malloc(sizeof *a);
    lg_hist_init(a);
    for (uint64_t v = 1; v <= 1000; v++)
        lg_hist_record(v % 2 ? g : a, v * 37);
    lg_hist_merge(g, a);
    lg_hist_init(a);
    for (uint64_t v = 1; v <= 1000; v++)
        lg_hist_record(a, v * 37);
    CHECK(lg_hist_percentile(g, 90) == lg_hist_percentile(a, 90));
    CHECK(g->count == a->count && g->max == a->max && g->min == a->min);
    free(a);
    free(g);
    free(h);
}

/* ---- timer wheel ---- */

static void test_wheel(void)
{
    struct lg_wheel w;
    CHECK_EQ_INT(lg_wheel_init(&w, 8, 1000), 0);
    uint32_t out[8];
    lg_wheel_arm(&w, 0, 1005);
    lg_wheel_arm(&w, 1, 1005 + LG_WHEEL_BUCKETS); /* same bucket, one lap later */
    lg_wheel_arm(&w, 2, 1010);
    lg_wheel_arm(&w, 3, 900);                     /* past: fires on the next advance */
    lg_wheel_cancel(&w, 2);
    CHECK_EQ_INT(w.armed, 3);
    CHECK_EQ_INT(lg_wheel_advance(&w, 1004, out, 8), 1);
    CHECK_EQ_INT(out[0], 3);
    CHECK_EQ_INT(lg_wheel_advance(&w, 1020, out, 8), 1);
    CHECK_EQ_INT(out[0], 0);
    CHECK(!lg_wheel_is_armed(&w, 0) && lg_wheel_is_armed(&w, 1));
    CHECK_EQ_INT(lg_wheel_advance(&w, 1004 + LG_WHEEL_BUCKETS, out, 8), 0);
    CHECK_EQ_INT(lg_wheel_advance(&w, 1000 + 3 * LG_WHEEL_BUCKETS, out, 8), 1);
    CHECK_EQ_INT(out[0], 1);
    /* Re-arming moves a timer; a full output array resumes where it stopped. */
    uint64_t base = w.now_ms;
    for (uint32_t s = 0; s < 8; s++)
        lg_wheel_arm(&w, s, base + 50);
    lg_wheel_arm(&w, 7, base + 60);
    CHECK_EQ_INT(lg_wheel_advance(&w, base + 55, out, 4), 4);
    CHECK_EQ_INT(lg_wheel_advance(&w, base + 55, out, 4), 3);
    CHECK_EQ_INT(w.armed, 1);
    lg_wheel_free(&w);
}

/* ---- /proc ---- */

static void test_proc(void)
{
    uint64_t ut = 0, st = 0;
    const char *stat = "1234 (my (odd) prog) S 1 2 3 4 5 6 7 8 9 10 111 222 13 14 20 0 1 0 5 6 7";
    CHECK_EQ_INT(lg_proc_parse_stat(stat, &ut, &st), 0);
    CHECK(ut == 111 && st == 222);
    CHECK_EQ_INT(lg_proc_parse_stat("garbage", &ut, &st), -1);
    struct lg_proc_sample s = lg_proc_sample(0);
    CHECK(s.ok && s.rss_kb > 0);
}

int main(void)
{
    test_ws_accept();
    test_ws_encode();
    test_ws_decode();
    test_http();
    test_sig_build();
    test_sig_split();
    test_sig_core_json();
    test_sig_core_msgpack();
    test_sig_legacy();
    test_hist();
    test_wheel();
    test_proc();
    return test_main_result("test_loadgen");
}
