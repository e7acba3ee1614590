/* rp_frames.c - the server's WebSocket side of a replay (port of replay.mjs matchFrame and
 * onClose): accepted or refused as recorded, frames as a sequence of items whatever the batching
 * (legacy: elements of M and standalone frames, head fields and cursors; Core: records), closes
 * by code and reason. */
#include "rp_run_int.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "rp_core.h"
#include "rp_json.h"

/* ---- WebSockets */

static const char *ws_path(const struct rp_ws_state *st)
{
    const struct rp_run *r = st->r;
    if (st->stream->ws <= RP_POLL_WS)
        return "the long polls";
    if (st->stream->ws < 0)
        return "an event stream";
    const char *p = st->stream->open_ev != RP_NONE ? rp_ev_str(&r->fx.ev[st->stream->open_ev], "path") : NULL;
    return p ? p : "?";
}

static void on_open(struct rp_conn *c)
{
    struct rp_ws_state *st = c->ctx;
    struct rp_run *r = st->r;
    if (st->answer_ev == RP_NONE || r->fx.ev[st->answer_ev].type != EV_WS_ACCEPTED) {
        char *d = rp_describe(&r->fx.ev[st->stream->open_ev]);
        rp_fail(r, "%s: accepted, recorded %s", d, st->answer_ev == RP_NONE ? "no answer" : "refused");
        free(d);
        return;
    }
    r->fx.ev[st->answer_ev].done = 1;
}

static void on_refused(struct rp_conn *c)
{
    struct rp_ws_state *st = c->ctx;
    struct rp_run *r = st->r;
    st->closed = 1;
    const char *body = c->body.p ? c->body.p : "";
    if (st->answer_ev == RP_NONE || r->fx.ev[st->answer_ev].type != EV_WS_REFUSED) {
        char *d = rp_describe(&r->fx.ev[st->stream->open_ev]), *qb = rp_quote(body, 200);
        rp_fail(r, "%s: refused with %d %s, recorded accepted", d, c->status, qb);
        free(d);
        free(qb);
        return;
    }
    struct rp_event *answer = &r->fx.ev[st->answer_ev];
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(answer->j, "status");
    char *d = rp_describe(answer);
    if (cJSON_IsNumber(status) && (int)status->valuedouble != c->status) {
        rp_fail(r, "%s: refused with %d, recorded %d", d, c->status, (int)status->valuedouble);
    } else {
        const char *want = rp_ev_str(answer, "body");
        char *prefix = rp_fmt("%s: refusal body", d);
        if (!want || !rp_fail_why(r, rp_compare_body(r, want, body, NULL, 0, 0), prefix))
            answer->done = 1;
        free(prefix);
    }
    free(d);
}

static void on_ws_error(struct rp_conn *c, const char *why)
{
    struct rp_ws_state *st = c->ctx;
    struct rp_run *r = st->r;
    st->closed = 1;
    if (st->client_closed || r->failure)
        return;
    if (st->answer_ev != RP_NONE && r->fx.ev[st->answer_ev].type == EV_WS_REFUSED && !c->head_done)
        return;
    char *d = rp_describe(&r->fx.ev[st->stream->open_ev]);
    rp_fail(r, "%s: socket error %s", d, why);
    free(d);
}

static void mark_frames(struct rp_ws_state *st)
{
    for (size_t f = 0; f < st->stream->nframes; f++) {
        struct rp_frame *fr = st->stream->frames[f];
        if (!fr->done && fr->end <= st->pos && (!fr->special || fr->head_matched)) {
            fr->done = 1;
            st->r->fx.ev[fr->ev].done = 1;
        }
    }
}

static void advance(struct rp_ws_state *st)
{
    st->pos++;
    rp_answered(st->r);
    mark_frames(st);
}

/* The next expected item, or NULL: one beyond the recording is a difference (ab: reported, and
 * the frame is skipped). `got` is shown as it is when `json` (a record, a message), else quoted. */
