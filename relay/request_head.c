/* request_head.c - a new connection's first request head, read before lws takes the socket (see request_head.h). */
#include "relay/request_head.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay/clock.h"
#include "relay/http_limits.h"
#include "relay/loop.h"

/* lws 4.1.6 closed a request whose path and known headers took 93 of its 95 fragments
 * (measured: 91 known headers and Host served, 92 closed; 90 query arguments with Host and
 * Connection served, 91 closed: each argument after the first counts one). */
#define MAX_FIELDS ((size_t)WSI_TOKEN_COUNT - 3)
/* What lws' header buffer keeps free of request_head_stored's estimate. */
#define HEAD_STORE_MARGIN 128

/* ------------------------------------------------------------- counting */

/* Whether "name:" (name of n bytes, any case) is a header lws 4.1.6 knows by name: those take a
 * fragment each; others it skips or keeps aside. */
static bool known_header(const char *name, size_t n)
{
    for (int t = 0; t < WSI_TOKEN_COUNT; t++) {
        const char *s = (const char *)lws_token_to_string((enum lws_token_indexes)t);
        if (s && s[0] != ':' && strlen(s) == n + 1 && s[n] == ':' && strncasecmp(s, name, n) == 0)
            return true;
    }
    return false;
}

size_t request_head_fields(const char *head, size_t len)
{
    const char *end = head + len;
    const char *eol = memchr(head, '\n', len);
    if (!eol)
        return 0;
    size_t fields = 1; /* the path (with the first query argument: measured) */
    const char *q = memchr(head, '?', (size_t)(eol - head));
    if (q)
        for (const char *p = q + 1; p < eol && *p != ' '; p++)
            fields += *p == '&' || *p == ';';
    for (const char *line = eol + 1; line < end;) {
        const char *next = memchr(line, '\n', (size_t)(end - line));
        const char *line_end = next ? next : end;
        const char *colon = memchr(line, ':', (size_t)(line_end - line));
        if (colon && known_header(line, (size_t)(colon - line)))
            fields++;
        line = line_end + 1;
    }
    return fields;
}

/* lws 4.1.6 keeps each header line it does not know by name with 8 bytes of bookkeeping before it
 * (LWS_WITH_CUSTOM_HEADERS): with the default limits (a 44 KB buffer) 3,736 lines "zz:1" (22 KB on
 * the wire) were served, 6,000 (36 KB) overflowed it and it closed the connection without a word;
 * this estimate refuses from 3,740 on. */
#define LWS_UNKNOWN_HEADER_COST 8

size_t request_head_stored(const char *head, size_t len)
{
    size_t stored = 0;
    for (const char *line = head, *end = head + len; line < end;) {
        const char *next = memchr(line, '\n', (size_t)(end - line));
        const char *line_end = next ? next : end;
        size_t n = (size_t)(line_end - line);
        stored += (n && line[n - 1] == '\r' ? n - 1 : n) + LWS_UNKNOWN_HEADER_COST;
        line = line_end + 1;
    }
    return stored;
}

/* ------------------------------------------------------------- closing */

static void stop_watching(struct request_head *h)
{
    ev_io_stop(h->loop->ev, &h->io);
    timer_cancel(&h->deadline);
    timer_cancel(&h->repeek);
}

static void hand_over(struct request_head *h);

/* Closes the socket; the owner hears it (and may free h). A borrowed socket is left to its owner:
 * after a refusal the owner closes it; while its head is still being read (the peer left, went
 * quiet, or the relay ran out of memory) it goes back to lws as it is, which ends it its own way
 * and still serves what it may hold already (a pipelined request). */
static void finish_closed(struct request_head *h)
{
    if (h->borrowed && h->state == REQUEST_HEAD_READING) {
        hand_over(h);
        return;
    }
    stop_watching(h);
    h->state = REQUEST_HEAD_DONE;
    if (!h->borrowed)
        close(h->fd);
    h->fd = -1;
    free(h->data);
    h->data = NULL;
    h->done(h, false);
}

static const char *status_text(unsigned status)
{
    switch (status) {
    case 408: return "Request Timeout";
    case 414: return "URI Too Long";
    default: return "Request Header Fields Too Large";
    }
}

int request_head_answer(char *out, size_t out_len, unsigned status, const char *reason)
{
    int n = snprintf(out, out_len,
                     "HTTP/1.1 %u %s\r\ncontent-type: text/plain\r\ncontent-length: %zu\r\nconnection: close\r\n"
                     "x-content-type-options: nosniff\r\n\r\n%s",
                     status, status_text(status), strlen(reason), reason);
    return n > 0 && (size_t)n < out_len ? n : -1;
}

