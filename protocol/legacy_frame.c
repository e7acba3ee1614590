/* legacy_frame.c - server->client legacy frames and hub results (see legacy_frame.h). */
#include "protocol/legacy_frame.h"

#include "protocol/json_write.h"

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Absent, or the JSON literal null: the original leaves such fields out
 * (NullValueHandling.Ignore on HubResponse and ClientHubInvocation.S). */
static bool payload_is_nothing(struct payload p)
{
    if (p.encoding == PAYLOAD_NONE || !span_is_set(p.bytes))
        return true;
    if (p.encoding != PAYLOAD_JSON)
        return false;
    const char *s = skip_space(p.bytes.ptr, p.bytes.ptr + p.bytes.len);
    const char *end = p.bytes.ptr + p.bytes.len;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        end--;
    return end - s == 4 && memcmp(s, "null", 4) == 0;
}

/* Legacy frames are JSON: a payload must be JSON (or absent) to be spliced in. */
static enum proto_status check_payload(struct payload p, struct proto_error *err)
{
    if (p.encoding == PAYLOAD_NONE)
        return PROTO_OK;
    if (p.encoding != PAYLOAD_JSON)
        return proto_fail(err, PROTO_ERR_VALUE, "legacy frames carry JSON payloads only");
    if (!span_is_set(p.bytes) || p.bytes.len == 0)
        return proto_fail(err, PROTO_ERR_VALUE, "empty JSON payload");
    return PROTO_OK;
}

static enum proto_status out_of_memory(struct buf *out, size_t mark, struct proto_error *err)
{
    out->len = mark;
    return proto_fail(err, PROTO_ERR_NOMEM, "out of memory writing a legacy frame");
}

/* ---- PersistentResponse ---- */

static bool write_head(struct buf *b, const struct legacy_response_head *h)
{
    if (!buf_append_byte(b, '{') || !json_write_key(b, "C", true) ||
        !json_write_string(b, h->cursor))
        return false;
    if (h->initializing && !(json_write_key(b, "S", false) && buf_append_byte(b, '1')))
        return false;
    if (h->reconnect && !(json_write_key(b, "T", false) && buf_append_byte(b, '1')))
        return false;
    if (span_is_set(h->groups_token) &&
        !(json_write_key(b, "G", false) && json_write_string(b, h->groups_token)))
        return false;
    if (h->has_long_poll_delay &&
        !(json_write_key(b, "L", false) && buf_append_i64(b, h->long_poll_delay_ms)))
        return false;
    return json_write_key(b, "M", false) && buf_append_byte(b, '[');
}

enum proto_status legacy_response_begin(struct legacy_response *r, struct buf *out,
                                        const struct legacy_response_head *head,
                                        struct proto_error *err)
{
    r->out = out;
    r->frame_start = out->len;
    r->elements = 0;
    if (!span_is_set(head->cursor) || head->cursor.len == 0)
        return proto_fail(err, PROTO_ERR_MISSING, "a PersistentResponse needs a cursor (C)");
    if (!write_head(out, head))
        return out_of_memory(out, r->frame_start, err);
    return PROTO_OK;
}

/* The comma before every element but the first; undone if the element fails. */
static bool element_separator(struct legacy_response *r)
{
    return r->elements == 0 || buf_append_byte(r->out, ',');
}

enum proto_status legacy_response_add_raw(struct legacy_response *r, struct span element,
                                          struct proto_error *err)
{
    size_t mark = r->out->len;
    if (!span_is_set(element) || element.len == 0)
        return proto_fail(err, PROTO_ERR_VALUE, "empty PersistentResponse element");
    if (!element_separator(r) || !buf_append_span(r->out, element))
        return out_of_memory(r->out, mark, err);
    r->elements++;
    return PROTO_OK;
}

enum proto_status legacy_response_add_invocation(struct legacy_response *r, struct span hub,
                                                 struct span method, struct payload args,
                                                 struct payload state, struct proto_error *err)
{
    size_t mark = r->out->len;
    if (!element_separator(r))
        return out_of_memory(r->out, mark, err);
    enum proto_status st = legacy_invocation_element_encode(r->out, hub, method, args, state, err);
    if (st != PROTO_OK) {
        r->out->len = mark;
        return st;
    }
    r->elements++;
    return PROTO_OK;
}

enum proto_status legacy_response_add_progress(struct legacy_response *r,
                                               struct span invocation_id, struct payload value,
                                               struct payload state, struct proto_error *err)
{
    size_t mark = r->out->len;
    if (!element_separator(r))
        return out_of_memory(r->out, mark, err);
    enum proto_status st = legacy_progress_encode(r->out, invocation_id, value, state, err);
    if (st != PROTO_OK) {
        r->out->len = mark;
        return st;
    }
    r->elements++;
    return PROTO_OK;
}

enum proto_status legacy_response_end(struct legacy_response *r, struct proto_error *err)
{
    if (!buf_append(r->out, "]}", 2))
        return out_of_memory(r->out, r->out->len, err);
    return PROTO_OK;
}

