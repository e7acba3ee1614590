/* test_legacy_translate.c - ASP.NET Core hub messages rewritten as legacy frames.
 *
 * Core messages are built as the Core decoders leave them (hub_msg, JSON
 * payloads). Error texts are those of core-signalr.md 8.1; expected legacy
 * bytes are legacy-signalr.md 6.2-6.4 and 10.3-10.4. */
#include "containers/buf.h"
#include "check.h"
#include "protocol/hub_msg.h"
#include "protocol/legacy_translate.h"

#define JSON(lit) ((struct payload){ PAYLOAD_JSON, SPAN_LIT(lit) })

static struct hub_msg completion(const char *id, enum completion_kind kind)
{
    struct hub_msg m;
    hub_msg_init(&m);
    m.kind = HUB_MSG_COMPLETION;
    m.invocation_id = span_from_cstr(id);
    m.completion = kind;
    return m;
}

static void check_completion(const struct hub_msg *m, const char *expected)
{
    struct buf b;
    struct proto_error err = { 0 };
    buf_init(&b);
    CHECK_EQ_INT(legacy_translate_completion(&b, m, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, expected);
    buf_free(&b);
}

static void check_error_completion(const char *id, const char *core_error, const char *expected)
{
    struct hub_msg m = completion(id, COMPLETION_ERROR);
    m.error = span_from_cstr(core_error);
    check_completion(&m, expected);
}

static void test_completions(void)
{
    struct hub_msg m = completion("0", COMPLETION_RESULT);
    m.result = JSON("3");
    check_completion(&m, "{\"R\":3,\"I\":\"0\"}");                /* 10.3 */
    m.result = JSON("{\"a\":[1,\"x\"]}");
    check_completion(&m, "{\"R\":{\"a\":[1,\"x\"]},\"I\":\"0\"}");
    /* A Core void method completes with result null: the legacy void answer. */
    m = completion("1", COMPLETION_RESULT);
    m.result = JSON("null");
    check_completion(&m, "{\"I\":\"1\"}");                        /* 10.8 */
    /* A stream's end (no result at all). */
    check_completion(&(struct hub_msg){ .kind = HUB_MSG_COMPLETION, .invocation_id = SPAN_LIT("9"),
                                        .completion = COMPLETION_VOID }, "{\"I\":\"9\"}");

    /* HubException on the Core server -> legacy HubException. */
    check_error_completion("4", "An unexpected error occurred invoking 'Fail' on the server. HubException: Not allowed",
                           "{\"I\":\"4\",\"H\":true,\"E\":\"Not allowed\"}");
    check_error_completion("5", "An error occurred on the server while streaming results. HubException: stream \"stopped\"",
                           "{\"I\":\"5\",\"H\":true,\"E\":\"stream \\\"stopped\\\"\"}");
    /* The message may itself contain the marker text: only the first one splits. */
    check_error_completion("6", "An unexpected error occurred invoking 'Go' on the server. HubException: a' on the server. HubException: b",
                           "{\"I\":\"6\",\"H\":true,\"E\":\"a' on the server. HubException: b\"}");
    /* Everything else passes through as a plain error. */
    check_error_completion("7", "An unexpected error occurred invoking 'Fail' on the server.",
                           "{\"I\":\"7\",\"E\":\"An unexpected error occurred invoking 'Fail' on the server.\"}");
    check_error_completion("8", "An unexpected error occurred invoking 'Fail' on the server. InvalidOperationException: boom",
                           "{\"I\":\"8\",\"E\":\"An unexpected error occurred invoking 'Fail' on the server. InvalidOperationException: boom\"}");
    check_error_completion("9", "Failed to invoke 'Nope' due to an error on the server. HubException: Method does not exist.",
                           "{\"I\":\"9\",\"E\":\"Failed to invoke 'Nope' due to an error on the server. HubException: Method does not exist.\"}");
    check_error_completion("10", "Failed to invoke 'Secret' because user is unauthorized",
                           "{\"I\":\"10\",\"E\":\"Failed to invoke 'Secret' because user is unauthorized\"}");
    check_error_completion("11", "An unexpected error occurred invoking 'Fail' on the server HubException: x",
                           "{\"I\":\"11\",\"E\":\"An unexpected error occurred invoking 'Fail' on the server HubException: x\"}");

    struct span msg;
    CHECK(legacy_core_hub_exception_message(SPAN_LIT("An unexpected error occurred invoking 'M' on the server. HubException: "), &msg));
    CHECK_EQ_INT(msg.len, 0);
    CHECK(!legacy_core_hub_exception_message(SPAN_LIT("An unexpected error occurred invoking '"), &msg));
    CHECK(!legacy_core_hub_exception_message(SPAN_NONE, &msg));
}

static void test_invocations_and_items(void)
{
    struct buf b;
    struct proto_error err = { 0 };
    buf_init(&b);

    struct hub_msg inv;
    hub_msg_init(&inv);
    inv.kind = HUB_MSG_INVOCATION;
    inv.target = SPAN_LIT("addMessage");
    inv.args = JSON("[\"bob\",\"hello\"]");
    /* 10.4, with the hub spelled as each client spelled it in connectionData. */
    CHECK_EQ_INT(legacy_translate_invocation(&b, &inv, SPAN_LIT("ChatHub"), &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"H\":\"ChatHub\",\"M\":\"addMessage\",\"A\":[\"bob\",\"hello\"]}");
    buf_reset(&b);
    CHECK_EQ_INT(legacy_translate_invocation(&b, &inv, SPAN_LIT("chathub"), &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"H\":\"chathub\",\"M\":\"addMessage\",\"A\":[\"bob\",\"hello\"]}");
    /* A Core client-result request: the id is never written (no I in M elements). */
    buf_reset(&b);
    inv.invocation_id = SPAN_LIT("s1");
    inv.args = JSON("[]");
    CHECK_EQ_INT(legacy_translate_invocation(&b, &inv, SPAN_LIT("chathub"), &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"H\":\"chathub\",\"M\":\"addMessage\",\"A\":[]}");
    /* No hub spelling, MessagePack arguments, wrong kinds: refused, nothing written. */
    buf_reset(&b);
    CHECK_EQ_INT(legacy_translate_invocation(&b, &inv, SPAN_NONE, &err), PROTO_ERR_MISSING);
    inv.args = (struct payload){ PAYLOAD_MSGPACK, SPAN_LIT("\x90") };
    CHECK_EQ_INT(legacy_translate_invocation(&b, &inv, SPAN_LIT("chathub"), &err), PROTO_ERR_VALUE);
    CHECK_EQ_INT(legacy_translate_completion(&b, &inv, &err), PROTO_ERR_VALUE);
    CHECK_EQ_INT(legacy_translate_stream_item(&b, &inv, &err), PROTO_ERR_VALUE);
    struct hub_msg no_id = completion("x", COMPLETION_VOID);
    no_id.invocation_id = SPAN_NONE;
    CHECK_EQ_INT(legacy_translate_completion(&b, &no_id, &err), PROTO_ERR_MISSING);
    CHECK_EQ_INT(b.len, 0);

    /* StreamItem -> progress element (10.4, 6.3). */
    struct hub_msg item;
    hub_msg_init(&item);
    item.kind = HUB_MSG_STREAM_ITEM;
    item.invocation_id = SPAN_LIT("2");
    item.item = JSON("50");
    CHECK_EQ_INT(legacy_translate_stream_item(&b, &item, &err), PROTO_OK);
    CHECK_BYTES(b.data, b.len, "{\"I\":\"P|2\",\"P\":{\"I\":\"2\",\"D\":50}}");
    buf_free(&b);
}

/* Core's generic failure texts, which a 2.x server words as one text naming hub and method. */
static void test_generic_failures(void)
{
    CHECK(legacy_core_generic_failure(SPAN_LIT("An unexpected error occurred invoking 'ThrowOther' on the server.")));
    CHECK(legacy_core_generic_failure(SPAN_LIT("Failed to invoke 'Add' due to an error on the server.")));
    CHECK(legacy_core_generic_failure(
        SPAN_LIT("Failed to invoke 'Nope' due to an error on the server. HubException: Method does not exist.")));
    CHECK(legacy_core_generic_failure(SPAN_LIT("An error occurred on the server while streaming results.")));
    /* A HubException the hub threw keeps its own message (legacy_translate_completion). */
    CHECK(!legacy_core_generic_failure(
        SPAN_LIT("An unexpected error occurred invoking 'ThrowHubException' on the server. HubException: no way")));
    CHECK(!legacy_core_generic_failure(
        SPAN_LIT("An error occurred on the server while streaming results. HubException: no")));
    /* Detailed errors, other texts, nothing. */
    CHECK(!legacy_core_generic_failure(
        SPAN_LIT("An unexpected error occurred invoking 'ThrowOther' on the server. InvalidOperationException: x")));
    CHECK(!legacy_core_generic_failure(SPAN_LIT("Failed to invoke 'Add' due to an error on the server. ")));
    CHECK(!legacy_core_generic_failure(SPAN_LIT("An unexpected error occurred invoking '' on the server.")));
    CHECK(!legacy_core_generic_failure(SPAN_LIT("Failed to invoke 'Secret' because user is unauthorized")));
    CHECK(!legacy_core_generic_failure(SPAN_LIT("no way")));
    CHECK(!legacy_core_generic_failure(SPAN_NONE));

    struct buf b;
    buf_init(&b);
    CHECK(legacy_invocation_failure_text(&b, SPAN_LIT("chathub"), SPAN_LIT("Nope")));
    CHECK_BYTES(b.data, b.len, "There was an error invoking Hub method 'chathub.Nope'.");
    buf_free(&b);
}

int main(void)
{
    test_generic_failures();
    test_completions();
    test_invocations_and_items();
    return test_main_result("test_legacy_translate");
}
