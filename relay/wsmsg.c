/* wsmsg.c - whole WebSocket messages: receiving, queueing and writing them (see wsmsg.h). */
#include "relay/wsmsg.h"

#include "containers/span.h"

#include <libwebsockets.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "relay/capture.h"
#include "relay/log.h"

struct wsmsg *wsmsg_new(size_t cap, bool binary)
{
    if (cap > SIZE_MAX - sizeof(struct wsmsg) - LWS_PRE)
        return NULL;
    struct wsmsg *m = malloc(sizeof *m + LWS_PRE + cap);
    if (!m)
        return NULL;
    list_init_node(&m->link);
    m->len = 0;
    m->cap = cap;
    m->binary = binary;
    m->hub_kinds = 0;
    m->payload = m->storage + LWS_PRE;
    return m;
}

struct wsmsg *wsmsg_append(struct wsmsg *m, const void *data, size_t len)
{
    if (len > m->cap - m->len) {
        size_t cap = m->cap ? m->cap : 256;
        while (cap - m->len < len) {
            if (cap > SIZE_MAX / 2)
                return NULL;
            cap *= 2;
        }
        struct wsmsg *grown = realloc(m, sizeof *m + LWS_PRE + cap);
        if (!grown)
            return NULL;
        m = grown;
        m->cap = cap;
        m->payload = m->storage + LWS_PRE;
    }
    memcpy(m->payload + m->len, data, len);
    m->len += len;
    return m;
}

struct wsmsg *wsmsg_copy(const void *data, size_t len, bool binary)
{
    struct wsmsg *m = wsmsg_new(len, binary);
    if (m) {
        memcpy(m->payload, data, len);
        m->len = len;
    }
    return m;
}

void wsmsg_free(struct wsmsg *m)
{
    free(m);
}

void msg_queue_init(struct msg_queue *q)
{
    list_init_head(&q->head);
    q->bytes = 0;
    q->count = 0;
}

void msg_queue_push(struct msg_queue *q, struct wsmsg *m)
{
    list_push_back(&q->head, &m->link);
    q->bytes += m->len;
    q->count++;
}

struct wsmsg *msg_queue_pop(struct msg_queue *q)
{
    if (list_is_empty(&q->head))
        return NULL;
    struct wsmsg *m = list_container_of(q->head.next, struct wsmsg, link);
    list_unlink(&m->link);
    q->bytes -= m->len;
    q->count--;
    return m;
}

void msg_queue_clear(struct msg_queue *q)
{
    struct wsmsg *m;
    while ((m = msg_queue_pop(q)) != NULL)
        wsmsg_free(m);
}

static bool write_one(struct lws *wsi, struct wsmsg *m)
{
    capture_ws_frame(wsi, false, m->payload, m->len, m->binary);
    int n = lws_write(wsi, m->payload, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
    wsmsg_free(m);
    return n >= 0;
}

bool wsmsg_send(struct lws *wsi, struct msg_queue *q, struct wsmsg *m)
{
    if (msg_queue_is_empty(q) && !lws_partial_buffered(wsi)) {
        if (write_one(wsi, m))
            return true;
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        return false;
    }
    msg_queue_push(q, m);
    lws_callback_on_writable(wsi);
    return true;
}

bool wsmsg_send_borrowed(struct lws *wsi, struct msg_queue *q, unsigned char *data, size_t len, bool binary,
                         bool *nomem)
{
    *nomem = false;
    if (msg_queue_is_empty(q) && !lws_partial_buffered(wsi)) {
        capture_ws_frame(wsi, false, data, len, binary);
        if (lws_write(wsi, data, len, binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT) >= 0)
            return true;
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        return false;
    }
    struct wsmsg *m = wsmsg_copy(data, len, binary);
    if (!m) {
        *nomem = true;
        return false;
    }
    msg_queue_push(q, m);
    lws_callback_on_writable(wsi);
    return true;
}

bool wsmsg_flush(struct lws *wsi, struct msg_queue *q)
{
    struct wsmsg *m;
    while (!lws_partial_buffered(wsi) && (m = msg_queue_pop(q)) != NULL)
        if (!write_one(wsi, m))
            return false;
    if (!msg_queue_is_empty(q))
        lws_callback_on_writable(wsi);
    return true;
}

struct wsmsg *wsmsg_receive(struct wsmsg **partial, struct lws *wsi, const void *in, size_t len, struct loop *loop,
                            size_t limit, const char *who, enum wsmsg_fault *fault)
{
    *fault = WSMSG_MORE;
    if (!*partial) {
        size_t expect = len + lws_remaining_packet_payload(wsi);
        *partial = wsmsg_new(expect < limit ? expect : limit, lws_frame_is_binary(wsi));
        if (!*partial)
            goto nomem;
    }
    if ((*partial)->len + len > limit) {
        wsmsg_free(*partial);
        *partial = NULL;
        loop->stats.protocol_errors++;
        log_limited(&loop->too_large_log, LOG_WARN, "%s: a message over the size limit (%zu bytes); closing", who, limit);
        *fault = WSMSG_TOO_LARGE;
        return NULL;
    }
    struct wsmsg *grown = wsmsg_append(*partial, in, len);
    if (!grown)
        goto nomem;
    *partial = grown;
    if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0)
        return NULL;
    struct wsmsg *whole = *partial;
    *partial = NULL;
    if (!whole->binary && !utf8_is_valid((const char *)whole->payload, whole->len)) {
        wsmsg_free(whole);
        loop->stats.protocol_errors++;
        log_warn("%s: a text message that is not valid UTF-8; closing", who);
        *fault = WSMSG_BAD_UTF8;
        return NULL;
    }
    capture_ws_frame(wsi, true, whole->payload, whole->len, whole->binary);
    return whole;
nomem:
    wsmsg_free(*partial);
    *partial = NULL;
    loop->stats.out_of_memory_closes++;
    log_warn("%s: out of memory for a message (%zu bytes so far); closing", who, len);
    *fault = WSMSG_NOMEM;
    return NULL;
}

