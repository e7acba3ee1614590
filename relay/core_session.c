/* core_session.c - a Core client WebSocket proxied to its backend link (see core_session.h). */
#include "relay/core_session.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/backend.h"
#include "relay/clock.h"
#include "protocol/core_json.h"
#include "protocol/core_msgpack.h"
#include "relay/core_negotiate.h"
#include "protocol/core_peek.h"
#include "relay/http.h"
#include "relay/log.h"
#include "protocol/negotiate.h"
#include "relay/relay.h"

#define HANDSHAKE_MAX_BYTES (32u << 10) /* as the server: 32 KB without an RS cancels it */

static const char json_ping[] = "{\"type\":6}\x1e";
static const char msgpack_ping[] = "\x02\x91\x06";

static void backend_opened(void *owner);
static void backend_message(void *owner, struct wsmsg *msg);
static void backend_closed(void *owner, const char *why);
static void backend_drained(void *owner);

static const struct backend_link_ops link_ops = {
    backend_opened, backend_message, backend_closed, backend_drained,
};

static bool is_binary(const struct core_session *s)
{
    return s->protocol == HUB_PROTOCOL_MSGPACK;
}

/* ------------------------------------------------------------- to client */

static void queue_to_client(struct core_session *s, struct wsmsg *m)
{
    s->last_sent_ms = clock_now_ms();
    wsmsg_send(s->wsi, &s->to_client, m);
    if (!s->backend_paused && s->backend && s->to_client.bytes > s->relay->loop.cfg->max_buffered_bytes) {
        s->backend_paused = true;
        s->relay->loop.stats.flow_control_pauses++;
        backend_link_pause_reading(s->backend, true);
    }
}

static void send_bytes_to_client(struct core_session *s, const char *data, size_t len, bool binary)
{
    struct wsmsg *m = wsmsg_copy(data, len, binary);
    if (m)
        queue_to_client(s, m);
}

/* Stops forwarding, lets queued messages out, then closes with 1000. */
static void close_after_flush(struct core_session *s)
{
    if (s->state == CORE_CLOSING)
        return;
    s->state = CORE_CLOSING;
    timer_cancel(&s->keepalive_timer);
    timer_cancel(&s->timeout_timer);
    if (s->backend) {
        backend_link_close(s->backend);
        s->backend = NULL;
    }
    if (s->negotiating) {
        backend_negotiate_cancel(s->negotiating);
        s->negotiating = NULL;
    }
    if (s->client_paused && s->wsi)
        lws_rx_flow_control(s->wsi, 1);
    if (s->wsi)
        lws_callback_on_writable(s->wsi);
}

/* The handshake response a server gives when it refuses: {"error":"..."} + RS. */
static void fail_handshake(struct core_session *s, const char *text)
{
    struct buf out;
    buf_init(&out);
    if (handshake_encode_response(span_from_cstr(text), &out, NULL) == PROTO_OK)
        send_bytes_to_client(s, out.data, out.len, s->state == CORE_OPEN && is_binary(s));
    buf_free(&out);
    s->handshake_answered = true;
    log_info("session %s: handshake refused: %s", s->connection_id, text);
    close_after_flush(s);
}

/* A Close message in the client's protocol, then the socket closes. */
static void close_with_error(struct core_session *s, const char *error, bool allow_reconnect)
{
    struct hub_msg close;
    hub_msg_init(&close);
    close.kind = HUB_MSG_CLOSE;
    close.error = span_from_cstr(error);
    close.allow_reconnect = allow_reconnect;
    struct buf out;
    buf_init(&out);
    enum proto_status st = is_binary(s) ? core_msgpack_encode(&close, &out, NULL)
                                        : core_json_encode(&close, &out, NULL);
    if (st == PROTO_OK)
        send_bytes_to_client(s, out.data, out.len, is_binary(s));
    buf_free(&out);
    close_after_flush(s);
}

