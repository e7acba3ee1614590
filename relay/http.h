/* http.h - reading a request and writing a short response on the relay's HTTP side.
 *
 * Thin helpers over libwebsockets' header table: the method, headers, query
 * arguments (looked up case-insensitively, as ASP.NET Core does), the query
 * re-encoded for forwarding to a backend, CORS from the configured allow-list,
 * and complete small responses (status, type, body) in one call. */
#ifndef SR_HTTP_H
#define SR_HTTP_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"

struct relay_config;

enum http_method { HTTP_OTHER = 0, HTTP_GET, HTTP_POST, HTTP_OPTIONS, HTTP_DELETE, HTTP_PUT, HTTP_PATCH, HTTP_HEAD };

enum http_method http_request_method(struct lws *wsi);

/* Copies the request path (no query) into out. False if absent or too long. */
bool http_request_path(struct lws *wsi, char *out, size_t len);

/* Copies a header into out (NUL-terminated). Returns its length, or -1 when
 * absent or longer than out. */
int http_header(struct lws *wsi, enum lws_token_indexes token, char *out, size_t len);

/* Query arguments are looked up by name, case-insensitively (lws has split
 * the query and percent-decoded each argument); a name given more than once
 * has its values joined with ',', as ASP.NET Core reads them. Values are
 * read whole: nothing is ever cut to a buffer's size. */
enum http_arg { HTTP_ARG_FOUND, HTTP_ARG_ABSENT, HTTP_ARG_NOMEM };

/* The decoded value of query argument `name` in *value (its contents
 * replaced; NUL-terminated, the NUL not counted in value->len). */
enum http_arg http_query_value(struct lws *wsi, const char *name, struct buf *value);

/* For short values with a known bound: copies the value of `name` into out
 * (NUL-terminated) and returns its length; HTTP_ARG_ABSENT_LEN when there is
 * no such argument; HTTP_ARG_UNUSABLE_LEN when the value does not fit in out
 * (or out of memory): never a cut value, and callers must not take it for
 * an absent one (answer 400 instead). */
#define HTTP_ARG_ABSENT_LEN (-1)
#define HTTP_ARG_UNUSABLE_LEN (-2)
int http_query_arg(struct lws *wsi, const char *name, char *out, size_t len);

/* Appends every query argument except those named in skip (case-insensitive),
 * re-encoded and joined by '&' ("a=b&c=d", no leading separator). False when
 * out of memory. */
bool http_query_forward(struct lws *wsi, struct buf *out, const char *const *skip, size_t skip_count);

/* The request headers a backend must see as if the client had come straight
 * to it (Authorization, Cookie, User-Agent, Origin, ...), captured as
 * "name:" NUL "value" NUL pairs in an owned buffer. */
struct header_list {
    struct buf pairs;
};
/* Each header is passed on up to HTTP_FORWARDED_HEADER_MAX - 1 bytes; the
 * front door refuses a request with a longer one (431) rather than pass it
 * on without it (http_forwarded_header_too_long names it, "cookie:"). */
#define HTTP_FORWARDED_HEADER_MAX 8192
const char *http_forwarded_header_too_long(struct lws *wsi);
void header_list_capture(struct header_list *list, struct lws *wsi);
bool header_list_copy(struct header_list *dst, const struct header_list *src);
void header_list_free(struct header_list *list);
/* The value of a captured header ("authorization:"), or NULL. */
const char *header_list_get(const struct header_list *list, const char *name);

/* The peer's address and any X-Forwarded-For it sent, as the value the relay
 * forwards ("a, b" when the client came through another proxy); the peer's
 * address alone when the chain does not fit in out whole (never a cut one). */
void http_forwarded_for(struct lws *wsi, char *out, size_t len);

/* For a request answered later (once the backend has answered): lws reads
 * nothing more of a request's connection before its answer, so the EOF of a
 * client that hangs up meanwhile would stay unread and wake the event loop
 * again and again (100 % CPU; on the libev loop it also starves lws' timers).
 * Reading pauses until http_answer_ready(), which resumes it and asks for the
 * HTTP_WRITEABLE callback that writes the answer (lws runs no callback for a
 * paused request, not even that one). A client that left is noticed then.
 * lws' own deadline for the answer (20 s, then a close without one) is
 * lifted: the caller's timer decides (--backend-timeout for a negotiate). */
void http_answer_later(struct lws *wsi);
void http_answer_ready(struct lws *wsi);

/* Writes a whole response (headers + body) and completes the transaction.
 * Adds CORS headers when the Origin is allowed, and Cache-Control: no-cache.
 * Returns what the lws callback should return. */
int http_respond(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *content_type,
                 const char *body, size_t body_len);

/* http_respond with a text/plain body: the C string text. */
int http_respond_text(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *text);

/* Refuses a WebSocket upgrade with a text/plain body. Returns what the
 * CONFIRM_UPGRADE callback returns: 1 (answered), or -1 (hang up). */
int http_refuse_upgrade(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *text);

/* Writes a text/plain response saying Connection: close and returns -1, so
 * that lws closes the connection once it is out (a refused request whose
 * framing cannot be trusted: nothing more may be read from that socket).
 * Works for a plain request and for a refused WebSocket upgrade alike. */
int http_respond_and_close(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *text);

/* Writes the headers of a 200 whose body follows in pieces for as long as
 * the connection lasts (Core Server-Sent Events): no Content-Length,
 * no caching, CORS as http_respond. Returns what the lws callback should return. */
int http_respond_stream_headers(const struct relay_config *cfg, struct lws *wsi, const char *content_type);

/* What answering a request later needs of its headers (CORS, whether the
 * connection closes after it), so that the headers can go back to lws' pool
 * while the answer waits: a Core long poll holds them for up to 90 s, which
 * was most of an idle long-polling client's memory. */
struct http_answer_ctx {
    const char *origin; /* the allowed Origin: one of cfg->cors_origins (a config lives until
                           relay_destroy, a reload's too), NULL when none; no copy per request */
    bool closes;
};
void http_answer_capture(const struct relay_config *cfg, struct lws *wsi, struct http_answer_ctx *ctx);
/* http_respond for a request whose headers were captured (and may be detached). */
int http_respond_captured(const struct http_answer_ctx *ctx, struct lws *wsi, unsigned status,
                          const char *content_type, const char *body, size_t body_len);

/* For a captured request: the headers of a response whose body follows in
 * pieces (LWS_WRITE_HTTP) and ends with the connection (no length; lws says
 * Connection: close). http_end_stream writes the last piece and ends it.
 * A held legacy long poll, which the original starts with keep-alive spaces. */
bool http_begin_captured_stream(const struct http_answer_ctx *ctx, struct lws *wsi, unsigned status,
                                const char *content_type);
int http_end_stream(struct lws *wsi, const char *body, size_t body_len);

/* Starts a streamed response (Server-Sent Events): the status and headers
 * of http_respond, no length, plus X-Accel-Buffering: no so that proxies
 * pass every event at once. The body follows with LWS_WRITE_HTTP writes; the
 * response ends when the connection closes. False when the headers could
 * not be written. */
bool http_begin_stream(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *content_type);

/* Answers a CORS preflight (OPTIONS) from an allowed origin with 204, or 403 otherwise. */
int http_respond_preflight(const struct relay_config *cfg, struct lws *wsi);

#endif