void legacy_response_abandon(struct legacy_response *r)
{
    r->out->len = r->frame_start;
    r->elements = 0;
}

/* ---- elements and results ---- */

enum proto_status legacy_invocation_element_encode(struct buf *out, struct span hub,
                                                   struct span method, struct payload args,
                                                   struct payload state, struct proto_error *err)
{
    enum proto_status st;
    if (!span_is_set(hub) || hub.len == 0)
        return proto_fail(err, PROTO_ERR_MISSING, "a client invocation needs a hub name (H)");
    if (!span_is_set(method) || method.len == 0)
        return proto_fail(err, PROTO_ERR_MISSING, "a client invocation needs a method name (M)");
    if ((st = check_payload(args, err)) != PROTO_OK || (st = check_payload(state, err)) != PROTO_OK)
        return st;

    size_t mark = out->len;
    bool ok = buf_append_byte(out, '{') && json_write_key(out, "H", true) &&
              json_write_string(out, hub) && json_write_key(out, "M", false) &&
              json_write_string(out, method) && json_write_key(out, "A", false) &&
              (args.encoding == PAYLOAD_NONE ? buf_append(out, "[]", 2)
                                             : buf_append_span(out, args.bytes));
    if (ok && !payload_is_nothing(state))
        ok = json_write_key(out, "S", false) && buf_append_span(out, state.bytes);
    if (!ok || !buf_append_byte(out, '}'))
        return out_of_memory(out, mark, err);
    return PROTO_OK;
}

/* "P|" + id as one JSON string: the prefix makes clients that know nothing
 * of progress find no callback for it (HubDispatcher.SendProgressUpdate). */
static bool write_progress_id(struct buf *out, struct span id)
{
    struct buf joined;
    buf_init(&joined);
    bool ok = buf_append(&joined, "P|", 2) && buf_append_span(&joined, id) &&
              json_write_string(out, buf_span(&joined));
    buf_free(&joined);
    return ok;
}

enum proto_status legacy_progress_encode(struct buf *out, struct span invocation_id,
                                         struct payload value, struct payload state,
                                         struct proto_error *err)
{
    enum proto_status st;
    if (!span_is_set(invocation_id))
        return proto_fail(err, PROTO_ERR_MISSING, "progress needs an invocation id");
    if ((st = check_payload(value, err)) != PROTO_OK || (st = check_payload(state, err)) != PROTO_OK)
        return st;

    size_t mark = out->len;
    bool first = true;
    bool ok = buf_append_byte(out, '{');
    if (ok && !payload_is_nothing(state)) {
        ok = json_write_key(out, "S", true) && buf_append_span(out, state.bytes);
        first = false;
    }
    ok = ok && json_write_key(out, "I", first) && write_progress_id(out, invocation_id) &&
         json_write_key(out, "P", false) && buf_append_byte(out, '{') &&
         json_write_key(out, "I", true) && json_write_string(out, invocation_id) &&
         json_write_key(out, "D", false) &&
         (value.encoding == PAYLOAD_NONE ? buf_append(out, "null", 4)
                                         : buf_append_span(out, value.bytes)) &&
         buf_append(out, "}}", 2);
    if (!ok)
        return out_of_memory(out, mark, err);
    return PROTO_OK;
}

enum proto_status legacy_hub_result_encode(struct buf *out, const struct legacy_hub_result *res,
                                           struct proto_error *err)
{
    enum proto_status st;
    if (!span_is_set(res->id))
        return proto_fail(err, PROTO_ERR_MISSING, "a hub result needs an invocation id");
    if ((st = check_payload(res->state, err)) != PROTO_OK ||
        (st = check_payload(res->result, err)) != PROTO_OK ||
        (st = check_payload(res->error_data, err)) != PROTO_OK)
        return st;

    size_t mark = out->len;
    bool first = true;
    bool ok = buf_append_byte(out, '{');
    if (ok && !payload_is_nothing(res->state)) {
        ok = json_write_key(out, "S", first) && buf_append_span(out, res->state.bytes);
        first = false;
    }
    if (ok && !payload_is_nothing(res->result)) {
        ok = json_write_key(out, "R", first) && buf_append_span(out, res->result.bytes);
        first = false;
    }
    ok = ok && json_write_key(out, "I", first) && json_write_string(out, res->id);
    if (ok && span_is_set(res->error)) {
        if (res->hub_exception)
            ok = json_write_key(out, "H", false) && buf_append(out, "true", 4);
        ok = ok && json_write_key(out, "E", false) && json_write_string(out, res->error);
        if (ok && !payload_is_nothing(res->error_data))
            ok = json_write_key(out, "D", false) && buf_append_span(out, res->error_data.bytes);
    }
    if (!ok || !buf_append_byte(out, '}'))
        return out_of_memory(out, mark, err);
    return PROTO_OK;
}

bool legacy_error_frame_encode(struct buf *out, struct span message)
{
    size_t mark = out->len;
    if (buf_append_byte(out, '{') && json_write_key(out, "E", true) &&
        json_write_string(out, message) && buf_append_byte(out, '}'))
        return true;
    out->len = mark;
    return false;
}