static struct rp_item *next_item_of(struct rp_ws_state *st, const char *got, int json)
{
    if (st->pos < st->stream->nitems)
        return &st->stream->items[st->pos];
    char *q = json ? rp_strdup(got) : rp_quote(got, 300);
    if (st->stream->ws <= RP_POLL_WS)
        rp_differ(st->r, "the long polls: unexpected record %s after all %zu recorded ones", q, st->stream->nitems);
    else if (st->stream->ws < 0)
        rp_differ(st->r, "event stream %d: unexpected record %s after all %zu recorded ones", -st->stream->ws, q,
                  st->stream->nitems);
    else
        rp_differ(st->r, "ws %d (%s): unexpected frame %s after all %zu recorded ones", st->stream->ws, ws_path(st), q,
                  st->stream->nitems);
    free(q);
    return NULL;
}

static struct rp_item *next_item(struct rp_ws_state *st, const char *got)
{
    return next_item_of(st, got, 0);
}

static int item_fail(struct rp_ws_state *st, const struct rp_item *item, char *why, const cJSON *got_value,
                     const char *got_text)
{
    if (!why)
        return 0;
    char *d = rp_describe(&st->r->fx.ev[item->frame->ev]);
    char *shown = got_value ? rp_json_show(got_value, 300) : rp_quote(got_text, 200);
    int stop = rp_differ(st->r, "%s: got %s: %s", d, shown, why);
    free(d);
    free(shown);
    free(why);
    return stop;
}

static struct rp_frame *nth_special(struct rp_stream *s, size_t n)
{
    for (size_t f = 0; f < s->nframes; f++)
        if (s->frames[f]->special && n-- == 0)
            return s->frames[f];
    return NULL;
}

/* load: another copy's push (a hub call that is not the next recorded item) is left out. */
static int foreign_push(struct rp_ws_state *st, const cJSON *m)
{
    struct rp_run *r = st->r;
    if (!r->o->foreign_pushes || !cJSON_IsObject(m) || !cJSON_GetObjectItemCaseSensitive(m, "H") ||
        !cJSON_GetObjectItemCaseSensitive(m, "M") || !cJSON_GetObjectItemCaseSensitive(m, "A"))
        return 0;
    const struct rp_item *item = st->pos < st->stream->nitems ? &st->stream->items[st->pos] : NULL;
    if (item && item->element && item->value) {
        /* Matched on a copy of the bindings: a push that only looks like the expected one binds nothing. */
        struct rp_bindings probe = {0};
        probe.shared_cursors = r->b.shared_cursors;
        for (size_t i = 0; i < r->b.n; i++)
            free(rp_bind(&probe, r->b.v[i].placeholder, r->b.v[i].value));
        char *why = rp_json_match(item->value, m, &probe, 0, "$");
        rp_bindings_free(&probe);
        if (!why)
            return 0;
        free(why);
    }
    r->stats.foreign_ignored++;
    return 1;
}

