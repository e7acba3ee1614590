/* fuzz_core_msgpack.c - Core MessagePack framing and hub messages.
 *
 * The input is run twice: once as a single message body, once as a byte
 * stream of VarInt-framed messages. Properties checked for every message:
 *   - a failure has a detail and leaves no half-decoded message;
 *   - every span of a decoded message lies inside the body (zero copy);
 *   - what decodes re-encodes, the encoding is one whole frame, it decodes
 *     to the same fields and payload bytes, and encoding that gives the same
 *     bytes again;
 *   - what converts to JSON payloads converts back, encodes and decodes;
 *   - the frame parser says INCOMPLETE for every strict prefix of a frame.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 600000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "containers/buf.h"
#include "protocol/convert.h"
#include "protocol/core_msgpack.h"
#include "protocol/hub_msg.h"

#include "tests/fuzz/span_property.h"

#define MAX_FRAME (1u << 20)

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_core_msgpack: property violated: %s\n", what);
    abort();
}

static bool same_payload(struct payload a, struct payload b)
{
    return a.encoding == b.encoding && (a.encoding == PAYLOAD_NONE || span_eq(a.bytes, b.bytes));
}

/* The fields the MessagePack protocol carries, compared after a round trip.
 * One documented normalisation: a Close error "" is written as nil. */
static void compare(const struct hub_msg *a, const struct hub_msg *b)
{
    struct span a_error = a->error;
    if (a->kind == HUB_MSG_CLOSE && span_is_set(a_error) && a_error.len == 0)
        a_error = SPAN_NONE;
    if (a->kind != b->kind) fail("kind");
    if (!same_span(a->target, b->target)) fail("target");
    if (!same_span(a->invocation_id, b->invocation_id)) fail("invocation id");
    if (!same_span(a_error, b->error)) fail("error");
    if (a->completion != b->completion) fail("completion kind");
    if (a->allow_reconnect != b->allow_reconnect) fail("allowReconnect");
    if (a->sequence_id != b->sequence_id) fail("sequence id");
    if (!same_payload(a->headers, b->headers)) fail("headers");
    if (!same_payload(a->args, b->args)) fail("arguments");
    if (!same_payload(a->stream_ids, b->stream_ids)) fail("stream ids");
    if (!same_payload(a->item, b->item)) fail("item");
    if (!same_payload(a->result, b->result)) fail("result");
}

/* Encodes msg, checks it is one whole frame, decodes it into *again. */
static void reencode(const struct hub_msg *msg, struct buf *out, struct hub_msg *again)
{
    struct proto_error err = { 0 };
    if (core_msgpack_encode(msg, out, &err) != PROTO_OK)
        fail("a decoded message does not encode");
    struct span body;
    size_t consumed = 0;
    if (core_binary_next_frame(out->data, out->len, MAX_FRAME, &body, &consumed, &err) != PROTO_OK ||
        consumed != out->len)
        fail("the encoding is not one whole frame");
    if (core_msgpack_decode(body.ptr, body.len, again, &err) != PROTO_OK)
        fail("the encoding does not decode");
}

/* Through JSON payloads and back: must work whenever the first step does. */
static void through_json(const struct hub_msg *msg)
{
    struct buf to_json, to_mp, frame;
    buf_init(&to_json);
    buf_init(&to_mp);
    buf_init(&frame);
    struct hub_msg json_msg, mp_msg, decoded;
    struct proto_error err = { 0 };
    enum proto_status st = hub_msg_convert(msg, PAYLOAD_JSON, &to_json, &json_msg, &err);
    if (st != PROTO_OK) {
        if (!err.detail || to_json.len != 0)
            fail("failed conversion without detail or with leftovers");
    } else {
        if (hub_msg_convert(&json_msg, PAYLOAD_MSGPACK, &to_mp, &mp_msg, &err) != PROTO_OK)
            fail("JSON payloads made from MessagePack do not convert back");
        reencode(&mp_msg, &frame, &decoded);
        if (decoded.kind != msg->kind || !same_span(decoded.target, msg->target) ||
            !same_span(decoded.invocation_id, msg->invocation_id))
            fail("message changed through JSON");
    }
    buf_free(&to_json);
    buf_free(&to_mp);
    buf_free(&frame);
}

static void check_message(struct span body)
{
    struct hub_msg msg;
    struct proto_error err = { 0 };
    enum proto_status st = core_msgpack_decode(body.ptr, body.len, &msg, &err);
    if (st != PROTO_OK) {
        if (proto_status_is_error(st) && !err.detail)
            fail("error without detail");
        if (msg.kind != HUB_MSG_NONE)
            fail("failed decode left a message behind");
        return;
    }
    struct span spans[] = { msg.target, msg.invocation_id, msg.error, msg.headers.bytes,
                            msg.args.bytes, msg.stream_ids.bytes, msg.item.bytes, msg.result.bytes };
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++)
        if (!inside(spans[i], body))
            fail("span outside the body");

    struct buf first, second;
    buf_init(&first);
    buf_init(&second);
    struct hub_msg again, third;
    reencode(&msg, &first, &again);
    compare(&msg, &again);
    reencode(&again, &second, &third);
    if (first.len != second.len || memcmp(first.data, second.data, first.len))
        fail("encoding is not stable");
    through_json(&msg);
    buf_free(&first);
    buf_free(&second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    check_message(span_make(p, size));

    size_t pos = 0;
    while (pos < size) {
        struct span frame;
        size_t consumed = 0;
        struct proto_error err = { 0 };
        enum proto_status st = core_binary_next_frame(p + pos, size - pos, MAX_FRAME, &frame,
                                                      &consumed, &err);
        if (st == PROTO_INCOMPLETE)
            break;
        if (st != PROTO_OK) {
            if (!err.detail)
                fail("frame error without detail");
            break;
        }
        if (consumed == 0 || consumed > size - pos || frame.ptr + frame.len != p + pos + consumed)
            fail("frame bounds");
        for (size_t cut = 0; cut < consumed; cut++) {
            struct span ignored;
            size_t ignored_len;
            if (core_binary_next_frame(p + pos, cut, MAX_FRAME, &ignored, &ignored_len, NULL) !=
                PROTO_INCOMPLETE)
                fail("a strict prefix of a frame is not incomplete");
        }
        check_message(frame);
        pos += consumed;
    }
    return 0;
}
