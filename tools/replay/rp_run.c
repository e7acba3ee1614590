/* rp_run.c - a replay's schedule and the client's side (see rp_run.h): actions in file order,
 * each once the server events recorded before it have come, placeholders filled in. */
#include "rp_run_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "lg_ws.h"
#include "rp_json.h"

enum { PH_ACTIONS, PH_CLOSE_WAIT, PH_FINAL, PH_GRACE, PH_DONE };

char *rp_run_unbind(const struct rp_run *r, const char *text)
{
    return rp_unbind(&r->b, text);
}

void rp_answered(struct rp_run *r)
{
    r->stats.items_compared++;
    if (r->latency)
        lg_hist_record(r->latency, (uint64_t)(rp_now_us() - r->last_action_us));
}

size_t rp_response_of(struct rp_run *r, int id)
{
    for (size_t i = 0; i < r->fx.n; i++)
        if (r->fx.ev[i].type == EV_HTTP_RESP && r->fx.ev[i].id == id)
            return i;
    return RP_NONE;
}

int rp_run_init(struct rp_run *r, const char *text, const char *name, const struct rp_opts *o,
                struct rp_loop *loop, char **err)
{
    memset(r, 0, sizeof *r);
    r->o = o;
    r->loop = loop;
    if (rp_fixture_parse(text, name, &r->fx, err) < 0)
        return -1;
    r->b.shared_cursors = o->reference;
    if (o->authorization && strncmp(o->authorization, "Bearer ", 7) == 0)
        free(rp_bind(&r->b, "<accessToken>", o->authorization + 7));
    r->ws = calloc(r->fx.nstreams + 1, sizeof *r->ws);
    for (size_t s = 0; s < r->fx.nstreams; s++) {
        r->ws[s].r = r;
        r->ws[s].stream = &r->fx.streams[s];
        r->ws[s].answer_ev = RP_NONE;
        for (size_t i = 0; i < r->fx.n; i++) {
            const struct rp_event *e = &r->fx.ev[i];
            if (e->ws == r->fx.streams[s].ws && (e->type == EV_WS_ACCEPTED || e->type == EV_WS_REFUSED)) {
                r->ws[s].answer_ev = i;
                break;
            }
        }
    }
    r->started_ms = rp_now_ms();
    r->last_action_us = rp_now_us();
    return 0;
}

void rp_run_free(struct rp_run *r)
{
    for (size_t s = 0; r->ws && s < r->fx.nstreams; s++)
        rp_conn_free(r->ws[s].c);
    free(r->ws);
    for (size_t i = 0; i < r->nreqs; i++) {
        rp_conn_free(r->reqs[i]->c);
        rp_buf_free(&r->reqs[i]->pending);
        cJSON_Delete(r->reqs[i]->held);
        cJSON_Delete(r->reqs[i]->again);
        free(r->reqs[i]->held_cursor);
        free(r->reqs[i]);
    }
    free(r->reqs);
    rp_bindings_free(&r->b);
    cJSON_Delete(r->carry);
    free(r->carry_cursor);
    free(r->carry_token);
    rp_fixture_free(&r->fx);
    free(r->failure);
    for (size_t i = 0; i < r->ndiffs; i++)
        free(r->diffs[i]);
    free(r->diffs);
    memset(r, 0, sizeof *r);
}

/* ---- placeholders in what the client sends */

