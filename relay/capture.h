/* capture.h - `--capture DIR`: client sessions recorded as they pass through the relay.
 *
 * One JSON-lines file per client connection (docs/FIXTURES.md, format
 * "signalr-capture" version 2): a Core connection from its negotiate (or its
 * skip-negotiation WebSocket) to the end of its session, a legacy connection
 * from its negotiate to the end of the connection, every request and socket
 * of it, whatever the transport. Per-run values the relay knows (the tokens
 * and ids it handed out, access tokens, legacy cursors and groups tokens,
 * cache busters, the Authorization, Cookie and Origin headers) are written
 * as placeholders, replaced exactly where they stand and, for the long
 * random ones, wherever they appear. Bodies are kept unless
 * --capture-bodies none.
 *
 * The hooks below sit where client traffic enters and leaves the relay; each
 * is one line at its call site and costs two pointer loads when capture is
 * off (loop->capture is NULL). Everything here runs on the loop thread; the
 * files are written by relay/capture_writer.c's thread, which the loop only
 * hands whole buffers to: a full queue drops the capture of that connection
 * (counted), it never waits. */
#ifndef SR_CAPTURE_H
#define SR_CAPTURE_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "relay/loop.h"

enum capture_door { CAPTURE_CORE, CAPTURE_LEGACY };

struct capture;
struct capture_file;

/* --capture: the recorder for directory dir (NULL with a sentence in err
 * when it cannot be used: not a writable directory, no thread). The other
 * --capture-* settings are read from loop->cfg as they are used, so a
 * reload changes them; the directory is kept until a restart. */
struct capture *capture_new(struct loop *loop, const char *dir, char *err, size_t err_len);
/* Shutdown: ends every open file (with its end line), lets the writer
 * finish and frees everything. */
void capture_free(struct capture *cap);

/* An HTTP request of a client door arrived (its headers are read). */
void capture_http_request(struct lws *wsi, enum capture_door door);
/* A piece of its body, and its end. */
void capture_http_body(struct lws *wsi, const void *in, size_t len);
void capture_http_body_done(struct lws *wsi);
/* A whole response was written (or a WebSocket upgrade refused with it). */
void capture_http_response(struct lws *wsi, unsigned status, const char *content_type, const char *body, size_t len);
/* A streamed response began, a piece of it was written, and the relay ended it. */
void capture_http_stream(struct lws *wsi, unsigned status, const char *content_type);
void capture_http_chunk(struct lws *wsi, const void *data, size_t len);
void capture_http_stream_end(struct lws *wsi);

/* A WebSocket upgrade of a client door; accepted (established). */
void capture_ws_open(struct lws *wsi, enum capture_door door);
void capture_ws_accepted(struct lws *wsi);
/* A whole message from the client (c2s) or to it. */
void capture_ws_frame(struct lws *wsi, bool from_client, const void *data, size_t len, bool binary);
/* The client's close frame (its payload: code and reason), or the relay's close (of a
 * WebSocket, or of the event stream a closing legacy session ends the same way). */
void capture_ws_client_close(struct lws *wsi, const void *payload, size_t len);
void capture_ws_server_close(struct lws *wsi, unsigned code, const char *reason);

/* The connection is gone (LWS_CALLBACK_WSI_DESTROY). */
void capture_wsi_gone(struct lws *wsi);

/* A session starts on the connection wsi (its negotiate's file, if any, is
 * held in *slot until capture_session_end). */
void capture_session_begin(struct lws *wsi, struct capture_file **slot);
void capture_session_end(struct capture_file **slot);

#endif
