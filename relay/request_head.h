/* request_head.h - a new connection's first request head, looked at by the relay before lws takes the socket.
 *
 * libwebsockets 4.1.6 closes a connection without a word when a request head does not fit its
 * header buffer (max_http_header_data: lws_parse returns LPR_FAIL), when the request holds more
 * query arguments and headers it knows by name than its table has entries (WSI_TOKEN_COUNT
 * fragments), and when the head does not arrive within its timeout; no user callback runs
 * before it shuts the socket down (its ah is detached first, and an adopted connection is bound
 * to no protocol yet, so not even LWS_CALLBACK_HTTP_DROP_PROTOCOL comes). Kestrel answers 414,
 * 431 and 408 there. So on a plain (non-TLS) listener the relay looks at each new connection's
 * first head itself before lws gets the socket:
 *   - it only peeks (MSG_PEEK): the bytes stay in the socket, and once the head is whole and lws
 *     can hold it the socket goes to lws (lws_adopt_socket_vhost), which reads them as ever;
 *     between peeks SO_RCVLOWAT keeps the socket quiet until more has arrived;
 *   - it answers 414 when the request line alone is longer than the head limit, 431 when the
 *     head is, or when it has more fields than lws' table, 408 when the head began but did not
 *     end within --header-timeout; each with a text reason and Connection: close, then reads
 *     and drops what the peer still sends for up to REQUEST_HEAD_LINGER_MS (so that the answer
 *     is not lost to a reset) and closes;
 *   - it closes without an answer a connection that sends nothing within --header-timeout (as
 *     Kestrel) or that the peer closes.
 * Each peek copies what arrived so far, so a head trickled in byte by byte would cost quadratic
 * copying if every arrival were looked at: after REQUEST_HEAD_MAX_PEEKS arrivals the relay stops
 * watching the socket and peeks every REQUEST_HEAD_SLOW_PEEK_MS instead (at most one head's
 * worth of copying per period), until the head is whole, too large, or late (408) as before; a
 * peer that half-closes with its head incomplete is closed. (Until this, such a head went to lws
 * as it was, which closed an oversized one without an answer.) Later requests on a kept-alive
 * connection are read by lws itself (see docs/ARCHITECTURE.md, "The front door"). */
#ifndef SR_REQUEST_HEAD_H
#define SR_REQUEST_HEAD_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/timer_wheel.h"

struct loop;
struct http_refusals;

/* The reasons the answers give (the TLS listener's, relay/tls_head.h, too). */
#define REQUEST_HEAD_LATE "Request Timeout: the request headers did not arrive within the relay's --header-timeout."
#define REQUEST_HEAD_LINE_TOO_LONG "URI Too Long: the request line is longer than the relay reads."
#define REQUEST_HEAD_TOO_LARGE                                                                                  \
    "Request Header Fields Too Large: the request head is longer than the relay reads "                         \
    "(--max-request-line and --max-request-headers together)."

/* How long a refused connection's remaining input is read and dropped before it is closed. */
#define REQUEST_HEAD_LINGER_MS 2000
/* Arrivals looked at one by one; then the head is peeked at on a clock. A head within the limits
 * takes at most about 30 TCP segments. */
#define REQUEST_HEAD_MAX_PEEKS 64
/* How often a head that came in more pieces than that is peeked at. */
#define REQUEST_HEAD_SLOW_PEEK_MS 100

enum request_head_state {
    REQUEST_HEAD_READING,   /* reading the head */
    REQUEST_HEAD_LINGERING, /* answered: dropping input until the peer closes or the linger ends */
    REQUEST_HEAD_DONE,      /* handed over or closed: nothing is watched */
};

struct request_head;
/* The head is whole (complete: fd goes to lws, its bytes still unread in the socket), or the
 * connection is closed (complete false: the socket is gone). The
 * owner may free h inside. */
typedef void (*request_head_cb)(struct request_head *h, bool complete);

/* Why a head is refused, for the owner's log line and counters (set before the callback). */
struct request_head_refusal {
    unsigned status;        /* 0: not refused */
    const char *reason;     /* static text */
};

struct request_head {
    struct loop *loop;
    int fd;
    ev_io io;
    struct timer_entry deadline; /* --header-timeout while reading; the linger after a refusal */
    uint64_t due_ms;             /* when the head is late (408) */
    struct timer_entry repeek;   /* the next peek once the head came in too many pieces */
    bool slow;                   /* peeked at on the clock, the socket not watched */
    bool borrowed;               /* fd belongs to an lws connection: never closed here */
    enum request_head_state state;
    char *data;                  /* a peek at what arrived, owned, only during a wake-up */
    size_t len;                  /* bytes that had arrived at the last peek */
    unsigned peeks;
    size_t limit;                /* most bytes of head served */
    request_head_cb done;
    void *owner;
    struct http_refusals *refusals;
    struct request_head_refusal refusal;
};

/* Starts reading fd (non-blocking, accepted) for a head of at most `limit` bytes, with
 * timeout_ms for all of it. A refusal is counted and logged in `refusals` (may be NULL) when it
 * is answered. done runs later, never inside this call. */
void request_head_start(struct request_head *h, struct loop *loop, int fd, size_t limit, uint64_t timeout_ms,
                        struct http_refusals *refusals, request_head_cb done, void *owner);
/* The same on a socket that an lws connection owns (a kept-alive connection's next head,
 * relay/next_head.h). Nothing here closes it: after a refusal (answered, its sending side shut
 * down, the linger over) done(h, false) runs and the owner has lws close it; where a head being
 * read would end in a close (the peer left, or sent nothing within idle_ms: h->len is 0), the
 * socket goes back as complete and lws ends it its own way. */
void request_head_start_borrowed(struct request_head *h, struct loop *loop, int fd, size_t limit, uint64_t timeout_ms,
                                 uint64_t idle_ms, struct http_refusals *refusals, request_head_cb done, void *owner);
/* Only the linger of a refusal, on a socket an lws connection owns whose answer the caller has
 * written already (the TLS listener writes it through the connection's SSL object): ends the
 * sending side, drops input for up to REQUEST_HEAD_LINGER_MS or until the peer closes, then
 * done(h, false) runs and the owner has lws close the connection. */
void request_head_linger_borrowed(struct request_head *h, struct loop *loop, int fd, request_head_cb done,
                                  void *owner);
/* The answer to a refused head (status, reason, Connection: close) in out: its length, or -1
 * when out is too small. */
int request_head_answer(char *out, size_t out_len, unsigned status, const char *reason);
/* Stops watching without closing anything and without calling done (the borrowed socket's lws
 * connection is gone). */
void request_head_forget(struct request_head *h);
/* After a complete head: the socket belongs to the caller now (it hands it to lws). */
void request_head_release(struct request_head *h);
/* Closes the connection now, without an answer (the relay is out of descriptors, or stops). */
void request_head_abort(struct request_head *h);

/* An upper bound of what lws 4.1.6 keeps of a whole head in its header buffer: every line with 8
 * bytes more, as it keeps a header it does not know by name (a head of thousands of short unknown
 * headers takes it about twice its size); the relay refuses a head that would not fit (431).
 * Exposed for tests. */
size_t request_head_stored(const char *head, size_t len);
/* The number of lws header-table fragments a whole head needs (path, query arguments, known
 * headers); exposed for tests. */
size_t request_head_fields(const char *head, size_t len);

#endif
