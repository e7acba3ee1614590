/* test_legacy_frame.c - server->client legacy frames, byte for byte.
 *
 * Expected bytes are the frames of legacy-signalr.md 5, 6.2-6.4 and 10.2-10.8,
 * which follow PersistentResponse.WriteJson (C, S, T, G, L, M) and
 * HubResponse's member order (S, R, I, P, H, E, T, D; nulls left out). */
#include "containers/buf.h"
#include "check.h"
#include "protocol/legacy_frame.h"

#define JSON(lit) ((struct payload){ PAYLOAD_JSON, SPAN_LIT(lit) })
#define NO_PAYLOAD ((struct payload){ PAYLOAD_NONE, SPAN_NONE })

static void test_fixed_bodies(void)
{
    CHECK_BYTES(LEGACY_KEEPALIVE_FRAME, strlen(LEGACY_KEEPALIVE_FRAME), "{}");
    CHECK_BYTES(LEGACY_START_RESPONSE, strlen(LEGACY_START_RESPONSE), "{ \"Response\": \"started\" }");
    CHECK_BYTES(LEGACY_PING_RESPONSE, strlen(LEGACY_PING_RESPONSE), "{ \"Response\": \"pong\" }");

    struct buf b;
    buf_init(&b);
    CHECK(legacy_error_frame_encode(&b, SPAN_LIT("The \"backend\" closed.")));
    CHECK_BYTES(b.data, b.len, "{\"E\":\"The \\\"backend\\\" closed.\"}");
    buf_free(&b);
}

