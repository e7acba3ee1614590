/* legacy_session.c - a legacy SignalR connection translated to Core hub links (see legacy_session.h). */
#include "relay/legacy_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "relay/backend.h"
#include "relay/clock.h"
#include "protocol/core_json.h"
#include "protocol/handshake.h"
#include "relay/http.h"
#include "protocol/legacy_cursor.h"
#include "protocol/legacy_frame.h"
#include "protocol/legacy_invocation.h"
#include "protocol/legacy_translate.h"
#include "relay/log.h"
#include "protocol/negotiate.h"
#include "relay/relay.h"

#define REPLAY_MAX_MESSAGES 1000      /* the original keeps 1000 per stream */
#define REPLAY_MAX_BYTES (1u << 20)
#define STREAMING_MISUSE_HEAD "The client attempted to invoke the streaming '"
#define STREAMING_MISUSE_TAIL "' method with a non-streaming invocation."
#define CLIENT_RESULTS_UNSUPPORTED "Client results are not supported: the client is a legacy ASP.NET SignalR client."

enum link_state { LINK_NEGOTIATING, LINK_CONNECTING, LINK_READY, LINK_FAILED };

/* One legacy invocation awaiting its Core completion. */
struct legacy_call {
    struct list_node node;
    uint64_t core_id;
    char *legacy_id;
    char *target;
    struct buf args;  /* kept for a re-invocation as a stream */
    bool streaming;
};

struct legacy_link {
    struct legacy_session *session;
    const struct hub_route *route;
    char hub_as_spelled[CONN_TOKEN_MAX_HUB_LEN + 1];
    bool listed;
    enum link_state state;
    struct backend_negotiate *negotiating;
    struct backend_link *backend;
    struct msg_queue early;  /* invocations before the backend link exists */
    struct list_node calls;
    uint64_t next_id;
    char failure[256];
};

static void session_end(struct legacy_session *s, const char *error_text);
static void check_start(struct legacy_session *s);

/* ------------------------------------------------------------ to client */

static void queue_text(struct legacy_session *s, const char *data, size_t len)
{
    if (!s->wsi)
        return;
    struct wsmsg *m = wsmsg_copy(data, len, false);
    if (!m)
        return;
    s->last_sent_ms = clock_now_ms();
    s->relay->loop.stats.messages_to_clients++;
    s->relay->loop.stats.bytes_to_clients += len;
    if (!s->channel_live) {
        /* Not established yet: lws writes nothing before ESTABLISHED. */
        msg_queue_push(&s->to_client, m);
        lws_callback_on_writable(s->wsi);
        return;
    }
    wsmsg_send(s->wsi, &s->to_client, m);
}

/* {"C":"<cursor of last>","M":[elements...]} with the given head flags. */
static bool encode_frame(struct legacy_session *s, struct buf *out, uint64_t last_seq, bool init,
                         void (*add_elements)(void *ctx, struct legacy_response *r), void *ctx)
{
    char cursor[LEGACY_CURSOR_MAX];
    size_t n = legacy_cursor_format(cursor, s->relay->instance_id, last_seq);
    struct legacy_response_head head = { .cursor = span_make(cursor, n), .initializing = init };
    struct legacy_response r;
    if (legacy_response_begin(&r, out, &head, NULL) != PROTO_OK)
        return false;
    if (add_elements)
        add_elements(ctx, &r);
    return legacy_response_end(&r, NULL) == PROTO_OK;
}

static void add_one(void *ctx, struct legacy_response *r)
{
    legacy_response_add_raw(r, *(const struct span *)ctx, NULL);
}

/* Every message to the client goes through the ring first, so a reconnect can replay it. */
static void push_element(struct legacy_session *s, struct span element)
{
    uint64_t seq = replay_ring_append(&s->ring, element.ptr, element.len);
    if (!seq || !s->channel_live || s->closing)
        return;
    struct buf frame;
    buf_init(&frame);
    if (encode_frame(s, &frame, seq, false, add_one, &element))
        queue_text(s, frame.data, frame.len);
    buf_free(&frame);
}

struct replay_ctx {
    struct legacy_response *r;
};

static void add_replayed(void *ctx, const struct replay_entry *e)
{
    struct replay_ctx *c = ctx;
    legacy_response_add_raw(c->r, span_make(e->data, e->len), NULL);
}

struct replay_all {
    struct legacy_session *s;
    uint64_t after;
};

static void add_all_after(void *ctx, struct legacy_response *r)
{
    struct replay_all *a = ctx;
    struct replay_ctx c = { r };
    replay_ring_after(&a->s->ring, a->after, add_replayed, &c);
}

