/* tls_head.c - a TLS connection's handshake and request heads: the relay's deadline and answers (see tls_head.h). */
#include "relay/tls_head.h"

#include <netdb.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "relay/clock.h"
#include "relay/config.h"
#include "relay/http_limits.h"
#include "relay/loop.h"

/* The least a record adds to its plaintext in TLS 1.2 and 1.3 with the cipher suites OpenSSL
 * offers (an AEAD tag of 16 bytes, or more: a nonce, a MAC, padding, the inner content type). */
#define TLS_RECORD_MIN_OVERHEAD 16

static void stop(struct tls_head *h)
{
    h->watching = false;
    timer_cancel(&h->deadline);
    timer_cancel(&h->too_large);
}

/* The connection's SSL stops calling us (it may outlive the watch: a served connection). */
static void unhook(struct tls_head *h)
{
    SSL *ssl = lws_get_ssl(h->wsi);
    if (ssl)
        SSL_set_msg_callback(ssl, NULL);
}

static void note(struct tls_head *h, unsigned status, const char *reason)
{
    if (!h->refusals)
        return;
    char peer[64] = "?";
    lws_get_peer_simple(h->wsi, peer, sizeof peer);
    http_refusal_note(h->refusals, peer, status, reason);
}

static void linger_done(struct request_head *rh, bool complete)
{
    (void)complete;
    struct tls_head *h = rh->owner;
    h->close(h, true); /* may free h */
}

static void pause_lws(struct tls_head *h)
{
    if (!h->paused) {
        h->paused = true;
        lws_rx_flow_control(h->wsi, 0);
    }
}

/* Answers status with reason through the SSL object, then TLS close_notify and the linger. */
static void refuse(struct tls_head *h, unsigned status, const char *reason)
{
    stop(h);
    h->answered = true;
    note(h, status, reason);
    pause_lws(h); /* lws must not read on (nor serve a head that ends now) */
    SSL *ssl = lws_get_ssl(h->wsi);
    char answer[512];
    int n = request_head_answer(answer, sizeof answer, status, reason);
    if (ssl) {
        SSL_set_msg_callback(ssl, NULL);
        ERR_clear_error();
        /* Nothing was written on this connection since the handshake: a few hundred bytes fit. */
        if (n > 0 && SSL_write(ssl, answer, n) == n)
            SSL_shutdown(ssl);
        ERR_clear_error();
    }
    request_head_linger_borrowed(&h->linger, h->loop, (int)lws_get_socket_fd(h->wsi), linger_done, h);
}

static void deadline_due(struct timer_entry *e)
{
    struct tls_head *h = list_container_of(e, struct tls_head, deadline);
    SSL *ssl = lws_get_ssl(h->wsi);
    if (ssl && SSL_is_init_finished(ssl) && h->began) {
        refuse(h, 408, REQUEST_HEAD_LATE);
        return;
    }
    /* No handshake in time (counted if it began), or a handshake and then silence (as the plain
     * listener: closed without a word); a kept-alive connection's silence is lws' to end. */
    if (ssl && !SSL_is_init_finished(ssl) && BIO_number_read(SSL_get_rbio(ssl)) > 0)
        note(h, 0, TLS_HEAD_HANDSHAKE_LATE);
    stop(h);
    unhook(h);
    h->close(h, !h->next); /* may free h */
}

/* lws parsed the record that took the head past the limit, and the head did not end in it. */
static void too_large_due(struct timer_entry *e)
{
    struct tls_head *h = list_container_of(e, struct tls_head, too_large);
    if (http_limits_target_length(h->wsi) > h->loop->cfg->max_request_line_bytes)
        refuse(h, 414, REQUEST_HEAD_LINE_TOO_LONG);
    else
        refuse(h, 431, REQUEST_HEAD_TOO_LARGE);
}

/* OpenSSL's message callback: for every record read, its 5-byte header before its body. Inside
 * lws' SSL_read: only lws_rx_flow_control (a change of the socket's events) is called here. */
static void on_record(int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl, void *arg)
{
    (void)version;
    if (write_p || content_type != SSL3_RT_HEADER || len < 5 || !SSL_is_init_finished(ssl))
        return;
    struct tls_head *h = arg;
    if (!h->watching)
        return;
    const unsigned char *p = buf;
    size_t record = ((size_t)p[3] << 8) | p[4];
    size_t plain = record > TLS_RECORD_MIN_OVERHEAD ? record - TLS_RECORD_MIN_OVERHEAD : 0;
    if (!h->began && h->next) /* lws attached its header table for this head just now, with its timeout */
        lws_set_timeout(h->wsi, PENDING_TIMEOUT_HOLDING_AH, (int)h->lws_timeout_s);
    h->began = true;
    h->app_bytes += plain;
    if (h->app_bytes > h->limit && !h->paused) {
        /* lws parses this record (its buffer has room) and reads nothing more; if the head does not
         * end in it, too_large_due answers it. */
        pause_lws(h);
        loop_timer_schedule(h->loop, &h->too_large, clock_now_ms());
    }
}

static void start(struct tls_head *h, struct loop *loop, struct lws *wsi, size_t limit, uint64_t timeout_ms,
                  unsigned lws_timeout_s, struct http_refusals *refusals, tls_head_close_cb close)
{
    memset(h, 0, sizeof *h);
    h->lws_timeout_s = lws_timeout_s;
    h->loop = loop;
    h->wsi = wsi;
    h->limit = limit;
    h->refusals = refusals;
    h->close = close;
    h->watching = true;
    timer_entry_init(&h->deadline, deadline_due);
    timer_entry_init(&h->too_large, too_large_due);
    loop_timer_schedule(loop, &h->deadline, clock_now_ms() + timeout_ms);
    SSL *ssl = lws_get_ssl(wsi);
    if (ssl) {
        SSL_set_msg_callback(ssl, on_record);
        SSL_set_msg_callback_arg(ssl, h);
    }
}

void tls_head_start(struct tls_head *h, struct loop *loop, struct lws *wsi, size_t limit, uint64_t timeout_ms,
                    unsigned lws_timeout_s, struct http_refusals *refusals, tls_head_close_cb close)
{
    start(h, loop, wsi, limit, timeout_ms, lws_timeout_s, refusals, close);
    /* lws gave the connection its header-table timeout (--header-timeout in whole seconds), which
     * would race the relay's deadline: its backstop comes later. */
    lws_set_timeout(wsi, PENDING_TIMEOUT_SSL_ACCEPT, (int)lws_timeout_s);
}

void tls_head_start_next(struct tls_head *h, struct loop *loop, struct lws *wsi, size_t limit, uint64_t timeout_ms,
                         unsigned lws_timeout_s, struct http_refusals *refusals, tls_head_close_cb close)
{
    start(h, loop, wsi, limit, timeout_ms, lws_timeout_s, refusals, close);
    h->next = true;
}

void tls_head_served(struct tls_head *h)
{
    if (!h->watching)
        return;
    stop(h);
    unhook(h);
    if (h->paused) {
        h->paused = false;
        lws_rx_flow_control(h->wsi, 1);
    }
}

void tls_head_forget(struct tls_head *h)
{
    if (h->watching)
        stop(h);
    if (h->answered)
        request_head_forget(&h->linger);
    h->answered = false;
}
