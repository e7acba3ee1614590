/* rp_answer.c - the server's HTTP side of a replay (port of replay.mjs onResponse and
 * onStreamData): answers by status, the compared headers and the body (JSON by value, the legacy
 * negotiate's member order too; Core records by value), event streams event by event as they
 * come, a long poll's answers joined when they batch differently. WebSockets: rp_frames.c. */
#include "rp_run_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "rp_core.h"
#include "rp_json.h"
#include "rp_mask.h"

static int drop_foreign(struct rp_run *r, const char *data, const char *want, char **filtered);

/* Response headers worth comparing (the rest, such as content-length, vary with token lengths). */
static const char *const COMPARED_RESPONSE_HEADERS[] = {"content-type", "x-content-type-options", "cache-control", NULL};

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

char *rp_compare_body(struct rp_run *r, const char *expected, const char *actual, const cJSON *actual_value,
                      int ordered, int negotiate)
{
    int blank = strspn(expected, " \t\r\n") == strlen(expected);
    cJSON *want = blank ? NULL : rp_json_parse(expected);
    if (!want)
        return rp_match_text(expected, actual, &r->b);
    if (r->o->reference)
        rp_mask_reference_json(want, negotiate);
    cJSON *got = actual_value ? NULL : rp_json_parse(actual);
    char *why;
    if (!actual_value && !got) {
        char *q = rp_quote(actual, 200);
        why = rp_fmt("is not JSON: %s", q);
        free(q);
    } else {
        why = rp_json_match(want, actual_value ? actual_value : got, &r->b, ordered, "$");
    }
    cJSON_Delete(want);
    cJSON_Delete(got);
    return why;
}

/* ---- HTTP */

static const char *path_of(const struct rp_req *q)
{
    const char *p = rp_ev_str(&q->r->fx.ev[q->req_ev], "path");
    return p ? p : "";
}

static int contains_nocase(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++)
        if (strncasecmp(s, needle, n) == 0)
            return 1;
    return 0;
}

/* A long poll answers with what has arrived by then, so the same messages may come in other batches
 * than recorded. When an answer holds only a prefix of the recorded messages, the poll is sent again
 * from the cursor it reached and the answers are compared joined; when it holds more, the rest is
 * carried to the next polls (rp_carry.c) and *carried set (compare without C). Returns 1 when sent
 * again; *joined is the rebuilt answer to compare when this was the last piece. */
static int continue_poll(struct rp_req *q, const char *expected_body, const char *body, cJSON **joined, int *carried)
{
    struct rp_run *r = q->r;
    const struct rp_event *req = &r->fx.ev[q->req_ev];
    const char *raw = rp_ev_str(req, "rawQuery");
    *joined = NULL;
    if (q->c->status != 200 || !(ends_with(path_of(q), "/poll") || ends_with(path_of(q), "/reconnect")) ||
        !contains_nocase(raw ? raw : "", "transport=longPolling"))
        return 0;
    cJSON *want = rp_json_parse(expected_body), *got = rp_json_parse(body);
    const cJSON *wantM = cJSON_GetObjectItemCaseSensitive(want, "M");
    cJSON *gotM = cJSON_GetObjectItemCaseSensitive(got, "M");
    int sent = 0;
    if (cJSON_IsObject(want) && cJSON_IsObject(got) && cJSON_IsArray(wantM) && cJSON_IsArray(gotM)) {
        cJSON *all = q->again ? cJSON_Duplicate(q->again, 1) : cJSON_CreateArray();
        for (const cJSON *m = gotM->child; m; m = m->next)
            cJSON_AddItemToArray(all, cJSON_Duplicate(m, 1));
        int n = cJSON_GetArraySize(all), k = rp_carry_count(expected_body);
        if (k > 0 && n > k && ends_with(path_of(q), "/poll")) {
            char *cursor = NULL;
            cJSON_ReplaceItemInObjectCaseSensitive(got, "M", all);
            all = NULL;
            cJSON *rest = rp_carry_split(got, k, &cursor);
            rp_carry_keep(r, q->req_ev, rest, cursor);
            *joined = got;
            got = NULL;
            *carried = 1;
        } else if (n == 0 || n >= cJSON_GetArraySize(wantM)) {
            if (q->again) {
                cJSON_ReplaceItemInObjectCaseSensitive(got, "M", all);
                *joined = got;
                got = NULL;
                all = NULL;
            }
        } else {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(got, "C");
            rp_send_request(r, q->req_ev, all, cJSON_IsString(c) ? c->valuestring : "");
            all = NULL;
            sent = 1;
        }
        cJSON_Delete(all);
    }
    cJSON_Delete(want);
    cJSON_Delete(got);
    return sent;
}

