/* rp_conn.c - HTTP and WebSocket client connections over one poll loop (see rp_conn.h). */
#include "rp_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "lg_ws.h"

int64_t rp_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rp_now_ms(void)
{
    return rp_now_us() / 1000;
}

static void loop_add(struct rp_loop *loop, struct rp_conn *c)
{
    if (loop->n == loop->cap) {
        loop->cap = loop->cap ? loop->cap * 2 : 16;
        loop->c = rp_xrealloc(loop->c, loop->cap * sizeof *loop->c);
    }
    c->loop = loop;
    c->slot = loop->n;
    loop->c[loop->n++] = c;
}

static void loop_remove(struct rp_conn *c)
{
    struct rp_loop *loop = c->loop;
    if (!loop)
        return;
    loop->c[c->slot] = loop->c[--loop->n];
    loop->c[c->slot]->slot = c->slot;
    c->loop = NULL;
}

static void finish(struct rp_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->finished = 1;
}

static struct rp_conn *conn_open(struct rp_loop *loop, const struct lg_url *target, int kind,
                                 const struct rp_conn_handler *h, void *ctx, intptr_t tag)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(target->port),
                             .sin_addr.s_addr = htonl(target->ip)};
    struct rp_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->kind = kind;
    c->h = h;
    c->ctx = ctx;
    c->tag = tag;
    lg_dechunk_init(&c->dechunk);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(fd);
            free(c);
            errno = e;
            return NULL;
        }
        c->connecting = 1;
    }
    loop_add(loop, c);
    return c;
}

struct rp_conn *rp_conn_http(struct rp_loop *loop, const struct lg_url *target, const char *method,
                             const char *path_query, const char *headers, const char *body, size_t body_len,
                             const struct rp_conn_handler *h, void *ctx, intptr_t tag)
{
    struct rp_conn *c = conn_open(loop, target, RP_HTTP, h, ctx, tag);
    if (!c)
        return NULL;
    char *head = rp_fmt("%s %s HTTP/1.1\r\nHost: %s:%u\r\nConnection: close\r\n%s\r\n", method, path_query,
                        target->host, target->port, headers);
    rp_buf_adds(&c->out, head);
    free(head);
    rp_buf_add(&c->out, body, body_len);
    return c;
}

struct rp_conn *rp_conn_ws(struct rp_loop *loop, const struct lg_url *target, const char *path_query,
                           const char *headers, const struct rp_conn_handler *h, void *ctx, intptr_t tag)
{
    struct rp_conn *c = conn_open(loop, target, RP_WS, h, ctx, tag);
    if (!c)
        return NULL;
    uint8_t rnd[16];
    RAND_bytes(rnd, sizeof rnd);
    lg_ws_make_key(rnd, c->key);
    char *head = rp_fmt("GET %s HTTP/1.1\r\nHost: %s:%u\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
                        path_query, target->host, target->port, c->key, headers);
    rp_buf_adds(&c->out, head);
    free(head);
    return c;
}

static void ws_frame_out(struct rp_conn *c, int opcode, const void *p, size_t n)
{
    size_t hl = lg_ws_client_header_len(n);
    uint8_t *frame = rp_xmalloc(hl + n);
    uint32_t mask;
    RAND_bytes((unsigned char *)&mask, sizeof mask);
    size_t len = lg_ws_encode_client(frame, opcode, p, n, mask);
    rp_buf_add(&c->out, frame, len);
    free(frame);
}

void rp_ws_send(struct rp_conn *c, int opcode, const void *p, size_t n)
{
    if (c->fd < 0 || c->close_sent)
        return;
    ws_frame_out(c, opcode, p, n);
}

void rp_ws_close(struct rp_conn *c, int code, const char *reason)
{
    if (c->fd < 0)
        return;
    if (code == 1006) {
        finish(c);
        return;
    }
    if (!c->close_sent) {
        uint8_t payload[2 + 123];
        size_t n = 0;
        if (code != 1005) {
            size_t rl = strlen(reason);
            if (rl > 123)
                rl = 123;
            payload[0] = (uint8_t)(code >> 8);
            payload[1] = (uint8_t)code;
            memcpy(payload + 2, reason, rl);
            n = 2 + rl;
        }
        ws_frame_out(c, LG_WS_CLOSE, payload, n);
        c->close_sent = 1;
    }
}

void rp_conn_abort(struct rp_conn *c)
{
    finish(c);
}

