/* fuzz_negotiate.c - the client-side negotiate decoder (and the server-side
 * query parsers) under arbitrary bytes.
 *
 * A response that decodes is strict JSON, and is re-encoded with the server-side encoder; when
 * the encoder can express it (it omits empty strings and only knows the three
 * stock transports), decoding that must give the same fields back. Every
 * encoding is a strict JSON object (tests/fuzz/json_oracle.h).
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 1000000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "protocol/negotiate.h"
#include "json_oracle.h"

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_negotiate: %s\n", what);
    abort();
}

static bool strict_object(const struct buf *out)
{
    struct jo_value v;
    if (!jo_parse(out->data, out->len, JO_MAX_DEPTH, &v))
        return false;
    bool object = v.type == JO_OBJECT;
    jo_free(&v);
    return object;
}

/* Absent and empty strings are the same to the encoder. */
static int same_text(struct span a, struct span b)
{
    return span_eq(a, b);
}

static unsigned known_transports(const struct negotiate_response *r)
{
    unsigned bits = 0;
    for (size_t i = 0; i < r->transport_count; i++)
        bits |= r->transports[i].transport;
    return bits;
}

static void check_error_roundtrip(struct span error)
{
    struct buf out;
    buf_init(&out);
    if (negotiate_encode_error(error, &out, NULL) != PROTO_OK)
        fail("error body does not encode");
    if (!strict_object(&out))
        fail("error body is not a strict JSON object");
    struct negotiate_response back;
    if (negotiate_decode_response(out.data, out.len, &back, NULL) != PROTO_OK ||
        !span_eq(back.error, error))
        fail("error body changed");
    negotiate_response_release(&back);
    buf_free(&out);
}

static void check_connection_roundtrip(const struct negotiate_response *r)
{
    bool redirect = !span_is_empty(r->url);
    if (!redirect && (span_is_empty(r->connection_id) ||
                      (r->version > 0 && span_is_empty(r->connection_token))))
        return; /* the encoder omits empty strings the decoder would then miss */

    struct negotiate_reply reply = {
        .version = r->version,
        .use_stateful_reconnect = r->use_stateful_reconnect,
        .url = r->url,
        .access_token = r->access_token,
        .connection_id = r->connection_id,
        .connection_token = r->connection_token,
        .transports = known_transports(r),
    };
    struct buf out;
    buf_init(&out);
    if (negotiate_encode_response(&reply, &out, NULL) != PROTO_OK)
        fail("response does not encode");
    if (!strict_object(&out))
        fail("response is not a strict JSON object");
    struct negotiate_response back;
    if (negotiate_decode_response(out.data, out.len, &back, NULL) != PROTO_OK)
        fail("encoded response does not decode");
    if (back.version != r->version || back.use_stateful_reconnect != r->use_stateful_reconnect ||
        !same_text(back.url, r->url) || !same_text(back.access_token, r->access_token) ||
        !same_text(back.connection_id, r->connection_id) ||
        (r->version > 0 && !same_text(back.connection_token, r->connection_token)) ||
        span_is_set(back.error) || known_transports(&back) != reply.transports)
        fail("response changed");
    for (size_t i = 0; i < back.transport_count; i++)
        if (back.transports[i].formats == 0)
            fail("a stock transport lost its formats");
    negotiate_response_release(&back);
    buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    struct negotiate_response r;
    struct proto_error err = { PROTO_OK, NULL };
    enum proto_status st = negotiate_decode_response(p, size, &r, &err);
    if (proto_status_is_error(st) && !err.detail)
        fail("error without detail");
    if (st == PROTO_OK) {
        if (!jo_is_json(p, size))
            fail("a response that is not strict JSON decoded");
        if (span_is_set(r.error))
            check_error_roundtrip(r.error);
        else
            check_connection_roundtrip(&r);
        negotiate_response_release(&r);
    }

    /* the same bytes as a negotiateVersion / useStatefulReconnect query value */
    struct buf text;
    buf_init(&text);
    int version = -1;
    st = negotiate_parse_version(span_make(p, size), 0, &version, &text, NULL);
    if (st == PROTO_OK && (version < 0 || version > NEGOTIATE_MAX_VERSION || text.len != 0))
        fail("version out of range");
    if (st == PROTO_ERR_VALUE && text.len == 0)
        fail("refused version without a text");
    buf_free(&text);
    (void)negotiate_query_bool(span_make(p, size));
    return 0;
}
