/* test_legacy_invocation.c - decoding legacy client hub invocations.
 *
 * Inputs are the invocations of legacy-signalr.md 6.1, 10.3 and 10.8, in the
 * shapes each client writes them (jQuery: I a number; .NET: I a string
 * first; C++: I a string, keys sorted by cpprest), and the rules of the
 * original HubRequestParser (Json.NET binding, null A = no arguments, state
 * over 4096 characters refused, state re-read with MaxDepth 20). */
#include <stdlib.h>

#include "check.h"
#include "protocol/hub_msg.h"
#include "protocol/legacy_invocation.h"

static enum proto_status decode(const char *text, struct hub_msg *msg, struct proto_error *err)
{
    return legacy_invocation_decode(text, strlen(text), msg, err);
}

#define CHECK_SPAN(s, expected) CHECK_BYTES((s).ptr, (s).len, expected)

static void check_call(const char *text, const char *hub, const char *method, const char *args,
                       const char *id, const char *state)
{
    struct hub_msg msg;
    struct proto_error err = { 0 };
    CHECK_EQ_INT(decode(text, &msg, &err), PROTO_OK);
    CHECK_EQ_INT(msg.kind, HUB_MSG_INVOCATION);
    CHECK_SPAN(msg.hub, hub);
    CHECK_SPAN(msg.target, method);
    if (args) {
        CHECK_EQ_INT(msg.args.encoding, PAYLOAD_JSON);
        CHECK_SPAN(msg.args.bytes, args);
    } else {
        CHECK_EQ_INT(msg.args.encoding, PAYLOAD_NONE);
    }
    if (id)
        CHECK_SPAN(msg.invocation_id, id);
    else
        CHECK(!span_is_set(msg.invocation_id));
    if (state) {
        CHECK_EQ_INT(msg.state.encoding, PAYLOAD_JSON);
        CHECK_SPAN(msg.state.bytes, state);
    } else {
        CHECK_EQ_INT(msg.state.encoding, PAYLOAD_NONE);
    }
    hub_msg_release(&msg);
}

static void test_clients(void)
{
    /* 10.3 (jQuery over WebSocket and in /send data=). */
    check_call("{\"H\":\"chathub\",\"M\":\"Add\",\"A\":[1,2],\"I\":0}", "chathub", "Add", "[1,2]", "0", NULL);
    check_call("{\"H\":\"chathub\",\"M\":\"Fail\",\"A\":[],\"I\":1}", "chathub", "Fail", "[]", "1", NULL);
    /* 10.8 */
    check_call("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[\"bob\",\"hi\"],\"I\":1}", "chathub", "Send",
               "[\"bob\",\"hi\"]", "1", NULL);
    /* 6.1: jQuery, .NET, with state. */
    check_call("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[\"bob\",\"hi\"],\"I\":0}", "chathub", "Send",
               "[\"bob\",\"hi\"]", "0", NULL);
    check_call("{\"I\":\"0\",\"H\":\"ChatHub\",\"M\":\"Send\",\"A\":[\"bob\",\"hi\"]}", "ChatHub", "Send",
               "[\"bob\",\"hi\"]", "0", NULL);
    check_call("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[],\"I\":5,\"S\":{\"name\":\"bob\"}}", "chathub",
               "Send", "[]", "5", "{\"name\":\"bob\"}");
    /* C++: cpprest writes object keys sorted. */
    check_call("{\"A\":[\"bob\",\"hi\"],\"H\":\"ChatHub\",\"I\":\"0\",\"M\":\"Send\"}", "ChatHub", "Send",
               "[\"bob\",\"hi\"]", "0", NULL);
    /* .NET with state (Dictionary<string, JToken>, written last). */
    check_call("{\"I\":\"12\",\"H\":\"ChatHub\",\"M\":\"Send\",\"A\":[{\"x\":[1,null]}],\"S\":{\"n\":1,\"t\":[true]}}",
               "ChatHub", "Send", "[{\"x\":[1,null]}]", "12", "{\"n\":1,\"t\":[true]}");
}

