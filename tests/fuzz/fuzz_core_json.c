/* fuzz_core_json.c - the Core JSON hub protocol under arbitrary bytes.
 *
 * The input is split into records as a transport stream would be, and (in
 * case it holds no separator) also decoded whole. Every record that decodes
 * must be strict JSON (tests/fuzz/json_oracle.h: what System.Text.Json would
 * read) and must re-encode; the re-encoding must be exactly one record of
 * strict JSON (an object), must decode to the same fields and raw payload
 * bytes, and must re-encode to itself.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 650000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/core_json.h"
#include "json_oracle.h"

#define MAX_RECORD (64 * 1024)

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_core_json: %s\n", what);
    abort();
}

/* Ids: absent and empty mean the same (fire and forget / none). */
static int same_text(struct span a, struct span b)
{
    return span_eq(a, b);
}

static int same_payload(const struct payload *a, const struct payload *b)
{
    return a->encoding == b->encoding && span_eq(a->bytes, b->bytes);
}

static void compare(const struct hub_msg *a, const struct hub_msg *b)
{
    if (a->kind != b->kind)
        fail("kind changed");
    if (!same_text(a->invocation_id, b->invocation_id))
        fail("invocation id changed");
    if (!same_text(a->target, b->target))
        fail("target changed");
    if (span_is_set(a->error) != span_is_set(b->error) || !span_eq(a->error, b->error))
        fail("error changed");
    if (a->completion != b->completion || a->allow_reconnect != b->allow_reconnect ||
        a->sequence_id != b->sequence_id)
        fail("completion/allowReconnect/sequenceId changed");
    if (!same_payload(&a->args, &b->args) || !same_payload(&a->item, &b->item) ||
        !same_payload(&a->result, &b->result) || !same_payload(&a->headers, &b->headers) ||
        !same_payload(&a->stream_ids, &b->stream_ids))
        fail("raw payload bytes changed");
}

static void check_record(const char *rec, size_t len)
{
    struct hub_msg first;
    struct proto_error err = { PROTO_OK, NULL };
    enum proto_status st = core_json_decode(rec, len, &first, &err);
    if (proto_status_is_error(st) && (err.status != st || !err.detail))
        fail("error without detail");
    if (st != PROTO_OK)
        return;
    if (!jo_is_json(rec, len))
        fail("a record that is not strict JSON decoded");

    struct buf once, twice;
    buf_init(&once);
    buf_init(&twice);
    if (core_json_encode(&first, &once, &err) != PROTO_OK)
        fail("a decoded message does not re-encode");
    if (once.len < 3 || once.data[once.len - 1] != CORE_RECORD_SEPARATOR ||
        memchr(once.data, CORE_RECORD_SEPARATOR, once.len - 1))
        fail("re-encoding is not exactly one record");
    struct jo_value tree;
    if (!jo_parse(once.data, once.len - 1, JO_MAX_DEPTH, &tree))
        fail("re-encoding is not strict JSON");
    if (tree.type != JO_OBJECT)
        fail("re-encoding is not a JSON object");
    jo_free(&tree);

    struct hub_msg second;
    if (core_json_decode(once.data, once.len - 1, &second, &err) != PROTO_OK)
        fail("re-encoding does not decode");
    compare(&first, &second);
    if (core_json_encode(&second, &twice, &err) != PROTO_OK)
        fail("second encode failed");
    if (!span_eq(buf_span(&once), buf_span(&twice)))
        fail("encoding is not stable");

    hub_msg_release(&second);
    hub_msg_release(&first);
    buf_free(&once);
    buf_free(&twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    size_t off = 0;
    for (;;) {
        struct span rec;
        size_t used = 0;
        enum proto_status st = core_text_next_record(p + off, size - off, MAX_RECORD, &rec, &used, NULL);
        if (st != PROTO_OK)
            break;
        if (used != rec.len + 1 || used > size - off || rec.ptr != p + off)
            fail("bad record bounds");
        check_record(rec.ptr, rec.len);
        off += used;
    }
    check_record(p, size);
    return 0;
}
