/* core_stateful.c - stateful reconnect for Core WebSocket clients, terminated at the relay (hooks declared in core_session.h).
 *
 * A client that negotiated useStatefulReconnect (relay/core_negotiate.c) and
 * shook hands with protocol version 2 over WebSockets gets what ASP.NET
 * Core's server gives it (MessageBuffer.cs, HttpConnectionDispatcher.cs):
 *   - the relay numbers the hub's messages toward it and keeps them until the
 *     client's Ack (hub/stateful_buffer.c); past --stateful-reconnect-buffer
 *     unacked bytes it stops reading the hub link until an Ack (the server
 *     makes the hub's send wait);
 *   - the client's numbered messages are counted; an Ack of them goes back
 *     a second after new ones arrived; Ack and Sequence never reach the hub;
 *   - when the client's WebSocket ends without a Close frame, the session
 *     stays, with its hub link open, for --disconnect-timeout; hub messages
 *     go into the buffer meanwhile;
 *   - a WebSocket naming the same id (a previous one still open is closed,
 *     as the server cancels it) gets Sequence(first kept id) and everything
 *     kept; the client's messages are ignored until its own Sequence, and
 *     those it resends that the hub already had are dropped.
 * The backend never sees any of it: its link is an ordinary connection.
 *
 * One thing the server does not do: what the hub sends right after its
 * handshake answer is held (kept in the buffer) until the client's first
 * message or for ACK_DELAY_MS at most. The JS client creates its message
 * buffer only once its handshake promise has resolved (HubConnection.start)
 * and does not count what it reads before, so messages that reach it in the
 * same read as the handshake answer (OnConnectedAsync's, forwarded at once
 * by the relay) would be numbered differently on the two sides and come
 * twice after a reconnect. It pings right after creating the buffer; the
 * .NET client creates its buffer before reading anything. */
#include "relay/core_session.h"

#include <stdlib.h>

#include "hub/stateful_buffer.h"
#include "protocol/core_json.h"
#include "protocol/core_peek.h"
#include "relay/clock.h"
#include "relay/log.h"

#define ACK_DELAY_MS 1000 /* as MessageBuffer: one Ack a second at most */

struct core_stateful {
    struct stateful_buffer buf;
    struct timer_entry ack_timer;
    struct core_session *s;
    bool away;     /* the client's WebSocket is gone; waiting for its next one */
    bool resuming; /* its next WebSocket was accepted and is not yet established */
    bool holding;  /* after the handshake answer, until the client's first message (see above) */
};

static void release_held(struct core_session *s);

/* s's stateful state, or NULL (it lives in the session's extra part). */
static struct core_stateful *stateful_of(const struct core_session *s)
{
    return s->extra ? s->extra->stateful : NULL;
}

static bool binary_of(const struct core_session *s)
{
    return s->protocol == HUB_PROTOCOL_MSGPACK;
}

static void ack_due(struct timer_entry *e)
{
    struct core_stateful *st = list_container_of(e, struct core_stateful, ack_timer);
    struct hub_msg ack;
    uint64_t id;
    if (st->holding && !st->away && !st->resuming && st->s->state == CORE_OPEN)
        release_held(st->s);
    if (st->away || st->resuming || st->s->state != CORE_OPEN || !stateful_buffer_ack_due(&st->buf, &id))
        return;
    hub_msg_init(&ack);
    ack.kind = HUB_MSG_ACK;
    ack.sequence_id = (int64_t)id;
    core_session_send_own(st->s, &ack);
}

void core_stateful_start(struct core_session *s, int version)
{
    if (!s->stateful_offered || s->transport != &core_ws_transport || version < 2)
        return; /* as the server: protocol version 1 turns it off */
    struct core_session_extra *x = core_session_extra(s);
    struct core_stateful *st = x ? calloc(1, sizeof *st) : NULL;
    if (!st) {
        log_warn("session %s: out of memory for stateful reconnect; the client cannot resume", core_session_id(s));
        return;
    }
    stateful_buffer_init(&st->buf, s->table->loop->cfg->stateful_buffer_bytes);
    timer_entry_init(&st->ack_timer, ack_due);
    st->s = s;
    st->holding = true;
    x->stateful = st;
}

void core_stateful_free(struct core_session *s)
{
    struct core_stateful *st = stateful_of(s);
    if (!st)
        return;
    timer_cancel(&st->ack_timer);
    if (st->away || st->resuming)
        s->table->loop->stats.core_stateful_away--;
    stateful_buffer_free(&st->buf);
    free(st);
    s->extra->stateful = NULL;
}

bool core_stateful_full(const struct core_session *s)
{
    return stateful_of(s) && stateful_buffer_full(&stateful_of(s)->buf);
}

/* ------------------------------------------------------------ hub -> client */

