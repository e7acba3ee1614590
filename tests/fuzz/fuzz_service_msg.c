/* fuzz_service_msg.c - the service protocol codec and framer.
 *
 * The input is checked as one message body, then as a byte stream. Properties:
 *   - a failure has a detail and leaves a zeroed message;
 *   - every span of a decoded message (and every element its lists yield)
 *     lies inside the body: zero copy, never out of bounds;
 *   - what decodes re-encodes into exactly one frame, which decodes to equal
 *     fields (lists compared element by element, absent list = empty list),
 *     and encoding that again gives the same bytes;
 *   - the framer yields the same bodies whether the stream comes in one
 *     chunk or in two (split where the first input byte says), and never
 *     keeps more than one message's bytes.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 200000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "containers/buf.h"
#include "protocol/service_msg.h"

#include "tests/fuzz/span_property.h"

#define MAX_MESSAGE (1u << 20)

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_service_msg: property violated: %s\n", what);
    abort();
}

static void check_list_inside(const struct svc_list *l, struct span body)
{
    if (!inside(l->raw, body))
        fail("list outside the body");
    struct svc_list_iter it;
    struct span k, v;
    uint32_t n = 0;
    svc_list_iter_begin(&it, l);
    while (svc_list_iter_next(&it, &k, &v)) {
        if (!inside(k, l->raw) || !inside(v, l->raw))
            fail("list element outside its list");
        if (l->kind == SVC_LIST_HEADERS) {
            struct svc_list values = svc_list_of_values(v);
            check_list_inside(&values, body);
        }
        n++;
    }
    if (n != l->count)
        fail("list count");
}

static void compare_lists(const struct svc_list *a, const struct svc_list *b)
{
    struct svc_list_iter ia, ib;
    struct span ka, va, kb, vb;
    svc_list_iter_begin(&ia, a);
    svc_list_iter_begin(&ib, b);
    for (;;) {
        bool more_a = svc_list_iter_next(&ia, &ka, &va);
        bool more_b = svc_list_iter_next(&ib, &kb, &vb);
        if (more_a != more_b)
            fail("list lengths differ after a round trip");
        if (!more_a)
            return;
        if (!same_span(ka, kb))
            fail("list keys differ after a round trip");
        if (a->kind == SVC_LIST_HEADERS) {
            struct svc_list x = svc_list_of_values(va), y = svc_list_of_values(vb);
            compare_lists(&x, &y);
        } else if (a->kind != SVC_LIST_STRINGS && !same_span(va, vb)) {
            fail("list values differ after a round trip");
        }
    }
}

static void compare(const struct svc_msg *a, const struct svc_msg *b)
{
    if (a->type != b->type) fail("type");
    if (a->version != b->version || a->conn_type != b->conn_type ||
        a->migration_level != b->migration_level ||
        a->allow_stateful_reconnect != b->allow_stateful_reconnect)
        fail("handshake fields");
    const struct span sa[] = { a->target, a->connection_id, a->error, a->user_id, a->group,
                               a->payload, a->caller_user_id, a->query, a->ack_message,
                               a->invocation_id, a->caller_server_id, a->protocol,
                               a->ext.protocol, a->ext.filter };
    const struct span sb[] = { b->target, b->connection_id, b->error, b->user_id, b->group,
                               b->payload, b->caller_user_id, b->query, b->ack_message,
                               b->invocation_id, b->caller_server_id, b->protocol,
                               b->ext.protocol, b->ext.filter };
    for (size_t i = 0; i < sizeof sa / sizeof sa[0]; i++)
        if (!same_span(sa[i], sb[i]))
            fail("string field");
    if (a->ack_id != b->ack_id || a->ack_status != b->ack_status) fail("ack");
    if (a->ext.has_tracing_id != b->ext.has_tracing_id || a->ext.tracing_id != b->ext.tracing_id ||
        a->ext.has_ttl != b->ext.has_ttl || a->ext.ttl != b->ext.ttl ||
        a->ext.data_type != b->ext.data_type || a->ext.has_partial != b->ext.has_partial ||
        a->ext.partial != b->ext.partial)
        fail("ext");
    compare_lists(&a->ids, &b->ids);
    compare_lists(&a->excluded_users, &b->excluded_users);
    compare_lists(&a->payloads, &b->payloads);
    compare_lists(&a->claims, &b->claims);
    compare_lists(&a->headers, &b->headers);
}

/* Encodes m, checks it is one whole frame, decodes it into *again. */
static void reencode(const struct svc_msg *m, struct buf *out, struct svc_msg *again)
{
    struct proto_error err = { 0 };
    if (svc_msg_encode(m, out, &err) != PROTO_OK)
        fail("a decoded message does not encode");
    struct svc_framer fr;
    struct span body;
    svc_framer_init(&fr, SIZE_MAX);
    svc_framer_push(&fr, out->data, out->len);
    if (svc_framer_next(&fr, &body, &err) != PROTO_OK || body.ptr + body.len != out->data + out->len)
        fail("the encoding is not one whole frame");
    if (svc_msg_decode(body.ptr, body.len, again, &err) != PROTO_OK)
        fail("the encoding does not decode");
    svc_framer_free(&fr);
}

