/* service_server.c - an app's server connection at /server/: the service protocol, pings, routing (see service_server.h). */
#include "relay/service_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub/service_token.h"
#include "relay/clock.h"
#include "relay/http.h"
#include "relay/log.h"
#include "relay/service_channel.h"

/* Service messages are batched into WebSocket messages of about this size. */
#define BATCH_BYTES (64u << 10)

static const char *server_name(const struct service_server *s)
{
    return s->conn_id ? s->conn_id : "-";
}

/* ------------------------------------------------------------- writing */

/* Appends one encoded service message (prefix + body) to what goes out.
 * False if the connection is closing or out of memory (then it is being closed). */
static bool service_server_write(struct service_server *s, const struct buf *encoded)
{
    if (s->closing || !s->wsi || s->service->loop->destroying)
        return false;
    if (!s->batch && !(s->batch = wsmsg_new(encoded->len > 1024 ? encoded->len : 1024, true))) /* grows by doubling */
        goto nomem;
    struct wsmsg *grown = wsmsg_append(s->batch, encoded->data, encoded->len);
    if (!grown)
        goto nomem;
    s->batch = grown;
    if (s->batch->len >= BATCH_BYTES) {
        msg_queue_push(&s->out, s->batch);
        s->batch = NULL;
    }
    lws_callback_on_writable(s->wsi);
    return true;
nomem:
    s->service->loop->stats.out_of_memory_closes++;
    log_warn("service: out of memory for a message to app server connection %s; closing it", server_name(s));
    s->closing = true;
    lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    return false;
}

static size_t service_server_queued(const struct service_server *s)
{
    return s->out.bytes + (s->batch ? s->batch->len : 0);
}

static bool uplink_write(struct service_uplink *up, const struct buf *encoded)
{
    return service_server_write(list_container_of(up, struct service_server, uplink), encoded);
}

static size_t uplink_queued(const struct service_uplink *up)
{
    return service_server_queued(list_container_of(up, const struct service_server, uplink));
}

static bool write_encoded(struct service_server *s, enum proto_status st, struct buf *out)
{
    bool ok = st == PROTO_OK && service_server_write(s, out);
    buf_free(out);
    return ok;
}

static void send_ping(struct service_server *s, const char *key, const char *value)
{
    struct span strings[2] = { span_from_cstr(key), span_from_cstr(value) };
    struct buf out;
    buf_init(&out);
    write_encoded(s, svc_encode_ping(&out, strings, key ? 2 : 0, NULL), &out);
    s->last_ping_ms = clock_now_ms();
}

/* Ends the connection: what is queued goes out, then a close frame. */
static void close_server(struct service_server *s, enum lws_close_status code, const char *why)
{
    if (s->closing || !s->wsi)
        return;
    log_info("service: closing app server connection %s (hub %s): %s", server_name(s), s->hub->key, why);
    s->closing = true;
    if (s->behind) /* what waits is dropped on its turn; lws reads the close handshake */
        lws_rx_flow_control(s->wsi, 1);
    lws_close_reason(s->wsi, code, (unsigned char *)(uintptr_t)why, strlen(why) < 120 ? strlen(why) : 120);
    lws_callback_on_writable(s->wsi);
    /* The closing state's deadline: an app that does not read its last messages is cut off. */
    loop_timer_schedule(s->service->loop, &s->tick, clock_now_ms() + RELAY_CLOSE_TIMEOUT_MS);
}

/* ------------------------------------------------------------- timers */

