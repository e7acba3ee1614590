/* core_http.c - the HTTP requests of the Core SSE and long-polling transports: dispatch, POST, DELETE (see core_http.h). */
#include "relay/core_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub/conn_token.h"
#include "relay/clock.h"
#include "relay/core_session.h"
#include "relay/log.h"

#define TEXT_NO_CONNECTION "No Connection with that ID"
#define TEXT_CHANGE_TRANSPORT "Cannot change transports mid-connection"
#define TEXT_NO_DELETE "Cannot terminate this connection using the DELETE endpoint."
#define TEXT_TOO_LARGE "The message exceeded the relay's maximum message size."

static const struct relay_config *cfg_of(struct core_sessions *table)
{
    return table->loop->cfg;
}

static bool wants_event_stream(struct lws *wsi)
{
    char accept[256] = "";
    http_header(wsi, WSI_TOKEN_HTTP_ACCEPT, accept, sizeof accept);
    return strstr(accept, "text/event-stream") != NULL;
}

/* -------------------------------------------------------------- GET */

void core_http_request_count(struct core_http_request *req, struct loop *loop)
{
    if (req->counted)
        return;
    req->counted = true;
    if (req->sse)
        loop->stats.core_streams_open++;
    else
        loop->stats.core_polls_waiting++;
}

void core_http_request_free(struct core_http_request *req, struct loop *loop)
{
    if (req->eof_watched)
        ev_io_stop(loop->ev, &req->eof_watch);
    if (req->counted && req->sse)
        loop->stats.core_streams_open--;
    else if (req->counted)
        loop->stats.core_polls_waiting--;
    free(req);
}

static struct core_http_request *request_new(struct loop *loop, struct lws *wsi, bool sse)
{
    struct core_http_request *req = calloc(1, sizeof *req);
    if (req) {
        req->role = WSI_ROLE_CORE_HTTP;
        req->loop = loop;
        req->wsi = wsi;
        req->sse = sse;
    }
    return req;
}

/* What the client POSTed before this first GET: the new session reads it
 * first, as the server's hub reads the connection's pipe once started. */
static void feed_early(struct core_sessions *table, const char *token, struct buf *early)
{
    struct core_session *s = core_sessions_find(table, token);
    if (s && early->len)
        core_session_client_data(s, early->data, early->len);
    buf_free(early);
}

void core_http_read_early(struct core_session *s)
{
    if (!s->pending || !s->pending->early.len)
        return;
    struct buf early = s->pending->early;
    buf_init(&s->pending->early);
    core_session_client_data(s, early.data, early.len); /* s may be gone after */
    buf_free(&early);
}

/* The first GET of a token: the session starts. SSE: the stream is this
 * request from now on. Long polling: this poll is answered 200 at once,
 * empty, as the server answers a connection's first poll. */
static int open_session(struct core_sessions *table, struct lws *wsi, const char *token, bool sse,
                        const struct core_http_opener *opener)
{
    const struct relay_config *cfg = cfg_of(table);
    struct core_http_request *req = request_new(table->loop, wsi, sse);
    if (!req)
        return http_respond_text(cfg, wsi, 500, "out of memory");
    struct buf early;
    buf_init(&early);
    if (opener->early.take)
        opener->early.take(opener->early.ctx, token, &early); /* before open: it takes the negotiation */
    unsigned status = 404;
    const char *text = TEXT_NO_CONNECTION;
    struct core_session *s = opener->open(opener->arg, wsi, token, sse ? &core_sse_transport : &core_longpoll_transport,
                                          &status, &text);
    if (!s) {
        free(req);
        buf_free(&early);
        return http_respond_text(cfg, wsi, status, text);
    }
    if (!sse) {
        free(req);
        s->first_poll_done = true;
        core_session_disconnect_at(s, clock_now_ms() + cfg->disconnect_timeout_ms);
        feed_early(table, token, &early);
        return http_respond(cfg, wsi, 200, "application/octet-stream", "", 0);
    }
    req->session = s;
    s->extra->request = req;
    lws_set_opaque_user_data(wsi, req);
    core_http_request_count(req, table->loop);
    int rc = core_sse_start(req);
    if (rc == 0)
        feed_early(table, token, &early);
    buf_free(&early);
    return rc;
}

