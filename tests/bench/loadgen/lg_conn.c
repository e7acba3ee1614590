/* lg_conn.c - one client connection's life: TCP connect from a chosen source address, the
 * negotiate request, the WebSocket upgrade, the SignalR handshake (Core) or init frame + /start
 * (legacy), then frames in and out, and the graceful close (Core Close message + close frame;
 * legacy /abort). Input is read into the worker's shared buffer; a connection keeps bytes only
 * when a frame or message is split across reads, or when the kernel did not take all it sent. */
#include "lg_worker.h"

#include <errno.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lg_http.h"
#include "lg_sig.h"
#include "lg_ws.h"

#define MAX_FRAME_PAYLOAD (256u * 1024 * 1024)

enum fail_stage { FAIL_TCP, FAIL_NEGOTIATE, FAIL_UPGRADE, FAIL_HANDSHAKE, FAIL_TIMEOUT };

uint64_t lg_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- buffers ---- */

static int bytes_reserve(struct lg_bytes *b, size_t extra)
{
    if ((uint64_t)b->len + extra > UINT32_MAX / 2)
        return -1;
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? (size_t)b->cap * 2 : 512;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = (uint32_t)cap;
    return 0;
}

static int bytes_append(struct lg_bytes *b, const void *data, size_t len)
{
    if (len == 0)
        return 0;
    if (bytes_reserve(b, len) != 0)
        return -1;
    memcpy(b->p + b->len, data, len);
    b->len += (uint32_t)len;
    return 0;
}

