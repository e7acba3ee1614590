/* core_longpoll.c - the Core long-polling transport: a session's messages as the answers to polls (see core_http.h).
 *
 * A poll with messages queued is answered at once with all of them (200,
 * application/octet-stream, whole framed messages back to back); an empty one
 * waits up to --long-poll-timeout and is then answered 200 empty; a newer
 * poll, DELETE, or the end of the connection answers a waiting poll 204.
 * Between polls the client has --disconnect-timeout to poll again, else the
 * connection is over. Both deadlines are the session's disconnect deadline
 * (core_session_disconnect_at). No pings: long polling keeps itself alive. */
#include <stdlib.h>
#include <string.h>

#include "relay/clock.h"
#include "relay/core_http.h"
#include "relay/core_session.h"
#include "relay/log.h"

static void arm(struct core_session *s, unsigned after_ms)
{
    core_session_disconnect_at(s, clock_now_ms() + after_ms);
}

/* Something to say to a waiting poll: let it be written. */
static void lp_kick(struct core_session *s)
{
    if (s->extra->request)
        http_answer_ready(s->extra->request->wsi);
}

const struct core_transport core_longpoll_transport = {
    .kind = CORE_TRANSPORT_LONG_POLLING,
    .pings = false,
    .kick = lp_kick,
    .pause_reading = core_http_pause_reading,
    .closing = lp_kick,
    .detach = core_http_detach,
    .timer_due = core_http_timer_due,
};

void core_longpoll_release(struct core_session *s)
{
    struct core_http_request *old = s->extra->request;
    if (!old)
        return;
    s->extra->request = NULL;
    old->session = NULL;
    old->status = 204;
    http_answer_ready(old->wsi);
}

int core_longpoll_poll(struct core_session *s, struct core_http_request *req)
{
    core_longpoll_release(s); /* a newer poll ends the one before (204) */
    req->session = s;
    s->extra->request = req;
    http_answer_capture(s->table->loop->cfg, req->wsi, &req->answer);
    if (!msg_queue_is_empty(&s->to_client) || core_session_done(s))
        return core_longpoll_writeable(req);
    http_answer_later(req->wsi);
    lws_set_timeout(req->wsi, NO_PENDING_TIMEOUT, 0); /* the poll timeout is ours */
    lws_http_headers_detach(req->wsi);                 /* captured: the table goes back to lws */
    core_http_request_count(req, s->table->loop);
    arm(s, s->table->loop->cfg->long_poll_timeout_ms);
    return 0;
}

/* Every queued message, back to back, in one body. */
static bool take_queue(struct core_session *s, struct buf *body)
{
    if (!buf_reserve(body, s->to_client.bytes))
        return false;
    struct wsmsg *m;
    while ((m = msg_queue_pop(&s->to_client)) != NULL) {
        buf_append(body, m->payload, m->len);
        wsmsg_free(m);
    }
    return true;
}

int core_longpoll_writeable(struct core_http_request *req)
{
    struct lws *wsi = req->wsi;
    struct core_session *s = req->session;
    if (s && !req->status && msg_queue_is_empty(&s->to_client) && !core_session_done(s))
        return 0; /* nothing to say yet */
    lws_set_opaque_user_data(wsi, NULL);
    struct http_answer_ctx answer = req->answer;
    if (!s) { /* released: a newer poll, DELETE, or the end */
        core_http_request_free(req, req->loop);
        return http_respond_captured(&answer, wsi, 204, "text/plain", "", 0);
    }
    const struct relay_config *c = s->table->loop->cfg;
    s->extra->request = NULL;
    core_http_request_free(req, s->table->loop);
    if (!msg_queue_is_empty(&s->to_client)) {
        struct buf body;
        buf_init(&body);
        int rc = take_queue(s, &body)
                     ? http_respond_captured(&answer, wsi, 200, "application/octet-stream", body.data, body.len)
                     : http_respond_captured(&answer, wsi, 500, "text/plain", "out of memory", 13);
        buf_free(&body);
        core_session_sent(s);
        arm(s, c->disconnect_timeout_ms);
        return rc;
    }
    if (core_session_done(s)) { /* the connection ended and everything went out */
        log_conn_debug(core_session_id(s), s->endpoint->name, "session: long polling ends");
        core_session_client_gone(s);
        return http_respond_captured(&answer, wsi, 204, "text/plain", "", 0);
    }
    arm(s, c->disconnect_timeout_ms); /* the poll timeout: an empty 200, poll again */
    return http_respond_captured(&answer, wsi, 200, "text/plain", "", 0);
}

void core_longpoll_timer_due(struct core_session *s)
{
    if (s->extra->request) {
        s->extra->request->status = 200;
        http_answer_ready(s->extra->request->wsi);
        return;
    }
    log_conn_info(core_session_id(s), s->endpoint->name, "session: no poll for %u ms, closing", s->table->loop->cfg->disconnect_timeout_ms);
    core_session_client_gone(s);
}
