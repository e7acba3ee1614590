/* core_ws.c - the WebSocket transport of a Core session: writes its queue to the client's socket (see core_session.h). */
#include "relay/core_session.h"

static void ws_kick(struct core_session *s)
{
    /* At once when nothing is ahead of it (see wsmsg_send); the queue holds the rest. */
    struct wsmsg *m = s->to_client.count == 1 ? msg_queue_pop(&s->to_client) : NULL;
    if (m)
        wsmsg_send(s->wsi, &s->to_client, m);
}

static void ws_pause_reading(struct core_session *s, bool paused)
{
    if (paused)
        wsmsg_pause_reading(s->wsi, &s->client_paused, s->table->loop);
    else
        wsmsg_resume_reading(s->wsi, &s->client_paused);
}

static void ws_closing(struct core_session *s)
{
    if (s->wsi)
        lws_callback_on_writable(s->wsi);
}

const struct core_transport core_ws_transport = {
    .kind = CORE_TRANSPORT_WEBSOCKETS,
    .pings = true,
    .kick = ws_kick,
    .pause_reading = ws_pause_reading,
    .closing = ws_closing,
};

int core_session_writeable(struct core_session *s)
{
    if (s->ws_close != WSMSG_CLOSE_NONE) /* the Close is out: nothing more is written */
        return wsmsg_close_lingering(s->wsi, &s->ws_close);
    if (!wsmsg_flush(s->wsi, &s->to_client))
        return -1;
    core_session_sent(s);
    if (s->state == CORE_CLOSING && msg_queue_is_empty(&s->to_client) && !lws_partial_buffered(s->wsi))
        return wsmsg_close_lingering(s->wsi, &s->ws_close); /* kept open until the client goes */
    return 0;
}