/* The backend is gone; tell the client in the only way its state allows. */
static void report_backend_loss(struct core_session *s, const char *what)
{
    char text[400];
    if (!s->handshake_answered) {
        snprintf(text, sizeof text, "The relay could not connect to the backend hub '%s': %s", s->hub->name, what);
        if (s->state == CORE_AWAIT_HANDSHAKE) {
            /* A server only ever answers a handshake: an answer sent before the
             * client's request breaks clients (the JS client fails start() with
             * "stopConnection ... still in the connecting state"). Keep the text
             * for when the request arrives, or the handshake timeout fires. */
            free(s->backend_failure);
            s->backend_failure = strdup(text);
            if (s->backend_failure)
                return;
        }
        fail_handshake(s, text);
        return;
    }
    snprintf(text, sizeof text, "Connection closed with an error. The relay lost its connection to the backend hub '%s'.",
             s->hub->name);
    close_with_error(s, text, true);
}

/* ---------------------------------------------------------------- timers */

static uint32_t random_u32(void)
{
    uint32_t r = 0;
    RAND_bytes((unsigned char *)&r, sizeof r);
    return r;
}

static void arm_keepalive(struct core_session *s, uint64_t from)
{
    loop_timer_schedule(&s->relay->loop, &s->keepalive_timer, from + s->relay->loop.cfg->keepalive_ms);
}

static void keepalive_due(struct timer_entry *e)
{
    struct core_session *s = list_container_of(e, struct core_session, keepalive_timer);
    uint64_t now = clock_now_ms();
    if (s->state != CORE_OPEN)
        return;
    if (now - s->last_sent_ms >= s->relay->loop.cfg->keepalive_ms) {
        if (is_binary(s))
            send_bytes_to_client(s, msgpack_ping, sizeof msgpack_ping - 1, true);
        else
            send_bytes_to_client(s, json_ping, sizeof json_ping - 1, false);
    }
    arm_keepalive(s, s->last_sent_ms);
}

static void timeout_due(struct timer_entry *e)
{
    struct core_session *s = list_container_of(e, struct core_session, timeout_timer);
    uint64_t now = clock_now_ms();
    if (s->state == CORE_AWAIT_HANDSHAKE) {
        fail_handshake(s, s->backend_failure ? s->backend_failure : HANDSHAKE_TEXT_CANCELED);
        return;
    }
    if (s->state != CORE_OPEN)
        return;
    uint64_t deadline = s->last_received_ms + s->relay->loop.cfg->client_timeout_ms;
    if (now < deadline) {
        loop_timer_schedule(&s->relay->loop, &s->timeout_timer, deadline);
        return;
    }
    log_info("session %s: client silent for %u ms, closing", s->connection_id, s->relay->loop.cfg->client_timeout_ms);
    close_with_error(s, "Connection closed with an error.", true);
}

/* --------------------------------------------------------------- backend */

static void open_backend_link(struct core_session *s)
{
    struct backend_params params = { s->hub, s->query, &s->headers, s->forwarded_for };
    s->backend = backend_link_open(s->relay, &params, s->backend_token, &link_ops, s);
    /* The link keeps its own copies: an idle session holds none of this. */
    header_list_free(&s->headers);
    free(s->query);
    s->query = NULL;
    free(s->forwarded_for);
    s->forwarded_for = NULL;
    free(s->backend_token);
    s->backend_token = NULL;
    if (!s->backend) {
        report_backend_loss(s, "the WebSocket connection could not be started");
        return;
    }
    struct wsmsg *m;
    while ((m = msg_queue_pop(&s->early)) != NULL)
        backend_link_send(s->backend, m);
}