static void server_tick(struct timer_entry *e)
{
    struct service_server *s = list_container_of(e, struct service_server, tick);
    uint64_t now = clock_now_ms();
    if (s->closing) {
        log_info("service: app server connection %s did not take its last messages within %d ms; closing its socket",
                 server_name(s), RELAY_CLOSE_TIMEOUT_MS);
        if (s->wsi)
            lws_set_timeout(s->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
        return;
    }
    if (now - s->last_received_ms >= SERVICE_SILENCE_MS) {
        close_server(s, LWS_CLOSE_STATUS_GOINGAWAY, "nothing received for 30 s");
        return;
    }
    /* The SDK only answers bytes (its keep-alive is not timer driven), and only once the handshake is done. */
    if (s->in_model && now - s->last_ping_ms >= SERVICE_PING_MS)
        send_ping(s, NULL, NULL);
    uint64_t next = s->last_received_ms + SERVICE_SILENCE_MS;
    if (s->last_ping_ms + SERVICE_PING_MS < next)
        next = s->last_ping_ms + SERVICE_PING_MS;
    loop_timer_schedule(s->service->loop, &s->tick, next > now ? next : now + 1);
}

/* ------------------------------------------------------------ messages */

static void deliver_one(void *ctx, struct svc_client *client, struct span payload)
{
    service_channel_fanout(service_channel_of(client), payload, ctx);
}

static void handshake(struct service_server *s, const struct svc_msg *m)
{
    struct buf out;
    buf_init(&out);
    if (m->version != 1) {
        s->service->stats.servers_refused++;
        write_encoded(s, svc_encode_handshake_response(&out, SPAN_LIT("Unsupported service protocol version."),
                                                       span_from_cstr(s->conn_id), NULL), &out);
        close_server(s, LWS_CLOSE_STATUS_NORMAL, "unsupported service protocol version");
        return;
    }
    if (svc_hub_add_server(&s->hub->model, &s->conn, span_from_cstr(s->conn_id), span_from_cstr(s->server_id), &s->uplink) != HUB_OK) {
        s->service->loop->stats.out_of_memory_closes++;
        close_server(s, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "out of memory");
        return;
    }
    s->in_model = true;
    if (m->conn_type == SVC_CONN_WEAK) /* a secondary endpoint's: never given clients (spec 2.2) */
        svc_server_stop_accepting(&s->conn);
    s->service->stats.servers_accepted++;
    write_encoded(s, svc_encode_handshake_response(&out, SPAN_NONE, span_from_cstr(s->conn_id), NULL), &out);
    s->last_ping_ms = clock_now_ms();
    log_info("service: hub %s: app server %s connected (connection %s, type %d)", s->hub->key, s->server_id,
             s->conn_id, (int)m->conn_type);
}

static void ping(struct service_server *s, const struct svc_msg *m)
{
    struct span value;
    if (!svc_ping_get(m, "shutdown", &value) || value.len < 4 || memcmp(value.ptr, "fin:", 4) != 0)
        return; /* keep-alives, client counts, status: nothing to answer */
    /* A stopping app (appendix A.3): ack at once, give it no new clients. Its
     * Close messages to its clients and their OnDisconnected traffic still
     * come; the clients are closed when the socket closes. */
    if (!s->fin)
        log_info("service: hub %s: app server %s is stopping (%.*s)", s->hub->key, s->server_id, (int)value.len, value.ptr);
    s->fin = true;
    svc_server_stop_accepting(&s->conn);
    send_ping(s, "shutdown", "finack");
}

static struct service_channel *channel_of(struct service_server *s, struct span id)
{
    struct svc_client *c = id.ptr ? svc_hub_find_client(&s->hub->model, id) : NULL;
    if (!c) /* closed already, or never ours (appendix A.4): dropped without a word */
        s->service->stats.dropped_unknown++;
    return c ? service_channel_of(c) : NULL;
}

static void ack(struct service_server *s, int64_t ack_id, int32_t status)
{
    struct buf out;
    buf_init(&out);
    if (write_encoded(s, svc_encode_ack(&out, ack_id, status, SPAN_NONE, NULL), &out))
        s->service->stats.acks_sent++;
}

/* Passes a decoded message on, as it is, to another server connection. */
static void forward(struct service_server *s, struct service_uplink *to, const struct svc_msg *m)
{
    struct buf out;
    buf_init(&out);
    if (svc_msg_encode(m, &out, NULL) == PROTO_OK)
        to->write(to, &out);
    else
        s->service->loop->stats.out_of_memory_closes++;
    buf_free(&out);
}

/* A client result asked of a client (34, spec 3.5): the client gets the
 * payload of its protocol; when the asking app server is not the one the
 * client is bound to, the owner gets the 34 too (its router must know the
 * invocation the client's completion will answer). */
static void client_invocation(struct service_server *s, const struct svc_msg *m)
{
    struct svc_client *c = m->connection_id.ptr ? svc_hub_find_client(&s->hub->model, m->connection_id) : NULL;
    struct span payload;
    if (!c || !svc_payloads_find(&m->payloads, span_from_cstr(svc_protocol_name(c->protocol)), &payload)) {
        s->service->stats.dropped_unknown++;
        return;
    }
    if (!span_eq_cstr(m->caller_server_id, c->server->server_id)) {
        forward(s, c->server->owner, m);
        service_invocation_add(s->hub, m->invocation_id, m->connection_id, m->caller_server_id);
    }
    service_channel_fanout(service_channel_of(c), payload, NULL);
}

/* The owner's answer to another server's client result (35/36): to a
 * connection of the asking server (callerServerId). From the asker itself it
 * only means "forget it" (the SDK completes locally): nothing to pass on. */
static void client_completion(struct service_server *s, const struct svc_msg *m)
{
    if (span_eq_cstr(m->caller_server_id, s->server_id))
        return;
    service_invocation_done(s->hub, m->invocation_id);
    struct svc_server_conn *to = service_hub_server(s->hub, m->caller_server_id);
    if (to)
        forward(s, to->owner, m);
    else
        s->service->stats.dropped_unknown++;
}

/* One whole message, in the order the app sent it; *work: the deliveries it
 * made (a send's recipients; left as it is, 1, for other messages). False:
 * close the connection. */
static bool handle_message(struct service_server *s, struct span body, size_t *work)
{
    struct svc_msg m;
    struct proto_error err = { 0 };
    enum proto_status st = svc_msg_decode(body.ptr, body.len, &m, &err);
    if (st == PROTO_UNKNOWN_TYPE)
        return true;
    if (st != PROTO_OK) {
        s->service->stats.server_protocol_errors++;
        log_warn("service: app server connection %s sent an unreadable message: %s", server_name(s), err.detail);
        return false;
    }
    if (!s->in_model) {
        if (m.type != SVC_HANDSHAKE_REQUEST) {
            s->service->stats.server_protocol_errors++;
            log_warn("service: app server connection %s sent message %d before its handshake", server_name(s), (int)m.type);
            return false;
        }
        handshake(s, &m);
        return true;
    }
    struct service_channel *ch;
    struct svc_fanout_result r;
    switch (m.type) {
    case SVC_PING:
        ping(s, &m);
        break;
    case SVC_CONNECTION_DATA:
        if ((ch = channel_of(s, m.connection_id)) != NULL)
            service_channel_data(ch, m.payload, m.ext.data_type);
        break;
    case SVC_CLOSE_CONNECTION:
        if ((ch = channel_of(s, m.connection_id)) != NULL)
            service_channel_app_closed(ch, m.error);
        break;
    case SVC_MULTI_CONNECTION_DATA:
    case SVC_USER_DATA:
    case SVC_MULTI_USER_DATA:
    case SVC_BROADCAST_DATA:
    case SVC_GROUP_BROADCAST_DATA:
    case SVC_MULTI_GROUP_BROADCAST_DATA:
        r = svc_hub_fanout(&s->hub->model, &m, deliver_one, &(struct service_fanout_peek){0});
        s->service->stats.fanout_messages++;
        s->service->stats.fanout_deliveries += r.delivered;
        if (r.delivered > *work)
            *work = r.delivered;
        break;
    case SVC_CLIENT_INVOCATION:
        client_invocation(s, &m);
        break;
    case SVC_CLIENT_COMPLETION:
    case SVC_ERROR_COMPLETION:
        client_completion(s, &m);
        break;
    case SVC_JOIN_GROUP:
        (void)svc_hub_join(&s->hub->model, m.connection_id, m.group);
        break;
    case SVC_LEAVE_GROUP:
        (void)svc_hub_leave(&s->hub->model, m.connection_id, m.group);
        break;
    case SVC_JOIN_GROUP_WITH_ACK:
        ack(s, m.ack_id, svc_hub_join(&s->hub->model, m.connection_id, m.group));
        break;
    case SVC_LEAVE_GROUP_WITH_ACK:
        ack(s, m.ack_id, svc_hub_leave(&s->hub->model, m.connection_id, m.group));
        break;
    default: /* 1 again, 35/36 (client results between app servers), ...: nothing to do */
        break;
    }
    return true;
}

/* --------------------------------------------------------------- turns */

/* One read of a server connection can carry ~100 of the app's sends, each to
 * a thousand clients (docs/BENCHMARKS.md, join storm): handled at once, they
 * held the loop for seconds. So a connection's messages make at most
 * --service-fanout-budget deliveries per loop turn (a message is handled
 * whole, so a turn may end up to one message's recipients past it); then the
 * rest of what was read waits in s->unread, reading pauses (no more is read
 * while some is unhandled), and service_servers_turn goes on from there on the
 * next turn, after the loop served whatever else was ready. The order of the
 * app's messages never changes, so an Ack still follows the sends the app
 * wrote before it: that wait is the app's order, not the relay's. */

static void server_free(struct service_server *s);

/* The loop's turn: libev's iteration count. lws' own poll() loop has none:
 * there the budget lasts until the next service_servers_turn. */
static unsigned loop_turn(const struct loop *loop)
{
    return loop->ev ? ev_iteration(loop->ev) : 0;
}

static void start_turn(struct service_server *s)
{
    unsigned now = loop_turn(s->service->loop);
    if (now != s->turn) {
        s->turn = now;
        s->turn_work = 0;
    }
}

static void reset_framer(struct service_server *s)
{
    svc_framer_free(&s->framer);
    svc_framer_init(&s->framer, config_hub_message_limit(s->service->loop->cfg));
}

/* Handles the framer's whole messages in order until none is left (true: the
 * chunk may go) or the turn's budget is spent with some left (false: the
 * framer still reads its chunk). A connection found closing (here or before)
 * handles nothing more. */
static bool handle_messages(struct service_server *s)
{
    size_t budget = s->service->loop->cfg->service_fanout_budget;
    while (!s->closing) {
        if (budget && s->turn_work >= budget)
            return svc_framer_unread(&s->framer).len == 0;
        struct span body;
        struct proto_error err = { 0 };
        enum proto_status st = svc_framer_next(&s->framer, &body, &err);
        if (st == PROTO_INCOMPLETE)
            return true;
        if (st != PROTO_OK) {
            s->service->stats.server_protocol_errors++;
            close_server(s, st == PROTO_ERR_TOO_LARGE ? LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE : LWS_CLOSE_STATUS_PROTOCOL_ERR,
                         err.detail[0] ? err.detail : "unreadable stream");
            reset_framer(s); /* it still holds the chunk: let it drop it */
            return true;
        }
        size_t work = 1;
        if (!handle_message(s, body, &work)) {
            close_server(s, LWS_CLOSE_STATUS_PROTOCOL_ERR, "protocol error");
            reset_framer(s);
            return true;
        }
        s->turn_work += work;
    }
    return true;
}

/* Keeps what the framer has not taken of its chunk, then `more`, in
 * s->unread, which becomes the framer's chunk. False when out of memory. */
static bool keep_unread(struct service_server *s, const void *more, size_t more_len)
{
    struct span rest = svc_framer_unread(&s->framer);
    struct buf kept;
    buf_init(&kept);
    if (!buf_append(&kept, rest.ptr, rest.len) || !buf_append(&kept, more, more_len)) {
        buf_free(&kept);
        return false;
    }
    buf_free(&s->unread);
    s->unread = kept;
    svc_framer_push(&s->framer, s->unread.data, s->unread.len);
    return true;
}

static void unread_lost(struct service_server *s)
{
    s->service->loop->stats.out_of_memory_closes++;
    log_warn("service: out of memory keeping what app server connection %s sent; closing it", server_name(s));
    close_server(s, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "out of memory");
    reset_framer(s);
}

static void queue_turn(struct service_server *s)
{
    list_push_back(&s->service->behind, &s->behind_link);
    if (!timer_is_armed(&s->service->turn_timer))
        loop_timer_schedule(s->service->loop, &s->service->turn_timer, clock_now_ms());
}

/* The turn's budget is spent with messages left: they wait for the next turn. */
static void fall_behind(struct service_server *s)
{
    if (!keep_unread(s, NULL, 0)) {
        unread_lost(s);
        return;
    }
    s->service->stats.fanout_turns_deferred++;
    s->behind = true;
    lws_rx_flow_control(s->wsi, 0);
    queue_turn(s);
}

/* Nothing waits any more (or the connection is closing: what waited is
 * dropped, as what it sends from now on is): reading goes on. */
static void catch_up(struct service_server *s)
{
    s->behind = false;
    buf_free(&s->unread);
    svc_framer_push(&s->framer, NULL, 0);
    if (s->wsi)
        lws_rx_flow_control(s->wsi, 1);
}

int service_server_receive(struct service_server *s, const void *in, size_t len)
{
    if (s->closing)
        return 0;
    s->last_received_ms = clock_now_ms();
    if (s->behind) {
        /* lws had read this before reading paused: it goes behind the rest */
        if (!keep_unread(s, in, len))
            unread_lost(s);
        return 0;
    }
    /* The WebSocket carries a byte stream: fragments and message boundaries mean nothing. */
    svc_framer_push(&s->framer, in, len);
    start_turn(s);
    if (!handle_messages(s))
        fall_behind(s);
    return 0;
}

/* The turn of every connection that was behind when it began, in the order
 * they fell behind; one still behind afterwards queues again at the back
 * (round robin). One the relay closed meanwhile drops what waited; one whose
 * socket ended (service_server_destroy) is freed once it caught up. */
void service_servers_turn(struct timer_entry *e)
{
    struct service *svc = list_container_of(e, struct service, turn_timer);
    struct list_node now;
    list_init_head(&now);
    list_splice_back(&now, &svc->behind);
    while (!list_is_empty(&now)) {
        struct service_server *s = list_container_of(now.next, struct service_server, behind_link);
        list_unlink(&s->behind_link);
        if (!s->closing) {
            start_turn(s);
            s->turn_work = 0; /* this is its turn (the poll() loop counts no turns) */
            s->last_received_ms = clock_now_ms(); /* the app is not silent: the relay is not reading */
            if (!handle_messages(s)) {
                s->service->stats.fanout_turns_deferred++;
                queue_turn(s);
                continue;
            }
        }
        catch_up(s);
        if (s->ended)
            server_free(s);
    }
}

int service_server_writeable(struct service_server *s)
{
    if (s->batch) {
        msg_queue_push(&s->out, s->batch);
        s->batch = NULL;
    }
    if (!wsmsg_flush(s->wsi, &s->out))
        return -1;
    if (!list_is_empty(&s->uplink.full_channels) && service_server_queued(s) <= s->service->loop->cfg->max_buffered_bytes / 2)
        service_channels_drained(&s->uplink.full_channels);
    if (s->closing && msg_queue_is_empty(&s->out) && !s->batch && !lws_partial_buffered(s->wsi))
        return -1;
    return 0;
}

/* ----------------------------------------------------------- lifecycle */

int service_server_confirm(struct service *svc, struct lws *wsi)
{
    const struct relay_config *cfg = svc->loop->cfg;
    char hub_key[256], cid[256], token[SVC_TOKEN_MAX_CHARS + 1], header_id[256];
    if (svc->stopping) /* the app retries with back-off, to another relay if there is one */
        return http_refuse_upgrade(cfg, wsi, 503, "The relay is shutting down.");
    int hub_len = http_query_arg(wsi, "hub", hub_key, sizeof hub_key);
    int cid_len = http_query_arg(wsi, "cid", cid, sizeof cid);
    if (hub_len == HTTP_ARG_UNUSABLE_LEN || cid_len == HTTP_ARG_UNUSABLE_LEN)
        return http_refuse_upgrade(cfg, wsi, 400, "hub or cid is too long (255 bytes at most)");
    if (hub_len <= 0 || cid_len <= 0)
        return http_refuse_upgrade(cfg, wsi, 400, "hub and cid are required");
    int token_len = service_request_token(wsi, token, sizeof token);
    struct svc_token_check check = {
        .keys = svc->keys, .key_count = svc->key_count, .now = service_unix_now(),
        .skew = SVC_TOKEN_DEFAULT_SKEW, .kind = SVC_TOKEN_SERVER, .hub = span_make(hub_key, (size_t)hub_len),
    };
    struct svc_token t;
    struct proto_error err = { 0 };
    svc_token_init(&t);
    if (token_len <= 0 || svc_token_verify(span_make(token, (size_t)token_len), &check, &t, &err) != PROTO_OK) {
        svc->stats.servers_refused++;
        log_info("service: refused a server connection for hub %s: %s", hub_key,
                 token_len <= 0 ? "no token" : err.detail);
        return http_refuse_upgrade(cfg, wsi, 401, "Unauthorized");
    }
    struct service_hub *hub = service_hub_get(svc, span_make(hub_key, (size_t)hub_len), service_channel_open);
    struct service_server *s = hub ? calloc(1, sizeof *s) : NULL;
    if (!s) {
        svc_token_free(&t);
        return hub ? -1 : http_refuse_upgrade(cfg, wsi, 400, "not a hub name");
    }
    int header_len = -1;
    {
        int n = lws_hdr_custom_length(wsi, "x-asrs-server-id:", 17);
        if (n > 0 && (size_t)n < sizeof header_id)
            header_len = lws_hdr_custom_copy(wsi, header_id, (int)sizeof header_id, "x-asrs-server-id:", 17);
    }
    s->server_id = span_is_set(t.name_id) ? strndup(t.name_id.ptr, t.name_id.len)
                                          : strdup(header_len > 0 ? header_id : "");
    s->conn_id = strdup(cid);
    svc_token_free(&t);
    if (!s->server_id || !s->conn_id) {
        free(s->server_id);
        free(s->conn_id);
        free(s);
        return -1;
    }
    s->role = WSI_ROLE_SERVICE_SERVER;
    s->wsi = wsi;
    s->service = svc;
    s->hub = hub;
    svc_framer_init(&s->framer, config_hub_message_limit(cfg));
    buf_init(&s->unread);
    list_init_node(&s->behind_link);
    msg_queue_init(&s->out);
    s->uplink.write = uplink_write;
    s->uplink.queued = uplink_queued;
    list_init_head(&s->uplink.full_channels);
    timer_entry_init(&s->tick, server_tick);
    list_push_back(&svc->servers, &s->link);
    svc->server_count++;
    lws_set_opaque_user_data(wsi, s);
    return 0;
}

void service_server_established(struct service_server *s)
{
    uint64_t now = clock_now_ms();
    s->last_received_ms = now;
    s->last_ping_ms = now;
    loop_timer_schedule(s->service->loop, &s->tick, now + SERVICE_PING_MS);
}

static void client_lost(void *ctx, struct svc_client *client)
{
    struct service_server *s = ctx;
    service_channel_server_lost(service_channel_of(client), s->service->loop->destroying ? NULL
                                : s->fin ? "the app stopped"
                                         : "the app's server connection closed");
}

/* The connection is gone: its clients are closed, its memory freed. */
static void server_free(struct service_server *s)
{
    if (list_is_linked(&s->behind_link))
        list_unlink(&s->behind_link);
    if (s->behind)
        catch_up(s); /* what still waits is dropped (the relay is stopping) */
    s->closing = true;
    if (s->in_model) {
        size_t n = svc_hub_remove_server(&s->hub->model, &s->conn, client_lost, s);
        log_info("service: hub %s: app server connection %s gone, %zu client%s closed", s->hub->key, s->conn_id, n,
                 n == 1 ? "" : "s");
    }
    while (!list_is_empty(&s->uplink.full_channels))
        list_unlink(s->uplink.full_channels.next);
    list_unlink(&s->link);
    s->service->server_count--;
    svc_framer_free(&s->framer);
    buf_free(&s->unread);
    wsmsg_free(s->batch);
    msg_queue_clear(&s->out);
    free(s->conn_id);
    free(s->server_id);
    free(s);
}

void service_server_destroy(struct service_server *s)
{
    timer_cancel(&s->tick);
    s->wsi = NULL;
    if (s->behind && !s->closing && !s->service->stopping && !s->service->loop->destroying) {
        /* The socket ended while messages it brought waited for their turn (an abrupt end:
         * a clean close comes behind them and is read only once they were handled). They
         * are handled first, in their turns, as they would have been at once before the
         * budget: what the relay read of an app's connection is handled, whatever happens
         * to the socket afterwards. Its clients are closed after that (service_servers_turn);
         * meanwhile it takes no new ones and what is written to it goes nowhere. */
        s->ended = true;
        if (s->in_model)
            svc_server_stop_accepting(&s->conn);
        log_info("service: app server connection %s (hub %s) ended with %zu bytes of its messages still to handle",
                 server_name(s), s->hub->key, s->unread.len);
        return;
    }
    server_free(s);
}

void service_servers_shutdown(struct service *svc)
{
    svc->stopping = true;
    struct list_node *n = svc->servers.next;
    while (n != &svc->servers) {
        struct service_server *s = list_container_of(n, struct service_server, link);
        n = n->next;
        if (s->ended) /* its socket is gone already: what still waits is dropped */
            server_free(s);
        else
            close_server(s, LWS_CLOSE_STATUS_GOINGAWAY, "the relay is shutting down");
    }
}