static void test_persistent_responses(void)
{
    struct buf b;
    struct legacy_response r;
    struct proto_error err = { 0 };
    buf_init(&b);

    /* 10.2: init frame. */
    struct legacy_response_head init = { .cursor = SPAN_LIT("d-5C1B2A9F-A,0|B,0|C,1"), .initializing = true };
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &init, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_end(&r, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"C\":\"d-5C1B2A9F-A,0|B,0|C,1\",\"S\":1,\"M\":[]}");

    /* 10.4: a pushed invocation, a progress element, a group change. */
    buf_reset(&b);
    struct legacy_response_head plain = { .cursor = SPAN_LIT("d-5C1B2A9F-A,1|B,0|C,1") };
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &plain, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_add_invocation(&r, SPAN_LIT("ChatHub"), SPAN_LIT("addMessage"),
                                                JSON("[\"bob\",\"hello\"]"), NO_PAYLOAD, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_end(&r, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len,
                "{\"C\":\"d-5C1B2A9F-A,1|B,0|C,1\",\"M\":[{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"bob\",\"hello\"]}]}");

    buf_reset(&b);
    plain.cursor = SPAN_LIT("d-5C1B2A9F-A,1|B,0|C,2");
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &plain, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_add_progress(&r, SPAN_LIT("2"), JSON("50"), NO_PAYLOAD, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_end(&r, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"C\":\"d-5C1B2A9F-A,1|B,0|C,2\",\"M\":[{\"I\":\"P|2\",\"P\":{\"I\":\"2\",\"D\":50}}]}");

    buf_reset(&b);
    struct legacy_response_head grouped = { .cursor = SPAN_LIT("d-5C1B2A9F-A,1|B,0|C,3|D,0"),
                                            .groups_token = SPAN_LIT("AQAAANCMnd8BFdERjHoAwE/Cl+sBAAAAg7Hq") };
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &grouped, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_end(&r, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len,
                "{\"C\":\"d-5C1B2A9F-A,1|B,0|C,3|D,0\",\"G\":\"AQAAANCMnd8BFdERjHoAwE/Cl+sBAAAAg7Hq\",\"M\":[]}");

    /* 10.7: replay of three queued elements (raw), no S. */
    buf_reset(&b);
    plain.cursor = SPAN_LIT("d-5C1B2A9F-A,3|B,0|C,3|D,1");
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &plain, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_add_raw(&r, SPAN_LIT("{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"amy\",\"missed 1\"]}"), &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_add_raw(&r, SPAN_LIT("{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"amy\",\"missed 2\"]}"), &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_add_invocation(&r, SPAN_LIT("ChatHub"), SPAN_LIT("addMessage"),
                                                JSON("[\"room1\",\"to group\"]"), NO_PAYLOAD, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_end(&r, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len,
                "{\"C\":\"d-5C1B2A9F-A,3|B,0|C,3|D,1\",\"M\":[{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"amy\",\"missed 1\"]},"
                "{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"amy\",\"missed 2\"]},"
                "{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"room1\",\"to group\"]}]}");

    /* Every optional field, in the original's order C, S, T, G, L, M. */
    buf_reset(&b);
    struct legacy_response_head all = { .cursor = SPAN_LIT("c1"), .initializing = true, .reconnect = true,
                                        .groups_token = SPAN_LIT("g"), .has_long_poll_delay = true,
                                        .long_poll_delay_ms = 2500 };
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &all, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_end(&r, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"C\":\"c1\",\"S\":1,\"T\":1,\"G\":\"g\",\"L\":2500,\"M\":[]}");

    /* An empty G is still written (removing all groups gives a token, not nothing). */
    buf_reset(&b);
    struct legacy_response_head empty_groups = { .cursor = SPAN_LIT("c"), .groups_token = SPAN_LIT("") };
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &empty_groups, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_end(&r, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"C\":\"c\",\"G\":\"\",\"M\":[]}");

    /* A failed element leaves the frame as it was; abandon removes the frame. */
    buf_reset(&b);
    CHECK(buf_append_cstr(&b, "prefix"));
    plain.cursor = SPAN_LIT("c");
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &plain, &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_add_raw(&r, SPAN_LIT("1"), &err), PROTO_OK);
    struct payload packed = { PAYLOAD_MSGPACK, SPAN_LIT("\x91\x01") };
    CHECK_EQ_INT(legacy_response_add_invocation(&r, SPAN_LIT("h"), SPAN_LIT("m"), packed, NO_PAYLOAD, &err), PROTO_ERR_VALUE);
    CHECK_EQ_INT(legacy_response_add_invocation(&r, SPAN_LIT(""), SPAN_LIT("m"), NO_PAYLOAD, NO_PAYLOAD, &err), PROTO_ERR_MISSING);
    CHECK_EQ_INT(legacy_response_add_progress(&r, SPAN_NONE, JSON("1"), NO_PAYLOAD, &err), PROTO_ERR_MISSING);
    CHECK_EQ_INT(legacy_response_add_raw(&r, SPAN_LIT("2"), &err), PROTO_OK);
    CHECK_EQ_INT(legacy_response_end(&r, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "prefix{\"C\":\"c\",\"M\":[1,2]}");
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &plain, &err), PROTO_OK);
    legacy_response_abandon(&r);
    CHECK_BYTES(b.data, b.len, "prefix{\"C\":\"c\",\"M\":[1,2]}");

    /* No cursor, no frame. */
    struct legacy_response_head no_cursor = { .cursor = SPAN_NONE };
    CHECK_EQ_INT(legacy_response_begin(&r, &b, &no_cursor, &err), PROTO_ERR_MISSING);
    CHECK_BYTES(b.data, b.len, "prefix{\"C\":\"c\",\"M\":[1,2]}");
    buf_free(&b);
}

static void check_result(const struct legacy_hub_result *res, const char *expected)
{
    struct buf b;
    struct proto_error err = { 0 };
    buf_init(&b);
    CHECK_EQ_INT(legacy_hub_result_encode(&b, res, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, expected);
    buf_free(&b);
}

static void test_hub_results(void)
{
    /* 6.2, every example. */
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("0") }, "{\"I\":\"0\"}");
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("0"), .result = JSON("null") }, "{\"I\":\"0\"}");
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("1"), .result = JSON("3") }, "{\"R\":3,\"I\":\"1\"}");
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("2"), .state = JSON("{\"count\":2}"), .result = JSON("true") },
                 "{\"S\":{\"count\":2},\"R\":true,\"I\":\"2\"}");
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("3"),
                                              .error = SPAN_LIT("There was an error invoking Hub method 'chathub.Fail'.") },
                 "{\"I\":\"3\",\"E\":\"There was an error invoking Hub method 'chathub.Fail'.\"}");
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("4"), .hub_exception = true,
                                              .error = SPAN_LIT("Not allowed"), .error_data = JSON("{\"code\":42}") },
                 "{\"I\":\"4\",\"H\":true,\"E\":\"Not allowed\",\"D\":{\"code\":42}}");
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("5"),
                                              .error = SPAN_LIT("'Nope' method could not be resolved. No method found with that name.") },
                 "{\"I\":\"5\",\"E\":\"'Nope' method could not be resolved. No method found with that name.\"}");
    /* 10.3 and 10.8. */
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("0"), .result = JSON("3") }, "{\"R\":3,\"I\":\"0\"}");
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("1"), .error = SPAN_LIT("There was an error invoking Hub method 'chathub.Fail'.") },
                 "{\"I\":\"1\",\"E\":\"There was an error invoking Hub method 'chathub.Fail'.\"}");
    /* Null state, null error data and a null-with-spaces result are left out;
     * the id is escaped; I is a string even when the client sent a number. */
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("a\"b"), .state = JSON("null"), .result = JSON(" null "),
                                              .error = SPAN_LIT("x"), .error_data = JSON("null") },
                 "{\"I\":\"a\\\"b\",\"E\":\"x\"}");
    /* H without E is meaningless and not written. */
    check_result(&(struct legacy_hub_result){ .id = SPAN_LIT("6"), .hub_exception = true }, "{\"I\":\"6\"}");

    struct buf b;
    struct proto_error err = { 0 };
    buf_init(&b);
    CHECK_EQ_INT(legacy_hub_result_encode(&b, &(struct legacy_hub_result){ .result = JSON("1") }, &err), PROTO_ERR_MISSING);
    CHECK_EQ_INT(legacy_hub_result_encode(&b, &(struct legacy_hub_result){ .id = SPAN_LIT("1"),
                                                                          .result = { PAYLOAD_MSGPACK, SPAN_LIT("\x01") } }, &err),
                 PROTO_ERR_VALUE);
    CHECK_EQ_INT(b.len, 0);
    buf_free(&b);
}