static void skip_negotiation_done(void *owner, unsigned status, const char *body, size_t len, const char *error)
{
    struct core_session *s = owner;
    s->negotiating = NULL;
    char why[300];
    struct negotiate_response resp;
    if (status != 200) {
        if (status)
            snprintf(why, sizeof why, "negotiate answered HTTP %u", status);
        else
            snprintf(why, sizeof why, "%s", error ? error : "unreachable");
        s->relay->loop.stats.backend_failures++;
        report_backend_loss(s, why);
        return;
    }
    if (negotiate_decode_response(body, len, &resp, NULL) != PROTO_OK || span_is_set(resp.error) ||
        span_is_set(resp.url)) {
        negotiate_response_release(&resp);
        report_backend_loss(s, "its negotiate answer could not be used");
        return;
    }
    struct span token = resp.version > 0 ? resp.connection_token : resp.connection_id;
    s->backend_token = strndup(token.ptr, token.len);
    snprintf(s->connection_id, sizeof s->connection_id, "%.*s", (int)resp.connection_id.len, resp.connection_id.ptr);
    negotiate_response_release(&resp);
    if (!s->backend_token) {
        report_backend_loss(s, "out of memory");
        return;
    }
    open_backend_link(s);
}

static void backend_opened(void *owner)
{
    struct core_session *s = owner;
    log_debug("session %s: backend link open", s->connection_id);
}

/* Notes what the relay must know about backend traffic: its handshake
 * answer and any Close message. */
static void inspect_backend_message(struct core_session *s, const struct wsmsg *m)
{
    const char *data = (const char *)m->payload;
    size_t len = m->len;
    if (!s->handshake_answered) {
        /* The first record is the handshake response, always JSON + RS. */
        const char *rs = memchr(data, 0x1e, len);
        s->handshake_answered = true;
        if (len > 9 && memcmp(data, "{\"error\"", 8) == 0)
            s->backend_sent_close = true; /* the backend refused the handshake and will close */
        else
            arm_keepalive(s, clock_now_ms());
        if (!rs)
            return;
        len -= (size_t)(rs + 1 - data);
        data = rs + 1;
    }
    unsigned kinds = 0;
    if (len > 0 && core_peek_kinds(is_binary(s), data, len, &kinds, NULL) == PROTO_OK &&
        (kinds & CORE_KIND_BIT(HUB_MSG_CLOSE)))
        s->backend_sent_close = true;
}

static void backend_message(void *owner, struct wsmsg *msg)
{
    struct core_session *s = owner;
    if (s->state == CORE_CLOSING) {
        wsmsg_free(msg);
        return;
    }
    inspect_backend_message(s, msg);
    queue_to_client(s, msg);
}

static void backend_closed(void *owner, const char *why)
{
    struct core_session *s = owner;
    s->backend = NULL;
    if (s->state == CORE_CLOSING)
        return;
    if (s->backend_sent_close) {
        close_after_flush(s);
        return;
    }
    log_info("session %s: backend link lost: %s", s->connection_id, why ? why : "closed by the backend");
    report_backend_loss(s, why ? why : "the backend closed the connection");
}

static void backend_drained(void *owner)
{
    struct core_session *s = owner;
    if (s->client_paused && s->wsi) {
        s->client_paused = false;
        lws_rx_flow_control(s->wsi, 1);
    }
}

/* ---------------------------------------------------------------- client */

static void forward_to_backend(struct core_session *s, struct wsmsg *m)
{
    size_t queued;
    if (s->backend) {
        backend_link_send(s->backend, m);
        queued = backend_link_queued(s->backend);
    } else {
        msg_queue_push(&s->early, m);
        queued = s->early.bytes;
    }
    if (!s->client_paused && queued > s->relay->loop.cfg->max_buffered_bytes) {
        s->client_paused = true;
        s->relay->loop.stats.flow_control_pauses++;
        lws_rx_flow_control(s->wsi, 0);
    }
}

/* The first Ping from the client arms its timeout, as the ASP.NET Core server does. */
static void watch_for_first_ping(struct core_session *s, const char *data, size_t len)
{
    unsigned kinds = 0;
    if (len == 0 || core_peek_kinds(is_binary(s), data, len, &kinds, NULL) != PROTO_OK ||
        !(kinds & CORE_KIND_BIT(HUB_MSG_PING)))
        return;
    s->client_pinged = true;
    loop_timer_schedule(&s->relay->loop, &s->timeout_timer, s->last_received_ms + s->relay->loop.cfg->client_timeout_ms);
}