static int handle_get(struct core_sessions *table, struct lws *wsi, const char *token,
                      const struct core_http_opener *opener)
{
    const struct relay_config *cfg = cfg_of(table);
    bool sse = wants_event_stream(wsi);
    struct core_session *s = core_sessions_find(table, token);
    if (!s)
        return open_session(table, wsi, token, sse, opener);
    if (sse) /* a second stream on a live connection: 409, as the server answers it */
        return s->transport->kind == CORE_TRANSPORT_SSE ? http_respond_text(cfg, wsi, 409, "")
                                                         : http_respond_text(cfg, wsi, 400, TEXT_CHANGE_TRANSPORT);
    if (s->transport->kind != CORE_TRANSPORT_LONG_POLLING)
        return http_respond_text(cfg, wsi, 400, TEXT_CHANGE_TRANSPORT);
    struct core_http_request *req = request_new(table->loop, wsi, false);
    if (!req)
        return http_respond_text(cfg, wsi, 500, "out of memory");
    lws_set_opaque_user_data(wsi, req);
    return core_longpoll_poll(s, req);
}

/* ------------------------------------------------------------- POST */

static void post_free(struct core_http_post *post)
{
    if (post->held_by)
        post->held_by->extra->post_held = NULL;
    buf_free(&post->body);
    free(post->token);
    free(post);
}

/* Writes the POST's answer (now, or from WRITEABLE once it was held). */
static int post_answer(struct core_sessions *table, struct core_http_post *post, struct lws *wsi)
{
    unsigned status = post->status;
    const char *text = post->text ? post->text : "";
    lws_set_opaque_user_data(wsi, NULL);
    post_free(post);
    return http_respond_text(cfg_of(table), wsi, status, text);
}

static bool early_known(const struct core_http_early *early, struct lws *wsi, const char *token)
{
    return early->known && early->known(early->ctx, wsi, token);
}

static int handle_post(struct core_sessions *table, struct lws *wsi, const char *token,
                       const struct core_http_opener *opener)
{
    const struct relay_config *cfg = cfg_of(table);
    struct core_session *s = core_sessions_find(table, token);
    if (!s && !early_known(&opener->early, wsi, token))
        return http_respond_text(cfg, wsi, 404, TEXT_NO_CONNECTION);
    if (s && s->transport->kind == CORE_TRANSPORT_WEBSOCKETS)
        return http_respond_text(cfg, wsi, 405, "POST requests are not allowed for WebSocket connections.");
    struct core_http_post *post = calloc(1, sizeof *post);
    if (!post || !(post->token = strdup(token))) {
        free(post);
        return http_respond_text(cfg, wsi, 500, "out of memory");
    }
    post->role = WSI_ROLE_CORE_POST;
    post->wsi = wsi;
    post->table = table;
    post->early = opener->early;
    buf_init(&post->body);
    lws_set_opaque_user_data(wsi, post);
    char length[32] = "";
    if (http_header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, length, sizeof length) > 0 && strcmp(length, "0") == 0)
        return core_http_body_done(post, wsi); /* no body: lws calls nothing more */
    return 0;
}

int core_http_body(struct core_http_post *post, const void *in, size_t len)
{
    if (post->status)
        return 0; /* already refused: the rest is read and dropped */
    if (post->body.len + len > post->table->loop->cfg->max_message_bytes) {
        post->status = 413;
        post->text = TEXT_TOO_LARGE;
        post->table->loop->stats.protocol_errors++;
        buf_free(&post->body);
        return 0;
    }
    if (!buf_append(&post->body, in, len)) {
        post->status = 500;
        post->text = "out of memory";
        post->table->loop->stats.out_of_memory_closes++;
        buf_free(&post->body);
    }
    return 0;
}

/* A POST for a token with no session: kept for the first GET, if the token is still pending. */
static int early_post(struct core_sessions *table, struct core_http_post *post, struct lws *wsi)
{
    post->status = post->early.send ? post->early.send(post->early.ctx, post->token, post->body.data, post->body.len) : 404;
    post->text = post->status == 200   ? ""
                 : post->status == 404 ? TEXT_NO_CONNECTION
                 : post->status == 413 ? TEXT_TOO_LARGE
                                       : "out of memory";
    return post_answer(table, post, wsi);
}

/* The whole body is in: the session takes it (it may be gone by now: 404).
 * While the hub side is full the answer waits for `drained`, as the server's
 * POST waits for room in its pipe. */
int core_http_body_done(struct core_http_post *post, struct lws *wsi)
{
    struct core_sessions *table = post->table;
    if (post->status)
        return post_answer(table, post, wsi);
    struct core_session *s = core_sessions_find(table, post->token);
    if (!s)
        return early_post(table, post, wsi);
    core_session_client_data(s, post->body.data, post->body.len);
    buf_free(&post->body);
    post->status = 200;
    s = core_sessions_find(table, post->token); /* still there? */
    if (s && s->client_paused && !s->extra->post_held) {
        s->extra->post_held = post;
        post->held_by = s;
        http_answer_later(wsi);
        return 0;
    }
    return post_answer(table, post, wsi);
}

