/* core_session.c - a Core client WebSocket connected to its hub through a hub channel (see core_session.h). */
#include "relay/core_session.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/core_json.h"
#include "protocol/core_msgpack.h"
#include "protocol/core_peek.h"
#include "relay/clock.h"
#include "relay/clock32.h"
#include "relay/core_negotiate.h"
#include "relay/http.h"
#include "relay/log.h"

#define HANDSHAKE_MAX_BYTES (32u << 10) /* as the server: 32 KB without an RS cancels it */

static const struct hub_channel_ops core_channel_ops;

static bool is_binary(const struct core_session *s)
{
    return s->protocol == HUB_PROTOCOL_MSGPACK;
}

static void pending_free(struct core_session *s)
{
    struct core_pending *p = s->pending;
    if (!p)
        return;
    hub_client_copy_free(p->client);
    buf_free(&p->handshake);
    buf_free(&p->early);
    free(p->hub_failure);
    free(p);
    s->pending = NULL;
}

/* ------------------------------------------------------------- to client */

static void close_after_flush(struct core_session *s);
static void core_session_rearm(struct core_session *s);

void core_session_flow(struct core_session *s)
{
    size_t mark = s->table->loop->cfg->max_buffered_bytes;
    bool unacked = core_stateful_full(s);
    if (!s->channel)
        return;
    if (!s->hub_paused && (s->to_client.bytes > mark || unacked)) {
        s->hub_paused = true;
        s->table->loop->stats.flow_control_pauses++;
        hub_channel_pause(s->channel, true);
    } else if (s->hub_paused && s->to_client.bytes <= mark / 2 && !unacked) {
        s->hub_paused = false;
        hub_channel_pause(s->channel, false);
    }
}

static void queue_to_client(struct core_session *s, struct wsmsg *m)
{
    s->last_sent_ms = clock_now_ms();
    msg_queue_push(&s->to_client, m);
    s->transport->kick(s);
    core_session_flow(s);
}

void core_session_queue(struct core_session *s, struct wsmsg *m)
{
    queue_to_client(s, m);
}

/* A message of the relay's own. One that cannot be allocated ends the
 * connection instead of going missing (docs/ARCHITECTURE.md, out of memory). */
static void send_bytes_to_client(struct core_session *s, const char *data, size_t len, bool binary)
{
    struct wsmsg *m = wsmsg_copy(data, len, binary);
    if (m) {
        queue_to_client(s, m);
        return;
    }
    s->table->loop->stats.out_of_memory_closes++;
    log_conn_warn(core_session_id(s), s->endpoint->name, "session: out of memory for a message to the client; closing");
    close_after_flush(s);
}