static char *uuid4(void)
{
    unsigned char u[16];
    RAND_bytes(u, sizeof u);
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    return rp_fmt("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
                  u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* This run's value of a placeholder in what is sent; NULL (and the run failed) when it has none. */
static char *ph_value(struct rp_run *r, const char *ph, const char *where, const struct rp_event *e)
{
    char kind[32];
    rp_ph_kind(ph, strlen(ph), kind, sizeof kind);
    if (strcmp(kind, "timestamp") == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return rp_fmt("%lld", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    }
    if (strcmp(kind, "tid") == 0) {
        unsigned char x;
        RAND_bytes(&x, 1);
        return rp_fmt("%d", x % 11);
    }
    if (strcmp(kind, "noCache") == 0)
        return uuid4();
    if (strcmp(kind, "origin") == 0)
        return rp_strdup(r->o->origin);
    const char *v = rp_bind_get(&r->b, ph);
    if (!v) {
        char *d = rp_describe(e);
        rp_fail(r, "%s: %s in the %s has no value in this run (the server never sent it where the fixture has it)",
                d, ph, where);
        free(d);
        return NULL;
    }
    return rp_strdup(v);
}

enum { ENC_URI, ENC_JSON, ENC_NONE };

/* encodeURIComponent: everything but A-Z a-z 0-9 - _ . ! ~ * ' ( ) */
static void add_uri(struct rp_buf *b, const char *v)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-_.!~*'()", *p)) {
            rp_buf_add(b, p, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            rp_buf_add(b, e, 3);
        }
    }
}

static char *substitute(struct rp_run *r, const char *text, const char *where, const struct rp_event *e, int enc)
{
    struct rp_buf b = {0};
    rp_buf_add(&b, "", 0);
    size_t from = 0, start, len;
    while (rp_ph_find(text, from, &start, &len)) {
        rp_buf_add(&b, text + from, start - from);
        char *ph = rp_strndup(text + start, len);
        char *v = ph_value(r, ph, where, e);
        free(ph);
        if (!v) {
            rp_buf_free(&b);
            return NULL;
        }
        if (enc == ENC_URI) {
            add_uri(&b, v);
        } else if (enc == ENC_JSON) {
            char *q = rp_quote(v, (size_t)-1 / 2);
            rp_buf_add(&b, q + 1, strlen(q) - 2);
            free(q);
        } else {
            rp_buf_adds(&b, v);
        }
        free(v);
        from = start + len;
    }
    rp_buf_adds(&b, text + from);
    return b.p;
}

/* Replaces the value of messageId=... (a long poll's continuation from the cursor reached). */
static char *with_message_id(const char *s, const char *cursor)
{
    const char *m = strstr(s, "messageId=");
    if (!m)
        return rp_strdup(s);
    const char *end = strchr(m, '&');
    if (!end)
        end = m + strlen(m);
    struct rp_buf b = {0};
    rp_buf_add(&b, s, (size_t)(m - s));
    rp_buf_adds(&b, "messageId=");
    add_uri(&b, cursor);
    rp_buf_adds(&b, end);
    return b.p;
}

/* The request's path and query, placeholders filled; with `cursor`, its messageId is that one (a
 * long poll's continuation: the recorded cursor placeholder may have no value then). */
static char *url_of(struct rp_run *r, const struct rp_event *e, const char *cursor)
{
    const char *raw = rp_ev_str(e, "rawQuery");
    char *from = cursor ? with_message_id(raw ? raw : "", cursor) : NULL;
    char *q = substitute(r, from ? from : raw ? raw : "", "query", e, ENC_URI);
    free(from);
    if (!q)
        return NULL;
    const char *path = rp_ev_str(e, "path");
    char *url = rp_fmt("%s%s%s", path ? path : "/", q[0] ? "?" : "", q);
    free(q);
    return url;
}

/* ---- client actions */

static const char *const SENT_REQUEST_HEADERS[] = {"content-type", "accept", "user-agent", "x-requested-with", NULL};

/* --authorization: where the recording has the header (always masked), that value. */
static void add_authorization(const struct rp_run *r, const struct rp_event *e, struct rp_buf *h)
{
    if (!r->o->authorization || !rp_ev_header(e, "authorization"))
        return;
    rp_buf_adds(h, "Authorization: ");
    rp_buf_adds(h, r->o->authorization);
    rp_buf_adds(h, "\r\n");
}

static int add_origin(struct rp_run *r, const struct rp_event *e, struct rp_buf *h)
{
    add_authorization(r, e, h);
    const char *origin = rp_ev_header(e, "origin");
    if (!origin)
        return 0;
    char *v = substitute(r, origin, "origin header", e, ENC_NONE);
    if (!v)
        return -1;
    rp_buf_adds(h, "Origin: ");
    rp_buf_adds(h, v);
    rp_buf_adds(h, "\r\n");
    free(v);
    return 0;
}

void rp_send_request(struct rp_run *r, size_t evi, cJSON *again, const char *cursor)
{
    char *carried = NULL;
    if (!again && rp_carry_poll(r, evi, &again, &carried))
        return; /* legacy: the previous poll's answer had all of this one's messages */
    if (carried)
        cursor = carried;
    const struct rp_event *e = &r->fx.ev[evi];
    /* A poll sent again goes from the cursor its last answer reached, as the client polls next
     * (load: also when that answer was only other copies' pushes, nothing of it kept). */
    const char *next = again ? cursor : cursor && cursor[0] ? cursor : NULL;
    char *path = url_of(r, e, next);
    const char *rawbody = rp_ev_str(e, "body");
    int form = cJSON_GetObjectItemCaseSensitive(e->j, "form") != NULL;
    const char *b64 = rp_ev_str(e, "bodyBase64");
    char *from = next && !b64 ? with_message_id(rawbody ? rawbody : "", next) : NULL;
    size_t body_len = 0;
    char *body = !path ? NULL
                 : b64 ? rp_decode_base64(b64, &body_len)
                       : substitute(r, from ? from : rawbody ? rawbody : "", form ? "form body" : "body", e,
                                    form ? ENC_URI : ENC_JSON);
    free(from);
    if (body && !b64)
        body_len = strlen(body);
    if (!path || !body) {
        free(path);
        free(body);
        free(carried);
        cJSON_Delete(again);
        return;
    }
    struct rp_buf h = {0};
    rp_buf_add(&h, "", 0);
    for (int i = 0; SENT_REQUEST_HEADERS[i]; i++) {
        const char *v = rp_ev_header(e, SENT_REQUEST_HEADERS[i]);
        if (v) {
            char *line = rp_fmt("%s: %s\r\n", SENT_REQUEST_HEADERS[i], v);
            rp_buf_adds(&h, line);
            free(line);
        }
    }
    const char *method = rp_ev_str(e, "method");
    if (!method)
        method = "GET";
    struct rp_ws_state *lp = e->poll_ws ? rp_ws_state_of(r, e->poll_ws) : NULL;
    if (lp && !rp_poll_may_send(lp)) {
        r->stats.polls_joined++; /* the poll out now answers for this one */
    } else if (add_origin(r, e, &h) == 0) {
        if (body_len || strcmp(method, "GET") != 0) {
            char *cl = rp_fmt("content-length: %zu\r\n", body_len);
            rp_buf_adds(&h, cl);
            free(cl);
        }
        struct rp_req *q = calloc(1, sizeof *q);
        q->r = r;
        q->lp = e->poll_ws ? rp_ws_state_of(r, e->poll_ws) : NULL;
        if (q->lp)
            q->lp->poll = q;
        q->req_ev = evi;
        q->resp_ev = rp_response_of(r, e->id);
        q->again = again;
        again = NULL;
        for (size_t i = 0; i < r->fx.n; i++)
            if (r->fx.ev[i].type == EV_SSE && r->fx.ev[i].id == e->id)
                q->sse = 1;
        if (r->nreqs == r->capreqs)
            r->reqs = rp_xrealloc(r->reqs, (r->capreqs = r->capreqs ? r->capreqs * 2 : 16) * sizeof *r->reqs);
        r->reqs[r->nreqs++] = q;
        r->stats.requests++;
        q->c = rp_conn_http(r->loop, &r->o->target, method, path, h.p, body, body_len, &rp_http_handler, q, 0);
        if (!q->c) {
            char *d = rp_describe(e);
            rp_fail(r, "%s: request failed: cannot open a socket", d);
            free(d);
        }
    }
    cJSON_Delete(again);
    rp_buf_free(&h);
    free(path);
    free(body);
    free(carried);
}

struct rp_ws_state *rp_ws_state_of(struct rp_run *r, int ws)
{
    for (size_t s = 0; s < r->fx.nstreams; s++)
        if (r->fx.streams[s].ws == ws)
            return &r->ws[s];
    return NULL;
}

static void open_socket(struct rp_run *r, size_t evi)
{
    const struct rp_event *e = &r->fx.ev[evi];
    struct rp_ws_state *st = rp_ws_state_of(r, e->ws);
    char *path = url_of(r, e, NULL);
    if (!path || !st) {
        free(path);
        return;
    }
    struct rp_buf h = {0};
    rp_buf_add(&h, "", 0);
    const char *ua = rp_ev_header(e, "user-agent"), *proto = rp_ev_header(e, "sec-websocket-protocol");
    if (ua) {
        rp_buf_adds(&h, "User-Agent: ");
        rp_buf_adds(&h, ua);
        rp_buf_adds(&h, "\r\n");
    }
    if (proto) {
        rp_buf_adds(&h, "Sec-WebSocket-Protocol: ");
        rp_buf_adds(&h, proto);
        rp_buf_adds(&h, "\r\n");
    }
    if (add_origin(r, e, &h) == 0) {
        st->exists = 1;
        r->stats.upgrades++;
        st->c = rp_conn_ws(r->loop, &r->o->target, path, h.p, &rp_ws_handler, st, 0);
        if (!st->c) {
            char *d = rp_describe(e);
            rp_fail(r, "%s: socket error: cannot open a socket", d);
            free(d);
        }
    }
    rp_buf_free(&h);
    free(path);
}

static void send_frame(struct rp_run *r, size_t evi)
{
    const struct rp_event *e = &r->fx.ev[evi];
    struct rp_ws_state *st = rp_ws_state_of(r, e->ws);
    if (!st || !st->c || !st->c->opened || st->closed || st->client_closed || st->c->fd < 0) {
        char *d = rp_describe(e);
        rp_fail(r, "%s: the socket is not open here", d);
        free(d);
        return;
    }
    const char *binary = rp_ev_str(e, "binary");
    if (binary) {
        size_t len;
        char *out = rp_decode_base64(binary, &len);
        if (!out) {
            char *d = rp_describe(e);
            rp_fail(r, "%s: the recorded binary frame is not base64", d);
            free(d);
            return;
        }
        rp_ws_send(st->c, LG_WS_BINARY, out, len);
        free(out);
    } else {
        const char *text = rp_ev_str(e, "text");
        char *s = substitute(r, text ? text : "", "frame", e, ENC_JSON);
        if (!s)
            return;
        rp_ws_send(st->c, LG_WS_TEXT, s, strlen(s));
        free(s);
    }
    r->stats.frames_sent++;
}

static void close_socket(struct rp_run *r, size_t evi)
{
    const struct rp_event *e = &r->fx.ev[evi];
    struct rp_ws_state *st = rp_ws_state_of(r, e->ws);
    if (!st || !st->exists)
        return;
    if (st->closed && st->close_raced)
        return;
    if (st->closed) {
        char *d = rp_describe(e);
        rp_fail(r, "%s: the server had already closed this socket; the client closed it in the recording", d);
        free(d);
        return;
    }
    st->client_closed = 1;
    /* What the recording has the server send after this was in flight: not compared. */
    for (size_t f = 0; f < st->stream->nframes; f++) {
        struct rp_frame *fr = st->stream->frames[f];
        if (!fr->done) {
            fr->done = 1;
            r->fx.ev[fr->ev].done = 1;
        }
    }
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e->j, "code");
    int c = cJSON_IsNumber(code) ? (int)code->valuedouble : 1005;
    const char *reason = rp_ev_str(e, "reason");
    rp_ws_close(st->c, c, reason ? reason : "");
    if (c == 1006 || !st->c || st->c->fd < 0)
        st->closed = 1;
    /* The client went on once its socket was closed; so does the replay, but it does not wait long
     * for a slow echo. */
    r->close_wait = st;
    r->close_deadline = rp_now_ms() + RP_CLOSE_WAIT_MS;
    r->phase = PH_CLOSE_WAIT;
}