/* A PersistentResponse: head fields, then its messages, then its cursor. */
static void match_persistent(struct rp_ws_state *st, const cJSON *value)
{
    struct rp_run *r = st->r;
    size_t start = st->pos;
    cJSON *head = cJSON_CreateObject();
    for (const cJSON *c = value->child; c; c = c->next)
        if (strcmp(c->string, "M") != 0 && strcmp(c->string, "C") != 0)
            cJSON_AddItemToObject(head, c->string, cJSON_Duplicate(c, 1));
    struct rp_frame *special = nth_special(st->stream, st->special_index);
    char *shead = rp_json_show(head, 300), *sval = rp_json_show(value, 300);
    if (head->child) {
        if (!special) {
            rp_differ(r, "ws %d (%s): frame with %s at message %zu; the recording has no such frame: %s", st->stream->ws,
                      ws_path(st), shead, start, sval);
        } else if (special->start != start) {
            char *d = rp_describe(&r->fx.ev[special->ev]);
            if (!rp_differ(r, "%s: frame with %s came at message %zu, recorded at %zu", d, shead, start, special->start)) {
                special->head_matched = 1; /* ab: reported once, the side goes on */
                st->special_index++;
            }
            free(d);
        } else {
            char *d = rp_describe(&r->fx.ev[special->ev]);
            char *prefix = rp_fmt("%s: head", d);
            if (!rp_fail_why(r, rp_json_match(special->head, head, &r->b, 0, "$"), prefix)) {
                special->head_matched = 1;
                st->special_index++;
            }
            free(prefix);
            free(d);
        }
    } else if (special && special->start <= start) {
        char *d = rp_describe(&r->fx.ev[special->ev]), *sh = rp_json_show(special->head, 300);
        if (!rp_differ(r, "%s: expected a frame with %s here, got %s", d, sh, sval)) {
            special->head_matched = 1;
            st->special_index++;
        }
        free(d);
        free(sh);
    }
    free(shead);
    cJSON_Delete(head);
    for (const cJSON *m = cJSON_GetObjectItemCaseSensitive(value, "M")->child; m && !r->failure; m = m->next) {
        if (foreign_push(st, m))
            continue;
        char *sm = rp_json_show(m, 300);
        struct rp_item *item = next_item(st, sm);
        free(sm);
        if (!item)
            break;
        if (!item->element) {
            char *d = rp_describe(&r->fx.ev[item->frame->ev]), *sm2 = rp_json_show(m, 300);
            char *se = item->value ? rp_json_show(item->value, 300) : rp_quote(item->text ? item->text : "<binary>", 200);
            int stop = rp_differ(r, "%s: expected standalone frame %s, got message %s in M", d, se, sm2);
            free(d);
            free(sm2);
            free(se);
            if (stop)
                break;
            st->pos++; /* ab: the recorded frame taken as answered otherwise */
            continue;
        }
        if (item_fail(st, item, rp_json_match(item->value, m, &r->b, 0, "$.M[]"), m, NULL))
            break;
        st->pos++;
        rp_answered(r);
    }
    if (!r->failure) {
        /* The cursor names the position after the last message: it binds the placeholder of the
         * recorded frame that ended at the same position, however the messages were batched. */
        struct rp_frame *ending = NULL;
        for (size_t f = 0; f < st->stream->nframes && !ending; f++) {
            struct rp_frame *fr = st->stream->frames[f];
            if (fr->persistent && !fr->cursor_bound && fr->end == st->pos)
                ending = fr;
        }
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(value, "C");
        if (ending) {
            char *d = rp_describe(&r->fx.ev[ending->ev]);
            if (ending->cursor && !c)
                rp_differ(r, "%s: frame without C: %s", d, sval);
            else if (ending->cursor)
                rp_fail_why(r, rp_json_match(ending->cursor, c, &r->b, 0, "$.C"), d);
            ending->cursor_bound = 1;
            free(d);
        } else if (!c) {
            rp_differ(r, "ws %d (%s): PersistentResponse without C: %s", st->stream->ws, ws_path(st), sval);
        }
    }
    free(sval);
    if (!r->failure) {
        rp_answered(r);
        mark_frames(st);
    }
}

/* Core: each record of the frame against the next recorded one, pings left out, JSON (and
 * decoded MessagePack) by value with member order ignored. */
/* The end race of a Core WebSocket the client closed (recorded: a Close record, then its close):
 * the server's Close record answering it, and its close of the socket, may come before the client
 * closes, or not. A Close record after all the recorded records is that answer, not a difference
 * (and the server's close after it, as after a recorded one: on_close). */
