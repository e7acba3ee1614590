/* legacy_send.c - /send: a legacy client's invocation over serverSentEvents or longPolling.
 *
 *   POST /send?transport=..  body data=<URL-encoded invocation> (any or no Content-Type)
 *   -> 200 application/json; charset=UTF-8, body the hub result {"R":..,"I":"n"}
 *
 * (specs/legacy-signalr.md 1.8 and 12.) The invocation goes to the hub
 * exactly as a WebSocket frame would; the request waits on the session's
 * list until the link answers with the hub result of its id (progress and
 * server pushes go to the receive channel as always), or the session ends.
 * Part of the session (relay/legacy_session.h). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "protocol/legacy_invocation.h"
#include "protocol/urlencoded.h"
#include "relay/clock.h"
#include "relay/http.h"
#include "relay/legacy_session.h"
#include "relay/log.h"

#define JSON_UTF8 "application/json; charset=UTF-8"

static void send_gone(void *owner, struct legacy_request *r)
{
    (void)owner;
    list_unlink(&r->link);
}

/* The "I" of a hub result frame, into id. */
static bool result_id(const char *frame, size_t len, char *id, size_t id_len)
{
    cJSON *root = cJSON_ParseWithLength(frame, len);
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(root, "I");
    bool ok = cJSON_IsString(i) && strlen(i->valuestring) < id_len;
    if (ok)
        snprintf(id, id_len, "%s", i->valuestring);
    cJSON_Delete(root);
    return ok;
}

/* How long a long-polling client may take to poll again before a /send held
 * for it is answered anyway: its LongPollDelay and this. A client that polls
 * (every stock client, at once) acks the progress in milliseconds; one that
 * does not (it is stopping, or a recorded session replayed) would otherwise
 * wait for its result until the connection ends. */
#define HELD_SEND_GRACE_MS 2000

static void held_too_long(struct timer_entry *e)
{
    struct legacy_request *r = list_container_of(e, struct legacy_request, timer);
    struct legacy_session *s = r->owner;
    log_conn_debug(s->connection_id, legacy_session_log_hub(s), "legacy: no poll took the progress before result %s; answering it",
              r->legacy_id);
    list_unlink(&r->link);
    legacy_request_release(r);
}

bool legacy_send_result(struct legacy_session *s, const char *frame, size_t len)
{
    if (list_is_empty(&s->sends))
        return false;
    char id[LEGACY_REQUEST_ID_MAX];
    if (!result_id(frame, len, id, sizeof id))
        return false;
    for (struct list_node *n = s->sends.next; n != &s->sends; n = n->next) {
        struct legacy_request *r = list_container_of(n, struct legacy_request, link);
        if (!r->held && strcmp(r->legacy_id, id) == 0) {
            /* Held until the client has every progress message pushed before
             * the result: they travel on another connection, and a client
             * forgets an invocation once its result is in. */
            legacy_request_prepare(r, 200, JSON_UTF8, frame, len);
            r->held = true;
            r->release_at = s->long_polling ? s->progress_seq : s->progress_frame;
            if (s->long_polling) {
                timer_entry_init(&r->timer, held_too_long);
                loop_timer_schedule(s->loop, &r->timer,
                                    clock_now_ms() + s->loop->cfg->legacy_long_poll_delay_ms + HELD_SEND_GRACE_MS);
            }
            legacy_send_release(s);
            return true;
        }
    }
    return false;
}

void legacy_send_release(struct legacy_session *s)
{
    uint64_t reached = s->long_polling ? s->acked_seq : s->stream_frames_written;
    bool streaming = !s->long_polling && s->wsi;
    for (struct list_node *n = s->sends.next, *next; n != &s->sends; n = next) {
        next = n->next;
        struct legacy_request *r = list_container_of(n, struct legacy_request, link);
        if (r->held && (r->release_at <= reached || (!s->long_polling && !streaming))) {
            list_unlink(&r->link);
            legacy_request_release(r);
        }
    }
}

void legacy_send_end_all(struct legacy_session *s, const char *text)
{
    while (!list_is_empty(&s->waiting_sends)) { /* never sent: nothing for the hub to answer */
        struct legacy_request *r = list_container_of(s->waiting_sends.next, struct legacy_request, link);
        list_unlink(&r->link);
        r->owner = NULL;
        legacy_request_answer(r, 500, NULL, "", 0);
    }
    while (!list_is_empty(&s->sends)) {
        struct legacy_request *r = list_container_of(s->sends.next, struct legacy_request, link);
        list_unlink(&r->link);
        if (r->held) { /* its answer is known: the client gets it */
            legacy_request_release(r);
            continue;
        }
        if (!text) { /* the session is being freed: the request answers alone */
            r->owner = NULL;
            legacy_request_answer(r, 500, "text/plain", "", 0);
            continue;
        }
        struct buf out;
        buf_init(&out);
        if (legacy_result_error(&out, r->legacy_id, text))
            legacy_request_answer(r, 200, JSON_UTF8, out.data, out.len);
        else
            legacy_request_answer(r, 500, "text/plain", "", 0);
        buf_free(&out);
    }
}

static int refuse(struct legacy_request *r, unsigned status, const char *text)
{
    struct lws *wsi = r->wsi;
    const struct relay_config *cfg = r->cfg;
    legacy_request_free(r);
    return http_respond_text(cfg, wsi, status, text);
}

/* The data field: from the form body, else from the query (a GET /send, which
 * the original serves too: it reads the form, then the query). */
