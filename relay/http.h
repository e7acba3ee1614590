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

/* Finds query argument `name` (case-insensitive) and copies its decoded value.
 * Returns the value's length, or -1 if absent (or too long for out). */
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
void header_list_capture(struct header_list *list, struct lws *wsi);
bool header_list_copy(struct header_list *dst, const struct header_list *src);
void header_list_free(struct header_list *list);
/* The value of a captured header ("authorization:"), or NULL. */
const char *header_list_get(const struct header_list *list, const char *name);

/* The peer's address and any X-Forwarded-For it sent, as the value the relay
 * forwards ("a, b" when the client came through another proxy). */
void http_forwarded_for(struct lws *wsi, char *out, size_t len);

/* For a request answered later (once the backend has answered): lws reads
 * nothing more of a request's connection before its answer, so the EOF of a
 * client that hangs up meanwhile would stay unread and wake the event loop
 * again and again (100 % CPU; on the libev loop it also starves lws' timers).
 * Reading pauses until http_answer_ready(), which resumes it and asks for the
 * HTTP_WRITEABLE callback that writes the answer (lws runs no callback for a
 * paused request, not even that one). A client that left is noticed then. */
void http_answer_later(struct lws *wsi);
void http_answer_ready(struct lws *wsi);

/* What answering a request needs from its request headers (CORS, whether
 * the connection closes after it), captured so that a request answered much
 * later (a held long poll) can give its header storage back to lws
 * (lws_http_headers_detach: several KiB per request) while it waits. */
struct http_reply_ctx {
    bool closes;
    char *origin; /* the allowed Origin to echo (owned), or NULL */
};
void http_reply_capture(const struct relay_config *cfg, struct lws *wsi, struct http_reply_ctx *ctx);
void http_reply_free(struct http_reply_ctx *ctx);
/* http_respond for a request whose headers were captured (and maybe detached). */
int http_respond_captured(const struct http_reply_ctx *ctx, struct lws *wsi, unsigned status, const char *content_type,
                          const char *body, size_t body_len);

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

/* Starts a streamed response (Server-Sent Events): the status and headers
 * of http_respond, no length, plus X-Accel-Buffering: no so that proxies
 * pass every event at once. The body follows with LWS_WRITE_HTTP writes; the
 * response ends when the connection closes. False when the headers could
 * not be written. */
bool http_begin_stream(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *content_type);

/* Answers a CORS preflight (OPTIONS) from an allowed origin with 204, or 403 otherwise. */
int http_respond_preflight(const struct relay_config *cfg, struct lws *wsi);

#endif
