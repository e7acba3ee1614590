/* legacy_sse.h - the serverSentEvents receive channel of a legacy connection, on the wire.
 *
 *   HTTP/1.1 200 OK
 *   Content-Type: text/event-stream
 *   Cache-Control: no-cache            X-Accel-Buffering: no (proxies pass each event at once)
 *
 *   data: initialized\n\n              at once: .NET counts the first bytes as "connected"
 *   data: {"C":"...","S":1,"M":[]}\n\n one event per frame, compact JSON on one line
 *   data: {}\n\n                       keep-alive
 *
 * (specs/legacy-signalr.md 4.2 and 12). The stream is the wsi of the GET
 * /connect or /reconnect; lws is told it is SSE so it arms no timeout on
 * it. Frames queue as ready-made events (struct wsmsg) and are written with
 * LWS_WRITE_HTTP from HTTP_WRITEABLE; the stream ends when the connection
 * closes. The session (relay/legacy_session.h) owns the queue. */
#ifndef SR_LEGACY_SSE_H
#define SR_LEGACY_SSE_H

#include <libwebsockets.h>
#include <stdbool.h>

#include "relay/config.h"
#include "relay/wsmsg.h"

#define LEGACY_SSE_INITIALIZED "initialized"

/* Writes the stream's headers on wsi. False when they could not be written. */
bool legacy_sse_begin(const struct relay_config *cfg, struct lws *wsi);
/* The event "data: <frame>\n\n" for one frame (no newline may be in it). NULL when out of memory. */
struct wsmsg *legacy_sse_event(const char *frame, size_t len);
/* HTTP_WRITEABLE: writes queued events until lws holds a partial write. False when writing failed. */
bool legacy_sse_flush(struct lws *wsi, struct msg_queue *q);

#endif
