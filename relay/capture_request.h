/* capture_request.h - a client's HTTP request or WebSocket upgrade as a capture file describes it.
 *
 * The method and path, the query as `rawQuery` (re-encoded from the
 * arguments lws decoded: the relay never sees the raw query) and as
 * `query` pairs, a fixed selection of headers, and a form body's pairs; the
 * per-run values among them replaced by their placeholders where they stand
 * (relay/capture_mask.h). For relay/capture.c only. */
#ifndef SR_CAPTURE_REQUEST_H
#define SR_CAPTURE_REQUEST_H

#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"
#include "relay/capture_mask.h"

/* The request's method ("" when none) and its path into path (empty when too long). */
const char *capture_request_line(struct lws *wsi, char *path, size_t len);
/* The decoded value of the query argument name (ASCII case-insensitive; the first one) into value. */
void capture_query_value(struct lws *wsi, const char *name, struct buf *value);
/* Whether a body follows the headers (a POST, PUT or PATCH with a length or a chunked body). */
bool capture_request_has_body(struct lws *wsi, const char *method);
/* Adds path, rawQuery, query and headers to o, masked. */
void capture_describe_request(cJSON *o, struct lws *wsi, struct mask_table *names, const char *path);
/* When o's headers say the body is a form, or a legacy request has no
 * Content-Type (the .NET client's /send: the relay reads its body as a form
 * anyway): adds `form` (its pairs, masked) and returns the masked body in
 * *masked (true); else false. */
bool capture_form(cJSON *o, struct mask_table *names, bool legacy, const char *body, size_t len, struct buf *masked);

#endif
