/* core_sse.c - the Core Server-Sent Events transport: a session's messages as events on one HTTP response (see core_http.h).
 *
 * The stream starts with the comment line ":\r\n" (as the server sends it);
 * each message toward the client becomes one event: every LF-separated line
 * of it as "data: <line>\r\n" (a CR before the LF dropped), then "\r\n".
 * Text only: SSE carries JSON (the handshake refuses MessagePack on it). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "relay/core_http.h"
#include "relay/core_session.h"
#include "relay/log.h"

#define SSE_PREAMBLE ":\r\n"

static void sse_kick(struct core_session *s)
{
    if (s->extra->request)
        lws_callback_on_writable(s->extra->request->wsi);
}

const struct core_transport core_sse_transport = {
    .kind = CORE_TRANSPORT_SSE,
    .pings = true,
    .kick = sse_kick,
    .pause_reading = core_http_pause_reading,
    .closing = sse_kick,
    .detach = core_http_detach,
    .timer_due = core_http_timer_due,
};

/* lws reads nothing more of an HTTP/1 connection while its response is
 * going out, so a client that closes its event stream would be noticed only
 * when a write fails (the next keepalive ping: up to --keepalive late, and
 * the hub keeps a dead connection meanwhile). A second watcher on the socket
 * (libev allows several per descriptor) notices the end at once. */
static void sse_readable(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)revents;
    struct core_http_request *req = w->data;
    char byte;
    ssize_t n = recv(w->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    ev_io_stop(ev, w); /* end of stream, an error, or bytes lws will see: no more looking */
    req->eof_watched = false;
    if (n > 0 || !req->session)
        return;
    /* The client is gone: the connection is over (the hub hears it), and the
     * session's detach asks for a WRITEABLE callback that ends the wsi. */
    log_conn_debug(core_session_id(req->session), req->session->endpoint->name, "session: SSE stream closed by the client");
    core_session_client_gone(req->session);
}

static void watch_for_eof(struct core_http_request *req)
{
    struct loop *loop = req->loop;
    lws_sockfd_type fd = lws_get_socket_fd(req->wsi);
    if (!loop->ev || fd < 0)
        return; /* lws' own poll() loop: the next write notices */
    ev_io_init(&req->eof_watch, sse_readable, fd, EV_READ);
    req->eof_watch.data = req;
    ev_io_start(loop->ev, &req->eof_watch);
    req->eof_watched = true;
}

int core_sse_start(struct core_http_request *req)
{
    struct core_session *s = req->session;
    if (http_respond_stream_headers(s->table->loop->cfg, req->wsi, "text/event-stream") != 0)
        return -1;
    /* An endless response: no lws timeout (lws_http_mark_sse does this too, but logs an error
     * on HTTP/1), and the request's header table goes back to the pool. */
    lws_set_timeout(req->wsi, NO_PENDING_TIMEOUT, 0);
    lws_http_headers_detach(req->wsi);
    watch_for_eof(req);
    lws_callback_on_writable(req->wsi); /* the preamble, then whatever is queued */
    return 0;
}

/* One event for m, with LWS_PRE bytes of headroom, in out. */
static bool sse_frame(const struct wsmsg *m, struct buf *out)
{
    buf_reset(out);
    if (!buf_reserve(out, LWS_PRE + m->len + 16))
        return false;
    out->len = LWS_PRE;
    const char *p = (const char *)m->payload, *end = p + m->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        size_t n = (size_t)(line_end - p);
        if (nl && n > 0 && p[n - 1] == '\r')
            n--;
        if (!buf_append_cstr(out, "data: ") || !buf_append(out, p, n) || !buf_append_cstr(out, "\r\n"))
            return false;
        p = nl ? nl + 1 : end;
    }
    return buf_append_cstr(out, "\r\n");
}

static int sse_write(struct lws *wsi, struct buf *frame)
{
    size_t len = frame->len - LWS_PRE;
    capture_http_chunk(wsi, frame->data + LWS_PRE, len);
    int n = lws_write(wsi, (unsigned char *)frame->data + LWS_PRE, len, LWS_WRITE_HTTP);
    return n < (int)len ? -1 : 0;
}

/* Writes what is queued, one message per write while the socket takes it;
 * once a closing session's queue is empty, the stream ends (and the session:
 * there is nothing left to carry it). */
int core_sse_writeable(struct core_http_request *req)
{
    struct core_session *s = req->session;
    if (!s)
        return -1; /* the session let go: the stream ends */
    if (lws_partial_buffered(req->wsi)) {
        lws_callback_on_writable(req->wsi);
        return 0;
    }
    struct buf frame;
    buf_init(&frame);
    int rc = 0;
    if (!req->status) { /* the preamble, once */
        req->status = 200;
        rc = buf_reserve(&frame, LWS_PRE + sizeof SSE_PREAMBLE) ? 0 : -1;
        if (rc == 0) {
            frame.len = LWS_PRE;
            buf_append_cstr(&frame, SSE_PREAMBLE);
            rc = sse_write(req->wsi, &frame);
        }
    } else if (!msg_queue_is_empty(&s->to_client)) {
        struct wsmsg *m = msg_queue_pop(&s->to_client);
        rc = sse_frame(m, &frame) ? sse_write(req->wsi, &frame) : -1;
        wsmsg_free(m);
        core_session_sent(s);
    }
    buf_free(&frame);
    if (rc != 0) {
        log_conn_info(core_session_id(s), s->endpoint->name, "session: the event stream failed");
        return -1; /* core_http_closed ends the session */
    }
    if (!msg_queue_is_empty(&s->to_client) || lws_partial_buffered(req->wsi)) {
        lws_callback_on_writable(req->wsi);
    } else if (core_session_done(s)) {
        capture_http_stream_end(req->wsi);
        return -1; /* everything went out: the response ends with the connection */
    }
    return 0;
}