static void linger_expired(struct timer_entry *e)
{
    finish_closed(list_container_of(e, struct request_head, deadline));
}

/* Ends the sending side and drops what the peer still sends until it closes or
 * REQUEST_HEAD_LINGER_MS pass: closing a socket with unread input resets it, and the peer may
 * lose the answer. */
static void linger(struct request_head *h)
{
    shutdown(h->fd, SHUT_WR);
    int one = 1;
    setsockopt(h->fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one);
    free(h->data);
    h->data = NULL;
    h->len = 0;
    h->state = REQUEST_HEAD_LINGERING;
    timer_cancel(&h->repeek);
    ev_io_start(h->loop->ev, &h->io); /* stopped while peeking on the clock */
    timer_cancel(&h->deadline);
    timer_entry_init(&h->deadline, linger_expired);
    loop_timer_schedule(h->loop, &h->deadline, clock_now_ms() + REQUEST_HEAD_LINGER_MS);
}

/* Answers status with reason and Connection: close, then lingers. */
static void refuse(struct request_head *h, unsigned status, const char *reason)
{
    h->refusal.status = status;
    h->refusal.reason = reason;
    if (h->refusals) { /* counted now: the connection may linger for a while */
        struct sockaddr_storage sa;
        socklen_t sa_len = sizeof sa;
        char peer[64] = "?";
        if (getpeername(h->fd, (struct sockaddr *)&sa, &sa_len) == 0)
            getnameinfo((struct sockaddr *)&sa, sa_len, peer, sizeof peer, NULL, 0, NI_NUMERICHOST);
        http_refusal_note(h->refusals, peer, status, reason);
    }
    char answer[512];
    int n = request_head_answer(answer, sizeof answer, status, reason);
    /* The socket's buffer is empty: a few hundred bytes always fit. */
    if (n > 0)
        (void)!send(h->fd, answer, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    linger(h);
}

/* ------------------------------------------------------------- reading */

static void header_timeout(struct timer_entry *e)
{
    struct request_head *h = list_container_of(e, struct request_head, deadline);
    if (h->len == 0) { /* nothing sent: closed without a word, as Kestrel */
        finish_closed(h);
        return;
    }
    if (clock_now_ms() < h->due_ms) { /* the idle deadline came first: the head has begun since */
        loop_timer_schedule(h->loop, &h->deadline, h->due_ms);
        return;
    }
    refuse(h, 408, REQUEST_HEAD_LATE);
}

/* The head read so far (len bytes, the last `fresh` of them new) is whole: the offset past
 * its blank line ("\r\n\r\n", or bare line feeds, which lws takes too), else 0. */
static size_t head_end(const struct request_head *h, size_t fresh)
{
    const char *d = h->data;
    for (size_t i = h->len - fresh >= 2 ? h->len - fresh - 2 : 0; i + 1 < h->len; i++) {
        if (d[i] != '\n')
            continue;
        if (d[i + 1] == '\n')
            return i + 2;
        if (d[i + 1] == '\r' && i + 2 < h->len && d[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

/* More than the limit and no end yet: the request line alone too long is 414, else 431. */
static void head_too_large(struct request_head *h)
{
    if (!memchr(h->data, '\n', h->len))
        refuse(h, 414, REQUEST_HEAD_LINE_TOO_LONG);
    else
        refuse(h, 431, REQUEST_HEAD_TOO_LARGE);
}

/* Hands the head to lws: its bytes are still in the socket (only peeked at), and the socket
 * wakes for every byte again. */
static void hand_over(struct request_head *h)
{
    int one = 1;
    setsockopt(h->fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one);
    free(h->data);
    h->data = NULL;
    stop_watching(h);
    h->state = REQUEST_HEAD_DONE;
    h->done(h, true);
}

/* The head is whole (its first `end` bytes): hand it over unless lws could not hold it. */
static void head_whole(struct request_head *h, size_t end)
{
    if (request_head_fields(h->data, end) > MAX_FIELDS) {
        refuse(h, 431, "Request Header Fields Too Large: more query arguments and headers than the relay reads "
                       "in one request.");
        return;
    }
    if (request_head_stored(h->data, end) > http_limits_header_buffer(h->loop->cfg) - HEAD_STORE_MARGIN) {
        refuse(h, 431, "Request Header Fields Too Large: more header lines than the relay reads in one request.");
        return;
    }
    hand_over(h);
}

/* Whether the peer has sent its FIN (it will send nothing more). */
static bool peer_done_sending(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && info.tcpi_state == TCP_CLOSE_WAIT;
}

/* The head is not whole yet: wait for more. Arrivals are looked at one by one at first (the
 * socket wakes only once more than `len` bytes are there: SO_RCVLOWAT); after
 * REQUEST_HEAD_MAX_PEEKS of them, on the clock. */
static void wait_for_more(struct request_head *h, bool grew)
{
    if (!grew && peer_done_sending(h->fd)) { /* half-closed: the head will never end */
        finish_closed(h);
        return;
    }
    if (h->peeks < REQUEST_HEAD_MAX_PEEKS) {
        int lowat = (int)h->len + 1;
        setsockopt(h->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
        return;
    }
    if (!h->slow) {
        h->slow = true;
        ev_io_stop(h->loop->ev, &h->io);
    }
    loop_timer_schedule(h->loop, &h->repeek, clock_now_ms() + REQUEST_HEAD_SLOW_PEEK_MS);
}

/* Peeks at what arrived (nothing is taken from the socket: lws reads it all once the head is
 * whole). */
static void read_head(struct request_head *h)
{
    int avail = 0;
    if (ioctl(h->fd, FIONREAD, &avail) != 0 || avail < 0)
        avail = 0;
    size_t want = (size_t)avail < h->limit + 1 ? (size_t)avail : h->limit + 1;
    if (want == 0)
        want = 1; /* a close: recv says 0 */
    h->data = malloc(want);
    if (!h->data) {
        finish_closed(h);
        return;
    }
    ssize_t n = recv(h->fd, h->data, want, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        free(h->data);
        h->data = NULL;
        return;
    }
    if (n <= 0) { /* the peer left (or the socket failed) before a whole head */
        finish_closed(h);
        return;
    }
    size_t before = h->len;
    h->len = (size_t)n;
    h->peeks++;
    size_t end = head_end(h, h->len > before ? h->len - before : h->len);
    if (end) {
        head_whole(h, end);
        return;
    }
    if (h->len > h->limit) {
        head_too_large(h);
        return;
    }
    free(h->data);
    h->data = NULL;
    wait_for_more(h, h->len > before);
}

static void repeek_due(struct timer_entry *e)
{
    struct request_head *h = list_container_of(e, struct request_head, repeek);
    if (h->state == REQUEST_HEAD_READING)
        read_head(h);
}

static void drop_input(struct request_head *h)
{
    char sink[4096];
    ssize_t n = recv(h->fd, sink, sizeof sink, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        finish_closed(h);
}

static void on_readable(struct ev_loop *ev, ev_io *io, int revents)
{
    (void)ev;
    (void)revents;
    struct request_head *h = io->data;
    if (h->state == REQUEST_HEAD_READING)
        read_head(h);
    else if (h->state == REQUEST_HEAD_LINGERING)
        drop_input(h);
}

void request_head_start(struct request_head *h, struct loop *loop, int fd, size_t limit, uint64_t timeout_ms,
                        struct http_refusals *refusals, request_head_cb done, void *owner)
{
    memset(h, 0, sizeof *h);
    h->loop = loop;
    h->refusals = refusals;
    h->fd = fd;
    h->limit = limit;
    h->done = done;
    h->owner = owner;
    h->state = REQUEST_HEAD_READING;
    ev_io_init(&h->io, on_readable, fd, EV_READ);
    h->io.data = h;
    ev_io_start(loop->ev, &h->io);
    timer_entry_init(&h->deadline, header_timeout);
    timer_entry_init(&h->repeek, repeek_due);
    h->due_ms = clock_now_ms() + timeout_ms;
    loop_timer_schedule(loop, &h->deadline, h->due_ms);
}

void request_head_start_borrowed(struct request_head *h, struct loop *loop, int fd, size_t limit, uint64_t timeout_ms,
                                 uint64_t idle_ms, struct http_refusals *refusals, request_head_cb done, void *owner)
{
    request_head_start(h, loop, fd, limit, timeout_ms, refusals, done, owner);
    h->borrowed = true;
    if (idle_ms < timeout_ms) {
        timer_cancel(&h->deadline);
        loop_timer_schedule(loop, &h->deadline, clock_now_ms() + idle_ms);
    }
}

void request_head_linger_borrowed(struct request_head *h, struct loop *loop, int fd, request_head_cb done,
                                  void *owner)
{
    request_head_start(h, loop, fd, 0, 0, NULL, done, owner);
    h->borrowed = true;
    linger(h);
}

void request_head_forget(struct request_head *h)
{
    if (h->state != REQUEST_HEAD_DONE)
        stop_watching(h);
    h->state = REQUEST_HEAD_DONE;
    free(h->data);
    h->data = NULL;
    h->fd = -1;
}

void request_head_release(struct request_head *h)
{
    free(h->data);
    h->data = NULL;
    h->len = 0;
    h->fd = -1;
}

void request_head_abort(struct request_head *h)
{
    if (h->state == REQUEST_HEAD_DONE)
        return;
    finish_closed(h);
}