static void cut_request(struct rp_run *r, const struct rp_event *e)
{
    size_t resp = rp_response_of(r, e->id);
    if (resp != RP_NONE)
        r->fx.ev[resp].done = 1; /* cut by the client: nothing more to compare */
    for (size_t i = 0; i < r->nreqs; i++)
        if (r->fx.ev[r->reqs[i]->req_ev].id == e->id && r->reqs[i]->c)
            rp_conn_abort(r->reqs[i]->c);
}

static void act(struct rp_run *r, size_t evi)
{
    const struct rp_event *e = &r->fx.ev[evi];
    switch (e->type) {
    case EV_HTTP_REQ:
        rp_send_request(r, evi, NULL, NULL);
        break;
    case EV_WS_OPEN:
        open_socket(r, evi);
        break;
    case EV_WS_FRAME:
        if (e->c2s)
            send_frame(r, evi);
        break;
    case EV_WS_CLOSE:
        if (e->by_client)
            close_socket(r, evi);
        break;
    case EV_HTTP_CUT:
        cut_request(r, e);
        break;
    default:
        break;
    }
}

/* ---- the schedule */

/* The next client action after event k, or RP_NONE. */
static size_t next_action(const struct rp_run *r, size_t k)
{
    for (size_t j = k + 1; j < r->fx.n; j++)
        if (!r->fx.ev[j].server)
            return j;
    return RP_NONE;
}