/* How many numbered messages data holds (whole messages; a malformed tail ends the count). */
static uint32_t numbered_in(bool binary, const char *data, size_t len)
{
    uint32_t count = 0;
    while (len > 0) {
        size_t used = 0;
        enum hub_msg_kind kind;
        int64_t id;
        if (core_peek_next(binary, data, len, &used, &kind, &id, NULL) != PROTO_OK)
            break;
        if (stateful_kind_numbered(kind))
            count++;
        data += used;
        len -= used;
    }
    return count;
}

bool core_stateful_from_hub(struct core_session *s, struct wsmsg *m, bool first)
{
    struct core_stateful *st = stateful_of(s);
    if (!st)
        return true;
    const char *data = (const char *)m->payload;
    size_t len = m->len;
    struct span record;
    size_t consumed = 0;
    if (first && core_text_next_record(data, len, SIZE_MAX, &record, &consumed, NULL) == PROTO_OK) {
        data += consumed; /* the handshake answer is never resent */
        len -= consumed;
    }
    uint32_t numbered = numbered_in(binary_of(s), data, len);
    if (!stateful_buffer_sent(&st->buf, data, len, numbered)) {
        wsmsg_free(m);
        s->table->loop->stats.out_of_memory_closes++;
        log_warn("session %s: out of memory keeping a message for stateful reconnect; closing", core_session_id(s));
        core_session_fail(s, "Connection closed with an error. The relay ran out of memory.");
        return false;
    }
    if (st->holding && first) { /* the handshake answer goes alone; what followed it is held */
        loop_timer_schedule(s->table->loop, &st->ack_timer, clock_now_ms() + ACK_DELAY_MS);
        if (consumed > 0)
            m->len = consumed;
        return true;
    } else if (st->holding && s->hub_sent_close && !st->away && !st->resuming) {
        release_held(s); /* the hub's goodbye comes after what it held */
    }
    if (!st->away && !st->resuming && !st->holding)
        return true;
    wsmsg_free(m); /* kept in the buffer: the client's next WebSocket gets it */
    core_session_flow(s);
    return false;
}

/* ------------------------------------------------------------ client -> hub */

/* The client's messages one by one: Ack and Sequence taken, duplicates
 * dropped. Copies only when something goes. */
struct wsmsg *core_stateful_from_client(struct core_session *s, struct wsmsg *m)
{
    struct core_stateful *st = stateful_of(s);
    if (!st)
        return m;
    if (st->holding)
        release_held(s); /* the client's buffer exists now */
    bool binary = binary_of(s), changed = false, numbered = false, ok = true;
    struct buf kept;
    buf_init(&kept);
    const char *start = (const char *)m->payload, *data = start;
    size_t len = m->len;
    while (len > 0 && ok) {
        size_t used = 0;
        enum hub_msg_kind kind;
        int64_t id;
        if (core_peek_next(binary, data, len, &used, &kind, &id, NULL) != PROTO_OK) {
            used = len; /* not ours to judge: the hub answers it as it would */
            kind = HUB_MSG_NONE;
        }
        enum stateful_verdict v = stateful_buffer_received(&st->buf, kind, id);
        if (v == STATEFUL_INVALID) {
            buf_free(&kept);
            wsmsg_free(m);
            log_info("session %s: the client's Sequence names a message it never sent; closing", core_session_id(s));
            core_session_fail(s, "Connection closed with an error. Sequence ID greater than amount of messages we've received.");
            return NULL;
        }
        numbered = numbered || (v == STATEFUL_FORWARD && stateful_kind_numbered(kind));
        if (v != STATEFUL_FORWARD && !changed) { /* from here on, a copy of what goes on */
            changed = true;
            ok = buf_append(&kept, start, (size_t)(data - start));
        } else if (v == STATEFUL_FORWARD && changed) {
            ok = buf_append(&kept, data, used);
        }
        data += used;
        len -= used;
    }
    if (numbered && !timer_is_armed(&st->ack_timer))
        loop_timer_schedule(s->table->loop, &st->ack_timer, clock_now_ms() + ACK_DELAY_MS);
    struct wsmsg *out = m;
    if (changed) {
        out = ok && kept.len ? wsmsg_copy(kept.data, kept.len, m->binary) : NULL;
        wsmsg_free(m);
        if (!ok || (kept.len && !out)) {
            s->table->loop->stats.out_of_memory_closes++;
            core_session_fail(s, "Connection closed with an error. The relay ran out of memory.");
        }
    }
    buf_free(&kept);
    core_session_flow(s); /* an Ack may have made room: the hub may speak again */
    return out;
}

/* ---------------------------------------------------------------- the gap */

/* Carries nothing: the client is away. What the relay says meanwhile waits
 * in the queue and goes with the session; the hub's messages are in the buffer. */
static void away_kick(struct core_session *s)
{
    (void)s;
}

static void away_pause_reading(struct core_session *s, bool paused)
{
    (void)s;
    (void)paused;
}

/* The session ended while the client was away (the hub link was lost, the relay shuts down). */
static void away_closing(struct core_session *s)
{
    core_session_disconnect_at(s, clock_now_ms());
}

