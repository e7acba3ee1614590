/* rp_poll.c - Core long polling as one stream of records (docs/FIXTURES.md, "Replaying"): a poll
 * is answered with whatever records are ready when it arrives, so a live server may batch them
 * otherwise than the recording. The records of all the polls of a connection are compared as one
 * sequence, as a WebSocket's are: a poll that brings fewer records than its recorded answer is
 * sent again while records are still expected; records beyond a poll's recorded answer are the
 * next recorded polls' ones; a recorded poll that comes while a poll is out is served by that one;
 * an empty 200 (a keep-alive) says nothing. A missing, extra or changed record, or another
 * status, is a difference. */
#include "rp_run_int.h"

#include <stdlib.h>
#include <string.h>

#include "lg_http.h"
#include "rp_core.h"
#include "rp_json.h"

int rp_poll_may_send(const struct rp_ws_state *st)
{
    return !st->poll && !st->ended;
}

/* 1 when the item is a Close record (JSON or MessagePack). */
static int is_close_record(const struct rp_item *it)
{
    const cJSON *v = it->value;
    const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : cJSON_IsArray(v) ? v->child : NULL;
    return cJSON_IsNumber(type) && type->valuedouble == 7;
}

/* The non-ping records of a poll's body (JSON or, in a MessagePack session, MessagePack), in a new
 * array of wrappers as rp_core.h makes them; NULL when the body is not records. */
static cJSON *poll_records(const struct rp_ws_state *st, const char *body, size_t n)
{
    cJSON *all = cJSON_CreateArray(), *out = cJSON_CreateArray();
    char *err = NULL;
    int bad = st->stream->binary ? rp_core_binary_records((const unsigned char *)body, n, st->frames_seen == 0, all, &err) < 0
                                 : rp_core_text_records(body, n, all) < 0;
    free(err);
    for (cJSON *w = all->child; w && !bad; w = w->next) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(w, "v");
        if (!v || !rp_core_is_ping(v))
            cJSON_AddItemToArray(out, cJSON_Duplicate(w, 1));
    }
    cJSON_Delete(all);
    if (bad) {
        cJSON_Delete(out);
        return NULL;
    }
    return out;
}

/* The recorded answer the stream waits for next (a 200 with records not all come, else a 204),
 * falling back to resp_ev; RP_NONE when none. */
static size_t next_answer(const struct rp_ws_state *st, size_t resp_ev)
{
    const struct rp_run *r = st->r;
    for (size_t f = 0; f < st->stream->nframes; f++)
        if (!st->stream->frames[f]->done)
            return st->stream->frames[f]->ev;
    for (size_t i = 0; i < r->fx.n; i++)
        if (r->fx.ev[i].poll_ws == st->stream->ws && r->fx.ev[i].type == EV_HTTP_RESP && !r->fx.ev[i].done)
            return i;
    return resp_ev;
}

/* The recorded 204s of the stream: done (the connection ended); returns how many there are. */
static int end_stream(struct rp_ws_state *st)
{
    struct rp_run *r = st->r;
    int ends = 0;
    st->ended = 1;
    for (size_t i = 0; i < r->fx.n; i++) {
        struct rp_event *e = &r->fx.ev[i];
        const cJSON *status = e->type == EV_HTTP_RESP && e->poll_ws == st->stream->ws ? cJSON_GetObjectItemCaseSensitive(e->j, "status") : NULL;
        if (cJSON_IsNumber(status) && status->valuedouble == 204) {
            ends++;
            e->done = 1;
        }
    }
    return ends;
}

/* Records are still expected: a recorded poll already sent (its request before the next client
 * action) has an answer (records, or the end) that has not all come. */
static int still_expected(const struct rp_ws_state *st)
{
    const struct rp_run *r = st->r;
    for (size_t i = 0; i < r->fx.n; i++) {
        const struct rp_event *e = &r->fx.ev[i];
        if (e->poll_ws != st->stream->ws || e->type != EV_HTTP_RESP || e->done)
            continue;
        for (size_t j = 0; j < i && j < r->k; j++)
            if (r->fx.ev[j].type == EV_HTTP_REQ && r->fx.ev[j].id == e->id)
                return 1;
    }
    return 0;
}

/* A 204: the server ended the connection. The stream must be complete (but for its last record
 * when that is a Close record: the end of a session races the client's DELETE) and the recording
 * must end with a 204 too (or the Close record); otherwise the run stops there (also in ab: the
 * connection is over). */
static void poll_ended(struct rp_ws_state *st, size_t want, int status)
{
    struct rp_run *r = st->r;
    size_t left = st->stream->nitems - st->pos;
    int close_left = left == 1 && is_close_record(&st->stream->items[st->pos]);
    char *d = want != RP_NONE ? rp_describe(&r->fx.ev[want]) : rp_fmt("a poll");
    if (close_left) {
        st->pos++;
        for (size_t f = 0; f < st->stream->nframes; f++)
            st->stream->frames[f]->done = r->fx.ev[st->stream->frames[f]->ev].done = 1;
    }
    if (left && !close_left) {
        const struct rp_item *it = &st->stream->items[st->pos];
        char *next = it->value ? rp_json_show(it->value, 300) : rp_quote(it->text ? it->text : "<binary>", 200);
        rp_fail(r, "%s: status %d (the server ended the connection) before %zu recorded record(s), the next: %s", d,
                status, left, next);
        free(next);
        end_stream(st);
    } else if (end_stream(st) == 0 && !close_left) {
        rp_fail(r, "%s: status 204 (the server ended the connection), recorded 200 (it went on)", d);
    } else {
        rp_answered(r);
    }
    free(d);
}

