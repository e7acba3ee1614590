/* legacy.h - the legacy ASP.NET SignalR 2.x endpoint (default /signalr).
 *
 * Routes negotiate, ping, start, abort and the WebSocket connect/reconnect
 * in the original server's dispatch and validation order, with its status
 * codes and error texts (specs/legacy-signalr.md section 1.1), and hands
 * connections to legacy_session. Connection tokens are minted and verified
 * here: base64url, HMAC-signed by the relay, carrying the connection id and
 * the hub list. */
#ifndef SR_LEGACY_H
#define SR_LEGACY_H

#include <libwebsockets.h>
#include <stdbool.h>

struct legacy_table;
struct relay_config;

/* If path is under the legacy endpoint, returns the rest ("/negotiate", ...),
 * else NULL. */
const char *legacy_route(const struct relay_config *cfg, const char *path);

/* An ordinary HTTP request under the endpoint. Returns the lws callback result. */
int legacy_http(struct legacy_table *t, struct lws *wsi, const char *suffix);

struct legacy_request;
/* LWS_CALLBACK_HTTP_BODY_COMPLETION of a request whose body legacy_http read. */
int legacy_http_body_complete(struct legacy_table *t, struct legacy_request *r);

/* A WebSocket upgrade under the endpoint (LWS_CALLBACK_HTTP_CONFIRM_UPGRADE):
 * 0 to accept, 1 after writing a refusal, -1 to hang up. */
int legacy_confirm_upgrade(struct legacy_table *t, struct lws *wsi, const char *suffix);

#endif
