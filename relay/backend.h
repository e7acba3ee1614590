/* backend.h - lws client connections to ASP.NET Core hubs: negotiate requests and WebSocket links.
 *
 * Two kinds of backend connection, both lws client connections:
 *  - struct backend_negotiate: one POST {hub}/negotiate?negotiateVersion=1,
 *    whose status and body are handed to the owner once;
 *  - struct backend_link: the WebSocket to {hub}?id=TOKEN over which a
 *    client's hub traffic flows, whole messages in both directions, with a
 *    bounded send queue and read pausing for flow control.
 * Both forward the client's query string, its Authorization, Cookie,
 * User-Agent and Origin headers (see header_list_capture) and an
 * X-Forwarded-For header, so backend authentication and logging keep working.
 *
 * Ownership: the relay code that starts one owns the handle until it calls
 * *_cancel / backend_link_close, or until the link reports `closed`; after
 * that the handle is freed by lws' close path and must not be touched. */
#ifndef SR_BACKEND_H
#define SR_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "relay/backend_conn.h"
#include "relay/config.h"
#include "relay/http.h"
#include "relay/loop.h"
#include "relay/wsmsg.h"

struct lws_protocols;

/* status is the backend's HTTP status (0 if it could not be reached; then
 * error says why). body is valid only during the call. */
typedef void (*backend_negotiate_cb)(void *owner, unsigned status, const char *body, size_t body_len,
                                     const char *error);

struct backend_negotiate;

/* Starts POST {route path}/negotiate?negotiateVersion=1{query}. NULL if it
 * could not even be started (the reason is logged). cb runs exactly once
 * unless the request is cancelled first. */
/* Whether a query of query_len bytes (plus an id argument of id_len) fits in
 * one backend request line (BACKEND_MAX_REQUEST_LINE) for every instance of
 * route; a longer one is refused, never sent cut. */
bool backend_query_fits(const struct hub_route *route, size_t query_len, size_t id_len);

struct backend_negotiate *backend_negotiate_start(struct backends *b, const struct backend_params *params,
                                                  backend_negotiate_cb cb, void *owner);
/* The owner loses interest: no callback will follow. */
void backend_negotiate_cancel(struct backend_negotiate *request);
/* The same, because the backend took too long: its instance backs off. */
void backend_negotiate_timed_out(struct backend_negotiate *request);
/* Where the request went (valid in the callback): a link opened with this pin reaches the
 * backend process that answered. */
void backend_negotiate_pin(const struct backend_negotiate *request, struct backend_pin *pin);

struct backend_link_ops {
    void (*opened)(void *owner);
    /* A whole message from the backend; ownership passes to the owner. */
    void (*message)(void *owner, struct wsmsg *msg);
    /* The link is gone (why == NULL: the backend closed it cleanly; was_open:
     * after `opened`). The handle is invalid after this call. */
    void (*closed)(void *owner, bool was_open, const char *why);
    /* The send queue fell below half of --max-buffered after being above it. */
    void (*drained)(void *owner);
};

struct backend_link;

/* Opens the WebSocket to {route path}?id=backend_token{query}. NULL if it
 * could not be started. Messages sent before it is open are queued. */
struct backend_link *backend_link_open(struct backends *b, const struct backend_params *params,
                                       const char *backend_token, const struct backend_link_ops *ops,
                                       void *owner);
/* Queues one whole message (ownership passes). False if the link is closing. */
bool backend_link_send(struct backend_link *link, struct wsmsg *msg);
/* Bytes waiting to be written to the backend. */
size_t backend_link_queued(const struct backend_link *link);
/* Stops or resumes reading from the backend (flow control toward a slow client). */
void backend_link_pause_reading(struct backend_link *link, bool paused);
/* Closes with status 1000 once queued messages are written; the owner gets
 * no further callbacks. */
void backend_link_close(struct backend_link *link);

/* lws is destroying the wsi of a negotiate request or link (its opaque user
 * data, tagged WSI_ROLE_BACKEND_*) without having reported its close to the
 * backend protocol: at context destruction, for connections still being set
 * up. Frees it; an owner still attached hears `closed`. */
void backend_wsi_destroyed(void *handle);

/* The two lws protocols (HTTP negotiate, WebSocket) for the relay's vhost. */
extern const struct lws_protocols backend_negotiate_protocol;
extern const struct lws_protocols backend_link_protocol;

#endif
