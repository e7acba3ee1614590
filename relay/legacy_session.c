/* legacy_session.c - one legacy connection, whatever socket it has now (see legacy_session.h). */
#include "relay/legacy_session.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/legacy_cursor.h"
#include "protocol/legacy_frame.h"
#include "protocol/legacy_invocation.h"
#include "relay/clock.h"
#include "relay/http.h"
#include "relay/legacy_identity.h"
#include "relay/legacy_sse.h"
#include "relay/log.h"

/* The original keeps a connection this long past DisconnectTimeout before it ends it (its transport threshold). */
#define DISCONNECT_GRACE_MS 5000
/* Nothing heard from the client for this many keep-alive intervals: its socket is dead. */
#define DEAD_AFTER_INTERVALS 3

static void session_end(struct legacy_session *s, const char *error_text);
static const struct legacy_start_ops session_start_ops;

/* ------------------------------------------------------- to the client */

static void pause_links(struct legacy_session *s, bool paused);

/* A message for the client that cannot be kept ends the connection instead
 * of going missing (docs/ARCHITECTURE.md, out of memory). */
static void out_of_memory(struct legacy_session *s)
{
    if (s->closing)
        return;
    s->loop->stats.out_of_memory_closes++;
    log_conn_warn(s->connection_id, legacy_session_log_hub(s), "legacy: out of memory for a message to the client; ending the connection");
    session_end(s, LEGACY_OUT_OF_MEMORY_TEXT);
}

/* Every frame to the client goes out here. */
void legacy_session_queue_text(struct legacy_session *s, const char *data, size_t len)
{
    if (!s->wsi)
        return;
    bool sse = s->carrier == LEGACY_CARRIER_SSE;
    struct wsmsg *m = sse ? legacy_sse_event(data, len) : wsmsg_copy(data, len, false);
    if (!m) {
        out_of_memory(s);
        return;
    }
    s->last_sent_ms = clock_now_ms();
    s->loop->stats.messages_to_clients++;
    s->loop->stats.bytes_to_clients += len;
    if (sse)
        s->stream_frames_queued++;
    if (!s->channel_live || sse) {
        /* Not established yet: lws writes nothing before ESTABLISHED. */
        msg_queue_push(&s->to_client, m);
        lws_callback_on_writable(s->wsi);
    } else {
        wsmsg_send(s->wsi, &s->to_client, m);
    }
    if (s->to_client.bytes > s->loop->cfg->max_buffered_bytes)
        pause_links(s, true); /* the client is slow: stop reading the hubs */
}