static void away_timer_due(struct core_session *s)
{
    if (s->wsi) { /* a next WebSocket not yet established: it goes too */
        lws_set_opaque_user_data(s->wsi, NULL);
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        s->wsi = NULL;
    }
    if (s->state != CORE_CLOSING)
        log_info("session %s: the client did not come back within %u ms; ending it", core_session_id(s),
                 s->table->loop->cfg->disconnect_timeout_ms);
    core_session_destroy(s);
}

static const struct core_transport away_transport = {
    .kind = CORE_TRANSPORT_WEBSOCKETS,
    .pings = false,
    .kick = away_kick,
    .pause_reading = away_pause_reading,
    .closing = away_closing,
    .timer_due = away_timer_due,
};

/* Whether the session outlives its client's WebSocket: open, stateful, and
 * neither side said goodbye. */
static bool may_wait(const struct core_session *s)
{
    return stateful_of(s) && s->state == CORE_OPEN && s->handshake_answered && s->channel && !s->hub_sent_close &&
           !s->client_closed;
}

/* The client's socket is gone: what was queued toward it is in the buffer (the rest were pings). */
static void go_away(struct core_session *s)
{
    struct core_stateful *st = stateful_of(s);
    if (!st->away && !st->resuming)
        s->table->loop->stats.core_stateful_away++;
    st->away = true;
    st->resuming = false;
    s->wsi = NULL;
    s->transport = &away_transport;
    msg_queue_clear(&s->to_client);
    wsmsg_free(s->rx_partial);
    s->rx_partial = NULL;
    s->client_paused = false;
    core_session_client_deadlines_off(s);
    timer_cancel(&st->ack_timer);
    if (!core_session_disconnect_armed(s))
        core_session_disconnect_at(s, clock_now_ms() + s->table->loop->cfg->disconnect_timeout_ms);
    core_session_flow(s);
}

void core_session_ws_closed(struct core_session *s)
{
    if (!may_wait(s)) {
        core_session_destroy(s);
        return;
    }
    log_info("session %s: the client's WebSocket dropped; keeping the hub link for %u ms (stateful reconnect)",
             core_session_id(s), s->table->loop->cfg->disconnect_timeout_ms);
    go_away(s);
}

bool core_stateful_resume(struct core_session *s, struct lws *wsi, const struct hub_endpoint *endpoint)
{
    if (!may_wait(s) || s->endpoint != endpoint)
        return false;
    if (s->wsi) { /* as the server: the new WebSocket cancels the one still open */
        lws_set_opaque_user_data(s->wsi, NULL);
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        go_away(s);
    }
    s->wsi = wsi; /* the transport stays away_transport until it is established */
    stateful_of(s)->away = false;
    stateful_of(s)->resuming = true;
    return true;
}

/* Queues copies of the buffer's entries, oldest first; false when out of memory (the session is closing). */
static bool queue_kept(struct core_session *s, size_t *count)
{
    struct core_stateful *st = stateful_of(s);
    *count = 0;
    for (struct list_node *n = st->buf.entries.next; n != &st->buf.entries; n = n->next) {
        struct stateful_entry *e = list_container_of(n, struct stateful_entry, link);
        struct wsmsg *m = wsmsg_copy(e->data, e->len, binary_of(s));
        if (!m) {
            s->table->loop->stats.out_of_memory_closes++;
            core_session_fail(s, "Connection closed with an error. The relay ran out of memory.");
            return false;
        }
        core_session_queue(s, m);
        *count += e->count;
    }
    return true;
}

static void release_held(struct core_session *s)
{
    size_t count;
    stateful_of(s)->holding = false;
    queue_kept(s, &count);
}

bool core_stateful_resumed(struct core_session *s)
{
    struct core_stateful *st = stateful_of(s);
    if (!st || !st->resuming)
        return false;
    st->resuming = false;
    s->table->loop->stats.core_stateful_away--;
    s->table->loop->stats.core_stateful_resumes++;
    s->transport = &core_ws_transport;
    core_session_disconnect_cancel(s);
    if (s->state != CORE_OPEN) { /* it ended meanwhile (its hub link was lost): let its last words out */
        s->transport->closing(s);
        return true;
    }
    struct hub_msg seq;
    hub_msg_init(&seq);
    seq.kind = HUB_MSG_SEQUENCE;
    seq.sequence_id = (int64_t)stateful_buffer_reconnected(&st->buf);
    size_t resent = 0;
    st->holding = false; /* the client's buffer exists: it dropped a connection */
    if (core_session_send_own(s, &seq))
        queue_kept(s, &resent);
    log_info("session %s: the client is back (stateful reconnect): Sequence %lld, %zu messages resent", core_session_id(s),
             (long long)seq.sequence_id, resent);
    if (st->buf.latest_received > 0)
        loop_timer_schedule(s->table->loop, &st->ack_timer, clock_now_ms() + ACK_DELAY_MS);
    return true;
}