static void test_elements(void)
{
    struct buf b;
    struct proto_error err = { 0 };
    buf_init(&b);

    /* 6.3 */
    CHECK_EQ_INT(legacy_progress_encode(&b, SPAN_LIT("7"), JSON("50"), NO_PAYLOAD, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"I\":\"P|7\",\"P\":{\"I\":\"7\",\"D\":50}}");
    /* State first (HubResponse order), absent value written as null. */
    buf_reset(&b);
    CHECK_EQ_INT(legacy_progress_encode(&b, SPAN_LIT("8"), NO_PAYLOAD, JSON("{\"n\":1}"), &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"S\":{\"n\":1},\"I\":\"P|8\",\"P\":{\"I\":\"8\",\"D\":null}}");

    /* 6.4, both examples; no arguments -> []. */
    buf_reset(&b);
    CHECK_EQ_INT(legacy_invocation_element_encode(&b, SPAN_LIT("ChatHub"), SPAN_LIT("addMessage"),
                                                  JSON("[\"bob\",\"hello\"]"), NO_PAYLOAD, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"bob\",\"hello\"]}");
    buf_reset(&b);
    CHECK_EQ_INT(legacy_invocation_element_encode(&b, SPAN_LIT("ChatHub"), SPAN_LIT("addMessage"),
                                                  JSON("[\"x\"]"), JSON("{\"name\":\"bob\"}"), &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"x\"],\"S\":{\"name\":\"bob\"}}");
    buf_reset(&b);
    CHECK_EQ_INT(legacy_invocation_element_encode(&b, SPAN_LIT("chathub"), SPAN_LIT("ping"), NO_PAYLOAD,
                                                  JSON("null"), &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"H\":\"chathub\",\"M\":\"ping\",\"A\":[]}");
    buf_free(&b);
}

int main(void)
{
    test_fixed_bodies();
    test_persistent_responses();
    test_hub_results();
    test_elements();
    return test_main_result("test_legacy_frame");
}
