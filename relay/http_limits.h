/* http_limits.h - strict request framing and request size limits at the front door.
 *
 * Every request is checked before it is routed, as Kestrel checks it, so that
 * the relay never reads a request differently from a proxy in front of it
 * (request smuggling) and never answers a request it only read in part:
 *
 *   400  Content-Length and Transfer-Encoding together; Content-Length given
 *        twice; a Content-Length that is not a plain decimal number of at most
 *        18 digits (negative, junk, absurd); a Transfer-Encoding other than
 *        "chunked"
 *   414  the request target (path and query, as lws decoded them) longer than
 *        --max-request-line
 *   431  the request's headers (names and values lws knows) longer than
 *        --max-request-headers; or one header the relay passes on to a
 *        backend (Cookie, Authorization, ...) of HTTP_FORWARDED_HEADER_MAX
 *        bytes or more, which it would otherwise have to drop
 *
 * A refused request is answered with its status, a text/plain reason and
 * Connection: close, and its connection is closed once the answer is out.
 * Each refusal is counted and logged, at most HTTP_REFUSAL_LOG_BURST lines
 * per HTTP_REFUSAL_LOG_WINDOW_MS (then one line saying how many were not
 * logged), so a flood of bad requests cannot flood the log. */
#ifndef SR_HTTP_LIMITS_H
#define SR_HTTP_LIMITS_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct relay_config;

#define HTTP_REFUSAL_LOG_BURST 10
#define HTTP_REFUSAL_LOG_WINDOW_MS 10000

/* The refusals so far and the log's rate limit: owned by the relay. */
struct http_refusals {
    uint64_t total;          /* requests refused, for /metrics */
    uint64_t window_start_ms;
    unsigned logged;         /* lines logged in the current window */
    unsigned suppressed;     /* refusals not logged in the current window */
};

/* What a TLS listener's header buffer holds beyond the head the relay reads: one TLS record's
 * plaintext (at most 16 KB) and then some. */
#define HTTP_LIMITS_TLS_RECORD_ROOM (17 * 1024)

/* How many bytes of request head lws must be able to hold for the limits to
 * be checked (its header buffer): both limits and room for the rest. */
size_t http_limits_header_buffer(const struct relay_config *cfg);
/* The longest request head the relay reads (relay/request_head.h): both limits and room for
 * the method, the version and headers lws does not know; lws' buffer holds it with room. */
size_t http_limits_head_max(const struct relay_config *cfg);

/* Checks the request's framing and sizes. 0 when it may be served; else the
 * status to refuse it with, and *reason a static text. */
unsigned http_check_request(const struct relay_config *cfg, struct lws *wsi, const char **reason);

/* The length of the request target (path, '?' and query) as lws decoded it so far. */
size_t http_limits_target_length(struct lws *wsi);

/* Counts a refused request and logs it (rate-limited); peer is its address. Status 0: the
 * connection was closed without an answer (a TLS handshake that did not complete in time). */
void http_refusal_note(struct http_refusals *refusals, const char *peer, unsigned status, const char *reason);

/* Answers a refused request (status, reason, Connection: close), counts and
 * logs it (rate-limited). Returns what the lws callback returns: -1, so the
 * connection is closed once the answer is out. */
int http_refuse_request(const struct relay_config *cfg, struct http_refusals *refusals, struct lws *wsi,
                        unsigned status, const char *reason);

#endif