static void bytes_free(struct lg_bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Drops the first n bytes; an emptied buffer is given back. */
static void bytes_consume(struct lg_bytes *b, size_t n)
{
    if (n >= b->len) {
        bytes_free(b);
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= (uint32_t)n;
}

/* ---- small helpers ---- */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint32_t next_random(struct lg_worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (uint32_t)(w->rng >> 16);
}

/* The Sec-WebSocket-Key is derived from the slot and start time, so it can be recomputed to
 * check the answer instead of being stored in every connection. */
static void ws_key_for(const struct lg_worker *w, uint32_t slot, char key[25])
{
    const struct lg_conn *c = &w->conns[slot];
    uint64_t a = splitmix64(w->key_secret ^ ((uint64_t)slot << 32) ^ c->t_start_us);
    uint64_t b = splitmix64(a);
    uint8_t raw[16];
    memcpy(raw, &a, 8);
    memcpy(raw + 8, &b, 8);
    lg_ws_make_key(raw, key);
}

static uint64_t ev_key(uint32_t slot, int is_http) { return ((uint64_t)slot << 1) | (uint64_t)is_http; }

static void ep_ctl(struct lg_worker *w, int op, int fd, uint32_t slot, int is_http, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = ev_key(slot, is_http)};
    epoll_ctl(w->epfd, op, fd, &ev);
}

static const char *state_name(uint8_t state)
{
    static const char *const names[] = {"free", "negotiate", "upgrade", "handshake", "legacy-init",
                                        "legacy-start", "join-group", "open", "closing"};
    return state < sizeof names / sizeof names[0] ? names[state] : "?";
}

static int is_setup_state(uint8_t state)
{
    return state >= CS_NEGOTIATE && state <= CS_JOINING;
}

static uint8_t *frame_payload(struct lg_worker *w) { return w->wbuf + LG_WS_MAX_CLIENT_HEADER; }

static size_t connection_data(const struct lg_worker *w, char *dst)
{
    char raw[128];
    int n = snprintf(raw, sizeof raw, "[{\"name\":\"%s\"}]", w->cfg->legacy_hub);
    return lg_url_encode(dst, raw, (size_t)n);
}

/* ---- release and failure ---- */

void lg_conn_release(struct lg_worker *w, uint32_t slot)
{
    struct lg_conn *c = &w->conns[slot];
    if (c->state == CS_FREE)
        return;
    if (is_setup_state(c->state))
        w->pending--;
    else if (c->state == CS_OPEN)
        w->open--;
    else if (c->state == CS_CLOSING)
        w->closing--;
    w->outstanding -= c->outstanding;
    if (c->fd >= 0)
        close(c->fd);
    if (c->hfd >= 0)
        close(c->hfd);
    free(c->token);
    bytes_free(&c->wsin);
    bytes_free(&c->msg);
    bytes_free(&c->wsout);
    bytes_free(&c->hin);
    lg_wheel_cancel(&w->wheel, slot);
    if (c->flags & CF_CHURN) {
        w->churn_active--;
        w->churn_free[w->nchurn_free++] = slot;
    }
    memset(c, 0, sizeof *c);
    c->fd = c->hfd = -1;
    c->state = CS_FREE;
}

static void conn_fail(struct lg_worker *w, uint32_t slot, enum fail_stage stage, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void conn_fail(struct lg_worker *w, uint32_t slot, enum fail_stage stage, const char *fmt, ...)
{
    struct lg_conn *c = &w->conns[slot];
    char text[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    static const char *const stage_names[] = {"tcp", "negotiate", "upgrade", "handshake", "timeout"};
    uint64_t *counters[] = {&w->st.fail_tcp, &w->st.fail_negotiate, &w->st.fail_upgrade,
                            &w->st.fail_handshake, &w->st.fail_timeout};
    (*counters[stage])++;
    if (c->flags & CF_CHURN)
        w->st.churn_failed++;
    else
        w->st.conn_failed++;
    lg_worker_error(w, "%s: %s", stage_names[stage], text);
    lg_conn_release(w, slot);
}

/* The WebSocket ended or broke (EOF, reset) outside our own close. */
static void peer_gone(struct lg_worker *w, uint32_t slot, const char *why)
{
    struct lg_conn *c = &w->conns[slot];
    switch (c->state) {
    case CS_UPGRADE:
        conn_fail(w, slot, FAIL_UPGRADE, "%s before the upgrade response", why);
        break;
    case CS_HANDSHAKE: case CS_LEGACY_INIT: case CS_LEGACY_START:
        conn_fail(w, slot, FAIL_HANDSHAKE, "%s during the %s step", why, state_name(c->state));
        break;
    case CS_OPEN:
        w->st.closed_by_server++;
        lg_worker_error(w, "server ended an open connection: %s", why);
        lg_conn_release(w, slot);
        break;
    case CS_CLOSING:
        if (c->flags & CF_CHURN)
            w->st.churn_closed++;
        else
            w->st.closed++;
        lg_conn_release(w, slot);
        break;
    default:
        lg_conn_release(w, slot);
        break;
    }
}

/* A frame or message from the server made no sense. */
static void protocol_fail(struct lg_worker *w, uint32_t slot, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void protocol_fail(struct lg_worker *w, uint32_t slot, const char *fmt, ...)
{
    char text[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    struct lg_conn *c = &w->conns[slot];
    if (is_setup_state(c->state)) {
        conn_fail(w, slot, c->state == CS_UPGRADE ? FAIL_UPGRADE : FAIL_HANDSHAKE, "%s", text);
        return;
    }
    w->st.protocol_errors++;
    lg_worker_error(w, "protocol error, connection dropped: %s", text);
    lg_conn_release(w, slot);
}

/* ---- sockets ---- */

static int open_socket(struct lg_worker *w, struct lg_conn *c, char *why, size_t why_size)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, why_size, "socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* Let connect() pick the port with the full 4-tuple in view, so one source address serves
     * as many connections per target as the ephemeral range allows. */
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = 0,
                              .sin_addr.s_addr = htonl(w->cfg->sources[c->src])};
    if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0) {
        snprintf(why, why_size, "bind to source address: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&w->target, sizeof w->target) != 0 && errno != EINPROGRESS) {
        snprintf(why, why_size, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int socket_error(int fd)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return errno;
    return err;
}

/* Starts the side HTTP request that the current state calls for. */
static void start_http(struct lg_worker *w, uint32_t slot)
{
    struct lg_conn *c = &w->conns[slot];
    char why[160];
    int fd = open_socket(w, c, why, sizeof why);
    if (fd < 0) {
        if (c->state == CS_CLOSING) {
            /* No /abort then; the WebSocket close still ends the connection. */
            lg_worker_error(w, "legacy /abort not sent: %s", why);
            return;
        }
        conn_fail(w, slot, FAIL_TCP, "%s", why);
        return;
    }
    c->hfd = fd;
    c->flags |= CF_HFD_CONNECTING;
    ep_ctl(w, EPOLL_CTL_ADD, fd, slot, 1, EPOLLOUT);
}

static void start_ws(struct lg_worker *w, uint32_t slot)
{
    struct lg_conn *c = &w->conns[slot];
    char why[160];
    c->state = CS_UPGRADE;
    int fd = open_socket(w, c, why, sizeof why);
    if (fd < 0) {
        conn_fail(w, slot, FAIL_TCP, "%s", why);
        return;
    }
    c->fd = fd;
    c->flags |= CF_FD_CONNECTING;
    ep_ctl(w, EPOLL_CTL_ADD, fd, slot, 0, EPOLLOUT);
}

/* ---- output ---- */

/* Writes raw bytes to the WebSocket; what the kernel does not take waits in wsout.
 * Returns -1 when the connection was released. */
static int ws_write(struct lg_worker *w, uint32_t slot, const uint8_t *data, size_t len)
{
    struct lg_conn *c = &w->conns[slot];
    w->st.bytes_sent += len;
    if (c->wsout.len == 0) {
        ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                peer_gone(w, slot, strerror(errno));
                return -1;
            }
            n = 0;
        }
        if ((size_t)n == len)
            return 0;
        data += n;
        len -= (size_t)n;
    }
    if (bytes_append(&c->wsout, data, len) != 0) {
        protocol_fail(w, slot, "out of memory queueing output");
        return -1;
    }
    if (!(c->flags & CF_FD_WANT_OUT)) {
        c->flags |= CF_FD_WANT_OUT;
        ep_ctl(w, EPOLL_CTL_MOD, c->fd, slot, 0, EPOLLIN | EPOLLOUT);
    }
    return 0;
}

/* Frames and sends the `len` bytes already placed at frame_payload(w). */
static int send_frame(struct lg_worker *w, uint32_t slot, int opcode, size_t len, uint64_t now)
{
    size_t hlen = lg_ws_client_header_len(len);
    uint8_t *dst = w->wbuf + LG_WS_MAX_CLIENT_HEADER - hlen;
    size_t total = lg_ws_encode_client(dst, opcode, dst + hlen, len, next_random(w));
    w->conns[slot].last_tx_us = now;
    return ws_write(w, slot, dst, total);
}

static int data_opcode(const struct lg_worker *w)
{
    return w->cfg->proto == LG_PROTO_MSGPACK ? LG_WS_BINARY : LG_WS_TEXT;
}

static int send_ping(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    size_t n = lg_sig_ping(w->cfg->proto, (char *)frame_payload(w));
    if (n == 0)
        return 0;
    w->st.pings_sent++;
    return send_frame(w, slot, data_opcode(w), n, now);
}

static int send_close_frame(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    uint8_t *p = frame_payload(w);
    p[0] = 0x03; /* 1000, normal closure */
    p[1] = 0xE8;
    w->conns[slot].flags |= CF_CLOSE_FRAME_SENT;
    return send_frame(w, slot, LG_WS_CLOSE, 2, now);
}

int lg_conn_invoke2(struct lg_worker *w, uint32_t slot, const char *target, const char *arg0, const char *arg,
                    size_t arg_len, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    /* The invocation id is the send time in microseconds (made unique per connection), so
     * the answer carries its own start time and nothing is stored per call. */
    uint64_t id = now > c->last_id ? now : c->last_id + 1;
    c->last_id = id;
    size_t n = lg_sig_invocation(w->cfg->proto, (char *)frame_payload(w), w->cfg->legacy_hub, target,
                                 id, arg0, arg, arg_len);
    c->outstanding++;
    w->outstanding++;
    if (c->state == CS_OPEN) { /* JoinGroup during setup is not traffic */
        c->sent++;
        w->st.msgs_sent++;
    }
    return send_frame(w, slot, data_opcode(w), n, now);
}

int lg_conn_invoke(struct lg_worker *w, uint32_t slot, const char *target, const char *arg,
                   size_t arg_len, uint64_t now)
{
    return lg_conn_invoke2(w, slot, target, NULL, arg, arg_len, now);
}

void lg_conn_rearm(struct lg_worker *w, uint32_t slot)
{
    struct lg_conn *c = &w->conns[slot];
    uint64_t due = UINT64_MAX;
    if (c->deadline_us)
        due = c->deadline_us;
    if (c->state == CS_OPEN) {
        if (c->next_send_us && c->next_send_us < due)
            due = c->next_send_us;
        if (w->cfg->proto != LG_PROTO_LEGACY && c->last_tx_us + LG_KEEPALIVE_US < due)
            due = c->last_tx_us + LG_KEEPALIVE_US;
    }
    if (due == UINT64_MAX)
        lg_wheel_cancel(&w->wheel, slot);
    else
        lg_wheel_arm(&w->wheel, slot, (due + 999) / 1000);
}

/* ---- opening ---- */

void lg_conn_begin(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    uint8_t churn = c->flags & CF_CHURN;
    memset(c, 0, sizeof *c);
    c->fd = c->hfd = -1;
    c->flags = churn;
    c->src = (uint16_t)(w->src_next++ % w->cfg->nsources);
    c->t_start_us = now;
    c->deadline_us = now + (uint64_t)(w->cfg->connect_timeout * 1e6);
    w->pending++;
    if (w->cfg->skip_negotiate) {
        start_ws(w, slot);
    } else {
        c->state = CS_NEGOTIATE;
        start_http(w, slot);
    }
    if (c->state != CS_FREE)
        lg_conn_rearm(w, slot);
}

static void conn_opened(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    c->state = CS_OPEN;
    w->pending--;
    w->open++;
    if (w->open > w->st.peak_open)
        w->st.peak_open = w->open;
    if (w->cfg->proto != LG_PROTO_LEGACY) {
        free(c->token);
        c->token = NULL;
    }
    lg_hist_record(&w->st.connect, now - c->t_start_us);
    c->deadline_us = 0;
    if (c->flags & CF_CHURN)
        w->st.churn_opened++;
    else
        w->st.conn_established++;
    /* Stock Core clients ping right after the handshake; that ping arms the server's
     * client-timeout, so a generator that skipped it would be cheaper to serve than a real client. */
    if (send_ping(w, slot, now) < 0)
        return;
    if (c->flags & CF_CHURN) {
        if (w->cfg->churn_hold_ms == 0) {
            lg_conn_close(w, slot, now);
            return;
        }
        c->deadline_us = now + (uint64_t)w->cfg->churn_hold_ms * 1000;
    } else {
        lg_worker_on_open(w, slot, now);
        if (c->state != CS_OPEN)
            return;
    }
    lg_conn_rearm(w, slot);
}

static void after_upgrade(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    if (w->cfg->proto == LG_PROTO_LEGACY) {
        c->state = CS_LEGACY_INIT;
        return;
    }
    c->state = CS_HANDSHAKE;
    size_t n = lg_sig_handshake(w->cfg->proto, (char *)frame_payload(w));
    /* Stock clients send the handshake as a text frame even for MessagePack. */
    send_frame(w, slot, LG_WS_TEXT, n, now);
}

/* ---- HTTP side requests ---- */

static void http_send_request(struct lg_worker *w, uint32_t slot)
{
    struct lg_conn *c = &w->conns[slot];
    const struct lg_config *cfg = w->cfg;
    char req[8192], tok[3 * 1024 + 1], cd[512];
    int n;
    tok[0] = '\0';
    if (c->token) {
        size_t tl = strlen(c->token);
        if (tl > 1024)
            tl = 1024;
        lg_url_encode(tok, c->token, tl);
    }
    if (cfg->proto == LG_PROTO_LEGACY)
        connection_data(w, cd);
    if (c->state == CS_NEGOTIATE && cfg->service_hub[0])
        n = snprintf(req, sizeof req,
                     "POST %s/negotiate?hub=%s&negotiateVersion=1 HTTP/1.1\r\nHost: %s:%u\r\n"
                     "User-Agent: signalr-loadgen\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\n"
                     "Connection: close\r\n\r\n",
                     cfg->path, cfg->service_hub, cfg->url.host, cfg->url.port, cfg->service_token);
    else if (c->state == CS_NEGOTIATE && cfg->proto != LG_PROTO_LEGACY)
        n = snprintf(req, sizeof req,
                     "POST %s/negotiate?negotiateVersion=1 HTTP/1.1\r\nHost: %s:%u\r\n"
                     "User-Agent: signalr-loadgen\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                     cfg->path, cfg->url.host, cfg->url.port);
    else if (c->state == CS_NEGOTIATE)
        n = snprintf(req, sizeof req,
                     "GET %s/negotiate?clientProtocol=2.1&connectionData=%s HTTP/1.1\r\nHost: %s:%u\r\n"
                     "User-Agent: signalr-loadgen\r\nConnection: close\r\n\r\n",
                     cfg->path, cd, cfg->url.host, cfg->url.port);
    else if (c->state == CS_LEGACY_START)
        n = snprintf(req, sizeof req,
                     "GET %s/start?transport=webSockets&clientProtocol=2.1&connectionToken=%s"
                     "&connectionData=%s HTTP/1.1\r\nHost: %s:%u\r\nUser-Agent: signalr-loadgen\r\n"
                     "Connection: close\r\n\r\n",
                     cfg->path, tok, cd, cfg->url.host, cfg->url.port);
    else /* CS_CLOSING, legacy */
        n = snprintf(req, sizeof req,
                     "POST %s/abort?transport=webSockets&clientProtocol=2.1&connectionToken=%s"
                     "&connectionData=%s HTTP/1.1\r\nHost: %s:%u\r\nUser-Agent: signalr-loadgen\r\n"
                     "Content-Length: 0\r\nConnection: close\r\n\r\n",
                     cfg->path, tok, cd, cfg->url.host, cfg->url.port);
    ssize_t sent = send(c->hfd, req, (size_t)n, MSG_NOSIGNAL);
    if (sent != n) {
        /* A fresh socket takes a request this small whole; anything else is a failure. */
        if (c->state == CS_CLOSING) {
            close(c->hfd);
            c->hfd = -1;
            return;
        }
        conn_fail(w, slot, c->state == CS_NEGOTIATE ? FAIL_NEGOTIATE : FAIL_HANDSHAKE,
                  "sending the %s request: %s", state_name(c->state),
                  sent < 0 ? strerror(errno) : "short write");
        return;
    }
    w->st.bytes_sent += (uint64_t)n;
    ep_ctl(w, EPOLL_CTL_MOD, c->hfd, slot, 1, EPOLLIN);
}

static void http_done(struct lg_worker *w, struct lg_conn *c)
{
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->hfd, NULL);
    close(c->hfd);
    c->hfd = -1;
    bytes_free(&c->hin);
}

static void http_on_response(struct lg_worker *w, uint32_t slot, int status, const char *body,
                             size_t len, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    const struct lg_config *cfg = w->cfg;
    char text[160];
    switch (c->state) {
    case CS_NEGOTIATE: {
        if (status != 200) {
            int legacy = cfg->proto == LG_PROTO_LEGACY;
            conn_fail(w, slot, FAIL_NEGOTIATE, "HTTP %d from %s %s/negotiate%s", status,
                      legacy ? "GET" : "POST", cfg->path,
                      legacy && status == 404 ? " - no legacy SignalR endpoint there (is the relay's "
                                                "legacy side built and --path right?)" : "");
            return;
        }
        int rc = cfg->proto == LG_PROTO_LEGACY
                     ? lg_sig_parse_legacy_negotiate(body, len, &c->token, text, sizeof text)
                     : lg_sig_parse_core_negotiate(body, len, &c->token, text, sizeof text);
        if (rc != 0) {
            conn_fail(w, slot, FAIL_NEGOTIATE, "%s", text);
            return;
        }
        http_done(w, c);
        start_ws(w, slot);
        return;
    }
    case CS_LEGACY_START:
        if (status != 200) {
            conn_fail(w, slot, FAIL_HANDSHAKE, "HTTP %d from GET %s/start", status, cfg->path);
            return;
        }
        if (lg_sig_parse_legacy_start(body, len, text, sizeof text) != 0) {
            conn_fail(w, slot, FAIL_HANDSHAKE, "%s", text);
            return;
        }
        http_done(w, c);
        if (cfg->group[0]) { /* started: now the hub call that joins the group, as a Core client's */
            c->state = CS_JOINING;
            lg_conn_invoke2(w, slot, "JoinGroup", NULL, cfg->group, strlen(cfg->group), now);
            return;
        }
        conn_opened(w, slot, now);
        return;
    case CS_CLOSING:
        if (status != 200)
            lg_worker_error(w, "legacy /abort answered HTTP %d", status);
        http_done(w, c);
        c->flags |= CF_ABORT_DONE;
        return;
    default:
        http_done(w, c);
        return;
    }
}

static void http_on_readable(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    int eof = 0;
    if (bytes_reserve(&c->hin, 4096) != 0) {
        conn_fail(w, slot, FAIL_NEGOTIATE, "out of memory");
        return;
    }
    ssize_t n = recv(c->hfd, c->hin.p + c->hin.len, c->hin.cap - c->hin.len, 0);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        eof = 1;
    } else if (n == 0) {
        eof = 1;
    } else {
        c->hin.len += (uint32_t)n;
        w->st.bytes_received += (uint64_t)n;
    }
    enum fail_stage stage = c->state == CS_NEGOTIATE ? FAIL_NEGOTIATE : FAIL_HANDSHAKE;
    struct lg_http_resp resp;
    const char *detail = "";
    long head = lg_http_parse_head(c->hin.p, c->hin.len, &resp, &detail);
    if (head < 0 || (head == 0 && eof)) {
        if (c->state == CS_CLOSING) {
            http_done(w, c);
            return;
        }
        conn_fail(w, slot, stage, "%s response: %s", state_name(c->state),
                  head < 0 ? detail : "connection closed before a response");
        return;
    }
    if (head == 0)
        return;
    char *body;
    size_t body_len;
    int rc = lg_http_body(&resp, c->hin.p + head, c->hin.len - (size_t)head, eof, &body, &body_len, &detail);
    if (rc < 0) {
        if (c->state == CS_CLOSING) {
            http_done(w, c);
            return;
        }
        conn_fail(w, slot, stage, "%s response body: %s", state_name(c->state), detail);
        return;
    }
    if (rc == 0)
        return;
    http_on_response(w, slot, resp.status, body, body_len, now);
}

/* ---- input: frames and messages ---- */

struct event_ctx {
    struct lg_worker *w;
    uint32_t slot;
    uint64_t now;
};

static void on_sig_event(void *arg, const struct lg_sig_event *ev)
{
    struct event_ctx *ctx = arg;
    struct lg_worker *w = ctx->w;
    struct lg_conn *c = &w->conns[ctx->slot];
    if (c->state == CS_FREE)
        return;
    switch (ev->kind) {
    case LG_SIG_COMPLETION:
        if (c->state == CS_JOINING && c->outstanding == 1 && ev->id_ok) {
            c->outstanding--;
            w->outstanding--;
            if (ev->is_error)
                conn_fail(w, ctx->slot, FAIL_HANDSHAKE, "JoinGroup(%s) failed: %s", w->cfg->group, ev->text);
            else
                conn_opened(w, ctx->slot, ctx->now);
            return;
        }
        if (c->outstanding == 0 || !ev->id_ok) {
            w->st.protocol_errors++;
            lg_worker_error(w, "completion for an invocation this connection did not make");
            return;
        }
        c->outstanding--;
        w->outstanding--;
        w->st.msgs_received++;
        if (w->phase == PH_STEADY)
            w->st.msgs_in_window++;
        if (ev->is_error) {
            w->st.msg_errors++;
            lg_worker_error(w, "invocation answered with an error: %s", ev->text);
        } else if (w->cfg->scenario != LG_SCEN_BROADCAST && ev->id <= ctx->now) {
            lg_hist_record(&w->st.latency, ctx->now - ev->id);
        }
        lg_worker_on_completion(w, ctx->slot, ctx->now);
        return;
    case LG_SIG_BROADCAST:
        w->st.bcast_delivered++;
        w->st.msgs_received++;
        if (w->phase == PH_STEADY)
            w->st.msgs_in_window++;
        if (ev->ts_ok && ev->ts <= ctx->now)
            lg_hist_record(&w->st.latency, ctx->now - ev->ts);
        return;
    case LG_SIG_PING:
        w->st.pings_received++;
        return;
    case LG_SIG_CLOSE:
        if (c->state == CS_CLOSING)
            return;
        w->st.closed_by_server++;
        lg_worker_error(w, "server sent Close%s%s", ev->text[0] ? ": " : "", ev->text);
        lg_conn_release(w, ctx->slot);
        return;
    case LG_SIG_INIT:
        if (c->state == CS_LEGACY_INIT) {
            c->state = CS_LEGACY_START;
            start_http(w, ctx->slot);
        }
        return;
    case LG_SIG_BAD:
        w->st.protocol_errors++;
        lg_worker_error(w, "malformed message: %s", ev->text);
        return;
    default:
        return;
    }
}

/* Parses whole Core records (handshake response first) from a byte stream. Returns the bytes
 * used, or -1 when the connection is gone. */
static long core_records(struct lg_worker *w, uint32_t slot, const uint8_t *p, size_t n, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    struct event_ctx ctx = {w, slot, now};
    size_t off = 0;
    while (off < n) {
        if (c->state == CS_HANDSHAKE || w->cfg->proto == LG_PROTO_JSON) {
            long rl = lg_sig_split_json((const char *)p + off, n - off);
            if (rl < 0)
                break;
            if (c->state == CS_HANDSHAKE) {
                char text[120];
                if (lg_sig_parse_handshake((const char *)p + off, (size_t)rl, text, sizeof text) != 0) {
                    conn_fail(w, slot, FAIL_HANDSHAKE, "handshake refused: %s", text);
                    return -1;
                }
                off += (size_t)rl + 1;
                if (w->cfg->group[0]) {
                    c->state = CS_JOINING;
                    lg_conn_invoke2(w, slot, "JoinGroup", NULL, w->cfg->group, strlen(w->cfg->group), now);
                } else {
                    conn_opened(w, slot, now);
                }
            } else {
                lg_sig_parse_core_json((const char *)p + off, (size_t)rl, on_sig_event, &ctx);
                off += (size_t)rl + 1;
            }
        } else {
            size_t hl, bl;
            int rc = lg_sig_split_varint(p + off, n - off, &hl, &bl);
            if (rc < 0) {
                protocol_fail(w, slot, "bad MessagePack length prefix");
                return -1;
            }
            if (rc == 0)
                break;
            lg_sig_parse_core_msgpack(p + off + hl, bl, &w->zone, on_sig_event, &ctx);
            off += hl + bl;
        }
        if (c->state == CS_FREE)
            return -1;
    }
    return (long)off;
}

/* One data frame's payload. Core is a byte stream across frames; legacy is one JSON document
 * per (possibly fragmented) message. */
static int on_data(struct lg_worker *w, uint32_t slot, const uint8_t *payload, size_t len, int fin,
                   uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    if (w->cfg->proto == LG_PROTO_LEGACY) {
        struct event_ctx ctx = {w, slot, now};
        if (!fin || c->msg.len) {
            if (bytes_append(&c->msg, payload, len) != 0) {
                protocol_fail(w, slot, "out of memory");
                return -1;
            }
            if (!fin)
                return 0;
            lg_sig_parse_legacy(c->msg.p, c->msg.len, on_sig_event, &ctx);
            if (c->state == CS_FREE)
                return -1;
            bytes_free(&c->msg);
            return 0;
        }
        lg_sig_parse_legacy((const char *)payload, len, on_sig_event, &ctx);
        return c->state == CS_FREE ? -1 : 0;
    }
    if (c->msg.len) {
        if (bytes_append(&c->msg, payload, len) != 0) {
            protocol_fail(w, slot, "out of memory");
            return -1;
        }
        long used = core_records(w, slot, (const uint8_t *)c->msg.p, c->msg.len, now);
        if (used < 0)
            return -1;
        bytes_consume(&c->msg, (size_t)used);
        return 0;
    }
    long used = core_records(w, slot, payload, len, now);
    if (used < 0)
        return -1;
    if ((size_t)used < len && bytes_append(&c->msg, payload + used, len - (size_t)used) != 0) {
        protocol_fail(w, slot, "out of memory");
        return -1;
    }
    return 0;
}

static int on_close_frame(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    if (c->state == CS_CLOSING) {
        /* Answer the server's close (legacy after /abort) and wait for it to drop TCP, so the
         * TIME_WAIT stays on the server side and our ports are free at once. */
        if (!(c->flags & CF_CLOSE_FRAME_SENT) && send_close_frame(w, slot, now) < 0)
            return -1;
        return 0;
    }
    if (c->state == CS_OPEN) {
        send_close_frame(w, slot, now);
        if (c->state != CS_FREE) {
            w->st.closed_by_server++;
            lg_worker_error(w, "server closed an open WebSocket");
            lg_conn_release(w, slot);
        }
        return -1;
    }
    conn_fail(w, slot, FAIL_HANDSHAKE, "server closed the WebSocket during the %s step", state_name(c->state));
    return -1;
}

/* Handles the upgrade response and whole frames in (p, n). Returns bytes used, or -1 when the
 * connection is gone. */
static long ws_process(struct lg_worker *w, uint32_t slot, uint8_t *p, size_t n, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    size_t off = 0;
    while (off < n) {
        if (c->state == CS_UPGRADE) {
            struct lg_http_resp resp;
            const char *detail = "";
            long hl = lg_http_parse_head((const char *)p + off, n - off, &resp, &detail);
            if (hl < 0) {
                conn_fail(w, slot, FAIL_UPGRADE, "upgrade response: %s", detail);
                return -1;
            }
            if (hl == 0)
                break;
            if (resp.status != 101) {
                conn_fail(w, slot, FAIL_UPGRADE, "HTTP %d to the WebSocket upgrade%s", resp.status,
                          w->cfg->proto == LG_PROTO_LEGACY && resp.status == 404
                              ? " of /connect (no legacy SignalR endpoint there?)" : "");
                return -1;
            }
            char key[25], accept[29];
            ws_key_for(w, slot, key);
            lg_ws_accept_for_key(key, accept);
            if (strcmp(accept, resp.ws_accept) != 0) {
                conn_fail(w, slot, FAIL_UPGRADE, "wrong Sec-WebSocket-Accept");
                return -1;
            }
            off += (size_t)hl;
            after_upgrade(w, slot, now);
            if (c->state == CS_FREE)
                return -1;
            continue;
        }
        struct lg_ws_frame f;
        const char *detail = "";
        int rc = lg_ws_decode_server_header(p + off, n - off, &f, &detail);
        if (rc < 0) {
            protocol_fail(w, slot, "WebSocket: %s", detail);
            return -1;
        }
        if (rc == 0)
            break;
        if (f.payload_len > MAX_FRAME_PAYLOAD) {
            protocol_fail(w, slot, "WebSocket frame of %" PRIu64 " bytes", f.payload_len);
            return -1;
        }
        if (n - off - f.header_len < f.payload_len)
            break;
        uint8_t *payload = p + off + f.header_len;
        size_t plen = (size_t)f.payload_len;
        off += f.header_len + plen;
        switch (f.opcode) {
        case LG_WS_TEXT: case LG_WS_BINARY: case LG_WS_CONT:
            if (on_data(w, slot, payload, plen, f.fin, now) < 0)
                return -1;
            break;
        case LG_WS_PING:
            memcpy(frame_payload(w), payload, plen);
            if (send_frame(w, slot, LG_WS_PONG, plen, now) < 0)
                return -1;
            break;
        case LG_WS_CLOSE:
            if (on_close_frame(w, slot, now) < 0)
                return -1;
            break;
        default:
            break;
        }
        if (c->state == CS_FREE)
            return -1;
    }
    return (long)off;
}

static void ws_on_readable(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    uint8_t *data;
    size_t avail;
    ssize_t n;
    if (c->wsin.len == 0) {
        n = recv(c->fd, w->rbuf, w->rbuf_size, 0);
        data = w->rbuf;
        avail = n > 0 ? (size_t)n : 0;
    } else {
        if (bytes_reserve(&c->wsin, 16384) != 0) {
            protocol_fail(w, slot, "out of memory");
            return;
        }
        n = recv(c->fd, c->wsin.p + c->wsin.len, c->wsin.cap - c->wsin.len, 0);
        if (n > 0)
            c->wsin.len += (uint32_t)n;
        data = (uint8_t *)c->wsin.p;
        avail = c->wsin.len;
    }
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        peer_gone(w, slot, strerror(errno));
        return;
    }
    if (n == 0) {
        peer_gone(w, slot, "connection closed");
        return;
    }
    w->st.bytes_received += (uint64_t)n;
    w->last_rx_us = now;
    long used = ws_process(w, slot, data, avail, now);
    if (used < 0)
        return;
    if (data == w->rbuf) {
        if ((size_t)used < avail && bytes_append(&c->wsin, data + used, avail - (size_t)used) != 0)
            protocol_fail(w, slot, "out of memory");
    } else {
        bytes_consume(&c->wsin, (size_t)used);
    }
}

static void ws_flush(struct lg_worker *w, uint32_t slot)
{
    struct lg_conn *c = &w->conns[slot];
    if (c->wsout.len == 0)
        return;
    ssize_t n = send(c->fd, c->wsout.p, c->wsout.len, MSG_NOSIGNAL);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            peer_gone(w, slot, strerror(errno));
        return;
    }
    bytes_consume(&c->wsout, (size_t)n);
    if (c->wsout.len == 0) {
        c->flags &= (uint8_t)~CF_FD_WANT_OUT;
        ep_ctl(w, EPOLL_CTL_MOD, c->fd, slot, 0, EPOLLIN);
    }
}