/* Collects handshake bytes; once the record is whole, checks it and forwards
 * everything received so far to the backend, which answers the handshake. */
static void handle_handshake_bytes(struct core_session *s, struct wsmsg *m)
{
    if (!buf_append(&s->handshake, m->payload, m->len)) {
        wsmsg_free(m);
        fail_handshake(s, HANDSHAKE_TEXT_UNEXPECTED);
        return;
    }
    wsmsg_free(m);
    struct span record;
    size_t consumed;
    enum proto_status st = core_text_next_record(s->handshake.data, s->handshake.len, HANDSHAKE_MAX_BYTES,
                                                 &record, &consumed, NULL);
    if (st == PROTO_INCOMPLETE)
        return;
    if (st != PROTO_OK) {
        fail_handshake(s, HANDSHAKE_TEXT_CANCELED);
        return;
    }
    struct handshake_request req;
    struct buf text;
    buf_init(&text);
    st = handshake_decode_request(record.ptr, record.len, &req, NULL);
    if (st != PROTO_OK) {
        fail_handshake(s, HANDSHAKE_TEXT_UNEXPECTED);
    } else if (!hub_protocol_from_name(req.protocol, &s->protocol)) {
        handshake_text_protocol_unsupported(&text, req.protocol);
        buf_append_byte(&text, '\0');
        fail_handshake(s, text.data);
    } else if (!hub_protocol_version_supported(s->protocol, req.version)) {
        handshake_text_version_unsupported(&text, req.protocol, req.version);
        buf_append_byte(&text, '\0');
        fail_handshake(s, text.data);
    } else if (s->backend_failure) {
        fail_handshake(s, s->backend_failure);
    } else {
        s->state = CORE_OPEN;
        s->relay->loop.stats.sessions_opened++;
        timer_cancel(&s->timeout_timer);
        watch_for_first_ping(s, s->handshake.data + consumed, s->handshake.len - consumed);
        struct wsmsg *all = wsmsg_copy(s->handshake.data, s->handshake.len, false);
        buf_free(&s->handshake);
        if (all)
            forward_to_backend(s, all);
    }
    if (st == PROTO_OK)
        handshake_request_release(&req);
    buf_free(&text);
}

static void handle_client_message(struct core_session *s, struct wsmsg *m)
{
    switch (s->state) {
    case CORE_AWAIT_HANDSHAKE:
        handle_handshake_bytes(s, m);
        return;
    case CORE_OPEN:
        if (!s->client_pinged)
            watch_for_first_ping(s, (const char *)m->payload, m->len);
        forward_to_backend(s, m);
        return;
    case CORE_CLOSING:
        wsmsg_free(m);
        return;
    }
}

int core_session_receive(struct core_session *s, const void *in, size_t len)
{
    s->last_received_ms = clock_now_ms();
    struct wsmsg *whole;
    switch (wsmsg_receive(&s->rx_partial, s->wsi, in, len, s->relay->loop.cfg->max_message_bytes, &whole)) {
    case WSMSG_RX_PARTIAL:
        return 0;
    case WSMSG_RX_NOMEM:
        return -1;
    case WSMSG_RX_TOO_LARGE:
        s->relay->loop.stats.protocol_errors++;
        log_warn("session %s: client message over --max-message-size (%zu bytes); closing", s->connection_id,
                 s->relay->loop.cfg->max_message_bytes);
        /* allowReconnect as ASP.NET Core sends it when a message exceeds its own limit. */
        if (s->state == CORE_OPEN)
            close_with_error(s, "Connection closed with an error. The message exceeded the relay's maximum message size.", true);
        else
            fail_handshake(s, HANDSHAKE_TEXT_CANCELED);
        return 0;
    case WSMSG_RX_WHOLE:
        break;
    }
    handle_client_message(s, whole);
    return 0;
}