/* The non-ping records of a Core body (text or base64 MessagePack) into a new array of values. */
static cJSON *core_body_records(const char *text, const char *b64, const char *raw, size_t raw_len, int binary,
                               int *bad)
{
    cJSON *wrapped = cJSON_CreateArray(), *out = cJSON_CreateArray();
    char *err = NULL, *decoded = NULL;
    size_t n = raw_len;
    if (b64)
        raw = decoded = rp_decode_base64(b64, &n);
    else if (text)
        raw = text, n = strlen(text);
    if (!raw || (binary ? rp_core_binary_records((const unsigned char *)raw, n, 1, wrapped, &err)
                        : rp_core_text_records(raw, n, wrapped)) < 0)
        *bad = 1;
    free(err);
    free(decoded);
    for (cJSON *w = wrapped->child; w; w = w->next) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(w, "v");
        if (!v)
            *bad = 1;
        else if (!rp_core_is_ping(v))
            cJSON_AddItemToArray(out, cJSON_Duplicate(v, 1));
    }
    cJSON_Delete(wrapped);
    return out;
}

/* A Core poll's or POST's answer that carries records: status, content-type, then the records by
 * value (pings left out). Returns 1 when it handled the answer. */
static int core_records_answer(struct rp_req *q, struct rp_event *expected, struct rp_conn *c, const char *dexp)
{
    struct rp_run *r = q->r;
    const char *ebody = rp_ev_str(expected, "body"), *eb64 = rp_ev_str(expected, "bodyBase64");
    if (!eb64 && !(ebody && strchr(ebody, 0x1e)))
        return 0;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(expected->j, "status");
    int want_status = cJSON_IsNumber(st) ? (int)st->valuedouble : -1;
    const char *want_ct = rp_ev_header(expected, "content-type");
    char got_ct[256] = "";
    int has_ct = lg_http_header(c->head, c->head_len, "content-type", got_ct, sizeof got_ct);
    if (c->status != want_status && rp_differ(r, "%s: status %d, recorded %d", dexp, c->status, want_status))
        return 1;
    if (want_ct && (!has_ct || strcmp(got_ct, want_ct) != 0) &&
        rp_differ(r, "%s: header content-type \"%s\", recorded \"%s\"", dexp, has_ct ? got_ct : "undefined", want_ct))
        return 1;
    /* MessagePack when the recording has the body as bytes (a JSON session's polls are
     * application/octet-stream too). */
    int bad = 0, binary = eb64 != NULL;
    cJSON *want = core_body_records(ebody, eb64, NULL, 0, eb64 != NULL, &bad);
    if (eb64)
        rp_fixture_mask_minted(&r->fx, want);
    cJSON *got = core_body_records(NULL, NULL, c->body.p ? c->body.p : "", c->body.len, binary, &bad);
    char *why = bad ? rp_strdup("a body that is not SignalR records")
                    : rp_json_match(want, got, &r->b, 0, "$records");
    char *prefix = rp_fmt("%s: body", dexp);
    if (!rp_fail_why(r, why, prefix)) {
        rp_answered(r);
        expected->done = 1;
    }
    free(prefix);
    cJSON_Delete(want);
    cJSON_Delete(got);
    return 1;
}

/* A poll and the client's /abort race on their own sockets, as a Core poll and its DELETE do: a
 * poll that reaches the server after the /abort finds the connection ended, and is answered with
 * an error (E, no M) or nothing. The client that sent the /abort reads no poll answer any more:
 * that is the end of the connection, as recorded. */
static int late_poll(const struct rp_req *q, const char *body)
{
    if (!rp_legacy_aborted(q->r, q->req_ev))
        return 0;
    cJSON *got = rp_json_parse(body);
    int late = cJSON_IsObject(got) && !cJSON_GetObjectItemCaseSensitive(got, "M") &&
               (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(got, "E")) || !got->child);
    cJSON_Delete(got);
    return late;
}

/* A PersistentResponse whose M is empty. */
static int no_messages(const char *body)
{
    cJSON *got = rp_json_parse(body);
    const cJSON *m = cJSON_IsObject(got) ? cJSON_GetObjectItemCaseSensitive(got, "M") : NULL;
    int none = cJSON_IsArray(m) && m->child == NULL;
    cJSON_Delete(got);
    return none;
}