static void send_upgrade(struct lg_worker *w, uint32_t slot)
{
    struct lg_conn *c = &w->conns[slot];
    const struct lg_config *cfg = w->cfg;
    char req[8192], tok[3 * 1024 + 1], cd[512], key[25];
    ws_key_for(w, slot, key);
    tok[0] = '\0';
    if (c->token) {
        size_t tl = strlen(c->token);
        if (tl > 1024)
            tl = 1024;
        lg_url_encode(tok, c->token, tl);
    }
    char target[4096 + 512];
    if (cfg->proto == LG_PROTO_LEGACY) {
        connection_data(w, cd);
        snprintf(target, sizeof target,
                 "%s/connect?transport=webSockets&clientProtocol=2.1&connectionToken=%s&connectionData=%s&tid=%u",
                 cfg->path, tok, cd, next_random(w) % 11);
    } else if (cfg->skip_negotiate) {
        snprintf(target, sizeof target, "%s", cfg->path);
    } else if (cfg->service_hub[0]) {
        snprintf(target, sizeof target, "%s/?hub=%s&id=%s&access_token=%s", cfg->path, cfg->service_hub, tok,
                 cfg->service_token);
    } else {
        snprintf(target, sizeof target, "%s?id=%s", cfg->path, tok);
    }
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s:%u\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nUser-Agent: signalr-loadgen\r\n\r\n",
                     target, cfg->url.host, cfg->url.port, key);
    ep_ctl(w, EPOLL_CTL_MOD, c->fd, slot, 0, EPOLLIN);
    ws_write(w, slot, (const uint8_t *)req, (size_t)n);
}

