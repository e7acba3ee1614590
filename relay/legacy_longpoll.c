/* legacy_longpoll.c - the longPolling receive channel of a legacy connection.
 *
 *   POST /connect  -> {"C":"<cursor>","S":1,"M":[]} at once
 *   POST /poll     (messageId in the query or the form body)
 *                  -> {"C":..,"M":[everything after messageId]} at once when
 *                     something waits, else held until a message arrives or
 *                     --legacy-poll-timeout (ConnectionTimeout) is up: then
 *                     {"C":..,"M":[]}; "L":<ms> in each when LongPollDelay is set
 *   POST /reconnect the same, after a network error
 *   A poll held longer than --legacy-keepalive gets its 200 head and a space,
 *   then a space every interval, as the original writes them (its
 *   KeepAlive); the answer then follows as the rest of that body.
 *
 * (specs/legacy-signalr.md 4.3 and 12.) The held poll is the connection's
 * receive channel: a newer channel of any kind ends it (answered with what
 * it has), and between polls there is none, so the disconnect timeout runs.
 * The replay ring is the queue: each poll's cursor says what the client has
 * seen, and what it has not yet polled is bounded like a stream's queue
 * (legacy_session_acked pauses the hub links). The poll's deadline is an
 * entry on the timer wheel. Part of the session (relay/legacy_session.h). */
#include <stdio.h>

#include "protocol/legacy_cursor.h"
#include "protocol/legacy_frame.h"
#include "relay/clock.h"
#include "relay/legacy_session.h"
#include "relay/log.h"

#define JSON_UTF8 "application/json; charset=UTF-8"

static void count_bytes(void *ctx, const struct replay_entry *e)
{
    *(size_t *)ctx += e->text->len;
}

void legacy_session_acked(struct legacy_session *s, uint64_t seq)
{
    if (seq != s->acked_seq) {
        s->acked_seq = seq;
        size_t bytes = 0;
        replay_ring_after(&s->ring, seq, count_bytes, &bytes);
        s->unacked_bytes = bytes;
    }
    /* Paused above the mark, resumed below half of it; messages too, so that the
     * ring never evicts what the client has not polled. */
    size_t limit = s->loop->cfg->max_buffered_bytes;
    size_t mark = limit < LEGACY_REPLAY_MAX_BYTES / 2 ? limit : LEGACY_REPLAY_MAX_BYTES / 2;
    uint64_t waiting = replay_ring_last_seq(&s->ring) - s->acked_seq;
    if (s->unacked_bytes > mark || waiting > LEGACY_REPLAY_MAX_MESSAGES / 2)
        legacy_session_pause_links(s, true);
    else if (s->unacked_bytes <= mark / 2 && waiting <= LEGACY_REPLAY_MAX_MESSAGES / 4)
        legacy_session_pause_links(s, false);
    legacy_send_release(s);
}

static void add_element(void *ctx, const struct replay_entry *e)
{
    legacy_response_add_raw(ctx, span_make(e->text->data, e->text->len), NULL);
}

bool legacy_session_encode_after(struct legacy_session *s, struct buf *out, uint64_t after, bool init)
{
    char cursor[LEGACY_CURSOR_MAX];
    size_t n = legacy_cursor_format(cursor, s->table->instance_id, replay_ring_last_seq(&s->ring));
    unsigned delay = s->loop->cfg->legacy_long_poll_delay_ms;
    struct legacy_response_head head = {
        .cursor = span_make(cursor, n),
        .initializing = init,
        .has_long_poll_delay = s->long_polling && delay > 0,
        .long_poll_delay_ms = delay,
    };
    struct legacy_response r;
    if (legacy_response_begin(&r, out, &head, NULL) != PROTO_OK)
        return false;
    replay_ring_after(&s->ring, after, add_element, &r);
    return legacy_response_end(&r, NULL) == PROTO_OK;
}

static void answer(struct legacy_request *r, struct buf *frame)
{
    legacy_request_answer(r, 200, JSON_UTF8, frame->data, frame->len);
}

void legacy_poll_answer(struct legacy_session *s, const char *error_text)
{
    struct legacy_request *r = s->poll;
    if (!r)
        return;
    s->poll = NULL;
    s->loop->stats.legacy_polls_held--;
    timer_cancel(&s->poll_timer);
    struct buf frame;
    buf_init(&frame);
    bool ok = error_text ? legacy_error_frame_encode(&frame, span_from_cstr(error_text))
                         : legacy_session_encode_after(s, &frame, r->cursor, false);
    if (ok)
        answer(r, &frame);
    else
        legacy_request_answer(r, 500, "text/plain", "", 0);
    buf_free(&frame);
    legacy_session_channel_gone(s);
}

void legacy_poll_due(struct timer_entry *e)
{
    struct legacy_session *s = list_container_of(e, struct legacy_session, poll_timer);
    legacy_poll_answer(s, NULL);
}

/* The client left while its poll was held. */
static void poll_gone(void *owner, struct legacy_request *r)
{
    struct legacy_session *s = owner;
    if (s->poll != r)
        return;
    s->poll = NULL;
    s->loop->stats.legacy_polls_held--;
    timer_cancel(&s->poll_timer);
    legacy_session_channel_gone(s);
}

static void answer_connect(struct legacy_session *s, struct legacy_request *r)
{
    struct buf frame;
    buf_init(&frame);
    if (legacy_session_encode_after(s, &frame, 0, true))
        answer(r, &frame);
    else
        legacy_request_answer(r, 500, "text/plain", "The relay ran out of memory.", 28);
    buf_free(&frame);
    legacy_session_channel_gone(s);
}

void legacy_session_poll(struct legacy_session *s, struct legacy_request *r, bool connect, uint64_t cursor,
                         bool cursor_ok)
{
    legacy_session_end_channel(s);
    timer_cancel(&s->disconnect_timer);
    s->long_polling = true;
    if (s->closing) {
        legacy_request_answer(r, 200, JSON_UTF8, "{}", 2);
        return;
    }
    r->cursor = cursor;
    if (connect) {
        legacy_session_acked(s, 0);
        answer_connect(s, r);
        return;
    }
    /* Held on the session from here, so that ending the session answers it. */
    s->poll = r;
    s->loop->stats.legacy_polls_held++;
    legacy_request_wait(r, s, poll_gone);
    if (!cursor_ok || replay_ring_after(&s->ring, cursor, NULL, NULL) == REPLAY_GAP) {
        log_conn_info(s->connection_id, legacy_session_log_hub(s), "legacy: poll cursor cannot be replayed; telling the client to start over");
        legacy_session_end(s, "The connection was lost for too long to replay its messages; start a new connection.");
        return;
    }
    legacy_session_acked(s, cursor);
    /* Before /start is answered, what the hubs pushed waits (flush_after_start answers this poll). */
    if ((s->started && replay_ring_last_seq(&s->ring) > cursor) || s->closing) {
        legacy_poll_answer(s, NULL);
        return;
    }
    loop_timer_schedule(s->loop, &s->poll_timer, clock_now_ms() + s->loop->cfg->legacy_poll_timeout_ms);
    /* As the original: a poll held longer than a keep-alive interval gets its head and a space,
     * and a space every interval after, so that proxies and clients see it alive. */
    legacy_request_keep_alive(r, s->loop, s->loop->cfg->legacy_keepalive_ms, JSON_UTF8);
}