/* ----------------------------------------------------------- DELETE */

static int handle_delete(struct core_sessions *table, struct lws *wsi, const char *token,
                         const struct core_http_opener *opener)
{
    const struct relay_config *cfg = cfg_of(table);
    struct core_session *s = core_sessions_find(table, token);
    if (!s) /* no GET yet: the server's connection has no transport, not long polling */
        return early_known(&opener->early, wsi, token) ? http_respond_text(cfg, wsi, 400, TEXT_NO_DELETE)
                                                  : http_respond_text(cfg, wsi, 404, TEXT_NO_CONNECTION);
    if (s->transport->kind != CORE_TRANSPORT_LONG_POLLING)
        return http_respond_text(cfg, wsi, 400, TEXT_NO_DELETE);
    log_conn_debug(core_session_id(s), s->endpoint->name, "session: long polling ended by DELETE");
    core_session_client_gone(s); /* a waiting poll answers 204 */
    return http_respond_text(cfg, wsi, 202, "");
}

/* -------------------------------------------------------- dispatch */

int core_http_handle(struct core_sessions *table, struct lws *wsi, const struct core_http_opener *opener)
{
    const struct relay_config *cfg = cfg_of(table);
    enum http_method method = http_request_method(wsi);
    if (method != HTTP_GET && method != HTTP_POST && method != HTTP_DELETE)
        return http_respond_text(cfg, wsi, 405, "");
    char token[CONN_TOKEN_MAX_CHARS + 1];
    if (http_query_arg(wsi, "id", token, sizeof token) <= 0)
        return http_respond_text(cfg, wsi, 400, "Connection ID required");
    switch (method) {
    case HTTP_GET: return handle_get(table, wsi, token, opener);
    case HTTP_POST: return handle_post(table, wsi, token, opener);
    default: return handle_delete(table, wsi, token, opener);
    }
}

int core_http_writeable(void *owner, struct lws *wsi)
{
    if (*(enum wsi_role *)owner == WSI_ROLE_CORE_POST) {
        struct core_http_post *post = owner;
        return post->held_by ? 0 : post_answer(post->table, post, wsi);
    }
    struct core_http_request *req = owner;
    return req->sse ? core_sse_writeable(req) : core_longpoll_writeable(req);
}

void core_http_closed(void *owner)
{
    if (*(enum wsi_role *)owner == WSI_ROLE_CORE_POST) {
        post_free(owner);
        return;
    }
    struct core_http_request *req = owner;
    struct core_session *s = req->session;
    if (s) {
        s->extra->request = NULL;
        if (req->sse) {
            /* The client closed its event stream: the connection is over. */
            log_conn_debug(core_session_id(s), s->endpoint->name, "session: SSE stream closed by the client");
            core_session_client_gone(s);
        } else {
            /* A poll that vanished: the client has the disconnect timeout to poll again. */
            core_session_disconnect_at(s, clock_now_ms() + s->table->loop->cfg->disconnect_timeout_ms);
        }
    }
    core_http_request_free(req, req->loop);
}

void core_http_detach(struct core_session *s)
{
    struct core_http_request *req = s->extra->request;
    if (req) {
        s->extra->request = NULL;
        req->session = NULL;
        req->status = 204;
        if (req->sse)
            lws_callback_on_writable(req->wsi); /* ends the stream */
        else
            http_answer_ready(req->wsi);
    }
    struct core_http_post *post = s->extra->post_held;
    if (post) {
        s->extra->post_held = NULL;
        post->held_by = NULL;
        http_answer_ready(post->wsi);
    }
}

void core_http_pause_reading(struct core_session *s, bool paused)
{
    if (paused) {
        if (!s->client_paused)
            s->table->loop->stats.flow_control_pauses++;
        s->client_paused = true;
        return;
    }
    s->client_paused = false;
    struct core_http_post *post = s->extra->post_held;
    if (post) {
        s->extra->post_held = NULL;
        post->held_by = NULL;
        http_answer_ready(post->wsi);
    }
}

void core_http_timer_due(struct core_session *s)
{
    if (s->transport->kind == CORE_TRANSPORT_LONG_POLLING) {
        core_longpoll_timer_due(s);
        return;
    }
    log_conn_info(core_session_id(s), s->endpoint->name, "session: no event stream for %u ms, closing", s->table->loop->cfg->disconnect_timeout_ms);
    core_session_client_gone(s);
}
