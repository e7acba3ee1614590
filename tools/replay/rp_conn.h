/* rp_conn.h - the client connections of a replay and the poll loop that drives them: one TCP
 * connection per HTTP request (Connection: close, the body handed up as it arrives: an event
 * stream is compared while it is open), and WebSocket clients (the opening handshake, masked
 * frames, fragments, ping/pong, the closing handshake). The wire formats are the load
 * generator's (tests/bench/loadgen: lg_http, lg_ws, loadgen_wire); this is the loop around them.
 * Single-threaded; a connection is owned by whoever opened it and freed with rp_conn_free. */
#ifndef RP_CONN_H
#define RP_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "lg_http.h"
#include "rp_text.h"

struct rp_conn;

struct rp_conn_handler {
    /* HTTP: the head came (status, headers in c->head). */
    void (*on_head)(struct rp_conn *c);
    /* HTTP: more of the (de-chunked) body. */
    void (*on_data)(struct rp_conn *c, const char *p, size_t n);
    /* HTTP: the response ended; the whole body is c->body. */
    void (*on_end)(struct rp_conn *c);
    /* WebSocket: 101 and a valid Sec-WebSocket-Accept. */
    void (*on_open)(struct rp_conn *c);
    /* WebSocket: the upgrade was answered otherwise; c->status, c->body. */
    void (*on_refused)(struct rp_conn *c);
    /* WebSocket: a whole text (binary = 0) or binary message. */
    void (*on_message)(struct rp_conn *c, const char *p, size_t n, int binary);
    /* WebSocket: the server's close frame (code 1005 without a code), or 1006 when TCP ended
     * without one. */
    void (*on_close)(struct rp_conn *c, int code, const char *reason);
    /* Anything else that ends the connection (connect refused, reset, bad framing). */
    void (*on_error)(struct rp_conn *c, const char *why);
};

enum rp_conn_kind { RP_HTTP, RP_WS };

struct rp_conn {
    int fd;                   /* -1 once finished */
    int kind;
    int connecting;
    int head_done;
    int opened;               /* WebSocket: 101 accepted */
    int finished;             /* no more callbacks */
    int close_sent;
    int status;
    char *head;               /* the response head (NUL-terminated), after head_done */
    size_t head_len;
    struct lg_http_resp resp;
    struct lg_dechunk dechunk;
    uint64_t body_seen;       /* raw body bytes (Content-Length) */
    struct rp_buf out, in, body, msg;
    int msg_binary;
    int msg_open;
    char key[25];
    const struct rp_conn_handler *h;
    void *ctx;                /* the owner's */
    intptr_t tag;             /* the owner's */
    struct rp_loop *loop;
    size_t slot;
};

struct rp_loop {
    struct rp_conn **c;
    size_t n, cap;
};

/* An HTTP request to the target: `request` is the whole request text after the request line's
 * fields are formatted (the caller writes method, path, headers; Host and Connection: close are
 * added here) - see rp_conn_http. NULL when the socket cannot be created (errno). */
struct rp_conn *rp_conn_http(struct rp_loop *loop, const struct lg_url *target, const char *method,
                             const char *path_query, const char *headers, const char *body, size_t body_len,
                             const struct rp_conn_handler *h, void *ctx, intptr_t tag);
/* A WebSocket upgrade of path_query; headers: extra header lines ("Name: value\r\n"...). */
struct rp_conn *rp_conn_ws(struct rp_loop *loop, const struct lg_url *target, const char *path_query,
                           const char *headers, const struct rp_conn_handler *h, void *ctx, intptr_t tag);
/* Sends a text (opcode 1) or binary (2) message. */
void rp_ws_send(struct rp_conn *c, int opcode, const void *p, size_t n);
/* The client's close: 1006 drops TCP at once (finished, no callback), 1005 sends a close frame
 * without a code, any other code with it and the reason. */
void rp_ws_close(struct rp_conn *c, int code, const char *reason);
/* Ends the connection now (no more callbacks). */
void rp_conn_abort(struct rp_conn *c);
void rp_conn_free(struct rp_conn *c);

/* Waits up to timeout_ms for I/O on the loop's connections and handles it. */
void rp_loop_poll(struct rp_loop *loop, int timeout_ms);
void rp_loop_free(struct rp_loop *loop);

/* Milliseconds / microseconds on CLOCK_MONOTONIC. */
int64_t rp_now_ms(void);
int64_t rp_now_us(void);

#endif