/* lws' own write type for a Close frame: lws 4.1.6 keeps it out of its public headers
 * (lib/roles/ws/private-lib-roles-ws.h: LWS_WRITE_CLOSE 4) and writes a Close only on its way to
 * closing the descriptor, which is what the lingering close must not do. */
#define WSMSG_LWS_WRITE_CLOSE ((enum lws_write_protocol)4)

/* Writes a Close frame (code, then the reason when there is one); false when the write failed. */
static bool write_close(struct lws *wsi, enum lws_close_status code, const char *reason)
{
    unsigned char frame[LWS_PRE + 2 + 123]; /* a control frame's payload is at most 125 bytes */
    size_t len = reason ? strlen(reason) : 0;
    if (len > sizeof frame - LWS_PRE - 2)
        len = sizeof frame - LWS_PRE - 2;
    frame[LWS_PRE] = (unsigned char)(code >> 8);
    frame[LWS_PRE + 1] = (unsigned char)(code & 0xff);
    if (len)
        memcpy(frame + LWS_PRE + 2, reason, len);
    capture_ws_server_close(wsi, code, reason);
    return lws_write(wsi, frame + LWS_PRE, 2 + len, WSMSG_LWS_WRITE_CLOSE) >= 0;
}

static const char invalid_payload_reason[] = "invalid UTF-8 in a text message";

int wsmsg_close_lingering(struct lws *wsi, enum wsmsg_close_state *state)
{
    if (*state == WSMSG_CLOSE_NONE || *state == WSMSG_CLOSE_INVALID) {
        if (lws_partial_buffered(wsi)) {
            lws_callback_on_writable(wsi); /* the rest of an earlier frame first */
            return 0;
        }
        bool invalid = *state == WSMSG_CLOSE_INVALID;
        if (!write_close(wsi, invalid ? LWS_CLOSE_STATUS_INVALID_PAYLOAD : LWS_CLOSE_STATUS_NORMAL,
                         invalid ? invalid_payload_reason : NULL))
            return -1;
        *state = WSMSG_CLOSE_SENT;
    }
    if (*state == WSMSG_CLOSE_SENT) {
        if (lws_partial_buffered(wsi)) {
            lws_callback_on_writable(wsi); /* lws writes the rest first, then calls back */
            return 0;
        }
        /* Only the write side: the kernel still delivers what it holds, then sends a FIN. A
         * failure (the client already went) leaves the rest to lws' read of the socket. */
        (void)shutdown(lws_get_socket_fd(wsi), SHUT_WR);
        *state = WSMSG_CLOSE_LINGERING;
        struct loop *loop = loop_of_wsi(wsi);
        if (loop->linger_read) /* read to its end by the relay, no frame answered (relay/linger.h) */
            loop->linger_read(loop->linger_read_ctx, wsi);
    }
    return 0;
}

void wsmsg_close_invalid_payload(struct lws *wsi, struct msg_queue *q, enum wsmsg_close_state *state)
{
    msg_queue_clear(q);
    if (*state == WSMSG_CLOSE_NONE)
        *state = WSMSG_CLOSE_INVALID;
    lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, RELAY_CLOSE_TIMEOUT_MS / 1000);
    lws_callback_on_writable(wsi);
}

void wsmsg_pause_reading(struct lws *wsi, bool *paused, struct loop *loop)
{
    if (*paused || !wsi)
        return;
    *paused = true;
    loop->stats.flow_control_pauses++;
    lws_rx_flow_control(wsi, 0);
}

void wsmsg_resume_reading(struct lws *wsi, bool *paused)
{
    if (!*paused)
        return;
    *paused = false;
    if (wsi)
        lws_rx_flow_control(wsi, 1);
}
