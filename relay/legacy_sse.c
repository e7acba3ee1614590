/* legacy_sse.c - the serverSentEvents channel on the wire (see legacy_sse.h). */
#include "relay/legacy_sse.h"

#include <string.h>

#include "relay/capture.h"
#include "relay/http.h"

bool legacy_sse_begin(const struct relay_config *cfg, struct lws *wsi)
{
    if (!http_begin_stream(cfg, wsi, 200, "text/event-stream"))
        return false;
    lws_http_mark_sse(wsi);
    return true;
}

struct wsmsg *legacy_sse_event(const char *frame, size_t len)
{
    static const char head[] = "data: ", tail[] = "\n\n";
    struct wsmsg *m = wsmsg_new(sizeof head - 1 + len + sizeof tail - 1, false);
    if (!m)
        return NULL;
    memcpy(m->payload, head, sizeof head - 1);
    memcpy(m->payload + sizeof head - 1, frame, len);
    memcpy(m->payload + sizeof head - 1 + len, tail, sizeof tail - 1);
    m->len = sizeof head - 1 + len + sizeof tail - 1;
    return m;
}

bool legacy_sse_flush(struct lws *wsi, struct msg_queue *q)
{
    struct wsmsg *m;
    while (!lws_partial_buffered(wsi) && (m = msg_queue_pop(q)) != NULL) {
        capture_http_chunk(wsi, m->payload, m->len);
        int n = lws_write(wsi, m->payload, m->len, LWS_WRITE_HTTP);
        wsmsg_free(m);
        if (n < 0)
            return false;
    }
    if (!msg_queue_is_empty(q))
        lws_callback_on_writable(wsi);
    return true;
}