/* A request the server holds across the next client action (a long poll answered after the
 * client's next request, e.g. its DELETE): on its own TCP connection it could reach the server
 * after that action, which the recording rules out (the recorder saw it first). The next action
 * then waits the recorded pause, at most RP_HELD_SETTLE_MS. */
static void settle_held(struct rp_run *r, size_t k, int64_t now)
{
    const struct rp_event *e = &r->fx.ev[k];
    size_t next = next_action(r, k), resp = e->type == EV_HTTP_REQ ? rp_response_of(r, e->id) : RP_NONE;
    if (next == RP_NONE || resp == RP_NONE || resp < next)
        return;
    int64_t gap = r->fx.ev[next].has_t && e->has_t ? r->fx.ev[next].t - e->t : RP_HELD_SETTLE_MS;
    if (gap > RP_HELD_SETTLE_MS)
        gap = RP_HELD_SETTLE_MS;
    if (gap > 0)
        r->settle_until = now + gap;
}

/* The first server event before k that has not arrived yet, or RP_NONE. */
static size_t pending_before(struct rp_run *r, size_t k)
{
    while (r->low < r->fx.n && (!r->fx.ev[r->low].server || r->fx.ev[r->low].done))
        r->low++;
    for (size_t j = r->low; j < k; j++)
        if (r->fx.ev[j].server && !r->fx.ev[j].done)
            return j;
    return RP_NONE;
}