static void on_end(struct rp_conn *c)
{
    struct rp_req *q = c->ctx;
    struct rp_run *r = q->r;
    if (q->lp && q->lp->poll == q)
        q->lp->poll = NULL;
    if (r->failure)
        return;
    if (q->lp && (q->resp_ev == RP_NONE || r->fx.ev[q->resp_ev].poll_ws)) {
        rp_poll_end(q, c); /* Core long polling: one stream of records over the polls */
        return;
    }
    if (q->resp_ev == RP_NONE)
        return;
    struct rp_event *expected = &r->fx.ev[q->resp_ev];
    if (expected->done)
        return; /* the recording has no answer to compare with */
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(expected->j, "status");
    int want_status = cJSON_IsNumber(st) ? (int)st->valuedouble : -1;
    char *dexp = rp_describe(expected);
    if (q->sse) { /* compared event by event (on_data); here the status */
        if (c->status != want_status)
            rp_differ(r, "%s: status %d, recorded %d", dexp, c->status, want_status);
        expected->done = 1;
        free(dexp);
        return;
    }
    const char *body = c->body.p ? c->body.p : "";
    const char *ebody = rp_ev_str(expected, "body");
    if (r->fx.door_core && core_records_answer(q, expected, c, dexp)) {
        free(dexp);
        return;
    }
    cJSON *joined = NULL;
    char *filtered = NULL;
    int is_poll = ends_with(path_of(q), "/poll") || ends_with(path_of(q), "/reconnect");
    if (is_poll && c->status == 200 && late_poll(q, body)) {
        rp_answered(r);
        expected->done = 1;
        free(dexp);
        return;
    }
    if (r->o->foreign_pushes && is_poll && drop_foreign(r, body, ebody, &filtered)) {
        cJSON *got = rp_json_parse(body);
        if (!rp_legacy_aborted(r, q->req_ev)) {
            /* load: a poll answered with nothing but other copies' pushes: poll again from its cursor */
            const cJSON *cur = cJSON_GetObjectItemCaseSensitive(got, "C");
            rp_send_request(r, q->req_ev, q->again ? cJSON_Duplicate(q->again, 1) : NULL,
                            cJSON_IsString(cur) ? cur->valuestring : "");
            cJSON_Delete(got);
            free(dexp);
            return;
        }
        /* The client has sent its /abort: the real one polls no more (a poll after it would reach
         * a connection that is gone), and this answer, none of its messages ours, is the last. Its
         * C is past the recorded one by the other copies' pushes: not compared. */
        cJSON_Delete(got);
        rp_answered(r);
        expected->done = 1;
        free(dexp);
        return;
    }
    if (filtered)
        body = filtered;
    if (r->o->foreign_pushes && is_poll && no_messages(body) && rp_legacy_aborted(r, q->req_ev)) {
        /* load: the answer the /abort ended, with nothing of ours: its C is past the recorded
         * one by the other copies' pushes, and the client reads it no more. */
        rp_answered(r);
        expected->done = 1;
        free(filtered);
        free(dexp);
        return;
    }
    int carried = 0;
    if (continue_poll(q, ebody ? ebody : "", body, &joined, &carried)) {
        free(filtered);
        free(dexp);
        return;
    }
    char *stripped = carried ? rp_carry_strip_cursor(ebody) : NULL;
    if (stripped)
        ebody = stripped; /* the live C is past the messages carried to the next polls */
    const struct rp_event *req = &r->fx.ev[q->req_ev];
    char *where = rp_fmt("%s to %s %s", dexp, rp_ev_str(req, "method") ? rp_ev_str(req, "method") : "?", path_of(q));
    free(dexp);
    if (c->status != want_status) {
        char *qb = rp_quote(body, 200);
        rp_differ(r, "%s: status %d, recorded %d (body %s)", where, c->status, want_status, qb);
        free(qb);
    }
    for (int i = 0; !r->failure && COMPARED_RESPONSE_HEADERS[i]; i++) {
        const char *name = COMPARED_RESPONSE_HEADERS[i];
        if (r->fx.door_core && strcmp(name, "content-type") != 0)
            continue; /* Core answers: status, content-type and body (the capture/replay contract) */
        const char *want = rp_ev_header(expected, name);
        if (!want || (r->o->reference && rp_mask_reference_header(want_status, name)))
            continue;
        char got[512];
        int has = lg_http_header(c->head, c->head_len, name, got, sizeof got);
        if (!has || strcmp(got, want) != 0) {
            char *qg = has ? rp_quote(got, 200) : rp_strdup("undefined"), *qw = rp_quote(want, 200);
            rp_differ(r, "%s: header %s %s, recorded %s", where, name, qg, qw);
            free(qg);
            free(qw);
        }
    }
    if (!r->failure) {
        int negotiate = ends_with(path_of(q), "/negotiate");
        /* Legacy negotiate bodies keep their member order (spec §2.1); Core answers compare by value. */
        int ordered = negotiate && !r->fx.door_core;
        char *why = rp_compare_body(r, ebody ? ebody : "", body, joined, ordered, negotiate);
        char *prefix = rp_fmt("%s: body", where);
        if (!rp_fail_why(r, why, prefix)) {
            rp_answered(r);
            expected->done = 1;
        }
        free(prefix);
    }
    cJSON_Delete(joined);
    free(filtered);
    free(stripped);
    free(where);
}

