/* fuzz_legacy_invocation.c - legacy client invocations: decode, re-encode, decode again.
 *
 * Properties checked for every input:
 *   - a failure has a detail string and leaves no invocation behind;
 *   - a success is an invocation with non-empty H and M and JSON payloads,
 *     and the input itself is strict JSON (tests/fuzz/json_oracle.h: no
 *     trailing bytes, no raw control characters, valid UTF-8);
 *   - written back as a server->client element {"H","M","A"[,"S"]} it is
 *     strict JSON, an object with exactly one H and one M (strings equal to
 *     the hub and method byte for byte), exactly one A whose bytes are the
 *     arguments' bytes (or [] when there were none), no I, and S with the
 *     state's bytes exactly when the state is present and not null; and our
 *     decoder reads it back to the same fields byte for byte;
 *   - with its id, the hub result {"I":id[,"S"][,"R"]} and the progress
 *     element {"I":"P|id","P":{"I":id,"D":args}} are strict JSON carrying
 *     that id as a string, and R / D carry the arguments' bytes exactly.
 * Payloads are compared as bytes, never as parsed values: a number such as
 * 4e4444 is an infinity to cJSON, and two infinities are not cJSON_Compare-equal.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 900000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers/buf.h"
#include "protocol/hub_msg.h"
#include "protocol/legacy_frame.h"
#include "protocol/legacy_invocation.h"
#include "json_oracle.h"

#define REQUIRE(cond)                                                                  \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* The one member named key, or NULL when it is absent; aborts if it is there twice. */
static const struct jo_value *only(const struct jo_value *obj, const char *key)
{
    REQUIRE(jo_member_count(obj, key) <= 1);
    return jo_member(obj, key);
}

/* A payload that is present and not the JSON null (encoders leave those out). */
static int present(struct payload p)
{
    if (p.encoding != PAYLOAD_JSON)
        return 0;
    struct jo_value v;
    REQUIRE(jo_parse(p.bytes.ptr, p.bytes.len, JO_MAX_DEPTH, &v));
    int is_null = v.type == JO_NULL;
    jo_free(&v);
    return !is_null;
}

static int raw_is(const struct jo_value *v, struct span expected)
{
    return v && span_eq(v->raw, expected);
}

static void check_element(const struct hub_msg *msg)
{
    struct buf b;
    struct proto_error err = { 0 };
    buf_init(&b);
    REQUIRE(legacy_invocation_element_encode(&b, msg->hub, msg->target, msg->args, msg->state, &err) == PROTO_OK);

    struct jo_value el;
    REQUIRE(jo_parse(b.data, b.len, JO_MAX_DEPTH, &el));
    REQUIRE(el.type == JO_OBJECT);
    REQUIRE(jo_string_is(only(&el, "H"), msg->hub));
    REQUIRE(jo_string_is(only(&el, "M"), msg->target));
    const struct jo_value *a = only(&el, "A");
    REQUIRE(a && a->type == JO_ARRAY);
    REQUIRE(raw_is(a, msg->args.encoding == PAYLOAD_JSON ? msg->args.bytes : SPAN_LIT("[]")));
    REQUIRE(only(&el, "I") == NULL);
    const struct jo_value *s = only(&el, "S");
    if (present(msg->state))
        REQUIRE(raw_is(s, msg->state.bytes));
    else
        REQUIRE(s == NULL);
    jo_free(&el);

    struct hub_msg again;
    REQUIRE(legacy_invocation_decode(b.data, b.len, &again, &err) == PROTO_OK);
    REQUIRE(span_eq(again.hub, msg->hub));
    REQUIRE(span_eq(again.target, msg->target));
    REQUIRE(!span_is_set(again.invocation_id));
    if (msg->args.encoding == PAYLOAD_JSON)
        REQUIRE(span_eq(again.args.bytes, msg->args.bytes));
    else
        REQUIRE(span_eq(again.args.bytes, SPAN_LIT("[]")));
    REQUIRE(again.state.encoding == (present(msg->state) ? PAYLOAD_JSON : PAYLOAD_NONE));
    if (present(msg->state))
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
    struct jo_value r;
    REQUIRE(jo_parse(b.data, b.len, JO_MAX_DEPTH, &r));
    REQUIRE(r.type == JO_OBJECT);
    REQUIRE(jo_string_is(only(&r, "I"), msg->invocation_id));
    const struct jo_value *result = only(&r, "R");
    if (present(msg->args))
        REQUIRE(raw_is(result, msg->args.bytes));
    else
        REQUIRE(result == NULL);
    const struct jo_value *state = only(&r, "S");
    if (present(msg->state))
        REQUIRE(raw_is(state, msg->state.bytes));
    else
        REQUIRE(state == NULL);
    REQUIRE(only(&r, "E") == NULL && only(&r, "H") == NULL);
    jo_free(&r);

    buf_reset(&b);
    REQUIRE(legacy_progress_encode(&b, msg->invocation_id, msg->args, msg->state, &err) == PROTO_OK);
    struct jo_value p;
    REQUIRE(jo_parse(b.data, b.len, JO_MAX_DEPTH, &p));
    REQUIRE(p.type == JO_OBJECT);
    const struct jo_value *inner = only(&p, "P");
    REQUIRE(inner && inner->type == JO_OBJECT);
    REQUIRE(jo_string_is(only(inner, "I"), msg->invocation_id));
    const struct jo_value *d = only(inner, "D");
    REQUIRE(raw_is(d, msg->args.encoding == PAYLOAD_JSON ? msg->args.bytes : SPAN_LIT("null")));
    const struct jo_value *prefixed = only(&p, "I");
    REQUIRE(prefixed && prefixed->type == JO_STRING && prefixed->str_len == msg->invocation_id.len + 2 &&
            memcmp(prefixed->str, "P|", 2) == 0 &&
            memcmp(prefixed->str + 2, msg->invocation_id.ptr, msg->invocation_id.len) == 0);
    jo_free(&p);
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
    REQUIRE(jo_is_json((const char *)data, size));

    check_element(&msg);
    if (span_is_set(msg.invocation_id))
        check_answers(&msg);
    hub_msg_release(&msg);
    return 0;
}