static int close_answer(const struct rp_ws_state *st, const cJSON *v)
{
    const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : cJSON_IsArray(v) ? v->child : NULL;
    if (!cJSON_IsNumber(type) || type->valuedouble != 7 || st->pos < st->stream->nitems || st->stream->ws <= 0)
        return 0;
    const struct rp_run *r = st->r;
    for (size_t i = 0; i < r->fx.n; i++)
        if (r->fx.ev[i].type == EV_WS_CLOSE && r->fx.ev[i].ws == st->stream->ws && r->fx.ev[i].by_client)
            return 1;
    return 0;
}

void rp_match_core_records(struct rp_ws_state *st, const char *data, size_t n, int binary)
{
    struct rp_run *r = st->r;
    cJSON *records = cJSON_CreateArray();
    char *err = NULL;
    int first = st->frames_seen++ == 0;
    if (binary && rp_core_binary_records((const unsigned char *)data, n, first, records, &err) < 0) {
        rp_fail(r, "ws %d (%s): a binary frame that is not MessagePack records: %s", st->stream->ws, ws_path(st), err);
        free(err);
    } else if (!binary) {
        rp_core_text_records(data, n, records);
    }
    for (const cJSON *w = records->child; w && !r->failure; w = w->next) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(w, "v");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(w, "t");
        if (v && rp_core_is_ping(v)) {
            r->stats.keepalives_ignored++;
            continue;
        }
        if (v && close_answer(st, v)) {
            st->close_answered = 1;
            continue;
        }
        char *shown = v ? rp_json_show(v, 300) : rp_quote(t->valuestring, 200);
        struct rp_item *item = next_item_of(st, shown, 1);
        free(shown);
        if (!item)
            break;
        char *why;
        if (item->value && v)
            why = rp_json_match(item->value, v, &r->b, 0, "$");
        else if (item->text && t)
            why = rp_match_text(item->text, t->valuestring, &r->b);
        else
            why = rp_strdup(item->binary ? "recorded a binary frame that is not MessagePack records"
                            : v ? "is JSON, recorded text" : "is not JSON");
        if (item_fail(st, item, why, v, t ? t->valuestring : NULL))
            break;
        advance(st);
    }
    cJSON_Delete(records);
}

static void match_frame(struct rp_ws_state *st, const char *data, size_t n, int binary)
{
    struct rp_run *r = st->r;
    if (r->fx.door_core) {
        rp_match_core_records(st, data, n, binary);
        return;
    }
    if (binary) {
        struct rp_item *item = next_item(st, "<binary>");
        if (!item)
            return;
        char *b64 = rp_xmalloc(4 * ((n + 2) / 3) + 1);
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)data, (int)n);
        if (!item->binary || strcmp(item->binary, b64) != 0) {
            char *d = rp_describe(&r->fx.ev[item->frame->ev]);
            rp_differ(r, "%s: got binary %.80s", d, b64);
            free(d);
        }
        free(b64);
        if (!r->failure)
            advance(st);
        return;
    }
    char *text = rp_strndup(data, n);
    cJSON *value = rp_json_parse(text);
    if (value && rp_json_is_keepalive(value)) {
        r->stats.keepalives_ignored++;
    } else if (!value) {
        struct rp_item *item = next_item(st, text);
        if (item && !item_fail(st, item, item->text ? rp_match_text(item->text, text, &r->b) : rp_strdup("is not JSON"),
                               NULL, text))
            advance(st);
    } else if (!rp_json_is_persistent(value)) {
        char *sv = rp_json_show(value, 300);
        struct rp_item *item = next_item(st, sv);
        free(sv);
        if (item && item->element) {
            char *d = rp_describe(&r->fx.ev[item->frame->ev]), *se = rp_json_show(item->value, 300);
            char *sg = rp_json_show(value, 300);
            if (!rp_differ(r, "%s: expected message %s in a PersistentResponse, got standalone frame %s", d, se, sg))
                advance(st);
            free(d);
            free(se);
            free(sg);
        } else if (item && !item_fail(st, item,
                                      item->value ? rp_json_match(item->value, value, &r->b, 1, "$")
                                                  : rp_strdup("is JSON, recorded text"),
                                      value, NULL)) {
            advance(st);
        }
    } else {
        match_persistent(st, value);
    }
    cJSON_Delete(value);
    free(text);
}