static void send_error_frame(struct legacy_session *s, const char *text)
{
    struct buf out;
    buf_init(&out);
    if (legacy_error_frame_encode(&out, span_from_cstr(text)))
        queue_text(s, out.data, out.len);
    buf_free(&out);
}

/* ------------------------------------------------- streaming methods cache */

static struct route_state *route_state_of(struct relay *relay, const struct hub_route *route)
{
    return &relay->route_states[route - relay->loop.cfg->hubs];
}

static bool route_is_streaming(struct relay *relay, const struct hub_route *route, const char *method)
{
    const struct route_state *rs = route_state_of(relay, route);
    for (size_t i = 0; i < rs->streaming_count; i++)
        if (strcasecmp(rs->streaming_methods[i], method) == 0)
            return true;
    return false;
}

static void route_mark_streaming(struct relay *relay, const struct hub_route *route, const char *method)
{
    struct route_state *rs = route_state_of(relay, route);
    if (route_is_streaming(relay, route, method) || rs->streaming_count >= ROUTE_MAX_STREAMING_METHODS)
        return;
    char *copy = strdup(method);
    if (copy) {
        rs->streaming_methods[rs->streaming_count++] = copy;
        log_info("legacy: hub %s method %s is a stream; legacy calls to it now get progress messages",
                 route->name, method);
    }
}

/* ---------------------------------------------------------------- calls */

static void call_free(struct legacy_call *c)
{
    list_unlink(&c->node);
    free(c->legacy_id);
    free(c->target);
    buf_free(&c->args);
    free(c);
}

static struct legacy_call *call_find(struct legacy_link *l, struct span core_id)
{
    char text[24];
    if (core_id.len == 0 || core_id.len >= sizeof text)
        return NULL;
    memcpy(text, core_id.ptr, core_id.len);
    text[core_id.len] = '\0';
    char *end;
    unsigned long long id = strtoull(text, &end, 10);
    if (*end)
        return NULL;
    for (struct list_node *n = l->calls.next; n != &l->calls; n = n->next) {
        struct legacy_call *c = list_container_of(n, struct legacy_call, node);
        if (c->core_id == id)
            return c;
    }
    return NULL;
}

/* The legacy hub result for an invocation the relay answers itself. */
static void send_result_error(struct legacy_session *s, const char *legacy_id, const char *text)
{
    struct legacy_hub_result res = { .id = span_from_cstr(legacy_id), .error = span_from_cstr(text) };
    struct buf out;
    buf_init(&out);
    if (legacy_hub_result_encode(&out, &res, NULL) == PROTO_OK)
        queue_text(s, out.data, out.len);
    buf_free(&out);
}

/* ---------------------------------------------------------------- links */

static void link_send(struct legacy_link *l, struct wsmsg *m)
{
    if (l->backend)
        backend_link_send(l->backend, m);
    else
        msg_queue_push(&l->early, m);
}

static bool link_send_json(struct legacy_link *l, const struct hub_msg *msg)
{
    struct buf out;
    buf_init(&out);
    bool ok = core_json_encode(msg, &out, NULL) == PROTO_OK;
    struct wsmsg *m = ok ? wsmsg_copy(out.data, out.len, false) : NULL;
    buf_free(&out);
    if (m)
        link_send(l, m);
    return m != NULL;
}

static bool send_call(struct legacy_link *l, struct legacy_call *c)
{
    char id[24];
    c->core_id = l->next_id++;
    snprintf(id, sizeof id, "%llu", (unsigned long long)c->core_id);
    struct hub_msg msg;
    hub_msg_init(&msg);
    msg.kind = c->streaming ? HUB_MSG_STREAM_INVOCATION : HUB_MSG_INVOCATION;
    msg.invocation_id = span_from_cstr(id);
    msg.target = span_from_cstr(c->target);
    if (c->args.len)
        msg.args = (struct payload){ PAYLOAD_JSON, buf_span(&c->args) };
    return link_send_json(l, &msg);
}

static void link_fail_calls(struct legacy_link *l, const char *text)
{
    while (!list_is_empty(&l->calls)) {
        struct legacy_call *c = list_container_of(l->calls.next, struct legacy_call, node);
        send_result_error(l->session, c->legacy_id, text);
        call_free(c);
    }
    msg_queue_clear(&l->early);
}

static void link_close(struct legacy_link *l)
{
    if (l->negotiating)
        backend_negotiate_cancel(l->negotiating);
    l->negotiating = NULL;
    if (l->backend)
        backend_link_close(l->backend);
    l->backend = NULL;
}