/* ---- dispatch ---- */

void lg_conn_on_event(struct lg_worker *w, uint32_t slot, int is_http, uint32_t events, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    if (c->state == CS_FREE)
        return;
    if (is_http) {
        if (c->hfd < 0)
            return;
        if (c->flags & CF_HFD_CONNECTING) {
            if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
                return;
            int err = socket_error(c->hfd);
            if (err) {
                if (c->state == CS_CLOSING) {
                    http_done(w, c);
                    return;
                }
                conn_fail(w, slot, FAIL_TCP, "connect: %s", strerror(err));
                return;
            }
            c->flags &= (uint8_t)~CF_HFD_CONNECTING;
            http_send_request(w, slot);
            return;
        }
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
            http_on_readable(w, slot, now);
        return;
    }
    if (c->fd < 0)
        return;
    if (c->flags & CF_FD_CONNECTING) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        int err = socket_error(c->fd);
        if (err) {
            conn_fail(w, slot, FAIL_TCP, "connect: %s", strerror(err));
            return;
        }
        c->flags &= (uint8_t)~CF_FD_CONNECTING;
        send_upgrade(w, slot);
        return;
    }
    if (events & EPOLLOUT) {
        ws_flush(w, slot);
        if (c->state == CS_FREE)
            return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        ws_on_readable(w, slot, now);
}