/* {"C":"<cursor of last>","M":[elements...]} with the given head flags. */
static bool encode_frame(struct legacy_session *s, struct buf *out, uint64_t last_seq, bool init,
                         void (*add_elements)(void *ctx, struct legacy_response *r), void *ctx)
{
    char cursor[LEGACY_CURSOR_MAX];
    size_t n = legacy_cursor_format(cursor, s->table->instance_id, last_seq);
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

/* A pushed element's frame keeps the table's buffer past this size only until it is sent. */
#define FRAME_BUFFER_KEPT (64u * 1024u)

/* The frame of one pushed element, built in the table's reused buffer after LWS_PRE bytes of
 * headroom, so that an established WebSocket writes it from there: a fan-out to many legacy
 * recipients allocates and copies no frame per recipient (wsmsg_send_borrowed). Anything else
 * (SSE, not established yet) takes the copying path. */
static void push_frame(struct legacy_session *s, uint64_t seq, struct span element)
{
    struct buf *frame = &s->table->frame;
    buf_reset(frame);
    if (!buf_reserve(frame, LWS_PRE + element.len + 64)) {
        out_of_memory(s);
        return;
    }
    frame->len = LWS_PRE;
    if (!encode_frame(s, frame, seq, false, add_one, &element)) {
        out_of_memory(s);
    } else if (s->wsi && s->carrier == LEGACY_CARRIER_WEBSOCKET && s->channel_live) {
        unsigned char *data = (unsigned char *)frame->data + LWS_PRE;
        size_t len = frame->len - LWS_PRE;
        bool nomem;
        s->last_sent_ms = clock_now_ms();
        s->loop->stats.messages_to_clients++;
        s->loop->stats.bytes_to_clients += len;
        if (!wsmsg_send_borrowed(s->wsi, &s->to_client, data, len, false, &nomem) && nomem)
            out_of_memory(s);
        else if (s->to_client.bytes > s->loop->cfg->max_buffered_bytes)
            pause_links(s, true); /* the client is slow: stop reading the hubs */
    } else {
        legacy_session_queue_text(s, frame->data + LWS_PRE, frame->len - LWS_PRE);
    }
    if (frame->cap > FRAME_BUFFER_KEPT)
        buf_free(frame);
}

/* Every message to the client goes through the ring first, so a reconnect can replay it. The
 * ring takes a reference to the element: a fan-out's recipients share one. */
void legacy_session_push_text(struct legacy_session *s, struct replay_text *text)
{
    struct span element = span_make(text->data, text->len);
    uint64_t seq = replay_ring_append_text(&s->ring, text);
    if (!seq) {
        out_of_memory(s);
        return;
    }
    static const char progress[] = "{\"I\":\"P|";
    bool is_progress = element.len >= sizeof progress - 1 && memcmp(element.ptr, progress, sizeof progress - 1) == 0;
    if (is_progress)
        s->progress_seq = seq;
    if (s->long_polling) {
        /* What the client has not polled yet is its queue: bounded as a stream's. */
        s->unacked_bytes += element.len;
        legacy_session_acked(s, s->acked_seq);
    }
    /* Before /start is answered (OnConnected's messages, early broadcasts) the
     * ring holds it: flush_after_start sends it once the answer is written
     * (the original writes them while it handles /start). */
    if (s->poll && !s->closing && s->started) {
        legacy_poll_answer(s, NULL);
        return;
    }
    if (!s->channel_live || s->closing || !s->started)
        return;
    push_frame(s, seq, element);
    if (is_progress)
        s->progress_frame = s->stream_frames_queued;
}

struct replay_ctx {
    struct legacy_response *r;
};

static void add_replayed(void *ctx, const struct replay_entry *e)
{
    struct replay_ctx *c = ctx;
    legacy_response_add_raw(c->r, span_make(e->text->data, e->text->len), NULL);
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
        legacy_session_queue_text(s, out.data, out.len);
    buf_free(&out);
}

/* The hub result for an invocation the relay answers itself. */
void legacy_session_result_error(struct legacy_session *s, const char *legacy_id, const char *text)
{
    struct buf out;
    buf_init(&out);
    if (legacy_result_error(&out, legacy_id, text) && !legacy_send_result(s, out.data, out.len))
        legacy_session_queue_text(s, out.data, out.len);
    buf_free(&out);
}

/* ---------------------------------------------------------- flow control */

/* The queue toward the client is over the mark (paused = true) or fell to
 * half of it: every link stops or resumes passing the hubs' messages. */
void legacy_session_pause_links(struct legacy_session *s, bool paused)
{
    pause_links(s, paused);
}

static void pause_links(struct legacy_session *s, bool paused)
{
    if (paused && s->closing)
        return;
    if (s->links_paused == paused)
        return;
    s->links_paused = paused;
    if (paused)
        s->loop->stats.flow_control_pauses++;
    for (size_t i = 0; i < s->link_count; i++)
        legacy_link_pause(s->links[i], paused);
}

/* ---------------------------------------------------------------- start */

static enum legacy_start_verdict start_verdict(void *owner, const char **failure, unsigned *status)
{
    struct legacy_session *s = owner;
    if (s->closing)
        return LEGACY_START_FAILED;
    enum legacy_start_verdict v = LEGACY_START_OK;
    for (size_t i = 0; i < s->listed_count; i++) {
        struct legacy_link *l = s->links[i];
        if (l->state == LEGACY_LINK_FAILED) {
            *failure = l->failure;
            *status = l->failure_status;
            return LEGACY_START_FAILED;
        }
        if (l->state != LEGACY_LINK_READY)
            v = LEGACY_START_WAIT;
    }
    return v;
}

/* /start was just answered "started": what the hubs pushed before it goes out
 * now, in one frame (a fresh connection has sent none of its ring yet; all
 * it still holds, should more have come than it keeps). */
static void flush_after_start(struct legacy_session *s)
{
    if (s->poll && !s->closing) { /* a poll held meanwhile takes them, if there are any */
        if (replay_ring_last_seq(&s->ring) > s->poll->cursor)
            legacy_poll_answer(s, NULL);
        return;
    }
    uint64_t last = replay_ring_last_seq(&s->ring);
    if (!s->channel_live || s->closing || s->ring.count == 0)
        return;
    struct replay_all all = { s, last - s->ring.count };
    struct buf frame;
    buf_init(&frame);
    if (encode_frame(s, &frame, last, false, add_all_after, &all))
        legacy_session_queue_text(s, frame.data, frame.len);
    else
        out_of_memory(s);
    buf_free(&frame);
}

static void start_released(void *owner, bool started)
{
    struct legacy_session *s = owner;
    if (started && !s->started) {
        s->started = true;
        flush_after_start(s);
    }
    if (s->closing)
        loop_timer_schedule(s->loop, &s->reap_timer, clock_now_ms());
}

static const struct legacy_start_ops session_start_ops = { start_verdict, start_released };

int legacy_session_start(struct legacy_session *s, struct lws *wsi)
{
    return legacy_start_request(&s->start, wsi);
}

void legacy_session_start_implied(struct legacy_session *s)
{
    s->started = true;
}

/* -------------------------------------------------------------- timers */

static void legacy_arm_keepalive(struct legacy_session *s)
{
    loop_timer_schedule(s->loop, &s->keepalive_timer, s->last_sent_ms + s->loop->cfg->legacy_keepalive_ms);
}

/* Keep-alive `{}` when nothing else was sent for an interval, as the original.
 * Dead-connection detection, which legacy WebSocket clients leave to the
 * server: when nothing was heard from the client for an interval, a WebSocket
 * ping goes out (every client's WebSocket stack answers it); when nothing was
 * heard for the KeepAliveTimeout the clients themselves use (2 intervals) plus
 * one more interval, the socket is declared dead and closed, and the session
 * waits for a /reconnect as after any other drop. */
/* When the keep-alive timer must look again: an interval after the last frame
 * sent (so the silence toward the client never exceeds one interval, however
 * close to a check a message went out), or an interval after the last thing
 * heard, for the dead-socket watch; whichever comes first, never before now. */
static uint64_t legacy_keepalive_next(const struct legacy_session *s, uint64_t now, uint64_t interval)
{
    uint64_t send_due = s->last_sent_ms + interval;
    uint64_t heard_due = s->last_heard_ms + interval;
    if (heard_due <= now)
        heard_due = now + interval; /* already pinging: look again in an interval */
    uint64_t next = send_due < heard_due ? send_due : heard_due;
    return next > now ? next : now + 1;
}

/* A WebSocket ping; false when the write failed. Not empty: lws passes only non-empty pongs
 * up to LWS_CALLBACK_RECEIVE_PONG. */
static bool write_ping(struct lws *wsi)
{
    unsigned char ping[LWS_PRE + 2] = { [LWS_PRE] = 's', [LWS_PRE + 1] = 'r' };
    return lws_write(wsi, ping + LWS_PRE, 2, LWS_WRITE_PING) >= 0;
}

/* The dead-socket watch's ping: written at once when nothing is ahead of it on an established
 * WebSocket (as wsmsg_send writes a message), else on the next WRITEABLE. A client that only
 * listens is pinged every interval, so the WRITEABLE round trip (an epoll_ctl pair and a loop
 * turn for each client) would be paid by every listener of a busy hub, every interval. */
static void ping_client(struct legacy_session *s)
{
    if (s->carrier == LEGACY_CARRIER_WEBSOCKET && s->channel_live && s->ws_close == WSMSG_CLOSE_NONE &&
        !s->ping_due && msg_queue_is_empty(&s->to_client) && !lws_partial_buffered(s->wsi)) {
        if (!write_ping(s->wsi))
            lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        return;
    }
    s->ping_due = true;
    lws_callback_on_writable(s->wsi);
}

static void legacy_keepalive_due(struct timer_entry *e)
{
    struct legacy_session *s = list_container_of(e, struct legacy_session, keepalive_timer);
    if (!s->wsi || s->closing)
        return;
    uint64_t now = clock_now_ms(), interval = s->loop->cfg->legacy_keepalive_ms;
    if (s->carrier != LEGACY_CARRIER_WEBSOCKET)
        s->last_heard_ms = now; /* SSE: no pings; a dead stream is noticed when a write fails */
    if (now - s->last_heard_ms >= DEAD_AFTER_INTERVALS * interval) {
        log_conn_info(s->connection_id, legacy_session_log_hub(s), "legacy: nothing heard from the client for %llu ms; closing its dead socket",
                 (unsigned long long)(now - s->last_heard_ms));
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        return;
    }
    if (now - s->last_heard_ms >= interval)
        ping_client(s);
    if (now - s->last_sent_ms >= interval)
        legacy_session_queue_text(s, LEGACY_KEEPALIVE_FRAME, sizeof LEGACY_KEEPALIVE_FRAME - 1);
    if (s->wsi && !s->closing)
        loop_timer_schedule(s->loop, &s->keepalive_timer, legacy_keepalive_next(s, now, interval));
}

void legacy_session_heard(struct legacy_session *s)
{
    s->last_heard_ms = clock_now_ms();
}

static void disconnect_due(struct timer_entry *e)
{
    struct legacy_session *s = list_container_of(e, struct legacy_session, disconnect_timer);
    if (s->wsi || s->poll)
        return;
    log_conn_info(s->connection_id, legacy_session_log_hub(s), "legacy: client did not come back within the disconnect timeout");
    session_end(s, NULL);
}

/* ------------------------------------------------------------ lifecycle */

void legacy_session_free(struct legacy_session *s)
{
    timer_cancel(&s->keepalive_timer);
    timer_cancel(&s->disconnect_timer);
    timer_cancel(&s->reap_timer);
    timer_cancel(&s->poll_timer);
    legacy_start_detach(&s->start);
    legacy_send_end_all(s, NULL);
    if (s->poll) {
        s->poll->owner = NULL;
        s->poll = NULL;
        s->loop->stats.legacy_polls_held--;
    }
    if (s->in_table)
        dict_remove(&s->table->by_id, &s->entry);
    for (size_t i = 0; i < s->link_count; i++)
        legacy_link_free(s->links[i]);
    free(s->links);
    msg_queue_clear(&s->to_client);
    wsmsg_free(s->rx_partial);
    replay_ring_free(&s->ring);
    header_list_free(&s->headers);
    legacy_identity_free(s->identity);
    free(s->query);
    list_unlink(&s->all);
    s->loop->stats.legacy_sessions_active--;
    capture_session_end(&s->capture);
    free(s);
}

/* Frees an ended session once its sockets are gone; the closing state's
 * deadline closes a channel (or /start) that has not taken its last frames
 * within RELAY_CLOSE_TIMEOUT_MS. Their closing brings the timer back. */
static void reap_due(struct timer_entry *e)
{
    struct legacy_session *s = list_container_of(e, struct legacy_session, reap_timer);
    if (!s->wsi && !s->start.wsi && !s->poll && list_is_empty(&s->sends)) {
        legacy_session_free(s);
        return;
    }
    uint64_t now = clock_now_ms();
    if (now < s->close_deadline_ms) {
        loop_timer_schedule(s->loop, &s->reap_timer, s->close_deadline_ms);
        return;
    }
    log_conn_info(s->connection_id, legacy_session_log_hub(s), "legacy: the client did not take its last frames within %d ms; closing its socket",
             RELAY_CLOSE_TIMEOUT_MS);
    if (s->wsi)
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
    if (s->start.wsi)
        lws_set_timeout(s->start.wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_ASYNC);
    loop_timer_schedule(s->loop, &s->reap_timer, now + RELAY_CLOSE_TIMEOUT_MS);
}

/* Ends the connection: links closed (the hub sees OnDisconnectedAsync),
 * the client told why when there is an error, the channel closed after its
 * last frames. Memory is released from the timer wheel, never from inside
 * the callback that ended the session. */
static void session_end(struct legacy_session *s, const char *error_text)
{
    if (s->closing)
        return;
    s->closing = true;
    log_conn_info(s->connection_id, legacy_session_log_hub(s), "legacy: connection ended");
    s->close_deadline_ms = clock_now_ms() + RELAY_CLOSE_TIMEOUT_MS;
    if (s->in_table) {
        dict_remove(&s->table->by_id, &s->entry);
        s->in_table = false;
    }
    timer_cancel(&s->keepalive_timer);
    for (size_t i = 0; i < s->link_count; i++)
        legacy_link_close(s->links[i]);
    legacy_start_check(&s->start);
    if (s->wsi) {
        if (error_text)
            send_error_frame(s, error_text);
        else if (s->carrier == LEGACY_CARRIER_WEBSOCKET && msg_queue_is_empty(&s->to_client))
            capture_ws_server_close(s->wsi, LWS_CLOSE_STATUS_NORMAL, NULL); /* recorded as decided: a crossing client close is second */
        lws_callback_on_writable(s->wsi);
    }
    legacy_poll_answer(s, error_text);
    legacy_send_end_all(s, error_text ? error_text : "The connection has ended.");
    timer_cancel(&s->poll_timer);
    timer_cancel(&s->disconnect_timer);
    loop_timer_schedule(s->loop, &s->reap_timer, clock_now_ms());
}

void legacy_session_end(struct legacy_session *s, const char *error_text)
{
    session_end(s, error_text);
}

struct legacy_session *legacy_session_create(struct legacy_table *t, const char *connection_id,
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
    s->table = t;
    s->loop = t->loop;
    snprintf(s->connection_id, sizeof s->connection_id, "%s", connection_id);
    s->query = query.data;
    header_list_capture(&s->headers, wsi);
    http_forwarded_for(wsi, s->forwarded_for, sizeof s->forwarded_for);
    legacy_start_init(&s->start, t->loop->cfg, &session_start_ops, s);
    msg_queue_init(&s->to_client);
    replay_ring_init(&s->ring, LEGACY_REPLAY_MAX_MESSAGES, LEGACY_REPLAY_MAX_BYTES);
    timer_entry_init(&s->keepalive_timer, legacy_keepalive_due);
    timer_entry_init(&s->disconnect_timer, disconnect_due);
    timer_entry_init(&s->reap_timer, reap_due);
    timer_entry_init(&s->poll_timer, legacy_poll_due);
    list_init_head(&s->sends);
    list_init_head(&s->waiting_sends);
    s->loop->stats.legacy_sessions_active++;
    capture_session_begin(wsi, &s->capture);
    list_push_back(&t->all, &s->all);
    if (dict_insert(&t->by_id, &s->entry, span_from_cstr(s->connection_id)) != DICT_OK) {
        legacy_session_free(s);
        return NULL;
    }
    s->in_table = true;
    s->identity = legacy_identity_take(t->identities, s->connection_id);
    for (size_t i = 0; i < hubs->count; i++) {
        struct legacy_hub *hub = legacy_table_hub(t, hubs->names[i]);
        if (hub && !legacy_session_find_link(s, span_from_cstr(hub->endpoint->name)))
            legacy_session_open_link(s, hub, hubs->names[i], true);
    }
    s->listed_count = s->link_count;
    log_conn_info(s->connection_id, legacy_session_log_hub(s), "legacy: connected");
    return s;
}

/* The stream's queue is gone: /send answers held behind it go out (what they
 * waited for comes again through the replay on /reconnect). */
static void stream_dropped(struct legacy_session *s)
{
    s->stream_frames_written = s->stream_frames_queued;
    legacy_send_release(s);
}

void legacy_session_end_channel(struct legacy_session *s)
{
    if (s->wsi) {
        /* A newer channel replaces the old one, which is closed. */
        capture_http_stream_end(s->wsi);
        lws_set_opaque_user_data(s->wsi, NULL);
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        msg_queue_clear(&s->to_client);
        s->wsi = NULL;
        s->ws_close = WSMSG_CLOSE_NONE;
        s->channel_live = false;
        s->client_paused = false; /* the new socket is read from the start */
        pause_links(s, false);    /* and nothing waits for it yet */
        wsmsg_free(s->rx_partial);
        s->rx_partial = NULL;
        timer_cancel(&s->keepalive_timer);
        stream_dropped(s);
    }
    legacy_poll_answer(s, NULL); /* a held poll ends with what it has (maybe nothing) */
}

void legacy_session_channel_gone(struct legacy_session *s)
{
    if (s->closing || s->wsi || s->poll)
        return;
    /* The client may come back through /reconnect (or its next poll): keep the
     * backend links for DisconnectTimeout plus the original's transport
     * threshold (5 s; LongPollDelay for long polling). */
    uint64_t grace = s->long_polling ? s->loop->cfg->legacy_long_poll_delay_ms + DISCONNECT_GRACE_MS
                                     : DISCONNECT_GRACE_MS;
    loop_timer_schedule(s->loop, &s->disconnect_timer, clock_now_ms() + s->loop->cfg->legacy_disconnect_ms + grace);
}

void legacy_session_attach(struct legacy_session *s, struct lws *wsi, enum legacy_carrier carrier, bool reconnect,
                           uint64_t cursor, bool cursor_ok)
{
    if (s->wsi != wsi)
        legacy_session_end_channel(s);
    timer_cancel(&s->disconnect_timer);
    s->long_polling = false;
    if (s->links_paused && msg_queue_is_empty(&s->to_client))
        pause_links(s, false);
    s->carrier = carrier;
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
        log_conn_info(s->connection_id, legacy_session_log_hub(s), "legacy: reconnect cursor cannot be replayed; telling the client to start over");
        session_end(s, "The connection was lost for too long to replay its messages; start a new connection.");
        buf_free(&frame);
        return;
    }
    struct replay_all all = { s, reconnect ? s->reconnect_cursor : 0 };
    if (s->carrier == LEGACY_CARRIER_SSE)
        legacy_session_queue_text(s, LEGACY_SSE_INITIALIZED, sizeof LEGACY_SSE_INITIALIZED - 1);
    if (!reconnect && !s->started) {
        /* The init frame of a connection not started yet carries nothing: the
         * hubs' pushes wait for /start (flush_after_start). */
        if (encode_frame(s, &frame, 0, true, NULL, NULL))
            legacy_session_queue_text(s, frame.data, frame.len);
    } else if (!reconnect || last > s->reconnect_cursor) {
        if (encode_frame(s, &frame, last, !reconnect, add_all_after, &all))
            legacy_session_queue_text(s, frame.data, frame.len);
    }
    buf_free(&frame);
    s->channel_live = true;
    s->last_sent_ms = clock_now_ms();
    s->last_heard_ms = s->last_sent_ms;
    legacy_arm_keepalive(s);
}

