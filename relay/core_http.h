/* core_http.h - the HTTP requests of the Core Server-Sent Events and long-polling transports.
 *
 * A Core client on SSE or long polling is one session (relay/core_session.h)
 * found by the token its requests carry (id=), fed by many requests
 * (docs: specs/core-signalr.md §2):
 *   GET  Accept: text/event-stream  the SSE stream (relay/core_sse.c)
 *   GET  (other)                    a poll (relay/core_longpoll.c)
 *   POST                            the client's messages, for both
 *   DELETE                          the end of a long-polling connection
 * with the answers and status codes of ASP.NET Core's HttpConnectionDispatcher.
 * Whatever serves the hub (proxy or service mode) decides how a token that
 * names no session yet becomes one: struct core_http_opener.
 *
 * Requests are tagged in the wsi's opaque data (relay/wsi_role.h):
 * WSI_ROLE_CORE_HTTP for an SSE stream or a poll (struct core_http_request),
 * WSI_ROLE_CORE_POST for a POST while its body arrives (struct core_http_post).
 * A session outlives its requests; a request may outlive its session (then
 * it is answered as the server would: 204 for a poll, 404 for a POST). */
#ifndef SR_CORE_HTTP_H
#define SR_CORE_HTTP_H

#include <libwebsockets.h>
#include <stdbool.h>

#include "containers/buf.h"
#include "relay/loop.h"
#include "relay/http.h"
#include "relay/wsi_role.h"

struct core_session;
struct core_sessions;
struct core_transport;

/* Turns the first SSE GET or poll of a token into a session (proxy mode:
 * the negotiation it names; service mode: a verified token). NULL with
 * *status and *text set (text static) when it cannot. */
/* A token may name a connection that has no session yet (negotiated, no GET so far): ASP.NET
 * Core takes a POST for it into the connection (its first GET's hub reads it) and refuses a
 * DELETE (400, no transport yet). Whatever serves the hub keeps those bytes until the first GET.
 * All NULL: such a token is unknown until its first GET (404). ctx outlives every request. */
struct core_http_early {
    bool (*known)(void *ctx, struct lws *wsi, const char *token); /* the request's credentials too */
    unsigned (*send)(void *ctx, const char *token, const void *data, size_t len); /* 200, 404, 413, 500 */
    void (*take)(void *ctx, const char *token, struct buf *out);                  /* before open */
    void *ctx;
};

struct core_http_opener {
    struct core_session *(*open)(void *arg, struct lws *wsi, const char *token, const struct core_transport *transport,
                                 unsigned *status, const char **text);
    void *arg;
    struct core_http_early early;
};

struct core_http_request {
    enum wsi_role role;           /* WSI_ROLE_CORE_HTTP */
    struct lws *wsi;
    struct loop *loop;
    struct core_session *session; /* NULL once the session let go of it */
    unsigned status;              /* long polling: the answer once decided (200/204), 0 while held */
    bool sse;
    bool counted;                 /* in core_polls_waiting / core_streams_open */
    struct http_answer_ctx answer; /* long polling: what the answer needs of the request's headers */
    ev_io eof_watch;              /* SSE: notices the client closing its stream (core_sse.c) */
    bool eof_watched;
};

struct core_http_post {
    enum wsi_role role;           /* WSI_ROLE_CORE_POST */
    struct lws *wsi;
    struct core_sessions *table;
    struct core_session *held_by; /* the session that holds the answer (flow control), or NULL */
    struct core_http_early early; /* where the body goes when the token has no session yet */
    struct buf body;
    char *token;
    unsigned status;              /* the answer once known, 0 while the body arrives */
    const char *text;
};

/* A plain HTTP request for a Core hub: SSE, poll, POST or DELETE (OPTIONS is the caller's). */
int core_http_handle(struct core_sessions *table, struct lws *wsi, const struct core_http_opener *opener);

/* lws callbacks for the tagged requests. */
int core_http_writeable(void *owner, struct lws *wsi);
int core_http_body(struct core_http_post *post, const void *in, size_t len);
int core_http_body_done(struct core_http_post *post, struct lws *wsi);
/* The request's connection closed (CLOSED_HTTP or WSI_DESTROY); frees the tagged struct. */
void core_http_closed(void *owner);

/* ---- for core_session.c, core_sse.c, core_longpoll.c ---- */

/* Counts req as a waiting poll or an open stream (/metrics), until freed. */
void core_http_request_count(struct core_http_request *req, struct loop *loop);
void core_http_request_free(struct core_http_request *req, struct loop *loop);

/* The session lets go of its requests (it is being freed): a held poll
 * answers 204, a held POST 200. */
void core_http_detach(struct core_session *s);
/* A WebSocket session just established: it reads what its client POSTed before (pending->early). */
void core_http_read_early(struct core_session *s);
/* The session's disconnect_timer fired (poll timeout or disconnect timeout). */
void core_http_timer_due(struct core_session *s);
/* Reading the client: a POST's answer is held while the session is paused. */
void core_http_pause_reading(struct core_session *s, bool paused);

extern const struct core_transport core_sse_transport;
extern const struct core_transport core_longpoll_transport;

/* core_sse.c: answers the SSE GET with the stream's headers. */
int core_sse_start(struct core_http_request *req);
int core_sse_writeable(struct core_http_request *req);
/* core_longpoll.c: a poll for s (not the first): answered now or held. */
int core_longpoll_poll(struct core_session *s, struct core_http_request *req);
int core_longpoll_writeable(struct core_http_request *req);
/* Ends the poll s holds with 204 (a newer poll or DELETE took over). */
void core_longpoll_release(struct core_session *s);
void core_longpoll_timer_due(struct core_session *s);

#endif