static void link_free(struct legacy_link *l)
{
    link_close(l);
    while (!list_is_empty(&l->calls))
        call_free(list_container_of(l->calls.next, struct legacy_call, node));
    msg_queue_clear(&l->early);
    free(l);
}

static void link_failed(struct legacy_link *l, const char *why)
{
    struct legacy_session *s = l->session;
    l->state = LINK_FAILED;
    snprintf(l->failure, sizeof l->failure, "The relay lost its connection to the backend hub '%s'%s%s",
             l->route->name, why ? ": " : ".", why ? why : "");
    log_info("legacy %s: backend link for hub %s failed: %s", s->connection_id, l->route->name,
             why ? why : "closed");
    link_close(l);
    link_fail_calls(l, l->failure);
    if (l->listed && s->start.wsi == NULL && s->started)
        session_end(s, l->failure);
    else
        check_start(s);
}

static void on_backend_opened(void *owner)
{
    (void)owner;
}

static void handle_core_invocation(struct legacy_link *l, struct hub_msg *msg)
{
    if (span_is_set(msg->invocation_id) && msg->invocation_id.len > 0) {
        /* The backend awaits a client result a legacy client cannot give: answer at once. */
        struct hub_msg reply;
        hub_msg_init(&reply);
        reply.kind = HUB_MSG_COMPLETION;
        reply.invocation_id = msg->invocation_id;
        reply.completion = COMPLETION_ERROR;
        reply.error = SPAN_LIT(CLIENT_RESULTS_UNSUPPORTED);
        link_send_json(l, &reply);
        return;
    }
    if (!l->listed)
        return; /* not subscribed: the original would not deliver it either */
    struct buf out;
    buf_init(&out);
    if (legacy_translate_invocation(&out, msg, span_from_cstr(l->hub_as_spelled), NULL) == PROTO_OK)
        push_element(l->session, buf_span(&out));
    buf_free(&out);
}

static bool is_streaming_misuse(struct span error)
{
    size_t head = sizeof STREAMING_MISUSE_HEAD - 1, tail = sizeof STREAMING_MISUSE_TAIL - 1;
    return error.len > head + tail && memcmp(error.ptr, STREAMING_MISUSE_HEAD, head) == 0 &&
           memcmp(error.ptr + error.len - tail, STREAMING_MISUSE_TAIL, tail) == 0;
}

static void handle_core_completion(struct legacy_link *l, struct hub_msg *msg)
{
    struct legacy_call *c = call_find(l, msg->invocation_id);
    if (!c)
        return;
    if (msg->completion == COMPLETION_ERROR && !c->streaming && is_streaming_misuse(msg->error)) {
        route_mark_streaming(l->session->relay, l->route, c->target);
        c->streaming = true;
        send_call(l, c);
        return;
    }
    msg->invocation_id = span_from_cstr(c->legacy_id);
    struct buf out;
    buf_init(&out);
    if (legacy_translate_completion(&out, msg, NULL) == PROTO_OK)
        queue_text(l->session, out.data, out.len);
    buf_free(&out);
    call_free(c);
}

static void handle_core_stream_item(struct legacy_link *l, struct hub_msg *msg)
{
    struct legacy_call *c = call_find(l, msg->invocation_id);
    if (!c)
        return;
    msg->invocation_id = span_from_cstr(c->legacy_id);
    struct buf out;
    buf_init(&out);
    if (legacy_translate_stream_item(&out, msg, NULL) == PROTO_OK)
        push_element(l->session, buf_span(&out));
    buf_free(&out);
}

/* Returns false when the link (and maybe the session) ended. */
static bool handle_core_record(struct legacy_link *l, struct span record)
{
    if (l->state == LINK_CONNECTING) {
        struct handshake_response resp;
        if (handshake_decode_response(record.ptr, record.len, &resp, NULL) != PROTO_OK) {
            link_failed(l, "the backend's handshake answer could not be read");
            return false;
        }
        if (span_is_set(resp.error)) {
            char why[200];
            snprintf(why, sizeof why, "handshake refused: %.*s", (int)resp.error.len, resp.error.ptr);
            handshake_response_release(&resp);
            link_failed(l, why);
            return false;
        }
        handshake_response_release(&resp);
        l->state = LINK_READY;
        check_start(l->session);
        return true;
    }
    struct hub_msg msg;
    hub_msg_init(&msg);
    enum proto_status st = core_json_decode(record.ptr, record.len, &msg, NULL);
    bool alive = true;
    if (st == PROTO_OK) {
        switch (msg.kind) {
        case HUB_MSG_INVOCATION: handle_core_invocation(l, &msg); break;
        case HUB_MSG_COMPLETION: handle_core_completion(l, &msg); break;
        case HUB_MSG_STREAM_ITEM: handle_core_stream_item(l, &msg); break;
        case HUB_MSG_CLOSE: {
            char why[300];
            snprintf(why, sizeof why, "the backend closed the connection%s%.*s", span_is_set(msg.error) ? ": " : "",
                     (int)msg.error.len, msg.error.ptr ? msg.error.ptr : "");
            link_failed(l, why);
            alive = false;
            break;
        }
        default: break; /* pings and anything else need nothing from us */
        }
    } else if (st != PROTO_UNKNOWN_TYPE) {
        l->session->relay->loop.stats.protocol_errors++;
    }
    hub_msg_release(&msg);
    return alive;
}

