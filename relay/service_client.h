/* service_client.h - service mode's client side: where the apps' negotiate sends Core clients.
 *
 * An app using the Azure SignalR SDK answers its clients' negotiate with a
 * redirect: url = <relay>/client/?hub=KEY&asrs.op=...&..., accessToken = a
 * client JWT signed with the AccessKey (asrs.s.uid = the user id, the user's
 * claims). The client then
 *   - POSTs /client/negotiate?hub=KEY&... with that token (Authorization:
 *     Bearer): the relay checks it, mints a connection id and a connection
 *     token of its own (hub/conn_token.h: id, user, hub; no table) and answers
 *     negotiate v1 with the WebSockets transport;
 *   - opens the WebSocket /client/?hub=KEY&id=TOKEN&... with the JWT again
 *     (access_token, or Authorization): the relay checks both, and the client
 *     becomes a Core session (relay/core_session.c) whose hub channel is a
 *     service channel (relay/service_channel.c) carrying the token's claims,
 *     mapped to the long claim types (the SDK maps nothing itself).
 * A refused token is 401. Server-Sent Events and long polling come through relay/core_http.c. */
#ifndef SR_SERVICE_CLIENT_H
#define SR_SERVICE_CLIENT_H

#include <libwebsockets.h>

#include "relay/core_session.h"
#include "relay/service.h"

struct svc_token;
/* The claims of a verified token as hub_claims for OpenConnection: an array
 * (free()) whose strings live in *storage (free()). NULL when out of memory. */
struct hub_claim *service_client_claims(const struct svc_token *t, char **storage);

/* A plain HTTP request on /client/...: negotiate, or a Server-Sent Events or
 * long-polling request (relay/core_http.c); suffix is the path after "/client". */
int service_client_http(struct service *svc, struct core_sessions *sessions, struct lws *wsi, const char *suffix);
/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE on /client/: the Core session, or a refusal. */
int service_client_confirm(struct service *svc, struct core_sessions *sessions, struct lws *wsi);

#endif