static void test_binding_rules(void)
{
    /* A absent or null: no arguments. I absent or null: fire and forget. */
    check_call("{\"H\":\"chathub\",\"M\":\"Ping\"}", "chathub", "Ping", NULL, NULL, NULL);
    check_call("{\"H\":\"chathub\",\"M\":\"Ping\",\"A\":null,\"I\":null,\"S\":null}", "chathub", "Ping",
               NULL, NULL, NULL);
    /* Numbers keep their text exactly; strings are unescaped. */
    check_call("{\"H\":\"h\",\"M\":\"m\",\"I\":-17}", "h", "m", NULL, "-17", NULL);
    check_call("{\"H\":\"h\",\"M\":\"m\",\"I\":1.5e3}", "h", "m", NULL, "1.5e3", NULL);
    check_call("{\"H\":\"h\",\"M\":\"m\",\"I\":\"a\\\"b\\u0041\"}", "h", "m", NULL, "a\"bA", NULL);
    /* An escaped backslash before "u0000" is text, not a NUL. */
    check_call("{\"H\":\"h\",\"M\":\"m\",\"I\":\"\\\\u0000\",\"\\\\u0000\":1}", "h", "m", NULL,
               "\\u0000", NULL);
    check_call("{\"H\":\"ch\\u0061thub\",\"M\":\"S\\u00e9nd\"}", "chathub", "S\xc3\xa9nd", NULL, NULL, NULL);
    /* Json.NET falls back to a case-insensitive member match. */
    check_call("{\"h\":\"chathub\",\"m\":\"Add\",\"a\":[1],\"i\":3,\"s\":{}}", "chathub", "Add", "[1]", "3", "{}");
    /* Unknown members are ignored; whitespace anywhere JSON allows it; raw
     * values are the bytes as sent. */
    check_call(" {\r\n \"X\" : {\"H\":1} , \"H\" : \"chathub\" ,\t\"M\":\"Add\", \"A\" : [ 1 , 2 ] , \"I\" : 0 , \"HM\":2 } \n",
               "chathub", "Add", "[ 1 , 2 ]", "0", NULL);
}

static void check_fails(const char *text, size_t len, enum proto_status expected)
{
    struct hub_msg msg;
    struct proto_error err = { 0 };
    enum proto_status st = legacy_invocation_decode(text, len, &msg, &err);
    CHECK_EQ_INT(st, expected);
    CHECK(err.detail != NULL);
    CHECK_EQ_INT(msg.kind, HUB_MSG_NONE);
    hub_msg_release(&msg);
}

#define FAILS(text, expected) check_fails(text, strlen(text), expected)