static void on_backend_message(void *owner, struct wsmsg *m)
{
    struct legacy_link *l = owner;
    const char *data = (const char *)m->payload;
    size_t len = m->len;
    while (len > 0 && l->state != LINK_FAILED && !l->session->closing) {
        struct span record;
        size_t consumed;
        if (core_text_next_record(data, len, SIZE_MAX, &record, &consumed, NULL) != PROTO_OK)
            break; /* the backend sends whole records; a tail without RS is dropped */
        if (!handle_core_record(l, record))
            break;
        data += consumed;
        len -= consumed;
    }
    wsmsg_free(m);
}

static void on_backend_closed(void *owner, bool was_open, const char *why)
{
    struct legacy_link *l = owner;
    (void)was_open;
    l->backend = NULL;
    if (l->state != LINK_FAILED && !l->session->closing)
        link_failed(l, why ? why : "the backend closed the connection");
}

static void on_backend_drained(void *owner)
{
    struct legacy_link *l = owner;
    if (l->session->wsi)
        lws_rx_flow_control(l->session->wsi, 1);
}

static const struct backend_link_ops legacy_link_ops = {
    on_backend_opened, on_backend_message, on_backend_closed, on_backend_drained,
};

static void link_negotiated(void *owner, unsigned status, const char *body, size_t len, const char *error)
{
    struct legacy_link *l = owner;
    l->negotiating = NULL;
    char why[300];
    if (status != 200) {
        l->session->relay->loop.stats.backend_failures++;
        if (status)
            snprintf(why, sizeof why, "negotiate answered HTTP %u", status);
        else
            snprintf(why, sizeof why, "%s", error ? error : "unreachable");
        link_failed(l, why);
        return;
    }
    struct negotiate_response resp;
    if (negotiate_decode_response(body, len, &resp, NULL) != PROTO_OK || span_is_set(resp.error) ||
        span_is_set(resp.url)) {
        negotiate_response_release(&resp);
        link_failed(l, "its negotiate answer could not be used");
        return;
    }
    struct span token = resp.version > 0 ? resp.connection_token : resp.connection_id;
    char *backend_token = strndup(token.ptr, token.len);
    negotiate_response_release(&resp);
    struct legacy_session *s = l->session;
    struct backend_params params = { l->route, s->query, &s->headers, s->forwarded_for };
    l->backend = backend_token ? backend_link_open(&s->relay->backends, &params, backend_token, &legacy_link_ops, l) : NULL;
    free(backend_token);
    if (!l->backend) {
        link_failed(l, "the WebSocket connection could not be started");
        return;
    }
    l->state = LINK_CONNECTING;
    static const char handshake[] = "{\"protocol\":\"json\",\"version\":1}\x1e";
    struct wsmsg *hs = wsmsg_copy(handshake, sizeof handshake - 1, false);
    if (hs)
        backend_link_send(l->backend, hs);
    struct wsmsg *m;
    while ((m = msg_queue_pop(&l->early)) != NULL)
        backend_link_send(l->backend, m);
}