/* The next recorded event of stream `id`, number `index`, or RP_NONE. */
static size_t sse_event(struct rp_run *r, int id, int index)
{
    for (size_t i = 0; i < r->fx.n; i++)
        if (r->fx.ev[i].type == EV_SSE && r->fx.ev[i].id == id && r->fx.ev[i].index == index)
            return i;
    return RP_NONE;
}

/* As continue_poll for a stream: a frame holding a prefix of the recorded frame's messages waits
 * for the next ones, and they are compared joined; one holding more keeps the rest in q->held for
 * the next recorded events (*carried: compare without C). Returns 1 to compare (*joined: the
 * rebuilt frame, or NULL for data as it came), 0 to wait. */
static int join_stream_frames(struct rp_req *q, const char *want_data, const char *data, cJSON **joined,
                              int *carried)
{
    *joined = NULL;
    *carried = 0;
    cJSON *want = rp_json_parse(want_data), *got = rp_json_parse(data);
    const cJSON *wantM = cJSON_IsObject(want) ? cJSON_GetObjectItemCaseSensitive(want, "M") : NULL;
    const cJSON *gotM = cJSON_IsObject(got) ? cJSON_GetObjectItemCaseSensitive(got, "M") : NULL;
    int compare = 1;
    if (cJSON_IsArray(wantM) && cJSON_IsArray(gotM)) {
        cJSON *all = q->held ? q->held : cJSON_CreateArray();
        q->held = NULL;
        free(q->held_cursor); /* this frame's C is past whatever was held */
        q->held_cursor = NULL;
        for (const cJSON *m = gotM->child; m; m = m->next)
            cJSON_AddItemToArray(all, cJSON_Duplicate(m, 1));
        int n = cJSON_GetArraySize(all), k = rp_carry_count(want_data);
        if (n > 0 && n < cJSON_GetArraySize(wantM)) {
            q->held = all;
            compare = 0;
        } else if (k > 0 && n > k) {
            cJSON_ReplaceItemInObjectCaseSensitive(got, "M", all);
            q->held = rp_carry_split(got, k, &q->held_cursor);
            *joined = got;
            got = NULL;
            *carried = 1;
        } else {
            cJSON_ReplaceItemInObjectCaseSensitive(got, "M", all);
            *joined = got;
            got = NULL;
        }
    }
    cJSON_Delete(want);
    cJSON_Delete(got);
    return compare;
}

static void on_head(struct rp_conn *c)
{
    struct rp_req *q = c->ctx;
    struct rp_run *r = q->r;
    int id = r->fx.ev[q->req_ev].id;
    for (size_t i = 0; i < r->fx.n; i++)
        if (r->fx.ev[i].type == EV_HTTP_HEAD && r->fx.ev[i].id == id)
            r->fx.ev[i].done = 1;
}

/* A Core event stream: each event's records against the stream's recorded records, as over a
 * WebSocket (however the records were spread over events). */
