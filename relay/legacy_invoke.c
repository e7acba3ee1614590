/* legacy_invoke.c - what a legacy client sends: its invocations ({"H","M","A","I"}) read
 * from a WebSocket message or a /send form, each forwarded on the link of its hub (opened on
 * demand for a hub the connection did not list), and the errors it is answered with when
 * that cannot be done (see legacy_session.h). */
#include "relay/legacy_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/legacy_cursor.h"
#include "protocol/legacy_frame.h"
#include "protocol/legacy_invocation.h"
#include "relay/clock.h"
#include "relay/http.h"
#include "relay/legacy_sse.h"
#include "relay/log.h"

/* The invocation id "I" as a C string, whole however long (cut, the client could never match
 * its answer): owned by the caller; NULL when out of memory. */
static char *invocation_id_copy(const struct hub_msg *msg)
{
    return strndup(msg->invocation_id.ptr ? msg->invocation_id.ptr : "", msg->invocation_id.len);
}

static void forward_invocation_as(struct legacy_session *s, struct hub_msg *msg, const char *legacy_id)
{
    struct legacy_link *l = legacy_session_find_link(s, msg->hub);
    if (l && l->state == LEGACY_LINK_FAILED && !l->listed) {
        /* An on-demand link that failed earlier: try again for this call. */
        for (size_t i = s->listed_count; i < s->link_count; i++)
            if (s->links[i] == l) {
                s->links[i] = s->links[--s->link_count];
                break;
            }
        legacy_link_free(l);
        l = NULL;
    }
    if (!l) {
        struct legacy_hub *hub = legacy_table_hub(s->table, msg->hub);
        if (!hub) {
            char text[200];
            snprintf(text, sizeof text, "'%.*s' Hub could not be resolved.", (int)msg->hub.len, msg->hub.ptr);
            if (legacy_id[0])
                legacy_session_result_error(s, legacy_id, text);
            return;
        }
        l = legacy_session_open_link(s, hub, msg->hub, false);
        if (!l) {
            if (legacy_id[0])
                legacy_session_result_error(s, legacy_id, LEGACY_OUT_OF_MEMORY_TEXT);
            return;
        }
    }
    legacy_link_invoke(l, legacy_id, msg);
    if (legacy_link_full(l) && s->carrier == LEGACY_CARRIER_WEBSOCKET)
        wsmsg_pause_reading(s->wsi, &s->client_paused, s->loop);
}

void legacy_session_invoke(struct legacy_session *s, struct hub_msg *msg)
{
    char *legacy_id = invocation_id_copy(msg);
    if (!legacy_id) {
        legacy_session_end(s, LEGACY_OUT_OF_MEMORY_TEXT);
        return;
    }
    forward_invocation_as(s, msg, legacy_id);
    free(legacy_id);
}

static void handle_client_text(struct legacy_session *s, const char *data, size_t len)
{
    struct hub_msg msg;
    struct proto_error err = { 0 };
    hub_msg_init(&msg);
    enum proto_status st = legacy_invocation_decode(data, len, &msg, &err);
    if (st == PROTO_OK) {
        legacy_session_invoke(s, &msg);
    } else {
        s->loop->stats.protocol_errors++;
        log_conn_info(s->connection_id, legacy_session_log_hub(s), "legacy: unreadable invocation (%s: %s)", proto_status_name(st), err.detail);
        /* Answer with an error if the id could be read, as the original answers bad calls. */
        char *id = span_is_set(msg.invocation_id) && msg.invocation_id.len > 0 ? invocation_id_copy(&msg) : NULL;
        if (id) {
            char text[300];
            snprintf(text, sizeof text, "The relay could not read the invocation: %s", err.detail ? err.detail : "malformed");
            legacy_session_result_error(s, id, text);
            free(id);
        }
    }
    hub_msg_release(&msg);
}

int legacy_session_receive(struct legacy_session *s, const void *in, size_t len)
{
    s->last_heard_ms = clock_now_ms();
    if (s->closing || s->ws_close != WSMSG_CLOSE_NONE)
        return 0; /* after the relay's Close: read and discarded (relay/wsmsg.h) */
    enum wsmsg_fault fault;
    struct wsmsg *whole = wsmsg_receive(&s->rx_partial, s->wsi, in, len, s->loop,
                                        config_client_message_limit(s->loop->cfg), "legacy session", &fault);
    if (!whole) {
        if (fault == WSMSG_BAD_UTF8) {
            /* As the original's WebSocket would: 1007, in a lingering close. The channel takes
             * nothing more (no pushes, no keep-alives); the session waits for a reconnect once
             * the socket is gone, as after any lost WebSocket. */
            s->channel_live = false;
            s->ping_due = false;
            timer_cancel(&s->keepalive_timer);
            wsmsg_close_invalid_payload(s->wsi, &s->to_client, &s->ws_close);
            return 0;
        }
        if (fault != WSMSG_MORE)
            legacy_session_end(s, fault == WSMSG_TOO_LARGE ? "The message exceeded the relay's maximum message size."
                                                    : LEGACY_OUT_OF_MEMORY_TEXT);
        return 0;
    }
    handle_client_text(s, (const char *)whole->payload, whole->len);
    wsmsg_free(whole);
    return 0;
}