/* 1 while waiting for server events before k (failing once the wait is too long). */
static int waiting(struct rp_run *r, size_t k, int64_t now)
{
    size_t p = pending_before(r, k);
    if (p == RP_NONE) {
        r->wait_deadline = 0;
        return 0;
    }
    if (!r->wait_deadline)
        r->wait_deadline = now + r->o->timeout_ms;
    if (now >= r->wait_deadline && r->o->keep_going) {
        rp_give_up(r, k); /* ab: reported, taken as missing, and the side goes on */
        r->wait_deadline = 0;
        return r->failure != NULL;
    }
    if (now >= r->wait_deadline) {
        char *d = rp_describe(&r->fx.ev[p]);
        rp_fail(r, "timed out after %d ms waiting for %s", r->o->timeout_ms, d);
        free(d);
    }
    return 1;
}

static int finish(struct rp_run *r)
{
    if (!r->failure && r->phase != PH_DONE)
        rp_carry_finish(r);
    for (size_t s = 0; s < r->fx.nstreams; s++)
        if (r->ws[s].c)
            rp_conn_abort(r->ws[s].c);
    for (size_t i = 0; i < r->nreqs; i++)
        if (r->reqs[i]->c)
            rp_conn_abort(r->reqs[i]->c);
    r->ms = rp_now_ms() - r->started_ms;
    r->phase = PH_DONE;
    return 1;
}