static struct legacy_link *link_open(struct legacy_session *s, const struct hub_route *route,
                                     struct span spelled, bool listed)
{
    struct legacy_link *l = calloc(1, sizeof *l);
    struct legacy_link **grown = l ? realloc(s->links, (s->link_count + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(l);
        return NULL;
    }
    s->links = grown;
    s->links[s->link_count++] = l;
    l->session = s;
    l->route = route;
    l->listed = listed;
    snprintf(l->hub_as_spelled, sizeof l->hub_as_spelled, "%.*s", (int)spelled.len, spelled.ptr);
    msg_queue_init(&l->early);
    list_init_head(&l->calls);
    l->state = LINK_NEGOTIATING;
    struct backend_params params = { route, s->query, &s->headers, s->forwarded_for };
    l->negotiating = backend_negotiate_start(&s->relay->backends, &params, link_negotiated, l);
    if (!l->negotiating)
        link_failed(l, "negotiate could not be started");
    return l;
}

static struct legacy_link *find_link(struct legacy_session *s, struct span hub)
{
    for (size_t i = 0; i < s->link_count; i++)
        if (span_eq_nocase(span_from_cstr(s->links[i]->route->name), hub))
            return s->links[i];
    return NULL;
}

/* ---------------------------------------------------------------- start */

/* 1: every listed link is ready, 0: still waiting, -1: one failed. */
static int links_ready(struct legacy_session *s, const char **failure)
{
    int result = 1;
    for (size_t i = 0; i < s->listed_count; i++) {
        struct legacy_link *l = s->links[i];
        if (l->state == LINK_FAILED) {
            *failure = l->failure;
            return -1;
        }
        if (l->state != LINK_READY)
            result = 0;
    }
    return result;
}

static void check_start(struct legacy_session *s)
{
    const char *failure = NULL;
    if (s->start.wsi && (s->closing || links_ready(s, &failure) != 0))
        http_answer_ready(s->start.wsi);
}

static int answer_start(struct legacy_session *s, struct lws *wsi)
{
    const char *failure = NULL;
    int ready = s->closing ? -1 : links_ready(s, &failure);
    if (ready == 0)
        return 0;
    if (ready > 0) {
        s->started = true;
        return http_respond(s->relay->loop.cfg, wsi, 200, "application/json; charset=UTF-8", LEGACY_START_RESPONSE,
                            sizeof LEGACY_START_RESPONSE - 1);
    }
    const char *text = failure ? failure : "The connection has ended.";
    return http_respond(s->relay->loop.cfg, wsi, 500, "text/plain", text, strlen(text));
}

int legacy_session_start(struct legacy_session *s, struct lws *wsi)
{
    const char *failure = NULL;
    if (s->closing || links_ready(s, &failure) != 0)
        return answer_start(s, wsi);
    if (s->start.wsi) /* a second /start while one waits: the newer one waits instead */
        lws_set_opaque_user_data(s->start.wsi, NULL);
    s->start.wsi = wsi;
    lws_set_opaque_user_data(wsi, &s->start);
    http_answer_later(wsi);
    return 0;
}

int legacy_session_start_writeable(struct legacy_start_wait *w, struct lws *wsi)
{
    struct legacy_session *s = w->session;
    const char *failure = NULL;
    if (!s->closing && links_ready(s, &failure) == 0)
        return 0;
    s->start.wsi = NULL;
    lws_set_opaque_user_data(wsi, NULL);
    if (s->closing)
        loop_timer_schedule(&s->relay->loop, &s->reap_timer, clock_now_ms());
    return answer_start(s, wsi);
}

void legacy_session_start_abandoned(struct legacy_start_wait *w)
{
    w->wsi = NULL;
    if (w->session->closing)
        loop_timer_schedule(&w->session->relay->loop, &w->session->reap_timer, clock_now_ms());
}

/* -------------------------------------------------------------- timers */

static void arm_keepalive(struct legacy_session *s)
{
    loop_timer_schedule(&s->relay->loop, &s->keepalive_timer, s->last_sent_ms + s->relay->loop.cfg->legacy_keepalive_ms);
}

/* Keep-alive `{}` when nothing else was sent for an interval, as the original.
 * Dead-connection detection, which legacy WebSocket clients leave to the
 * server: when nothing was heard from the client for an interval, a WebSocket
 * ping goes out (every client's WebSocket stack answers it); when nothing was
 * heard for the KeepAliveTimeout the clients themselves use (2 intervals) plus
 * one more interval, the socket is declared dead and closed, and the session
 * waits for a /reconnect as after any other drop. */
static void keepalive_due(struct timer_entry *e)
{
    struct legacy_session *s = list_container_of(e, struct legacy_session, keepalive_timer);
    if (!s->wsi || s->closing)
        return;
    uint64_t now = clock_now_ms(), interval = s->relay->loop.cfg->legacy_keepalive_ms;
    if (now - s->last_heard_ms >= 3 * interval) {
        log_info("legacy %s: nothing heard from the client for %llu ms; closing its dead socket", s->connection_id,
                 (unsigned long long)(now - s->last_heard_ms));
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        return;
    }
    if (now - s->last_heard_ms >= interval) {
        s->ping_due = true;
        lws_callback_on_writable(s->wsi);
    }
    if (now - s->last_sent_ms >= interval)
        queue_text(s, LEGACY_KEEPALIVE_FRAME, sizeof LEGACY_KEEPALIVE_FRAME - 1);
    loop_timer_schedule(&s->relay->loop, &s->keepalive_timer, now + interval);
}

void legacy_session_heard(struct legacy_session *s)
{
    s->last_heard_ms = clock_now_ms();
}

static void disconnect_due(struct timer_entry *e)
{
    struct legacy_session *s = list_container_of(e, struct legacy_session, disconnect_timer);
    if (s->wsi)
        return;
    log_info("legacy %s: client did not come back within the disconnect timeout", s->connection_id);
    session_end(s, NULL);
}

/* ------------------------------------------------------------ lifecycle */

static void session_free(struct legacy_session *s)
{
    timer_cancel(&s->keepalive_timer);
    timer_cancel(&s->disconnect_timer);
    timer_cancel(&s->reap_timer);
    if (s->start.wsi)
        lws_set_opaque_user_data(s->start.wsi, NULL);
    if (s->in_table)
        dict_remove(&s->relay->legacy_sessions, &s->entry);
    for (size_t i = 0; i < s->link_count; i++)
        link_free(s->links[i]);
    free(s->links);
    msg_queue_clear(&s->to_client);
    wsmsg_free(s->rx_partial);
    replay_ring_free(&s->ring);
    header_list_free(&s->headers);
    free(s->query);
    list_unlink(&s->all);
    s->relay->loop.stats.legacy_sessions_active--;
    free(s);
}

static void reap_due(struct timer_entry *e)
{
    struct legacy_session *s = list_container_of(e, struct legacy_session, reap_timer);
    if (!s->wsi && !s->start.wsi)
        session_free(s);
}

/* Ends the connection: links closed (the backend sees OnDisconnectedAsync),
 * the client told why when there is an error, the channel closed after its
 * last frames. Memory is released from the timer wheel, never from inside
 * the callback that ended the session. */
static void session_end(struct legacy_session *s, const char *error_text)
{
    if (s->closing)
        return;
    s->closing = true;
    if (s->in_table) {
        dict_remove(&s->relay->legacy_sessions, &s->entry);
        s->in_table = false;
    }
    timer_cancel(&s->keepalive_timer);
    for (size_t i = 0; i < s->link_count; i++)
        link_close(s->links[i]);
    check_start(s);
    if (s->wsi) {
        if (error_text)
            send_error_frame(s, error_text);
        lws_callback_on_writable(s->wsi);
    }
    timer_cancel(&s->disconnect_timer);
    loop_timer_schedule(&s->relay->loop, &s->reap_timer, clock_now_ms());
}

struct legacy_session *legacy_session_create(struct relay *relay, const char *connection_id,
                                             const struct legacy_hub_list *hubs, struct lws *wsi)
{
    struct legacy_session *s = calloc(1, sizeof *s);
    struct buf query;
    buf_init(&query);
    static const char *const not_forwarded[] = { "transport", "clientProtocol", "connectionToken", "connectionData",
                                                 "messageId", "groupsToken", "tid", "_", "noCache", "frameId" };
    if (!s || !http_query_forward(wsi, &query, not_forwarded, sizeof not_forwarded / sizeof not_forwarded[0]) ||
        !buf_append_byte(&query, '\0')) {
        free(s);
        buf_free(&query);
        return NULL;
    }
    s->role = WSI_ROLE_LEGACY_SESSION;
    s->relay = relay;
    snprintf(s->connection_id, sizeof s->connection_id, "%s", connection_id);
    s->query = query.data;
    header_list_capture(&s->headers, wsi);
    http_forwarded_for(wsi, s->forwarded_for, sizeof s->forwarded_for);
    s->start.role = WSI_ROLE_LEGACY_START;
    s->start.session = s;
    msg_queue_init(&s->to_client);
    replay_ring_init(&s->ring, REPLAY_MAX_MESSAGES, REPLAY_MAX_BYTES);
    timer_entry_init(&s->keepalive_timer, keepalive_due);
    timer_entry_init(&s->disconnect_timer, disconnect_due);
    timer_entry_init(&s->reap_timer, reap_due);
    relay->loop.stats.legacy_sessions_active++;
    list_push_back(&relay->legacy_list, &s->all);
    if (dict_insert(&relay->legacy_sessions, &s->entry, span_from_cstr(s->connection_id)) != DICT_OK) {
        session_free(s);
        return NULL;
    }
    s->in_table = true;
    for (size_t i = 0; i < hubs->count; i++) {
        const struct hub_route *route = config_find_hub(relay->loop.cfg, hubs->names[i].ptr, hubs->names[i].len);
        if (route && !find_link(s, span_from_cstr(route->name)))
            link_open(s, route, hubs->names[i], true);
    }
    s->listed_count = s->link_count;
    return s;
}

struct legacy_session *legacy_session_find(struct relay *relay, const char *connection_id)
{
    struct dict_entry *e = dict_find(&relay->legacy_sessions, span_from_cstr(connection_id));
    return e ? list_container_of(e, struct legacy_session, entry) : NULL;
}

void legacy_session_attach(struct legacy_session *s, struct lws *wsi, bool reconnect, uint64_t cursor,
                           bool cursor_ok)
{
    if (s->wsi && s->wsi != wsi) {
        /* A newer channel replaces the old one, which is closed. */
        lws_set_opaque_user_data(s->wsi, NULL);
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        msg_queue_clear(&s->to_client);
    }
    timer_cancel(&s->disconnect_timer);
    s->wsi = wsi;
    s->channel_live = false;
    s->channel_reconnect = reconnect;
    s->reconnect_cursor = cursor;
    s->reconnect_gap = reconnect && !cursor_ok;
    lws_set_opaque_user_data(wsi, s);
}

void legacy_session_established(struct legacy_session *s)
{
    struct buf frame;
    buf_init(&frame);
    bool reconnect = s->channel_reconnect;
    uint64_t last = replay_ring_last_seq(&s->ring);
    if (reconnect && (s->reconnect_gap || replay_ring_after(&s->ring, s->reconnect_cursor, NULL, NULL) == REPLAY_GAP)) {
        log_info("legacy %s: reconnect cursor cannot be replayed; telling the client to start over", s->connection_id);
        session_end(s, "The connection was lost for too long to replay its messages; start a new connection.");
        buf_free(&frame);
        return;
    }
    struct replay_all all = { s, reconnect ? s->reconnect_cursor : 0 };
    if (!reconnect || last > s->reconnect_cursor) {
        if (encode_frame(s, &frame, last, !reconnect, add_all_after, &all))
            queue_text(s, frame.data, frame.len);
    }
    buf_free(&frame);
    s->channel_live = true;
    s->last_sent_ms = clock_now_ms();
    s->last_heard_ms = s->last_sent_ms;
    arm_keepalive(s);
}

/* --------------------------------------------------------- from client */

static void forward_invocation(struct legacy_session *s, struct hub_msg *msg)
{
    char legacy_id[128];
    snprintf(legacy_id, sizeof legacy_id, "%.*s", (int)msg->invocation_id.len,
             msg->invocation_id.ptr ? msg->invocation_id.ptr : "");
    struct legacy_link *l = find_link(s, msg->hub);
    if (l && l->state == LINK_FAILED && !l->listed) {
        /* An on-demand link that failed earlier: try again for this call. */
        for (size_t i = s->listed_count; i < s->link_count; i++)
            if (s->links[i] == l) {
                s->links[i] = s->links[--s->link_count];
                break;
            }
        link_free(l);
        l = NULL;
    }
    if (!l) {
        const struct hub_route *route = config_find_hub(s->relay->loop.cfg, msg->hub.ptr, msg->hub.len);
        if (!route) {
            char text[200];
            snprintf(text, sizeof text, "'%.*s' Hub could not be resolved.", (int)msg->hub.len, msg->hub.ptr);
            if (legacy_id[0])
                send_result_error(s, legacy_id, text);
            return;
        }
        l = link_open(s, route, msg->hub, false);
        if (!l)
            return;
    }
    if (l->state == LINK_FAILED) {
        if (legacy_id[0])
            send_result_error(s, legacy_id, l->failure);
        return;
    }
    char target[256];
    snprintf(target, sizeof target, "%.*s", (int)msg->target.len, msg->target.ptr);
    if (!legacy_id[0]) {
        /* No I: fire and forget, as a Core invocation without an id. */
        struct hub_msg fire;
        hub_msg_init(&fire);
        fire.kind = HUB_MSG_INVOCATION;
        fire.target = msg->target;
        fire.args = msg->args;
        link_send_json(l, &fire);
        return;
    }
    struct legacy_call *c = calloc(1, sizeof *c);
    if (!c)
        return;
    buf_init(&c->args);
    c->legacy_id = strdup(legacy_id);
    c->target = strdup(target);
    c->streaming = route_is_streaming(s->relay, l->route, target);
    list_push_back(&l->calls, &c->node);
    if (!c->legacy_id || !c->target || (msg->args.encoding == PAYLOAD_JSON && !buf_append_span(&c->args, msg->args.bytes)) ||
        !send_call(l, c)) {
        if (c->legacy_id)
            send_result_error(s, c->legacy_id, "The relay ran out of memory.");
        call_free(c);
        return;
    }
    if (l->backend && backend_link_queued(l->backend) > s->relay->loop.cfg->max_buffered_bytes && s->wsi) {
        s->client_paused = true;
        s->relay->loop.stats.flow_control_pauses++;
        lws_rx_flow_control(s->wsi, 0);
    }
}

static void handle_client_text(struct legacy_session *s, const char *data, size_t len)
{
    struct hub_msg msg;
    struct proto_error err = { 0 };
    hub_msg_init(&msg);
    enum proto_status st = legacy_invocation_decode(data, len, &msg, &err);
    if (st == PROTO_OK) {
        forward_invocation(s, &msg);
    } else {
        s->relay->loop.stats.protocol_errors++;
        log_info("legacy %s: unreadable invocation (%s: %s)", s->connection_id, proto_status_name(st), err.detail);
        /* Answer with an error if the id could be read, as the original answers bad calls. */
        if (span_is_set(msg.invocation_id) && msg.invocation_id.len > 0) {
            char id[128], text[300];
            snprintf(id, sizeof id, "%.*s", (int)msg.invocation_id.len, msg.invocation_id.ptr);
            snprintf(text, sizeof text, "The relay could not read the invocation: %s", err.detail ? err.detail : "malformed");
            send_result_error(s, id, text);
        }
    }
    hub_msg_release(&msg);
}

int legacy_session_receive(struct legacy_session *s, const void *in, size_t len)
{
    s->last_heard_ms = clock_now_ms();
    if (s->closing)
        return 0;
    enum wsmsg_fault fault;
    struct wsmsg *whole = wsmsg_receive(&s->rx_partial, s->wsi, in, len, &s->relay->loop, "legacy session", &fault);
    if (!whole) {
        if (fault != WSMSG_MORE)
            session_end(s, fault == WSMSG_TOO_LARGE ? "The message exceeded the relay's maximum message size."
                                                    : "The relay ran out of memory.");
        return 0;
    }
    handle_client_text(s, (const char *)whole->payload, whole->len);
    wsmsg_free(whole);
    return 0;
}

int legacy_session_writeable(struct legacy_session *s, struct lws *wsi)
{
    if (wsi != s->wsi)
        return -1;
    if (s->ping_due && !lws_partial_buffered(wsi)) {
        /* Not empty: lws passes only non-empty pongs up to LWS_CALLBACK_RECEIVE_PONG. */
        unsigned char ping[LWS_PRE + 2] = { [LWS_PRE] = 's', [LWS_PRE + 1] = 'r' };
        s->ping_due = false;
        if (lws_write(wsi, ping + LWS_PRE, 2, LWS_WRITE_PING) < 0)
            return -1;
    }
    if (!wsmsg_flush(wsi, &s->to_client))
        return -1;
    if (s->closing && msg_queue_is_empty(&s->to_client) && !lws_partial_buffered(wsi)) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
        return -1;
    }
    return 0;
}

