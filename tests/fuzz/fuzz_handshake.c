/* fuzz_handshake.c - handshake request and response decoders under arbitrary bytes.
 *
 * A request that decodes is strict JSON (what the server's Utf8JsonReader
 * would read). Whatever decodes must re-encode, and the re-encoding must decode to the
 * same protocol/version or error text. A refused protocol name also goes
 * through the server's error texts and back, as the relay would send it.
 * Every encoding is one strict JSON object (tests/fuzz/json_oracle.h) and
 * its record separator.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 600000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "protocol/handshake.h"
#include "json_oracle.h"

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_handshake: %s\n", what);
    abort();
}

static bool strict_record(const struct buf *out)
{
    struct jo_value v;
    if (out->len == 0 || out->data[out->len - 1] != 0x1e || !jo_parse(out->data, out->len - 1, JO_MAX_DEPTH, &v))
        return false;
    bool object = v.type == JO_OBJECT;
    jo_free(&v);
    return object;
}

/* Encodes a response with `error`, decodes it again and returns the error seen. */
static void response_roundtrip(struct span error)
{
    struct buf out;
    buf_init(&out);
    if (handshake_encode_response(error, &out, NULL) != PROTO_OK)
        fail("response does not encode");
    if (!strict_record(&out))
        fail("encoded response is not a strict JSON object and a separator");
    struct handshake_response back;
    if (handshake_decode_response(out.data, out.len - 1, &back, NULL) != PROTO_OK)
        fail("encoded response does not decode");
    if (span_is_empty(error) ? span_is_set(back.error) : !span_eq(back.error, error))
        fail("response error changed");
    handshake_response_release(&back);
    buf_free(&out);
}

static void check_request(const char *p, size_t n)
{
    struct handshake_request req;
    struct proto_error err = { PROTO_OK, NULL };
    enum proto_status st = handshake_decode_request(p, n, &req, &err);
    if (proto_status_is_error(st) && !err.detail)
        fail("error without detail");
    if (st != PROTO_OK)
        return;
    if (!jo_is_json(p, n))
        fail("a request that is not strict JSON decoded");

    struct buf out;
    buf_init(&out);
    if (handshake_encode_request(req.protocol, req.version, &out, NULL) != PROTO_OK)
        fail("request does not encode");
    if (!strict_record(&out))
        fail("encoded request is not a strict JSON object and a separator");
    struct handshake_request back;
    if (handshake_decode_request(out.data, out.len - 1, &back, NULL) != PROTO_OK)
        fail("encoded request does not decode");
    if (!span_eq(back.protocol, req.protocol) || back.version != req.version)
        fail("request changed");
    handshake_request_release(&back);

    /* what the server would answer to a protocol or version it refuses */
    buf_reset(&out);
    enum hub_protocol proto;
    if (!hub_protocol_from_name(req.protocol, &proto)) {
        if (!handshake_text_protocol_unsupported(&out, req.protocol))
            fail("text");
    } else if (!hub_protocol_version_supported(proto, req.version)) {
        if (!handshake_text_version_unsupported(&out, req.protocol, req.version))
            fail("text");
    } else if (!handshake_text_transfer_format(&out, proto)) {
        fail("text");
    }
    response_roundtrip(buf_span(&out));
    buf_free(&out);
    handshake_request_release(&req);
}

static void check_response(const char *p, size_t n)
{
    struct handshake_response resp;
    struct proto_error err = { PROTO_OK, NULL };
    enum proto_status st = handshake_decode_response(p, n, &resp, &err);
    if (proto_status_is_error(st) && !err.detail)
        fail("error without detail");
    if (st != PROTO_OK)
        return;
    response_roundtrip(resp.error);
    handshake_response_release(&resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_request((const char *)data, size);
    check_response((const char *)data, size);
    return 0;
}
