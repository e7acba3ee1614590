/* tls_head.h - a TLS connection's handshake and request heads: the relay's deadline and answers.
 *
 * On a plain listener the relay reads each new connection's first head itself before lws takes
 * the socket (relay/request_head.h). On a TLS listener the bytes are encrypted: lws 4.1.6 does
 * the handshake, decrypts and parses the head, and closes without a word when the head is late
 * or does not fit its header buffer (no user callback runs first). struct tls_head watches such a
 * connection from its adoption until its first request is served (tls_head_served), through the
 * connection's SSL object (lws_get_ssl) and an OpenSSL message callback on it, which sees the
 * header of every TLS record the peer sends:
 *   - the handshake and the head together get --header-timeout from accept, on the timer wheel
 *     (lws' own timeouts are pushed behind it). A handshake not done by then is closed without
 *     an answer (there is no HTTP to answer in); one that had begun is counted and logged with
 *     the refused requests. A connection that finished the handshake and then sent nothing is
 *     closed without an answer, as on the plain listener; one that began its head is answered
 *     408 with a reason, written through the SSL object;
 *   - the relay counts the application bytes each record carries (its length less 16, the least
 *     any cipher suite of TLS 1.2 or 1.3 adds: an upper bound). When a record would take a head
 *     that has not ended past the relay's limit (http_limits_head_max), lws' reading of the
 *     socket is stopped (lws_rx_flow_control) before it parses that record, whose plaintext its
 *     header buffer has room for (http_limits_header_buffer). If the head ends in that record
 *     it is served as ever (and reading resumes); if not, it is answered 414 (the target lws
 *     decoded so far is over --max-request-line) or 431, as on the plain listener;
 *   - an answer is followed by TLS close_notify, the sending side shut down, and the peer's
 *     input dropped for up to REQUEST_HEAD_LINGER_MS (request_head_linger_borrowed) before the
 *     owner has lws close the connection.
 * A kept-alive connection's later heads are watched the same way (relay/tls_next_head.h), from the
 * response before each. What lws still closes without an answer is in docs/SECURITY.md (a head
 * with more fields than its table; a head of many short unknown headers, which it stores at about
 * twice their size). */
#ifndef SR_TLS_HEAD_H
#define SR_TLS_HEAD_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/timer_wheel.h"
#include "relay/request_head.h"

struct loop;
struct http_refusals;

/* The reason a handshake that began and did not end in time is logged with. */
#define TLS_HEAD_HANDSHAKE_LATE "the TLS handshake did not complete within the relay's --header-timeout."

struct tls_head;
/* The watch is over (from the relay's own timers and watchers, never inside lws): kill, the
 * connection must go now; else only the watch ends (a kept-alive connection that sent nothing:
 * lws' keep-alive timeout ends it). */
typedef void (*tls_head_close_cb)(struct tls_head *h, bool kill);

struct tls_head {
    struct loop *loop;
    struct lws *wsi;
    struct http_refusals *refusals; /* counts and logs refusals, or NULL */
    size_t limit;                  /* most bytes of head served */
    uint64_t app_bytes;            /* application bytes received after the handshake (an upper bound) */
    bool watching;                 /* started and not yet served, forgotten or closed */
    bool began;                    /* a record arrived after the handshake */
    bool paused;                   /* lws' reading stopped (too large, or answered) */
    bool answered;                 /* refused: lingering */
    bool next;                     /* a kept-alive connection's next head (tls_head_start_next) */
    unsigned lws_timeout_s;        /* lws' own timeout, set behind the relay's */
    struct timer_entry deadline;   /* --header-timeout from accept */
    struct timer_entry too_large;  /* runs once lws parsed the record that took the head past the limit */
    struct request_head linger;    /* after an answer */
    tls_head_close_cb close;
};

/* Watches wsi, just adopted on the TLS listener: a head of at most `limit` bytes, the handshake
 * and the head within timeout_ms. lws_timeout_s: lws' own timeout, set behind the relay's. */
void tls_head_start(struct tls_head *h, struct loop *loop, struct lws *wsi, size_t limit, uint64_t timeout_ms,
                    unsigned lws_timeout_s, struct http_refusals *refusals, tls_head_close_cb close);
/* The same for a kept-alive connection's next head, from inside the lws callback that completed
 * the response before it: timeout_ms from now; a connection silent until then is left to lws'
 * keep-alive timeout (close(h, false)), and lws' header-table timeout is pushed behind the relay's
 * when the head's first record arrives. */
void tls_head_start_next(struct tls_head *h, struct loop *loop, struct lws *wsi, size_t limit, uint64_t timeout_ms,
                         unsigned lws_timeout_s, struct http_refusals *refusals, tls_head_close_cb close);
/* lws parsed the connection's first request (inside an lws callback): stop watching, and let lws
 * read again if it was stopped. */
void tls_head_served(struct tls_head *h);
/* The connection is gone (LWS_CALLBACK_WSI_DESTROY): stop everything, touch nothing of it. */
void tls_head_forget(struct tls_head *h);

#endif