/* ---- timers and closing ---- */

void lg_conn_on_timer(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    if (c->state == CS_FREE)
        return;
    if (c->deadline_us && now >= c->deadline_us) {
        if (is_setup_state(c->state)) {
            conn_fail(w, slot, FAIL_TIMEOUT, "not open after %.1f s (stuck in %s)", w->cfg->connect_timeout,
                      state_name(c->state));
            return;
        }
        if (c->state == CS_OPEN) { /* churn hold over */
            lg_conn_close(w, slot, now);
            return;
        }
        if (c->state == CS_CLOSING) {
            w->st.close_forced++;
            if (c->flags & CF_CHURN)
                w->st.churn_closed++;
            lg_conn_release(w, slot);
            return;
        }
    }
    if (c->state == CS_OPEN) {
        if (c->next_send_us && now >= c->next_send_us) {
            lg_worker_on_send_due(w, slot, now);
            if (c->state != CS_OPEN)
                return;
        }
        if (w->cfg->proto != LG_PROTO_LEGACY && now >= c->last_tx_us + LG_KEEPALIVE_US) {
            if (send_ping(w, slot, now) < 0)
                return;
        }
    }
    lg_conn_rearm(w, slot);
}

void lg_conn_close(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    struct lg_conn *c = &w->conns[slot];
    if (c->state == CS_FREE || c->state == CS_CLOSING)
        return;
    if (c->state != CS_OPEN) {
        lg_conn_release(w, slot);
        return;
    }
    w->open--;
    w->closing++;
    c->state = CS_CLOSING;
    c->next_send_us = 0;
    c->deadline_us = now + (uint64_t)(w->cfg->close_timeout * 1e6);
    if (w->cfg->proto == LG_PROTO_LEGACY) {
        /* Legacy clients stop with /abort; the server then closes the WebSocket. Without an
         * /abort socket, close the WebSocket ourselves. */
        start_http(w, slot);
        if (c->hfd < 0 && send_close_frame(w, slot, now) < 0)
            return;
    } else {
        /* As the stock clients: a Close message, then the WebSocket close frame. */
        size_t n = lg_sig_close(w->cfg->proto, (char *)frame_payload(w));
        if (send_frame(w, slot, data_opcode(w), n, now) < 0)
            return;
        if (send_close_frame(w, slot, now) < 0)
            return;
    }
    if (c->state != CS_FREE)
        lg_conn_rearm(w, slot);
}