int legacy_session_writeable(struct legacy_session *s, struct lws *wsi)
{
    if (wsi != s->wsi)
        return -1;
    if (s->carrier == LEGACY_CARRIER_SSE) {
        if (!legacy_sse_flush(wsi, &s->to_client))
            return -1;
        if (msg_queue_is_empty(&s->to_client) && !lws_partial_buffered(wsi)) {
            s->stream_frames_written = s->stream_frames_queued;
            legacy_send_release(s);
        }
        if (s->links_paused && s->to_client.bytes <= s->loop->cfg->max_buffered_bytes / 2)
            pause_links(s, false);
        return s->closing && msg_queue_is_empty(&s->to_client) && !lws_partial_buffered(wsi)
                   ? (capture_http_stream_end(wsi), -1) : 0; /* the relay ends the stream */
    }
    if (s->ws_close != WSMSG_CLOSE_NONE) /* the Close is out: nothing more is written */
        return wsmsg_close_lingering(wsi, &s->ws_close);
    if (s->ping_due && !lws_partial_buffered(wsi)) {
        s->ping_due = false;
        if (!write_ping(wsi))
            return -1;
    }
    if (!wsmsg_flush(wsi, &s->to_client))
        return -1;
    if (s->links_paused && s->to_client.bytes <= s->loop->cfg->max_buffered_bytes / 2)
        pause_links(s, false);
    if (s->closing && msg_queue_is_empty(&s->to_client) && !lws_partial_buffered(wsi))
        return wsmsg_close_lingering(wsi, &s->ws_close); /* kept open until the client goes */
    return 0;
}

void legacy_session_channel_closed(struct legacy_session *s, struct lws *wsi)
{
    if (s->wsi != wsi)
        return;
    s->wsi = NULL;
    s->ws_close = WSMSG_CLOSE_NONE;
    s->channel_live = false;
    s->client_paused = false;
    msg_queue_clear(&s->to_client);
    pause_links(s, false); /* nothing waits for the client now: pushes go to the ring only */
    wsmsg_free(s->rx_partial);
    s->rx_partial = NULL;
    timer_cancel(&s->keepalive_timer);
    stream_dropped(s);
    if (s->closing) {
        loop_timer_schedule(s->loop, &s->reap_timer, clock_now_ms());
        return;
    }
    legacy_session_channel_gone(s);
}

void legacy_session_abort(struct legacy_session *s)
{
    log_conn_debug(s->connection_id, legacy_session_log_hub(s), "legacy: aborted by the client");
    session_end(s, NULL);
}