static void test_malformed(void)
{
    FAILS("{\"M\":\"Send\",\"A\":[],\"I\":0}", PROTO_ERR_MISSING);
    FAILS("{\"H\":\"chathub\",\"A\":[],\"I\":0}", PROTO_ERR_MISSING);
    FAILS("{\"H\":null,\"M\":\"Send\"}", PROTO_ERR_MISSING);
    FAILS("{}", PROTO_ERR_MISSING);
    FAILS("{\"H\":5,\"M\":\"Send\"}", PROTO_ERR_TYPE);
    FAILS("{\"H\":\"chathub\",\"M\":[\"Send\"]}", PROTO_ERR_TYPE);
    FAILS("{\"H\":\"\",\"M\":\"Send\"}", PROTO_ERR_VALUE);
    FAILS("{\"H\":\"chathub\",\"M\":\"\"}", PROTO_ERR_VALUE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Se\\u0000nd\"}", PROTO_ERR_VALUE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"I\":\"\\u0000\"}", PROTO_ERR_VALUE);
    /* ... and in a member name, which must not be read as the name before it */
    FAILS("{\"H\\u0000x\":\"chathub\",\"M\":\"Send\"}", PROTO_ERR_VALUE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"X\\u0000\":1}", PROTO_ERR_VALUE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":\"bob\"}", PROTO_ERR_TYPE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":{\"0\":1}}", PROTO_ERR_TYPE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":1}", PROTO_ERR_TYPE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"I\":{\"id\":1}}", PROTO_ERR_TYPE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"I\":[0]}", PROTO_ERR_TYPE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"I\":true}", PROTO_ERR_TYPE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"S\":[1]}", PROTO_ERR_TYPE);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"S\":\"x\"}", PROTO_ERR_TYPE);
    /* A member twice, in the same or another case. */
    FAILS("{\"H\":\"a\",\"M\":\"Send\",\"H\":\"b\"}", PROTO_ERR_VALUE);
    FAILS("{\"H\":\"a\",\"M\":\"Send\",\"h\":\"b\"}", PROTO_ERR_VALUE);
    FAILS("{\"H\":\"a\",\"M\":\"Send\",\"I\":1,\"I\":2}", PROTO_ERR_VALUE);
    /* Not an object, not JSON, truncated, trailing bytes. */
    FAILS("[\"chathub\",\"Send\"]", PROTO_ERR_TYPE);
    FAILS("\"x\"", PROTO_ERR_TYPE);
    FAILS("", PROTO_ERR_SYNTAX);
    FAILS("   ", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\"} {}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\" \"M\":\"Send\"}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":'chathub',\"M\":\"Send\"}", PROTO_ERR_SYNTAX);
    /* Bytes: bad UTF-8 (in a name, in an argument), control characters. */
    FAILS("{\"H\":\"chat\xff\",\"M\":\"Send\"}", PROTO_ERR_UTF8);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[\"\xed\xa0\x80\"]}", PROTO_ERR_UTF8);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[\"a\x01\"]}", PROTO_ERR_SYNTAX);
    /* Tab, CR and LF only as white space: A goes to a Core backend as it is,
     * and System.Text.Json refuses every byte below 0x20 inside a string. */
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[\"a\tb\"]}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Se\r\nnd\"}", PROTO_ERR_SYNTAX);
    /* A byte order mark is not white space to Json.NET (nor to System.Text.Json). */
    FAILS("{\"H\":\xef\xbb\xbf\"chathub\",\"M\":\"Send\"}", PROTO_ERR_SYNTAX);
    /* Escapes and numbers outside RFC 8259, which cJSON would take: a \u with
     * non-hex digits (cJSON reads it as U+0000 and cuts the name to "ch"),
     * an unknown escape, leading zeros, a bare decimal point. */
    FAILS("{\"h\":\"ch\\u012;thub\",\"M\":\"Send\"}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[\"\\uZZZZ\"]}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[\"\\x41\"]}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[01]}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[1.]}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[1.e5]}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[-]}", PROTO_ERR_SYNTAX);
    FAILS("{\"H\":\"chathub\",\"M\":\"Send\",\"I\":00}", PROTO_ERR_SYNTAX);
    /* A NUL byte inside the given length is a control character too. */
    check_fails("{\"H\":\"chat\0hub\",\"M\":\"Send\"}", 28, PROTO_ERR_SYNTAX);

    /* Every strict prefix of a valid invocation fails cleanly. */
    const char *full = "{\"H\":\"chathub\",\"M\":\"Send\",\"A\":[\"bob\",{\"k\":[1,2.5e-3]}],\"I\":\"7\",\"S\":{\"a\":\"\\u00e9\"}}";
    for (size_t len = 0; len < strlen(full); len++) {
        struct hub_msg msg;
        enum proto_status st = legacy_invocation_decode(full, len, &msg, NULL);
        CHECK(proto_status_is_error(st));
        hub_msg_release(&msg);
    }
}

/* {"H":"h","M":"m","A": + levels of [ ... ] + } : the object is level 1. */
static char *nested_args(int array_levels, size_t *len)
{
    size_t cap = (size_t)array_levels * 2 + 64, n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text, cap, "{\"H\":\"h\",\"M\":\"m\",\"A\":");
    for (int i = 0; i < array_levels; i++)
        text[n++] = '[';
    for (int i = 0; i < array_levels; i++)
        text[n++] = ']';
    text[n++] = '}';
    *len = n;
    return text;
}