static void core_stream_data(struct rp_req *q, int id)
{
    struct rp_run *r = q->r;
    struct rp_ws_state *st = NULL;
    for (size_t s = 0; s < r->fx.nstreams; s++)
        if (r->fx.streams[s].ws == -id)
            st = &r->ws[s];
    char *end;
    while (st && !r->failure && q->pending.p && (end = strstr(q->pending.p, "\n\n")) != NULL) {
        struct rp_buf data = {0};
        for (char *l = q->pending.p; l < end;) {
            char *nl = memchr(l, '\n', (size_t)(end - l));
            size_t len = nl ? (size_t)(nl - l) : (size_t)(end - l);
            if (len >= 5 && strncmp(l, "data:", 5) == 0) {
                size_t skip = len > 5 && l[5] == ' ' ? 6 : 5;
                if (data.p)
                    rp_buf_add(&data, "\n", 1);
                rp_buf_add(&data, l + skip, len - skip);
            }
            l += len + 1;
        }
        rp_buf_consume(&q->pending, (size_t)(end - q->pending.p) + 2);
        if (data.p)
            rp_match_core_records(st, data.p, data.len, 0);
        rp_buf_free(&data);
    }
}

/* load: leaves other copies' pushes out of a legacy PersistentResponse (`data`): hub calls in its M
 * that match none of the recorded answer's (`want`, or NULL) messages. *filtered is what is left
 * (new text) when something was left out, else NULL. Returns 1 when nothing is left of a frame that
 * had messages (the whole frame was another copy's). */
static int drop_foreign(struct rp_run *r, const char *data, const char *want, char **filtered)
{
    cJSON *got = rp_json_parse(data);
    cJSON *m = cJSON_IsObject(got) ? cJSON_GetObjectItemCaseSensitive(got, "M") : NULL;
    cJSON *wanted = want ? rp_json_parse(want) : NULL;
    const cJSON *wm = cJSON_IsObject(wanted) ? cJSON_GetObjectItemCaseSensitive(wanted, "M") : NULL;
    int had = cJSON_GetArraySize(m), dropped = 0;
    /* Each recorded message keeps the first one after the previous kept one that matches it
     * (copies of one fixture push the same texts, and another copy's may come before this one's
     * earlier message); every other hub call is another copy's. */
    char *keep = calloc((size_t)had + 1, 1);
    int after = 0; /* where the next recorded message's match may start */
    for (const cJSON *x = cJSON_IsArray(wm) ? wm->child : NULL; x; x = x->next) {
        int k = 0;
        for (const cJSON *e = cJSON_IsArray(m) ? m->child : NULL; e; e = e->next, k++) {
            if (keep[k] || k < after)
                continue;
            struct rp_bindings probe = {0};
            for (size_t i = 0; i < r->b.n; i++)
                free(rp_bind(&probe, r->b.v[i].placeholder, r->b.v[i].value));
            char *why = rp_json_match(x, e, &probe, 0, "$");
            rp_bindings_free(&probe);
            free(why);
            if (!why) {
                keep[k] = 1;
                after = k + 1;
                break;
            }
        }
    }
    int k = 0;
    for (cJSON *e = cJSON_IsArray(m) ? m->child : NULL, *next; e; e = next, k++) {
        next = e->next;
        if (keep[k] || !cJSON_IsObject(e) || !cJSON_GetObjectItemCaseSensitive(e, "H") ||
            !cJSON_GetObjectItemCaseSensitive(e, "A"))
            continue;
        cJSON_Delete(cJSON_DetachItemViaPointer(m, e));
        dropped++;
        r->stats.foreign_ignored++;
    }
    free(keep);
    int all_gone = had > 0 && dropped == had;
    *filtered = dropped && !all_gone ? rp_json_show(got, (size_t)-1 / 2) : NULL;
    cJSON_Delete(got);
    cJSON_Delete(wanted);
    return all_gone;
}

/* load: drop_foreign on an event stream's line ("data: ..."), which it may rewrite. */
static int sse_foreign(struct rp_run *r, int id, int next, char **line)
{
    size_t w = sse_event(r, id, next);
    char *filtered = NULL;
    int all_gone = drop_foreign(r, *line + 6, w != RP_NONE ? r->fx.ev[w].data : NULL, &filtered);
    if (filtered) {
        free(*line);
        *line = rp_fmt("data: %s", filtered);
        free(filtered);
    }
    return all_gone;
}

/* Messages carried beyond an event (q->held) against the next recorded events, as many as they
 * fill; a partly filled one waits for the next live event (joined). */