void rp_conn_free(struct rp_conn *c)
{
    if (!c)
        return;
    loop_remove(c);
    finish(c);
    rp_buf_free(&c->out);
    rp_buf_free(&c->in);
    rp_buf_free(&c->body);
    rp_buf_free(&c->msg);
    free(c->head);
    free(c);
}

static void fail(struct rp_conn *c, const char *why)
{
    if (c->finished)
        return;
    finish(c);
    if (c->h->on_error)
        c->h->on_error(c, why);
}

/* ---- HTTP bodies */

static void body_piece(struct rp_conn *c, const char *p, size_t n)
{
    if (!n)
        return;
    rp_buf_add(&c->body, p, n);
    if (c->kind == RP_HTTP && c->h->on_data)
        c->h->on_data(c, p, n);
}

static void body_end(struct rp_conn *c)
{
    finish(c);
    if (c->kind == RP_WS) {
        if (c->h->on_refused)
            c->h->on_refused(c);
    } else if (c->h->on_end) {
        c->h->on_end(c);
    }
}

/* Takes body bytes from c->in; eof: the server closed. */
static void http_body(struct rp_conn *c, int eof)
{
    if (c->status == 204 || c->status == 304) {
        body_end(c);
        return;
    }
    if (c->resp.chunked) {
        char *out = rp_xmalloc(c->in.len + 1);
        size_t n = 0;
        int rc = lg_http_dechunk(&c->dechunk, c->in.p ? c->in.p : "", c->in.len, out, &n);
        rp_buf_consume(&c->in, c->in.len);
        body_piece(c, out, n);
        free(out);
        if (c->finished)
            return;
        if (rc < 0)
            fail(c, "bad chunked body");
        else if (rc == 1)
            body_end(c);
        else if (eof)
            fail(c, "the server closed the connection inside a chunked body");
        return;
    }
    if (c->resp.content_length >= 0) {
        uint64_t left = (uint64_t)c->resp.content_length - c->body_seen;
        size_t take = c->in.len < left ? c->in.len : (size_t)left;
        c->body_seen += take;
        body_piece(c, c->in.p, take);
        rp_buf_consume(&c->in, take);
        if (c->finished)
            return;
        if (c->body_seen == (uint64_t)c->resp.content_length)
            body_end(c);
        else if (eof)
            fail(c, "the server closed the connection before Content-Length bytes");
        return;
    }
    body_piece(c, c->in.p, c->in.len);
    rp_buf_consume(&c->in, c->in.len);
    if (!c->finished && eof)
        body_end(c);
}

static int read_head(struct rp_conn *c)
{
    const char *detail = "";
    long hl = lg_http_parse_head(c->in.p, c->in.len, &c->resp, &detail);
    if (hl < 0) {
        fail(c, detail);
        return -1;
    }
    if (hl == 0)
        return 0;
    c->head = rp_strndup(c->in.p, (size_t)hl);
    c->head_len = (size_t)hl;
    c->status = c->resp.status;
    c->head_done = 1;
    rp_buf_consume(&c->in, (size_t)hl);
    if (c->kind == RP_WS && c->status == 101) {
        char want[29];
        lg_ws_accept_for_key(c->key, want);
        if (strcmp(want, c->resp.ws_accept) != 0) {
            fail(c, "101 without the right Sec-WebSocket-Accept");
            return -1;
        }
        c->opened = 1;
        if (c->h->on_open)
            c->h->on_open(c);
    } else if (c->kind == RP_HTTP && c->h->on_head) {
        c->h->on_head(c);
    }
    return c->finished ? -1 : 1;
}

/* ---- WebSocket frames */

static void ws_control(struct rp_conn *c, int opcode, const char *p, size_t n)
{
    if (opcode == LG_WS_PING) {
        ws_frame_out(c, LG_WS_PONG, p, n);
    } else if (opcode == LG_WS_CLOSE) {
        int code = 1005;
        char *reason = rp_strdup("");
        if (n >= 2) {
            code = ((uint8_t)p[0] << 8) | (uint8_t)p[1];
            free(reason);
            reason = rp_strndup(p + 2, n - 2);
        }
        if (!c->close_sent) {
            uint8_t echo[2] = {(uint8_t)(code >> 8), (uint8_t)code};
            ws_frame_out(c, LG_WS_CLOSE, echo, code == 1005 ? 0 : 2);
            c->close_sent = 1;
            /* Best effort: the echo goes out before the socket is closed. */
            ssize_t w = write(c->fd, c->out.p, c->out.len);
            (void)w;
        }
        finish(c);
        if (c->h->on_close)
            c->h->on_close(c, code, reason);
        free(reason);
    }
}