int rp_run_step(struct rp_run *r)
{
    int64_t now = rp_now_ms();
    for (;;) {
        if (r->phase == PH_DONE)
            return 1;
        if (r->failure)
            return finish(r);
        if (r->phase == PH_CLOSE_WAIT) {
            if (!r->close_wait->closed && now < r->close_deadline)
                return 0;
            r->phase = PH_ACTIONS;
        }
        if (r->phase == PH_ACTIONS) {
            while (r->k < r->fx.n && r->fx.ev[r->k].server)
                r->k++;
            if (r->k == r->fx.n) {
                r->phase = PH_FINAL;
                continue;
            }
            if (waiting(r, r->k, now)) {
                if (r->failure)
                    continue;
                return 0;
            }
            const struct rp_event *e = &r->fx.ev[r->k];
            if (r->o->pace > 0 && r->has_last_action && e->has_t &&
                now < r->last_action_ms + (int64_t)((double)(e->t - r->last_action_t) * r->o->pace))
                return 0;
            if (now < r->settle_until)
                return 0;
            r->has_last_action = 1;
            r->last_action_t = e->t;
            r->last_action_ms = now;
            r->last_action_us = rp_now_us();
            size_t done_k = r->k;
            act(r, r->k++);
            settle_held(r, done_k, now);
            continue;
        }
        if (r->phase == PH_FINAL) {
            if (waiting(r, r->fx.n, now)) {
                if (r->failure)
                    continue;
                return 0;
            }
            /* Anything the server sends beyond the recording shows up within this grace period. */
            r->phase = PH_GRACE;
            r->grace_deadline = now + r->o->grace_ms;
        }
        if (r->phase == PH_GRACE) {
            if (now < r->grace_deadline)
                return 0;
            return finish(r);
        }
    }
}

int64_t rp_run_wake(const struct rp_run *r)
{
    switch (r->phase) {
    case PH_CLOSE_WAIT:
        return r->close_deadline;
    case PH_GRACE:
        return r->grace_deadline;
    case PH_DONE:
        return -1;
    default:
        break;
    }
    int64_t wake = r->wait_deadline ? r->wait_deadline : -1;
    if (r->phase == PH_ACTIONS && r->settle_until > 0 && (wake < 0 || r->settle_until < wake))
        wake = r->settle_until;
    if (r->phase == PH_ACTIONS && r->o->pace > 0 && r->has_last_action && r->k < r->fx.n) {
        int64_t due = r->last_action_ms + (int64_t)((double)(r->fx.ev[r->k].t - r->last_action_t) * r->o->pace);
        if (wake < 0 || due < wake)
            wake = due;
    }
    return wake;
}

void rp_run_all(struct rp_run **runs, size_t n, struct rp_loop *loop)
{
    for (;;) {
        size_t left = 0;
        int64_t wake = -1;
        for (size_t i = 0; i < n; i++) {
            if (rp_run_step(runs[i]))
                continue;
            left++;
            int64_t w = rp_run_wake(runs[i]);
            if (w >= 0 && (wake < 0 || w < wake))
                wake = w;
        }
        if (!left)
            return;
        int64_t now = rp_now_ms();
        int timeout = wake < 0 ? 1000 : wake <= now ? 0 : (int)(wake - now);
        if (timeout > 1000)
            timeout = 1000;
        rp_loop_poll(loop, timeout);
    }
}