void legacy_session_channel_closed(struct legacy_session *s, struct lws *wsi)
{
    if (s->wsi != wsi)
        return;
    s->wsi = NULL;
    s->channel_live = false;
    s->client_paused = false;
    msg_queue_clear(&s->to_client);
    wsmsg_free(s->rx_partial);
    s->rx_partial = NULL;
    timer_cancel(&s->keepalive_timer);
    if (s->closing) {
        loop_timer_schedule(&s->relay->loop, &s->reap_timer, clock_now_ms());
        return;
    }
    /* The client may come back through /reconnect: keep the backend links
     * for DisconnectTimeout plus the original's 5 s transport threshold. */
    loop_timer_schedule(&s->relay->loop, &s->disconnect_timer,
                         clock_now_ms() + s->relay->loop.cfg->legacy_disconnect_ms + 5000);
}

void legacy_session_abort(struct legacy_session *s)
{
    log_debug("legacy %s: aborted by the client", s->connection_id);
    session_end(s, NULL);
}

void legacy_sessions_clear(struct relay *relay)
{
    while (!list_is_empty(&relay->legacy_list)) {
        struct legacy_session *s = list_container_of(relay->legacy_list.next, struct legacy_session, all);
        if (s->wsi)
            lws_set_opaque_user_data(s->wsi, NULL);
        if (s->start.wsi)
            lws_set_opaque_user_data(s->start.wsi, NULL);
        session_free(s);
    }
}

void legacy_sessions_shutdown(struct relay *relay)
{
    for (struct list_node *n = relay->legacy_list.next; n != &relay->legacy_list; n = n->next)
        session_end(list_container_of(n, struct legacy_session, all), NULL);
}