/* A 200 with records: the content type as recorded, then the records against the stream's next
 * ones. A lone Close record after the whole stream, where the recording ends with a 204, is the
 * end race the other way round. */
static void poll_records_answer(struct rp_ws_state *st, size_t want, const char *content_type, cJSON *records,
                                const char *body, size_t n)
{
    struct rp_run *r = st->r;
    const struct rp_event *we = want != RP_NONE ? &r->fx.ev[want] : NULL;
    /* The content type of a recorded 200 (the next one, else any: the end has none of its own). */
    const struct rp_event *with_ct = we && we->frame ? we : st->stream->nframes ? &r->fx.ev[st->stream->frames[0]->ev] : NULL;
    const char *want_ct = with_ct ? rp_ev_header(with_ct, "content-type") : NULL;
    char *d = we ? rp_describe(we) : rp_fmt("a poll");
    if (want_ct && strcmp(content_type, want_ct) != 0 &&
        rp_differ(r, "%s: header content-type \"%s\", recorded \"%s\"", d, content_type, want_ct)) {
        free(d);
        return;
    }
    free(d);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(records->child, "v");
    if (st->pos == st->stream->nitems && !records->child->next && v && we && we->frame == NULL) {
        const cJSON *type = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "type") : cJSON_IsArray(v) ? v->child : NULL;
        if (cJSON_IsNumber(type) && type->valuedouble == 7 && end_stream(st) > 0) {
            rp_answered(r);
            return;
        }
    }
    rp_match_core_records(st, body, n, st->stream->binary);
}

/* The client's DELETE of the connection has gone out (it is before the next client action). */
static int deleted(const struct rp_ws_state *st)
{
    const struct rp_run *r = st->r;
    for (size_t i = 0; i < r->k && i < r->fx.n; i++)
        if (r->fx.ev[i].deletes_ws == st->stream->ws)
            return 1;
    return 0;
}

/* A recorded 204 of the stream is still to come. */
static int end_expected(const struct rp_ws_state *st)
{
    const struct rp_run *r = st->r;
    for (size_t i = 0; i < r->fx.n; i++) {
        const struct rp_event *e = &r->fx.ev[i];
        const cJSON *status = e->type == EV_HTTP_RESP && e->poll_ws == st->stream->ws && !e->done
                                  ? cJSON_GetObjectItemCaseSensitive(e->j, "status") : NULL;
        if (cJSON_IsNumber(status) && status->valuedouble == 204)
            return 1;
    }
    return 0;
}

int rp_poll_answer(struct rp_ws_state *st, size_t resp_ev, int status, const char *content_type, const char *body,
                   size_t n)
{
    struct rp_run *r = st->r;
    struct rp_frame *first = st->stream->nframes ? st->stream->frames[0] : NULL;
    if (first && first->start == first->end && !first->done) /* the transport's start has come */
        first->done = r->fx.ev[first->ev].done = 1;
    size_t want = next_answer(st, resp_ev);
    /* A poll and the client's DELETE race on their own connections: a poll that reaches the
     * server after the DELETE finds no connection (404), which is the end as a 204 is. */
    if (status == 204 || (status == 404 && deleted(st) && end_expected(st))) {
        poll_ended(st, want, status);
        return 0;
    }
    if (status != 200) {
        char *d = want != RP_NONE ? rp_describe(&r->fx.ev[want]) : rp_fmt("a poll");
        char *qb = rp_quote(body, 200);
        rp_differ(r, "%s: status %d, recorded %s (body %s)", d, status, want != RP_NONE ? "200 or 204" : "no answer", qb);
        free(qb);
        free(d);
        return 0;
    }
    cJSON *records = poll_records(st, body, n);
    if (!records) {
        char *d = want != RP_NONE ? rp_describe(&r->fx.ev[want]) : rp_fmt("a poll");
        rp_differ(r, "%s: body: a body that is not SignalR records", d);
        free(d);
    } else if (!records->child) {
        r->stats.keepalives_ignored++; /* an empty answer (or pings only): a keep-alive */
    } else {
        poll_records_answer(st, want, content_type, records, body, n);
    }
    cJSON_Delete(records);
    if (r->failure || !still_expected(st))
        return 0;
    r->stats.polls_again++;
    return 1;
}

void rp_poll_end(struct rp_req *q, struct rp_conn *c)
{
    struct rp_ws_state *st = q->lp;
    char ct[256] = "";
    lg_http_header(c->head, c->head_len, "content-type", ct, sizeof ct);
    if (rp_poll_answer(st, q->resp_ev, c->status, ct, c->body.p ? c->body.p : "", c->body.len))
        rp_send_request(q->r, q->req_ev, NULL, NULL);
}