/* Stops forwarding, lets queued messages out, then closes with 1000. */
static void close_after_flush(struct core_session *s)
{
    if (s->state == CORE_CLOSING)
        return;
    s->state = CORE_CLOSING;
    s->keepalive_armed = false;
    /* The closing state's deadline: a client that does not read its last messages is cut off. */
    s->timeout_due = clock32(clock_now_ms() + RELAY_CLOSE_TIMEOUT_MS), s->timeout_armed = true;
    core_session_rearm(s);
    if (s->channel) {
        core_session_keep_id(s, hub_channel_id(s->channel));
        hub_channel_close(s->channel, NULL);
        s->channel = NULL;
    }
    s->transport->pause_reading(s, false);
    s->transport->closing(s);
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
    log_conn_info(core_session_id(s), s->endpoint->name, "session: handshake refused: %s", text);
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

void core_session_fail(struct core_session *s, const char *error)
{
    close_with_error(s, error, false);
}

/* The hub side is gone; tell the client in the only way its state allows. */
static void report_hub_loss(struct core_session *s, const char *what)
{
    char text[400];
    if (!s->handshake_answered) {
        snprintf(text, sizeof text, "The relay could not connect to the backend hub '%s': %s", s->endpoint->name, what);
        if (s->state == CORE_AWAIT_HANDSHAKE) {
            /* A server only ever answers a handshake: an answer sent before the
             * client's request breaks clients (the JS client fails start() with
             * "stopConnection ... still in the connecting state"). Keep the text
             * for when the request arrives, or the handshake timeout fires. */
            free(s->pending->hub_failure);
            s->pending->hub_failure = strdup(text);
            if (s->pending->hub_failure)
                return;
        }
        fail_handshake(s, text);
        return;
    }
    snprintf(text, sizeof text, "Connection closed with an error. The relay lost its connection to the backend hub '%s'.",
             s->endpoint->name);
    close_with_error(s, text, true);
}

/* ---------------------------------------------------------------- timers */

/* The wheel entry follows the earliest deadline. */
static void core_session_rearm(struct core_session *s)
{
    uint64_t now = clock_now_ms(), due = s->keepalive_armed ? clock32_absolute(s->keepalive_due, now) : CORE_NO_DEADLINE;
    if (s->timeout_armed && clock32_absolute(s->timeout_due, now) < due)
        due = clock32_absolute(s->timeout_due, now);
    if (s->disconnect_armed && clock32_absolute(s->disconnect_due, now) < due)
        due = clock32_absolute(s->disconnect_due, now);
    if (due == CORE_NO_DEADLINE)
        timer_cancel(&s->timer);
    else if (!timer_is_armed(&s->timer) || s->timer.expire_at != due)
        loop_timer_schedule(s->table->loop, &s->timer, due);
}

void core_session_disconnect_at(struct core_session *s, uint64_t when)
{
    s->disconnect_due = clock32(when), s->disconnect_armed = true;
    core_session_rearm(s);
}

void core_session_disconnect_cancel(struct core_session *s)
{
    s->disconnect_armed = false;
    core_session_rearm(s);
}

void core_session_client_deadlines_off(struct core_session *s)
{
    s->keepalive_armed = s->timeout_armed = false;
    core_session_rearm(s);
}

static uint32_t random_u32(void)
{
    uint32_t r = 0;
    RAND_bytes((unsigned char *)&r, sizeof r);
    return r;
}

static void core_arm_keepalive(struct core_session *s, uint64_t from)
{
    if (!s->transport->pings)
        return;
    s->keepalive_due = clock32(from + s->table->loop->cfg->keepalive_ms), s->keepalive_armed = true;
    core_session_rearm(s);
}

bool core_session_send_own(struct core_session *s, const struct hub_msg *msg)
{
    struct buf out;
    buf_init(&out);
    enum proto_status st = is_binary(s) ? core_msgpack_encode(msg, &out, NULL) : core_json_encode(msg, &out, NULL);
    if (st == PROTO_OK)
        send_bytes_to_client(s, out.data, out.len, is_binary(s));
    buf_free(&out);
    return st == PROTO_OK && s->state != CORE_CLOSING;
}

/* A Ping message in the client's protocol, from the codec. */
static void send_ping(struct core_session *s)
{
    struct hub_msg ping;
    hub_msg_init(&ping);
    ping.kind = HUB_MSG_PING;
    core_session_send_own(s, &ping);
}

static void core_keepalive_due(struct core_session *s, uint64_t now)
{
    if (s->state != CORE_OPEN)
        return;
    if (now - s->last_sent_ms >= s->table->loop->cfg->keepalive_ms)
        send_ping(s);
    if (s->state == CORE_OPEN)
        core_arm_keepalive(s, s->last_sent_ms);
}

/* The open state's deadlines on timeout_due: the hub's handshake answer
 * (--handshake-timeout after the client's handshake went to it) until it
 * came, and the client timeout once the client has pinged. */
static void core_arm_open_timeout(struct core_session *s)
{
    uint64_t now = clock_now_ms(), due = s->handshake_answered ? CORE_NO_DEADLINE : s->pending->hub_answer_due_ms;
    uint64_t silent = now - clock32_since(s->last_received, now) + s->table->loop->cfg->client_timeout_ms;
    if (s->client_pinged && silent < due)
        due = silent;
    s->timeout_due = clock32(due), s->timeout_armed = due != CORE_NO_DEADLINE;
    core_session_rearm(s);
}

static void core_timeout_due(struct core_session *s, uint64_t now)
{
    if (s->state == CORE_CLOSING) {
        log_conn_info(core_session_id(s), s->endpoint->name, "session: the client did not take its last messages within %d ms; closing its socket",
                 RELAY_CLOSE_TIMEOUT_MS);
        if (s->wsi)
            lws_set_timeout(s->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
        return;
    }
    if (s->state == CORE_AWAIT_HANDSHAKE) {
        fail_handshake(s, s->pending->hub_failure ? s->pending->hub_failure : HANDSHAKE_TEXT_CANCELED);
        return;
    }
    if (s->state != CORE_OPEN)
        return;
    if (!s->handshake_answered && now >= s->pending->hub_answer_due_ms) {
        log_conn_info(core_session_id(s), s->endpoint->name, "session: hub %s did not answer the handshake within %u ms, closing",
                 s->endpoint->name, s->table->loop->cfg->handshake_timeout_ms);
        report_hub_loss(s, "it did not answer the handshake in time");
        return;
    }
    if (s->client_pinged && clock32_since(s->last_received, now) >= s->table->loop->cfg->client_timeout_ms) {
        log_conn_info(core_session_id(s), s->endpoint->name, "session: client silent for %u ms, closing", s->table->loop->cfg->client_timeout_ms);
        close_with_error(s, "Connection closed with an error.", true);
        return;
    }
    core_arm_open_timeout(s);
}

/* The earliest deadline came: the timeout first (it may end the open state,
 * which makes a keepalive moot), then the keepalive, then the transport's
 * disconnect deadline, whose timer_due may free the session. */
static void core_timer_due(struct timer_entry *e)
{
    struct core_session *s = list_container_of(e, struct core_session, timer);
    uint64_t now = clock_now_ms();
    bool disconnect = s->disconnect_armed && clock32_until(s->disconnect_due, now) <= 0; /* one set below waits */
    if (disconnect)
        s->disconnect_armed = false;
    if (s->timeout_armed && clock32_until(s->timeout_due, now) <= 0) {
        s->timeout_armed = false;
        core_timeout_due(s, now);
    }
    if (s->keepalive_armed && clock32_until(s->keepalive_due, now) <= 0) {
        s->keepalive_armed = false;
        core_keepalive_due(s, now);
    }
    core_session_rearm(s);
    if (disconnect && s->transport->timer_due)
        s->transport->timer_due(s);
}

/* ------------------------------------------------------------------- hub */

static void open_channel(struct core_session *s)
{
    struct hub_client_copy *c = s->pending->client;
    struct hub_channel_client client = hub_client_copy_view(c);
    const char *why = NULL;
    s->channel = hub_channel_open(s->endpoint, &client, &core_channel_ops, s, &why);
    /* The channel keeps its own copies: an idle session holds none of this. */
    s->pending->client = NULL;
    if (!s->channel)
        core_session_keep_id(s, c->connection_id);
    hub_client_copy_free(c);
    if (!s->channel)
        report_hub_loss(s, why);
}

static void hub_opened(void *owner, const char *connection_id)
{
    struct core_session *s = owner;
    (void)connection_id; /* the channel's own, read through it (core_session_id) */
    log_conn_info(core_session_id(s), s->endpoint->name, "session: connected, hub channel open");
}

/* Notes what the relay must know about the hub's traffic: its handshake
 * answer and any Close message. */
static void inspect_hub_message(struct core_session *s, const struct wsmsg *m)
{
    const char *data = (const char *)m->payload;
    size_t len = m->len;
    if (!s->handshake_answered) {
        /* The first record is the handshake response, always JSON + RS. */
        s->handshake_answered = true;
        if (s->state == CORE_OPEN) /* the client's handshake went to the hub: nothing pending is needed now */
            pending_free(s);
        struct span record;
        size_t consumed;
        struct handshake_response resp;
        bool whole = core_text_next_record(data, len, SIZE_MAX, &record, &consumed, NULL) == PROTO_OK;
        if (whole && handshake_decode_response(record.ptr, record.len, &resp, NULL) == PROTO_OK) {
            if (span_is_set(resp.error))
                s->hub_sent_close = true; /* the hub refused the handshake and will close */
            handshake_response_release(&resp);
        }
        if (!s->hub_sent_close)
            core_arm_keepalive(s, clock_now_ms());
        if (!whole)
            return;
        len -= consumed;
        data += consumed;
    }
    unsigned kinds = 0;
    bool peeked = data == (const char *)m->payload ? core_hub_kinds(is_binary(s), m, &kinds) /* not after an answer */
                                                   : core_peek_kinds(is_binary(s), data, len, &kinds, NULL) == PROTO_OK;
    if (len > 0 && peeked && (kinds & CORE_KIND_BIT(HUB_MSG_CLOSE)))
        s->hub_sent_close = true;
}

/* The hub's pings the client need not get: none on a transport without pings
 * (long polling), as the server sends none on it; none within half a
 * --keepalive of the relay's last write to the client, whatever it was (its
 * own Ping, or a message): the client just heard from the server, and the
 * relay's keepalive re-arms from that write. The hub's keepalive clock is not
 * the relay's: a service-mode app pings each client once it sent it nothing
 * itself for its KeepAliveInterval, and a Clients.All or group send is not
 * sent "to" the client as far as the app knows, so while messages flow each
 * client got the app's Ping every interval besides them. */
static bool redundant_pings(const struct core_session *s, const struct wsmsg *m)
{
    unsigned kinds = 0;
    bool wrote_recently = clock_now_ms() - s->last_sent_ms < s->table->loop->cfg->keepalive_ms / 2;
    return (!s->transport->pings || wrote_recently) && s->handshake_answered && m->len > 0 &&
           core_hub_kinds(is_binary(s), m, &kinds) && kinds == CORE_KIND_BIT(HUB_MSG_PING);
}

static void hub_message(void *owner, struct wsmsg *msg)
{
    struct core_session *s = owner;
    if (s->state == CORE_CLOSING || redundant_pings(s, msg)) {
        wsmsg_free(msg);
        return;
    }
    bool first = !s->handshake_answered;
    inspect_hub_message(s, msg);
    if (core_stateful_from_hub(s, msg, first)) /* numbered and kept; held back while the client is away */
        queue_to_client(s, msg);
}

/* refused and closed: the channel is gone either way. */
static void hub_ended(void *owner, const char *why)
{
    struct core_session *s = owner;
    core_session_keep_id(s, hub_channel_id(s->channel)); /* still valid during the call */
    s->channel = NULL;
    if (s->state == CORE_CLOSING)
        return;
    if (s->hub_sent_close) {
        close_after_flush(s);
        return;
    }
    log_conn_info(core_session_id(s), s->endpoint->name, "session: hub channel lost: %s", why ? why : "closed by the backend");
    report_hub_loss(s, why ? why : "the backend closed the connection");
}

static void hub_drained(void *owner)
{
    struct core_session *s = owner;
    s->transport->pause_reading(s, false);
}

static const struct hub_channel_ops core_channel_ops = {
    .opened = hub_opened,
    .message = hub_message,
    .drained = hub_drained,
    .refused = hub_ended,
    .closed = hub_ended,
};

/* ---------------------------------------------------------------- client */

/* After a send: a full channel stops reading the client until `drained`. */
static void after_send(struct core_session *s, enum hub_send_result r)
{
    if (r == HUB_SEND_FULL)
        s->transport->pause_reading(s, true);
}

static void forward_to_hub(struct core_session *s, struct wsmsg *m)
{
    if (!s->channel) { /* already lost: the session is closing */
        wsmsg_free(m);
        return;
    }
    after_send(s, hub_channel_send(s->channel, m));
}

/* The first Ping from the client arms its timeout, as the ASP.NET Core server does. */
static void watch_for_first_ping(struct core_session *s, const char *data, size_t len)
{
    unsigned kinds = 0;
    if (len == 0 || !s->transport->pings || core_peek_kinds(is_binary(s), data, len, &kinds, NULL) != PROTO_OK ||
        !(kinds & CORE_KIND_BIT(HUB_MSG_PING)))
        return;
    s->client_pinged = true;
    core_arm_open_timeout(s);
}

/* Collects handshake bytes; once the record is whole, checks it and begins
 * the channel with everything received so far: the hub answers the handshake. */
static void handle_handshake_bytes(struct core_session *s, struct wsmsg *m)
{
    struct buf *bytes = &s->pending->handshake;
    if (!buf_append(bytes, m->payload, m->len)) {
        wsmsg_free(m);
        fail_handshake(s, HANDSHAKE_TEXT_UNEXPECTED);
        return;
    }
    wsmsg_free(m);
    struct span record;
    size_t consumed;
    enum proto_status st = core_text_next_record(bytes->data, bytes->len, HANDSHAKE_MAX_BYTES,
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
    } else if (s->transport->kind == CORE_TRANSPORT_SSE && is_binary(s)) {
        /* The server's words: SSE carries text only. */
        buf_append_cstr(&text, "Cannot use the '");
        buf_append_span(&text, req.protocol);
        buf_append_cstr(&text, "' protocol on the current transport. The transport does not support 'Binary' transfer format.");
        buf_append_byte(&text, '\0');
        fail_handshake(s, text.data);
    } else if (s->pending->hub_failure || !s->channel) {
        fail_handshake(s, s->pending->hub_failure ? s->pending->hub_failure : HANDSHAKE_TEXT_CANCELED);
    } else {
        s->state = CORE_OPEN;
        s->table->loop->stats.sessions_opened++;
        core_stateful_start(s, req.version);
        s->pending->hub_answer_due_ms = clock_now_ms() + s->table->loop->cfg->handshake_timeout_ms;
        core_arm_open_timeout(s);
        watch_for_first_ping(s, bytes->data + consumed, bytes->len - consumed);
        struct wsmsg *all = wsmsg_copy(bytes->data, bytes->len, false);
        buf_free(bytes);
        if (all) {
            after_send(s, hub_channel_begin(s->channel, s->protocol, all));
        } else {
            s->table->loop->stats.out_of_memory_closes++;
            close_with_error(s, "Connection closed with an error. The relay ran out of memory.", true);
        }
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
        m = core_stateful_from_client(s, m); /* Ack and Sequence taken, duplicates dropped */
        if (m)
            forward_to_hub(s, m);
        return;
    case CORE_CLOSING:
        wsmsg_free(m);
        return;
    }
}

int core_session_receive(struct core_session *s, const void *in, size_t len)
{
    s->last_received = clock32(clock_now_ms());
    if (s->ws_close != WSMSG_CLOSE_NONE)
        return 0; /* after the relay's Close: read and discarded, not recorded (relay/wsmsg.h) */
    enum wsmsg_fault fault;
    struct wsmsg *whole = wsmsg_receive(&s->rx_partial, s->wsi, in, len, s->table->loop,
                                        config_client_message_limit(s->table->loop->cfg), "Core session", &fault);
    if (whole) {
        handle_client_message(s, whole);
    } else if (fault == WSMSG_BAD_UTF8) {
        /* The client broke the WebSocket protocol: it gets what Kestrel gives it, close
         * 1007 and no invitation to reconnect, in a lingering close; the hub connection ends. */
        wsmsg_close_invalid_payload(s->wsi, &s->to_client, &s->ws_close);
        close_after_flush(s);
    } else if (fault != WSMSG_MORE && s->state == CORE_OPEN) {
        /* allowReconnect as ASP.NET Core sends it when a message exceeds its own limit. */
        close_with_error(s, fault == WSMSG_TOO_LARGE
                                ? "Connection closed with an error. The message exceeded the relay's maximum message size."
                                : "Connection closed with an error. The relay ran out of memory.", true);
    } else if (fault != WSMSG_MORE) {
        fail_handshake(s, HANDSHAKE_TEXT_CANCELED);
    }
    return 0;
}

void core_session_sent(struct core_session *s)
{
    core_session_flow(s);
}

/* The body of a POST (SSE, long polling): whole messages, in the client's
 * protocol once the handshake chose it. */
void core_session_client_data(struct core_session *s, const void *data, size_t len)
{
    s->last_received = clock32(clock_now_ms());
    if (len == 0)
        return;
    struct wsmsg *m = wsmsg_copy(data, len, s->state == CORE_OPEN && is_binary(s));
    if (m) {
        handle_client_message(s, m);
        return;
    }
    s->table->loop->stats.out_of_memory_closes++;
    if (s->state == CORE_OPEN)
        close_with_error(s, "Connection closed with an error. The relay ran out of memory.", true);
    else
        fail_handshake(s, HANDSHAKE_TEXT_CANCELED);
}

/* ------------------------------------------------------------- lifecycle */

void core_sessions_shutdown(struct core_sessions *table)
{
    for (struct list_node *n = table->all.next; n != &table->all; n = n->next) {
        struct core_session *s = list_container_of(n, struct core_session, link);
        if (s->state == CORE_OPEN && s->handshake_answered)
            close_with_error(s, "Connection closed with an error. The relay is shutting down.", true);
        else
            close_after_flush(s);
    }
}

struct core_session *core_session_create(struct core_sessions *table, struct lws *wsi, struct hub_endpoint *endpoint,
                                         struct negotiation *negotiation, const struct core_session_identity *identity)
{
    _Static_assert(_Alignof(struct core_session) <= 8, "a pool's records are 8-aligned");
    struct core_session *s = pool_alloc(&table->records);
    struct core_pending *pending = s ? calloc(1, sizeof *pending) : NULL;
    struct hub_client_copy *c = pending ? core_client_copy_capture(wsi, negotiation, identity) : NULL;
    if (!c) {
        free(pending);
        pool_free(&table->records, s);
        if (negotiation)
            core_negotiation_free(negotiation);
        return NULL;
    }
    s->role = WSI_ROLE_CORE_SESSION;
    s->table = table;
    s->wsi = wsi;
    s->transport = &core_ws_transport;
    s->endpoint = endpoint;
    s->state = CORE_AWAIT_HANDSHAKE;
    s->protocol = HUB_PROTOCOL_JSON;
    s->pending = pending;
    s->pending->client = c;
    buf_init(&s->pending->handshake);
    msg_queue_init(&s->to_client);
    timer_entry_init(&s->timer, core_timer_due);
    if (negotiation) {
        s->stateful_offered = negotiation->stateful;
        core_negotiation_free(negotiation);
    }
    list_push_back(&table->all, &s->link);
    s->table->loop->stats.sessions_active++;
    core_session_capture_begin(s, wsi);
    return s;
}

void core_session_established(struct core_session *s)
{
    uint64_t now = clock_now_ms();
    s->last_received = clock32(now);
    s->last_sent_ms = now;
    if (core_stateful_resumed(s)) { /* a stateful client's next WebSocket: Sequence and the resend went out */
        core_arm_keepalive(s, now);
        core_arm_open_timeout(s);
        return;
    }
    s->timeout_due = clock32(now + s->table->loop->cfg->handshake_timeout_ms), s->timeout_armed = true;
    core_session_rearm(s);
    /* Spread keepalives: the first one comes up to 10% early. */
    s->last_sent_ms = now - (s->table->loop->cfg->keepalive_ms - timer_jitter(s->table->loop->cfg->keepalive_ms, random_u32(), 10));
    open_channel(s);
}

struct core_session *core_session_create_http(struct core_sessions *table, struct lws *wsi,
                                              struct hub_endpoint *endpoint, struct negotiation *negotiation,
                                              const struct core_session_identity *identity,
                                              const struct core_transport *transport, const char *token)
{
    struct core_session *s = core_session_create(table, wsi, endpoint, negotiation, identity);
    if (!s)
        return NULL;
    s->wsi = NULL;
    s->transport = transport;
    if (!core_session_register(s, token)) {
        core_session_destroy(s);
        return NULL;
    }
    core_session_established(s);
    return s;
}

void core_session_client_gone(struct core_session *s)
{
    if (s->transport->detach)
        s->transport->detach(s);
    core_session_destroy(s);
}

void core_session_destroy(struct core_session *s)
{
    log_conn_info(core_session_id(s), s->endpoint->name, "session: closed");
    timer_cancel(&s->timer);
    core_stateful_free(s);
    core_session_unregister(s);
    if (s->channel)
        hub_channel_close(s->channel, NULL);
    msg_queue_clear(&s->to_client);
    wsmsg_free(s->rx_partial);
    list_unlink(&s->link);
    s->table->loop->stats.sessions_active--;
    s->table->loop->stats.sessions_closed++;
    pending_free(s);
    core_session_extra_free(s);
    pool_free(&s->table->records, s);
}