int core_session_writeable(struct core_session *s)
{
    if (!wsmsg_flush(s->wsi, &s->to_client))
        return -1;
    if (s->backend_paused && s->backend && s->to_client.bytes <= s->relay->loop.cfg->max_buffered_bytes / 2) {
        s->backend_paused = false;
        backend_link_pause_reading(s->backend, false);
    }
    if (s->state == CORE_CLOSING && msg_queue_is_empty(&s->to_client) && !lws_partial_buffered(s->wsi)) {
        lws_close_reason(s->wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- lifecycle */

struct core_session *core_session_create(struct relay *relay, struct lws *wsi, const struct hub_route *hub,
                                         struct negotiation *negotiation)
{
    struct core_session *s = calloc(1, sizeof *s);
    struct buf query;
    buf_init(&query);
    static const char *const not_forwarded[] = { "id" };
    char forwarded_for[400];
    http_forwarded_for(wsi, forwarded_for, sizeof forwarded_for);
    if (!s || !http_query_forward(wsi, &query, not_forwarded, 1) || !buf_append_byte(&query, '\0') ||
        !(s->forwarded_for = strdup(forwarded_for))) {
        free(s);
        buf_free(&query);
        return NULL;
    }
    s->role = WSI_ROLE_CORE_SESSION;
    s->relay = relay;
    s->wsi = wsi;
    s->hub = hub;
    s->state = CORE_AWAIT_HANDSHAKE;
    s->protocol = HUB_PROTOCOL_JSON;
    s->query = query.data; /* ownership moves from the buf */
    header_list_capture(&s->headers, wsi);
    buf_init(&s->handshake);
    msg_queue_init(&s->early);
    msg_queue_init(&s->to_client);
    timer_entry_init(&s->keepalive_timer, keepalive_due);
    timer_entry_init(&s->timeout_timer, timeout_due);
    snprintf(s->connection_id, sizeof s->connection_id, "-");
    if (negotiation) {
        s->backend_token = negotiation->backend_token;
        negotiation->backend_token = NULL;
        snprintf(s->connection_id, sizeof s->connection_id, "%s", negotiation->backend_connection_id);
        core_negotiation_free(negotiation);
    }
    list_push_back(&relay->sessions, &s->link);
    relay->loop.stats.sessions_active++;
    return s;
}

void core_session_established(struct core_session *s)
{
    uint64_t now = clock_now_ms();
    s->last_received_ms = now;
    s->last_sent_ms = now;
    loop_timer_schedule(&s->relay->loop, &s->timeout_timer, now + s->relay->loop.cfg->handshake_timeout_ms);
    /* Spread keepalives: the first one comes up to 10% early. */
    s->last_sent_ms = now - (s->relay->loop.cfg->keepalive_ms - timer_jitter(s->relay->loop.cfg->keepalive_ms, random_u32(), 10));
    if (s->backend_token) {
        open_backend_link(s);
        return;
    }
    struct backend_params params = { s->hub, s->query, &s->headers, s->forwarded_for };
    s->negotiating = backend_negotiate_start(s->relay, &params, skip_negotiation_done, s);
    if (!s->negotiating)
        report_backend_loss(s, "negotiate could not be started");
}

void core_session_destroy(struct core_session *s)
{
    timer_cancel(&s->keepalive_timer);
    timer_cancel(&s->timeout_timer);
    if (s->backend)
        backend_link_close(s->backend);
    if (s->negotiating)
        backend_negotiate_cancel(s->negotiating);
    msg_queue_clear(&s->early);
    msg_queue_clear(&s->to_client);
    wsmsg_free(s->rx_partial);
    buf_free(&s->handshake);
    list_unlink(&s->link);
    s->relay->loop.stats.sessions_active--;
    s->relay->loop.stats.sessions_closed++;
    free(s->backend_token);
    free(s->backend_failure);
    free(s->query);
    free(s->forwarded_for);
    header_list_free(&s->headers);
    free(s);
}

void core_session_shutdown(struct core_session *s)
{
    if (s->state == CORE_OPEN && s->handshake_answered)
        close_with_error(s, "Connection closed with an error. The relay is shutting down.", true);
    else
        close_after_flush(s);
}