static bool send_data(struct legacy_request *r, struct buf *data, struct proto_error *err)
{
    struct urlencoded_limits limits = { r->cfg->max_message_bytes * 3 + 16, 64, r->cfg->max_message_bytes, 64 };
    if (urlencoded_find(r->body.data ? r->body.data : "", r->body.len, "data", URLENCODED_PLUS_IS_SPACE, &limits,
                        data, err) == PROTO_OK)
        return true;
    buf_free(data);
    buf_init(data);
    return http_query_value(r->wsi, "data", data) == HTTP_ARG_FOUND;
}

/* Answers r: now, when it is fresh (the result is the lws callback's), or on
 * its next HTTP_WRITEABLE when it waited (held for a full hub link). */
static int answer_request(struct legacy_request *r, unsigned status, const char *type, const char *body, size_t len)
{
    if (r->owner) {
        legacy_request_answer(r, status, type, body, len);
        return 0;
    }
    struct lws *wsi = r->wsi;
    const struct relay_config *cfg = r->cfg;
    legacy_request_free(r);
    return http_respond(cfg, wsi, status, type, body, len);
}

/* What the original answers a /send it cannot dispatch (no data, data that is
 * not an invocation, a hub it does not have): its exception becomes a 500 with
 * nothing in it (tests/legacy-ref). The reason goes to the log. */
static int refuse_as_original(struct legacy_session *s, struct legacy_request *r, const char *why)
{
    s->loop->stats.protocol_errors++;
    log_conn_info(s->connection_id, legacy_session_log_hub(s), "legacy: /send refused (500, as the original): %s", why);
    return answer_request(r, 500, NULL, "", 0);
}

/* The invocation in data goes to its hub; r is answered with its result. */
static int dispatch(struct legacy_session *s, struct legacy_request *r, struct span data)
{
    struct proto_error err = { 0 };
    struct hub_msg msg;
    hub_msg_init(&msg);
    enum proto_status st = legacy_invocation_decode(data.ptr ? data.ptr : "", data.len, &msg, &err);
    bool has_id = span_is_set(msg.invocation_id) && msg.invocation_id.len > 0 &&
                  msg.invocation_id.len < LEGACY_REQUEST_ID_MAX;
    if (has_id) {
        free(r->legacy_id);
        r->legacy_id = strndup(msg.invocation_id.ptr, msg.invocation_id.len);
        if (!r->legacy_id) {
            hub_msg_release(&msg);
            return answer_request(r, 500, "text/plain", "The relay ran out of memory.", 28);
        }
    }
    int rc = 0;
    if (st != PROTO_OK) {
        char why[300];
        snprintf(why, sizeof why, "unreadable invocation (%s: %s)", proto_status_name(st),
                 err.detail ? err.detail : "malformed");
        rc = refuse_as_original(s, r, why);
    } else if (!legacy_table_hub(s->table, msg.hub)) {
        char why[300];
        snprintf(why, sizeof why, "'%.*s' Hub could not be resolved.", (int)msg.hub.len, msg.hub.ptr);
        rc = refuse_as_original(s, r, why);
    } else if (!has_id) {
        /* Fire and forget: nothing will answer it. */
        legacy_session_invoke(s, &msg);
        rc = answer_request(r, 200, JSON_UTF8, "", 0);
    } else {
        /* Waits before the call goes out: the relay may answer it at once (a failed link). */
        list_push_back(&s->sends, &r->link);
        if (!r->owner)
            legacy_request_wait(r, s, send_gone);
        legacy_session_invoke(s, &msg);
    }
    hub_msg_release(&msg);
    return rc;
}

/* Backpressure toward the hub: while a hub link of the connection is above
 * --max-buffered, a /send is held unanswered (its data kept, at most
 * --max-message-size each; the client sends no more than it has requests
 * open) instead of adding to the link's queue, and earlier held ones go first. */
static bool must_wait(const struct legacy_session *s)
{
    if (!list_is_empty(&s->waiting_sends))
        return true;
    for (size_t i = 0; i < s->link_count; i++)
        if (legacy_link_full(s->links[i]))
            return true;
    return false;
}

void legacy_send_resume(struct legacy_session *s)
{
    while (!s->closing && !list_is_empty(&s->waiting_sends)) {
        for (size_t i = 0; i < s->link_count; i++)
            if (legacy_link_full(s->links[i]))
                return;
        struct legacy_request *r = list_container_of(s->waiting_sends.next, struct legacy_request, link);
        list_unlink(&r->link);
        struct buf data = r->body; /* taken: dispatch may free r */
        buf_init(&r->body);
        dispatch(s, r, buf_span(&data));
        buf_free(&data);
    }
}

int legacy_session_send(struct legacy_session *s, struct legacy_request *r)
{
    if (r->body_too_large)
        return refuse(r, 413, "The message exceeded the relay's maximum message size.");
    struct buf data;
    buf_init(&data);
    struct proto_error err = { 0 };
    if (!send_data(r, &data, &err)) {
        buf_free(&data);
        char why[200];
        snprintf(why, sizeof why, "no readable data field in the body or the query (%s)",
                 err.detail ? err.detail : "missing");
        return refuse_as_original(s, r, why);
    }
    if (must_wait(s)) {
        log_conn_debug(s->connection_id, legacy_session_log_hub(s), "legacy: a hub link is full; /send held until it drains");
        s->loop->stats.flow_control_pauses++;
        list_push_back(&s->waiting_sends, &r->link);
        legacy_request_wait(r, s, send_gone); /* lets go of what was read: the body, the headers */
        buf_free(&r->body);
        r->body = data; /* now the data value itself: what dispatch needs later */
        return 0;
    }
    int rc = dispatch(s, r, buf_span(&data));
    buf_free(&data);
    return rc;
}