static void on_message(struct rp_conn *c, const char *p, size_t n, int binary)
{
    struct rp_ws_state *st = c->ctx;
    struct rp_run *r = st->r;
    if (r->failure)
        return;
    r->stats.frames_received++;
    if (st->client_closed) { /* whatever was in flight when the client closed: the recording cannot say */
        r->stats.after_close_ignored++;
        return;
    }
    match_frame(st, p, n, binary);
}

/* 1 when the stream's last recorded server item is a Core Close record (JSON or MessagePack). */
static int ends_with_close_record(const struct rp_ws_state *st)
{
    const struct rp_stream *s = st->stream;
    const cJSON *v = s->nitems ? s->items[s->nitems - 1].value : NULL;
    const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : cJSON_IsArray(v) ? v->child : NULL;
    return cJSON_IsNumber(type) && type->valuedouble == 7;
}

static void on_close(struct rp_conn *c, int code, const char *reason)
{
    struct rp_ws_state *st = c->ctx;
    struct rp_run *r = st->r;
    st->closed = 1;
    if (r->failure || st->client_closed)
        return;
    size_t left = st->stream->nitems - st->pos;
    /* After a Close record either side may close the socket first: the recording cannot settle it. */
    if (r->fx.door_core && st->stream->close_ev == RP_NONE && left == 0 &&
        (ends_with_close_record(st) || st->close_answered)) {
        st->close_raced = 1;
        return;
    }
    char *qr = rp_quote(reason, 200);
    if (st->stream->close_ev == RP_NONE) {
        const struct rp_event *client_close = NULL;
        for (size_t i = 0; i < r->fx.n && !client_close; i++)
            if (r->fx.ev[i].type == EV_WS_CLOSE && r->fx.ev[i].ws == st->stream->ws)
                client_close = &r->fx.ev[i];
        char *d = client_close ? rp_describe(client_close) : NULL;
        char *tail = left ? rp_fmt(" and %zu recorded message(s) never came", left) : rp_strdup("");
        if (d)
            rp_fail(r, "ws %d (%s): the server closed it (%d %s); in the recording the client closed it (%s)%s",
                    st->stream->ws, ws_path(st), code, qr, d, tail);
        else
            rp_fail(r, "ws %d (%s): the server closed it (%d %s); the recording never closed it%s", st->stream->ws,
                    ws_path(st), code, qr, tail);
        free(d);
        free(tail);
    } else {
        struct rp_event *recorded = &r->fx.ev[st->stream->close_ev];
        char *d = rp_describe(recorded);
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(recorded->j, "code");
        const char *rr = rp_ev_str(recorded, "reason");
        int rcode = cJSON_IsNumber(rc) ? (int)rc->valuedouble : -1;
        if (left) {
            const struct rp_item *it = &st->stream->items[st->pos];
            char *next = it->value ? rp_json_show(it->value, 300) : rp_quote(it->text ? it->text : "<binary>", 200);
            rp_fail(r, "%s: the server closed ws %d before %zu recorded message(s), the next: %s", d, st->stream->ws,
                    left, next);
            free(next);
        } else if (rcode != code || strcmp(rr ? rr : "", reason) != 0) {
            char *qrr = rp_quote(rr ? rr : "", 200);
            if (!rp_differ(r, "%s: close %d %s, recorded %d %s", d, code, qr, rcode, qrr))
                recorded->done = 1;
            free(qrr);
        } else {
            recorded->done = 1;
        }
        free(d);
    }
    free(qr);
}

const struct rp_conn_handler rp_ws_handler = {
    .on_open = on_open, .on_refused = on_refused, .on_message = on_message, .on_close = on_close,
    .on_error = on_ws_error,
};
