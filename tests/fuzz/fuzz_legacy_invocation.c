/* fuzz_legacy_invocation.c - legacy client invocations: decode, re-encode, decode again.
 *
 * Properties checked for every input:
 *   - a failure has a detail string and leaves no invocation behind;
 *   - a success is an invocation with non-empty H and M and JSON payloads;
 *   - written back as a server->client element {"H","M","A","S"} it is JSON
 *     that cJSON reads with the same hub, method and arguments, and that our
 *     decoder reads back to the same fields byte for byte;
 *   - with its id, the hub result and the progress element are JSON whose
 *     I / P.I carry that id as a string. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "containers/buf.h"
#include "protocol/hub_msg.h"
#include "protocol/legacy_frame.h"
#include "protocol/legacy_invocation.h"

#define REQUIRE(cond)                                                                  \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

static int string_member_is(const cJSON *obj, const char *key, struct span expected)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) && strlen(v->valuestring) == expected.len &&
           memcmp(v->valuestring, expected.ptr, expected.len) == 0;
}

static int same_json(struct span a, const cJSON *b)
{
    cJSON *parsed = cJSON_ParseWithLength(a.ptr, a.len);
    int same = parsed && cJSON_Compare(parsed, b, 1);
    cJSON_Delete(parsed);
    return same;
}

static void check_element(const struct hub_msg *msg)
{
    struct buf b;
    struct proto_error err = { 0 };
    buf_init(&b);
    REQUIRE(legacy_invocation_element_encode(&b, msg->hub, msg->target, msg->args, msg->state, &err) == PROTO_OK);

    cJSON *el = cJSON_ParseWithLength(b.data, b.len);
    REQUIRE(cJSON_IsObject(el));
    REQUIRE(string_member_is(el, "H", msg->hub));
    REQUIRE(string_member_is(el, "M", msg->target));
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(el, "A");
    REQUIRE(cJSON_IsArray(a));
    if (msg->args.encoding == PAYLOAD_JSON)
        REQUIRE(same_json(msg->args.bytes, a));
    else
        REQUIRE(cJSON_GetArraySize(a) == 0);
    REQUIRE(cJSON_GetObjectItemCaseSensitive(el, "I") == NULL);
    cJSON_Delete(el);

    struct hub_msg again;
    REQUIRE(legacy_invocation_decode(b.data, b.len, &again, &err) == PROTO_OK);
    REQUIRE(span_eq(again.hub, msg->hub));
    REQUIRE(span_eq(again.target, msg->target));
    REQUIRE(!span_is_set(again.invocation_id));
    if (msg->args.encoding == PAYLOAD_JSON)
        REQUIRE(span_eq(again.args.bytes, msg->args.bytes));
    else
        REQUIRE(span_eq(again.args.bytes, SPAN_LIT("[]")));
    REQUIRE(again.state.encoding == msg->state.encoding);
    if (msg->state.encoding == PAYLOAD_JSON)
        REQUIRE(span_eq(again.state.bytes, msg->state.bytes));
    hub_msg_release(&again);
    buf_free(&b);
}

static void check_answers(const struct hub_msg *msg)
{
    struct buf b;
    struct proto_error err = { 0 };
    buf_init(&b);

    struct legacy_hub_result res = { .id = msg->invocation_id, .state = msg->state, .result = msg->args };
    REQUIRE(legacy_hub_result_encode(&b, &res, &err) == PROTO_OK);
    cJSON *r = cJSON_ParseWithLength(b.data, b.len);
    REQUIRE(cJSON_IsObject(r));
    REQUIRE(string_member_is(r, "I", msg->invocation_id));
    cJSON_Delete(r);

    buf_reset(&b);
    REQUIRE(legacy_progress_encode(&b, msg->invocation_id, msg->args, msg->state, &err) == PROTO_OK);
    cJSON *p = cJSON_ParseWithLength(b.data, b.len);
    REQUIRE(cJSON_IsObject(p));
    REQUIRE(string_member_is(cJSON_GetObjectItemCaseSensitive(p, "P"), "I", msg->invocation_id));
    const cJSON *prefixed = cJSON_GetObjectItemCaseSensitive(p, "I");
    REQUIRE(cJSON_IsString(prefixed) && strncmp(prefixed->valuestring, "P|", 2) == 0);
    cJSON_Delete(p);
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hub_msg msg;
    struct proto_error err = { 0 };
    enum proto_status st = legacy_invocation_decode((const char *)data, size, &msg, &err);
    if (st != PROTO_OK) {
        REQUIRE(proto_status_is_error(st));
        REQUIRE(err.detail != NULL);
        REQUIRE(msg.kind == HUB_MSG_NONE);
        hub_msg_release(&msg);
        return 0;
    }
    REQUIRE(msg.kind == HUB_MSG_INVOCATION);
    REQUIRE(span_is_set(msg.hub) && msg.hub.len > 0);
    REQUIRE(span_is_set(msg.target) && msg.target.len > 0);
    REQUIRE(msg.args.encoding == PAYLOAD_NONE || msg.args.encoding == PAYLOAD_JSON);
    REQUIRE(msg.state.encoding == PAYLOAD_NONE || msg.state.encoding == PAYLOAD_JSON);

    check_element(&msg);
    if (span_is_set(msg.invocation_id))
        check_answers(&msg);
    hub_msg_release(&msg);
    return 0;
}
