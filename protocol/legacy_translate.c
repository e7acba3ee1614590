/* legacy_translate.c - Core hub messages as legacy frames (see legacy_translate.h). */
#include "protocol/legacy_translate.h"

#include <string.h>

#include "protocol/legacy_frame.h"

#define HUB_EXCEPTION_MARK " HubException: "

/* Finds needle in haystack; returns its offset or -1. */
static long find(struct span haystack, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0 || haystack.len < n)
        return -1;
    for (size_t i = 0; i + n <= haystack.len; i++)
        if (memcmp(haystack.ptr + i, needle, n) == 0)
            return (long)i;
    return -1;
}

static bool starts_with(struct span s, const char *prefix, size_t *prefix_len)
{
    size_t n = strlen(prefix);
    *prefix_len = n;
    return s.len >= n && memcmp(s.ptr, prefix, n) == 0;
}

bool legacy_core_hub_exception_message(struct span error, struct span *message)
{
    static const char invoking[] = "An unexpected error occurred invoking '";
    static const char invoking_tail[] = "' on the server." HUB_EXCEPTION_MARK;
    static const char streaming[] =
        "An error occurred on the server while streaming results." HUB_EXCEPTION_MARK;
    size_t n;

    if (!span_is_set(error))
        return false;
    if (starts_with(error, streaming, &n)) {
        *message = span_make(error.ptr + n, error.len - n);
        return true;
    }
    if (!starts_with(error, invoking, &n))
        return false;
    /* The method name comes first, the message after: the first tail is ours. */
    struct span rest = span_make(error.ptr + n, error.len - n);
    long at = find(rest, invoking_tail);
    if (at < 0)
        return false;
    size_t skip = (size_t)at + strlen(invoking_tail);
    *message = span_make(rest.ptr + skip, rest.len - skip);
    return true;
}

/* Text that runs from prefix to a quoted name and then exactly tail (nothing
 * after it), or tail followed by HUB_EXCEPTION_MARK and anything when
 * exception_tail is set. */
static bool is_named_text(struct span s, const char *prefix, const char *tail, bool exception_tail)
{
    size_t n;
    if (!starts_with(s, prefix, &n))
        return false;
    struct span rest = span_make(s.ptr + n, s.len - n);
    long at = find(rest, tail);
    if (at <= 0)
        return false;
    size_t end = (size_t)at + strlen(tail);
    if (end == rest.len)
        return true;
    size_t mark = strlen(HUB_EXCEPTION_MARK);
    return exception_tail && rest.len - end > mark && memcmp(rest.ptr + end, HUB_EXCEPTION_MARK, mark) == 0;
}

bool legacy_core_generic_failure(struct span error)
{
    static const char streaming[] = "An error occurred on the server while streaming results.";
    if (!span_is_set(error))
        return false;
    if (error.len == sizeof streaming - 1 && memcmp(error.ptr, streaming, error.len) == 0)
        return true;
    return is_named_text(error, "An unexpected error occurred invoking '", "' on the server.", false) ||
           is_named_text(error, "Failed to invoke '", "' due to an error on the server.", true);
}

bool legacy_invocation_failure_text(struct buf *out, struct span hub, struct span method)
{
    size_t mark = out->len;
    bool ok = buf_append_cstr(out, "There was an error invoking Hub method '") && buf_append(out, hub.ptr, hub.len) &&
              buf_append_byte(out, '.') && buf_append(out, method.ptr, method.len) && buf_append_cstr(out, "'.");
    if (!ok)
        out->len = mark;
    return ok;
}

enum proto_status legacy_translate_completion(struct buf *out, const struct hub_msg *completion,
                                              struct proto_error *err)
{
    if (completion->kind != HUB_MSG_COMPLETION)
        return proto_fail(err, PROTO_ERR_VALUE, "not a completion");
    if (!span_is_set(completion->invocation_id))
        return proto_fail(err, PROTO_ERR_MISSING, "a completion needs an invocation id");

    struct legacy_hub_result res = { .id = completion->invocation_id };
    switch (completion->completion) {
    case COMPLETION_RESULT:
        res.result = completion->result; /* null is left out by the encoder */
        break;
    case COMPLETION_ERROR:
        res.error = span_is_set(completion->error) ? completion->error : SPAN_LIT("");
        res.hub_exception = legacy_core_hub_exception_message(res.error, &res.error);
        break;
    case COMPLETION_VOID:
    case COMPLETION_NONE:
        break;
    }
    return legacy_hub_result_encode(out, &res, err);
}

enum proto_status legacy_translate_invocation(struct buf *out, const struct hub_msg *invocation,
                                              struct span hub_as_spelled,
                                              struct proto_error *err)
{
    if (invocation->kind != HUB_MSG_INVOCATION)
        return proto_fail(err, PROTO_ERR_VALUE, "not an invocation");
    return legacy_invocation_element_encode(out, hub_as_spelled, invocation->target,
                                            invocation->args,
                                            (struct payload){ PAYLOAD_NONE, SPAN_NONE }, err);
}

enum proto_status legacy_translate_stream_item(struct buf *out, const struct hub_msg *item,
                                               struct proto_error *err)
{
    if (item->kind != HUB_MSG_STREAM_ITEM)
        return proto_fail(err, PROTO_ERR_VALUE, "not a stream item");
    return legacy_progress_encode(out, item->invocation_id, item->item,
                                  (struct payload){ PAYLOAD_NONE, SPAN_NONE }, err);
}