static void check_message(struct span body)
{
    struct svc_msg m;
    struct proto_error err = { 0 };
    enum proto_status st = svc_msg_decode(body.ptr, body.len, &m, &err);
    if (st != PROTO_OK) {
        if (proto_status_is_error(st) && !err.detail)
            fail("error without detail");
        if (m.type != SVC_NONE || m.elements != 0)
            fail("failed decode left a message behind");
        return;
    }
    const struct span spans[] = { m.target, m.connection_id, m.error, m.user_id, m.group,
                                  m.payload, m.caller_user_id, m.query, m.ack_message,
                                  m.invocation_id, m.caller_server_id, m.protocol,
                                  m.ext.protocol, m.ext.filter };
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++)
        if (!inside(spans[i], body))
            fail("span outside the body");
    const struct svc_list *lists[] = { &m.ids, &m.excluded_users, &m.payloads, &m.claims, &m.headers };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        check_list_inside(lists[i], body);
    struct span ignored;
    (void)svc_payloads_find(&m.payloads, SPAN_LIT("json"), &ignored);
    (void)svc_ping_get(&m, "shutdown", &ignored);

    struct buf first, second;
    buf_init(&first);
    buf_init(&second);
    struct svc_msg again, third;
    reencode(&m, &first, &again);
    compare(&m, &again);
    reencode(&again, &second, &third);
    if (first.len != second.len || memcmp(first.data, second.data, first.len))
        fail("encoding is not stable");
    buf_free(&first);
    buf_free(&second);
}

/* Runs the stream through the framer in the given chunks; collects body
 * offsets-independent fingerprints (lengths and bytes) into *out. */
static void frame_stream(const char *p, size_t size, size_t cut, struct buf *out, bool check)
{
    struct svc_framer fr;
    struct span body;
    enum proto_status st = PROTO_INCOMPLETE;
    svc_framer_init(&fr, MAX_MESSAGE);
    const size_t bounds[3] = { 0, cut, size };
    for (int c = 0; c < 2 && !proto_status_is_error(st); c++) {
        size_t len = bounds[c + 1] - bounds[c];
        char *chunk = malloc(len ? len : 1); /* exact size: ASan sees any overread */
        memcpy(chunk, p + bounds[c], len);
        svc_framer_push(&fr, chunk, len);
        while ((st = svc_framer_next(&fr, &body, NULL)) == PROTO_OK) {
            if (body.len > MAX_MESSAGE)
                fail("framer returned a body over the limit");
            buf_append(out, &body.len, sizeof body.len);
            buf_append(out, body.ptr, body.len);
            if (check)
                check_message(body);
        }
        if (svc_framer_buffered(&fr) > MAX_MESSAGE + 5)
            fail("framer holds more than one message");
        free(chunk);
    }
    buf_append(out, &st, sizeof st);
    svc_framer_free(&fr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    check_message(span_make(p, size));

    struct buf whole, split;
    buf_init(&whole);
    buf_init(&split);
    size_t cut = size ? (size_t)data[0] % (size + 1) : 0;
    frame_stream(p, size, size, &whole, true);
    frame_stream(p, size, cut, &split, false);
    if (whole.len != split.len || memcmp(whole.data, split.data, whole.len))
        fail("framer output depends on how the stream is cut");
    buf_free(&whole);
    buf_free(&split);
    return 0;
}
