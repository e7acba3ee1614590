/* test_legacy_negotiate.c - clientProtocol resolution and the negotiate body.
 *
 * Expected bodies are legacy-signalr.md 10.1; version rules are those of
 * ProtocolResolver (clamp to [1.2, 2.0], 1.2 when unparseable) applied to
 * System.Version parsing and printing. */
#include "containers/buf.h"
#include "check.h"
#include "protocol/legacy_negotiate.h"

static void check_resolves(const char *client_protocol, const char *expected)
{
    char text[LEGACY_PROTOCOL_TEXT_MAX];
    struct span in = client_protocol ? span_from_cstr(client_protocol) : SPAN_NONE;
    size_t n = legacy_protocol_format(legacy_protocol_resolve(in), text, sizeof text);
    CHECK_BYTES(text, n, expected);
}

static void test_protocol_resolution(void)
{
    /* legacy-signalr.md 2.2 and section 11: the values real clients send. */
    check_resolves("2.1", "2.0");  /* jQuery / .NET 2.4.1+ */
    check_resolves("2.0", "2.0");  /* 2.4.0 clients */
    check_resolves("1.4", "1.4");  /* C++ client: must get exactly "1.4" */
    check_resolves("1.5", "1.5");  /* node client */
    check_resolves("9.9", "2.0");
    check_resolves("1.1", "1.2");
    check_resolves("0.1", "1.2");
    /* Missing or unparseable: the minimum. */
    check_resolves(NULL, "1.2");
    check_resolves("", "1.2");
    check_resolves("garbage", "1.2");
    check_resolves("2", "1.2");            /* Version needs two components */
    check_resolves("1.4.0.0.0", "1.2");    /* ... and at most four */
    check_resolves("1.", "1.2");
    check_resolves("1.-4", "1.2");         /* negative component */
    check_resolves("1.99999999999", "1.2"); /* Int32 overflow */
    check_resolves("1.4x", "1.2");
    /* Int32.TryParse(NumberStyles.Integer): white space and a sign are fine. */
    check_resolves(" 1.5 ", "1.5");
    check_resolves("+1.+5", "1.5");
    check_resolves("-0.5", "1.2");         /* 0.5 < 1.2 */
    /* Version.CompareTo: an absent component sorts before 0, so 2.0.0 > 2.0. */
    check_resolves("2.0.0", "2.0");
    check_resolves("1.2.0", "1.2.0");      /* in range: echoed as parsed, like Version.ToString() */
    check_resolves("1.5.1", "1.5.1");
    check_resolves("01.05", "1.5");

    CHECK(legacy_protocol_delayed_start(legacy_protocol_resolve(SPAN_LIT("1.4"))));
    CHECK(legacy_protocol_delayed_start(legacy_protocol_resolve(SPAN_LIT("2.1"))));
    CHECK(!legacy_protocol_delayed_start(legacy_protocol_resolve(SPAN_LIT("1.3"))));
    CHECK(!legacy_protocol_delayed_start(legacy_protocol_resolve(SPAN_NONE)));
}

static struct legacy_negotiate example_settings(const char *client_protocol)
{
    return (struct legacy_negotiate){
        .url = SPAN_LIT("/signalr"),
        .connection_token = SPAN_LIT("AQAAANCMnd8BFdERjHoAwE/Cl+sBAAAA5xq0Ww=="),
        .connection_id = SPAN_LIT("9a7c7b1e-5e1c-4f5e-b1b7-3f2c9e0a6d11"),
        .keep_alive_timeout_ms = 20000,
        .disconnect_timeout_ms = 30000,
        .connection_timeout_ms = 110000,
        .try_websockets = true,
        .protocol = legacy_protocol_resolve(span_from_cstr(client_protocol)),
        .transport_connect_timeout_ms = 5000,
        .long_poll_delay_ms = 0,
    };
}

#define BODY_HEAD                                                                                  \
    "{\"Url\":\"/signalr\",\"ConnectionToken\":\"AQAAANCMnd8BFdERjHoAwE/Cl+sBAAAA5xq0Ww==\","      \
    "\"ConnectionId\":\"9a7c7b1e-5e1c-4f5e-b1b7-3f2c9e0a6d11\",\"KeepAliveTimeout\":20.0,"          \
    "\"DisconnectTimeout\":30.0,\"ConnectionTimeout\":110.0,\"TryWebSockets\":true,"
#define BODY_TAIL ",\"TransportConnectTimeout\":5.0,\"LongPollDelay\":0.0}"

static void check_body(const char *client_protocol, const char *expected)
{
    struct legacy_negotiate n = example_settings(client_protocol);
    struct buf b;
    buf_init(&b);
    CHECK(legacy_negotiate_encode(&b, &n));
    CHECK_BYTES(b.data, b.len, expected);
    buf_free(&b);
}

static void test_negotiate_body(void)
{
    /* 10.1 exactly (jQuery 2.4.3 sends 2.1). */
    check_body("2.1", BODY_HEAD "\"ProtocolVersion\":\"2.0\"" BODY_TAIL);
    /* 10.1, C++ client: same body but "1.4". */
    check_body("1.4", BODY_HEAD "\"ProtocolVersion\":\"1.4\"" BODY_TAIL);
    check_body("1.5", BODY_HEAD "\"ProtocolVersion\":\"1.5\"" BODY_TAIL);
    check_body("garbage", BODY_HEAD "\"ProtocolVersion\":\"1.2\"" BODY_TAIL);
    check_body("9.9", BODY_HEAD "\"ProtocolVersion\":\"2.0\"" BODY_TAIL);

    /* No availableTransports, ever (2.x clients take it for a Core server). */
    struct legacy_negotiate n = example_settings("2.1");
    struct buf b;
    buf_init(&b);
    CHECK(legacy_negotiate_encode(&b, &n));
    CHECK(b.len > 0 && !memmem(b.data, b.len, "availableTransports", 19));

    /* Keep-alive disabled -> null; Json.NET doubles for fractional seconds;
     * a prefix already in the buffer is kept. */
    buf_reset(&b);
    CHECK(buf_append_cstr(&b, "x"));
    n.url = SPAN_LIT("/app/signalr");
    n.keep_alive_timeout_ms = 0;
    n.disconnect_timeout_ms = 6000;
    n.connection_timeout_ms = 2500;
    n.try_websockets = false;
    n.transport_connect_timeout_ms = 1250;
    n.long_poll_delay_ms = 1;
    CHECK(legacy_negotiate_encode(&b, &n));
    CHECK_BYTES(b.data, b.len,
                "x{\"Url\":\"/app/signalr\",\"ConnectionToken\":\"AQAAANCMnd8BFdERjHoAwE/Cl+sBAAAA5xq0Ww==\","
                "\"ConnectionId\":\"9a7c7b1e-5e1c-4f5e-b1b7-3f2c9e0a6d11\",\"KeepAliveTimeout\":null,"
                "\"DisconnectTimeout\":6.0,\"ConnectionTimeout\":2.5,\"TryWebSockets\":false,"
                "\"ProtocolVersion\":\"2.0\",\"TransportConnectTimeout\":1.25,\"LongPollDelay\":0.001}");
    buf_free(&b);
}

int main(void)
{
    test_protocol_resolution();
    test_negotiate_body();
    return test_main_result("test_legacy_negotiate");
}