static void ws_frames(struct rp_conn *c)
{
    while (!c->finished && c->in.len) {
        struct lg_ws_frame f;
        const char *detail = "";
        int rc = lg_ws_decode_server_header((const uint8_t *)c->in.p, c->in.len, &f, &detail);
        if (rc < 0) {
            fail(c, detail);
            return;
        }
        if (rc == 0 || c->in.len - f.header_len < f.payload_len)
            return;
        const char *p = c->in.p + f.header_len;
        size_t n = (size_t)f.payload_len;
        if (f.opcode >= 0x8) {
            char *copy = rp_strndup(p, n);
            rp_buf_consume(&c->in, f.header_len + n);
            ws_control(c, f.opcode, copy, n);
            free(copy);
            continue;
        }
        if (f.opcode != LG_WS_CONT) {
            c->msg.len = 0;
            c->msg_binary = f.opcode == LG_WS_BINARY;
            c->msg_open = 1;
        }
        rp_buf_add(&c->msg, p, n);
        rp_buf_consume(&c->in, f.header_len + n);
        if (f.fin && c->msg_open) {
            c->msg_open = 0;
            char *whole = rp_strndup(c->msg.p ? c->msg.p : "", c->msg.len);
            size_t len = c->msg.len;
            c->msg.len = 0;
            if (c->h->on_message && !c->close_sent)
                c->h->on_message(c, whole, len, c->msg_binary);
            free(whole);
        }
    }
}

/* ---- the loop */

static void on_readable(struct rp_conn *c)
{
    char buf[65536];
    for (;;) {
        ssize_t r = read(c->fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        int eof = r <= 0;
        if (r > 0)
            rp_buf_add(&c->in, buf, (size_t)r);
        if (!c->head_done) {
            int hr = c->in.len ? read_head(c) : 0;
            if (hr < 0)
                return;
            if (hr == 0) {
                if (eof)
                    fail(c, r < 0 ? strerror(errno) : "the server closed the connection before answering");
                if (eof)
                    return;
                continue;
            }
        }
        if (c->kind == RP_HTTP || !c->opened) {
            http_body(c, eof);
        } else {
            ws_frames(c);
            if (!c->finished && eof) {
                finish(c);
                if (c->h->on_close)
                    c->h->on_close(c, 1006, "");
            }
        }
        if (c->finished || eof)
            return;
    }
}

static void on_writable(struct rp_conn *c)
{
    if (c->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            fail(c, strerror(err));
            return;
        }
        c->connecting = 0;
    }
    while (c->out.len) {
        ssize_t w = send(c->fd, c->out.p, c->out.len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w < 0) {
            fail(c, strerror(errno));
            return;
        }
        rp_buf_consume(&c->out, (size_t)w);
    }
}

void rp_loop_poll(struct rp_loop *loop, int timeout_ms)
{
    size_t n = loop->n;
    struct pollfd *pfd = rp_xmalloc((n ? n : 1) * sizeof *pfd);
    struct rp_conn **who = rp_xmalloc((n ? n : 1) * sizeof *who);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        struct rp_conn *c = loop->c[i];
        if (c->fd < 0)
            continue;
        pfd[m].fd = c->fd;
        pfd[m].events = (short)(c->connecting ? POLLOUT : POLLIN | (c->out.len ? POLLOUT : 0));
        pfd[m].revents = 0;
        who[m++] = c;
    }
    int rc = poll(pfd, m, timeout_ms);
    for (size_t i = 0; rc > 0 && i < m; i++) {
        struct rp_conn *c = who[i];
        if (!pfd[i].revents || c->fd != pfd[i].fd)
            continue;
        if (pfd[i].revents & (POLLOUT | POLLERR | POLLHUP))
            if (c->connecting || c->out.len)
                on_writable(c);
        if (c->fd >= 0 && !c->connecting && (pfd[i].revents & (POLLIN | POLLERR | POLLHUP)))
            on_readable(c);
    }
    free(pfd);
    free(who);
}

void rp_loop_free(struct rp_loop *loop)
{
    while (loop->n)
        rp_conn_free(loop->c[0]);
    free(loop->c);
    loop->c = NULL;
}