static void sse_serve_held(struct rp_req *q, int id)
{
    struct rp_run *r = q->r;
    while (q->held && !r->failure) {
        size_t w = sse_event(r, id, q->next);
        int k = w != RP_NONE ? rp_carry_count(r->fx.ev[w].data) : -1;
        if (k <= 0) {
            char *shown = rp_json_show(q->held, 300);
            rp_differ(r, "stream %d: %d message(s) beyond the recorded events: %s", id, cJSON_GetArraySize(q->held), shown);
            free(shown);
            cJSON_Delete(q->held);
            q->held = NULL;
            free(q->held_cursor);
            q->held_cursor = NULL;
            return;
        }
        if (cJSON_GetArraySize(q->held) < k)
            return;
        cJSON *frame = rp_carry_take(&q->held, k, &q->held_cursor);
        if (rp_carry_compare(r, &r->fx.ev[w], r->fx.ev[w].data, frame, "(the previous event had it)")) {
            r->fx.ev[w].done = 1;
            q->next++;
            rp_answered(r);
        }
        cJSON_Delete(frame);
    }
}

/* A Server-Sent Events stream, event by event as it comes: each data line against the next recorded
 * one, keep-alives ({}) left out on both sides. */
static void on_data(struct rp_conn *c, const char *p, size_t n)
{
    struct rp_req *q = c->ctx;
    struct rp_run *r = q->r;
    if (!q->sse || r->failure)
        return;
    int id = r->fx.ev[q->req_ev].id;
    if (r->fx.door_core) {
        for (size_t i = 0; i < n; i++)
            if (p[i] != '\r')
                rp_buf_add(&q->pending, p + i, 1);
        core_stream_data(q, id);
        return;
    }
    if (q->next == 0 && q->pending.len == 0 && q->resp_ev != RP_NONE) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(r->fx.ev[q->resp_ev].j, "status");
        if (cJSON_IsNumber(st) && c->status != (int)st->valuedouble) {
            char *d = rp_describe(&r->fx.ev[q->resp_ev]);
            rp_fail(r, "%s: status %d, recorded %d", d, c->status, (int)st->valuedouble);
            free(d);
            return;
        }
    }
    rp_buf_add(&q->pending, p, n);
    char *end;
    while (!r->failure && q->pending.p && (end = strstr(q->pending.p, "\n\n")) != NULL) {
        char *line = rp_strndup(q->pending.p, (size_t)(end - q->pending.p));
        rp_buf_consume(&q->pending, (size_t)(end - q->pending.p) + 2);
        if (strncmp(line, "data: ", 6) != 0) {
            char *ql = rp_quote(line, 200);
            rp_differ(r, "stream %d: not a data line: %s", id, ql);
            free(ql);
        } else if (strcmp(line + 6, "{}") == 0) {
            r->stats.keepalives_ignored++;
        } else if (r->o->foreign_pushes && sse_foreign(r, id, q->next, &line)) {
            /* load: nothing but other copies' pushes */
        } else {
            size_t w = sse_event(r, id, q->next);
            cJSON *joined = NULL;
            int carried = 0;
            if (w == RP_NONE) {
                rp_differ(r, "stream %d: an event beyond the recording: data: %.200s", id, line + 6);
            } else if (join_stream_frames(q, r->fx.ev[w].data, line + 6, &joined, &carried)) {
                char *want = carried ? rp_carry_strip_cursor(r->fx.ev[w].data) : rp_strdup(r->fx.ev[w].data);
                char *why = rp_compare_body(r, want, line + 6, joined, 0, 0);
                char *d = rp_describe(&r->fx.ev[w]);
                if (!rp_fail_why(r, why, d)) {
                    r->fx.ev[w].done = 1;
                    q->next++;
                    rp_answered(r);
                    sse_serve_held(q, id);
                }
                free(d);
                free(want);
            }
            cJSON_Delete(joined);
        }
        free(line);
    }
}

static void on_http_error(struct rp_conn *c, const char *why)
{
    struct rp_req *q = c->ctx;
    struct rp_run *r = q->r;
    if (q->lp && q->lp->poll == q)
        q->lp->poll = NULL;
    const char *cut = q->resp_ev != RP_NONE ? rp_ev_str(&r->fx.ev[q->resp_ev], "cut") : NULL;
    if (cut && strcmp(cut, "client") == 0)
        return;
    char *d = rp_describe(&r->fx.ev[q->req_ev]);
    /* ab: no answer; reported, and the side goes on with its next request */
    if (!rp_differ(r, "%s: request failed: %s", d, why) && q->resp_ev != RP_NONE && !r->fx.ev[q->resp_ev].frame)
        r->fx.ev[q->resp_ev].done = 1;
    free(d);
}

const struct rp_conn_handler rp_http_handler = {
    .on_head = on_head, .on_data = on_data, .on_end = on_end, .on_error = on_http_error,
};

