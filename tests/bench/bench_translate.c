/* bench_translate.c - the cost of each translation path, without the network.
 *
 * Usage: bench_translate PATH ITERATIONS   (PATH: see `paths` below; "all" runs each once
 * and prints ns/op). scripts/bench-translate runs each path under callgrind at two iteration
 * counts and reports the difference per iteration: instructions per message, repeatable on a
 * noisy machine, with process start-up subtracted out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "containers/buf.h"
#include "protocol/convert.h"
#include "protocol/core_json.h"
#include "protocol/core_msgpack.h"
#include "protocol/core_peek.h"
#include "protocol/hub_msg.h"
#include "protocol/legacy_frame.h"
#include "protocol/legacy_invocation.h"
#include "protocol/legacy_translate.h"

static const char legacy_call[] = "{\"H\":\"chathub\",\"M\":\"Echo\",\"A\":[{\"name\":\"bob\",\"n\":42,\"tags\":[\"a\",\"b\"]}],\"I\":7}";
static const char core_completion[] = "{\"type\":3,\"invocationId\":\"7\",\"result\":{\"name\":\"bob\",\"n\":42,\"tags\":[\"a\",\"b\"]}}";
static const char core_push[] = "{\"type\":1,\"target\":\"broadcast\",\"arguments\":[\"bob\",\"hello world\"]}";
static const char core_push_framed[] = "{\"type\":1,\"target\":\"broadcast\",\"arguments\":[\"bob\",\"hello world\"]}\x1e";

static int die(const char *what)
{
    fprintf(stderr, "bench_translate: %s failed\n", what);
    exit(1);
}

/* Legacy client invocation -> Core JSON invocation (what the relay sends the backend). */
static void legacy_to_core(struct buf *out)
{
    struct hub_msg msg;
    hub_msg_init(&msg);
    if (legacy_invocation_decode(legacy_call, sizeof legacy_call - 1, &msg, NULL) != PROTO_OK)
        die("legacy_invocation_decode");
    msg.hub = SPAN_NONE;
    msg.state = (struct payload){ PAYLOAD_NONE, SPAN_NONE };
    msg.invocation_id = SPAN_LIT("12");
    buf_reset(out);
    if (core_json_encode(&msg, out, NULL) != PROTO_OK)
        die("core_json_encode");
    hub_msg_release(&msg);
}

/* Core Completion -> legacy hub result. */
static void core_to_legacy_result(struct buf *out)
{
    struct hub_msg msg;
    hub_msg_init(&msg);
    if (core_json_decode(core_completion, sizeof core_completion - 1, &msg, NULL) != PROTO_OK)
        die("core_json_decode");
    buf_reset(out);
    if (legacy_translate_completion(out, &msg, NULL) != PROTO_OK)
        die("legacy_translate_completion");
    hub_msg_release(&msg);
}

/* Core server invocation -> legacy PersistentResponse frame with one M element. */
static void core_to_legacy_push(struct buf *out)
{
    struct hub_msg msg;
    struct buf element;
    hub_msg_init(&msg);
    buf_init(&element);
    if (core_json_decode(core_push, sizeof core_push - 1, &msg, NULL) != PROTO_OK)
        die("core_json_decode");
    if (legacy_translate_invocation(&element, &msg, SPAN_LIT("chathub"), NULL) != PROTO_OK)
        die("legacy_translate_invocation");
    struct legacy_response_head head = { .cursor = SPAN_LIT("5c1b2a9f-1f") };
    struct legacy_response r;
    buf_reset(out);
    if (legacy_response_begin(&r, out, &head, NULL) != PROTO_OK ||
        legacy_response_add_raw(&r, buf_span(&element), NULL) != PROTO_OK || legacy_response_end(&r, NULL) != PROTO_OK)
        die("legacy_response");
    buf_free(&element);
    hub_msg_release(&msg);
}

/* Core proxy pass-through: the only look the relay takes at a forwarded server message. */
static void core_passthrough_peek(struct buf *out)
{
    unsigned kinds;
    (void)out;
    if (core_peek_kinds(0, core_push_framed, sizeof core_push_framed - 1, &kinds, NULL) != PROTO_OK)
        die("core_peek_kinds");
}

/* Core JSON invocation -> Core MessagePack invocation (only where the two ends differ). */
static void core_json_to_msgpack(struct buf *out)
{
    struct hub_msg msg, converted;
    struct buf scratch;
    hub_msg_init(&msg);
    hub_msg_init(&converted);
    buf_init(&scratch);
    if (core_json_decode(core_push, sizeof core_push - 1, &msg, NULL) != PROTO_OK)
        die("core_json_decode");
    if (hub_msg_convert(&msg, PAYLOAD_MSGPACK, &scratch, &converted, NULL) != PROTO_OK)
        die("hub_msg_convert");
    buf_reset(out);
    if (core_msgpack_encode(&converted, out, NULL) != PROTO_OK)
        die("core_msgpack_encode");
    buf_free(&scratch);
    hub_msg_release(&converted);
    hub_msg_release(&msg);
}

static const struct {
    const char *name;
    void (*run)(struct buf *out);
} paths[] = {
    { "legacy-invocation-to-core", legacy_to_core },
    { "core-completion-to-legacy", core_to_legacy_result },
    { "core-push-to-legacy-frame", core_to_legacy_push },
    { "core-passthrough-peek", core_passthrough_peek },
    { "core-json-to-msgpack", core_json_to_msgpack },
};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    long iterations = argc > 2 ? atol(argv[2]) : 100000;
    struct buf out;
    buf_init(&out);
    int ran = 0;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        if (strcmp(which, "all") != 0 && strcmp(which, paths[i].name) != 0)
            continue;
        double start = now_ns();
        for (long k = 0; k < iterations; k++)
            paths[i].run(&out);
        if (strcmp(which, "all") == 0)
            printf("| %s | %.0f |\n", paths[i].name, (now_ns() - start) / (double)iterations);
        ran++;
    }
    buf_free(&out);
    if (!ran) {
        fprintf(stderr, "bench_translate: unknown path '%s'\n", which);
        return 2;
    }
    return 0;
}