/* S made of `levels` nested objects: {"a":{"a":...{}}}. */
static char *nested_state(int levels, size_t *len)
{
    size_t cap = (size_t)levels * 6 + 64, n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text, cap, "{\"H\":\"h\",\"M\":\"m\",\"S\":");
    for (int i = 1; i < levels; i++)
        n += (size_t)snprintf(text + n, cap - n, "{\"a\":");
    n += (size_t)snprintf(text + n, cap - n, "{}");
    for (int i = 1; i < levels; i++)
        text[n++] = '}';
    text[n++] = '}';
    *len = n;
    return text;
}

/* S = {"k":"<n copies of unit>"}, compact length n * units(unit) + 8. */
static char *sized_state(const char *spaces, const char *unit, int n, size_t *len)
{
    size_t cap = strlen(unit) * (size_t)n + 128, used = 0;
    char *text = malloc(cap);
    used += (size_t)snprintf(text, cap, "{\"H\":\"h\",\"M\":\"m\",\"S\":{%s\"k\"%s:%s\"", spaces, spaces, spaces);
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(text + used, cap - used, "%s", unit);
    used += (size_t)snprintf(text + used, cap - used, "\"%s}}", spaces);
    *len = used;
    return text;
}

/* Builds the text first (with its length), then decodes it. */
#define CHECK_BUILT(build_call, expected)                                                          \
    do {                                                                                           \
        size_t len;                                                                                \
        char *text = build_call;                                                                   \
        check_status(text, len, expected);                                                         \
    } while (0)

static void check_status(char *text, size_t len, enum proto_status expected)
{
    struct hub_msg msg;
    CHECK_EQ_INT(legacy_invocation_decode(text, len, &msg, NULL), expected);
    hub_msg_release(&msg);
    free(text);
}

static void test_limits(void)
{
    /* Nesting: 64 levels in all (what System.Text.Json takes by default). */
    CHECK_BUILT(nested_args(LEGACY_INVOCATION_MAX_DEPTH - 1, &len), PROTO_OK);
    CHECK_BUILT(nested_args(LEGACY_INVOCATION_MAX_DEPTH, &len), PROTO_ERR_TOO_DEEP);
    /* A bomb deeper than cJSON's own limit is a syntax error, not a crash. */
    CHECK_BUILT(nested_args(100000, &len), PROTO_ERR_SYNTAX);
    /* State: Json.NET MaxDepth 20. */
    CHECK_BUILT(nested_state(20, &len), PROTO_OK);
    CHECK_BUILT(nested_state(21, &len), PROTO_ERR_TOO_DEEP);
    /* State: at most 4096 characters of compact JSON; whitespace does not count,
     * characters are UTF-16 units (é is one, an emoji two). */
    CHECK_BUILT(sized_state("", "x", 4088, &len), PROTO_OK);
    CHECK_BUILT(sized_state("", "x", 4089, &len), PROTO_ERR_TOO_LARGE);
    CHECK_BUILT(sized_state("   ", "x", 4088, &len), PROTO_OK);
    CHECK_BUILT(sized_state("", "\xc3\xa9", 4088, &len), PROTO_OK);
    CHECK_BUILT(sized_state("", "\xc3\xa9", 4089, &len), PROTO_ERR_TOO_LARGE);
    CHECK_BUILT(sized_state("", "\xf0\x9f\x98\x80", 2044, &len), PROTO_OK);
    CHECK_BUILT(sized_state("", "\xf0\x9f\x98\x80", 2045, &len), PROTO_ERR_TOO_LARGE);
    CHECK_BUILT(sized_state("", "x", 100000, &len), PROTO_ERR_TOO_LARGE);
}

static void test_partial_result(void)
{
    /* The id survives a later failure so the relay can answer {"I":"7","E":...}. */
    struct hub_msg msg;
    struct proto_error err = { 0 };
    CHECK_EQ_INT(decode("{\"I\":\"7\",\"H\":\"chathub\",\"M\":\"Send\",\"A\":5}", &msg, &err), PROTO_ERR_TYPE);
    CHECK_SPAN(msg.invocation_id, "7");
    CHECK(strstr(err.detail, "A") != NULL);
    hub_msg_release(&msg);
}

int main(void)
{
    test_clients();
    test_binding_rules();
    test_malformed();
    test_limits();
    test_partial_result();
    return test_main_result("test_legacy_invocation");
}
