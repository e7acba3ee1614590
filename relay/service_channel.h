/* service_channel.h - service mode's hub channel: a client as a connection id on an app's server connection.
 *
 * The second implementation of relay/hub_channel.h (the first is proxy
 * mode's relay/proxy_channel.c). open() only checks that the hub has a
 * server connection taking clients and keeps what OpenConnection needs;
 * begin() binds the client to the least-loaded server connection of its hub
 * (the sticky server of its token first, spec 2.7), adds it to the hub
 * model (its user from asrs.s.uid) and sends OpenConnection (claims,
 * headers, `?query`, ext {3: protocol}) and ConnectionData with the client's
 * handshake. From then on the client's messages go out as ConnectionData on
 * that connection, and the app's come back as ConnectionData or through a
 * fan-out; CloseConnection either way ends it.
 *
 * Toward the client. What the app sends before its handshake answer
 * (ConnectionData tagged ext 5 = 1) is held and follows that answer, in
 * arrival order (spec appendix A.2). A shared server connection cannot be
 * paused for one slow client: while the session has paused the channel its
 * messages are held too, up to --max-buffered bytes; a client over that is
 * closed with a reason (counted as slow_client_closes), never a message
 * dropped and never the other clients slowed.
 *
 * Toward the app. The server connection's queue is shared: a send returns
 * HUB_SEND_FULL when that queue is over --max-buffered, and the channel
 * reports `drained` when it fell to half. */
#ifndef SR_SERVICE_CHANNEL_H
#define SR_SERVICE_CHANNEL_H

#include <stdbool.h>

#include "containers/list.h"
#include "containers/span.h"
#include "relay/hub_channel.h"

struct service;
struct service_channel;

/* hub_endpoint.open of every service hub (given to service_hub_get by relay/service_server.c). */
struct hub_channel *service_channel_open(struct hub_endpoint *ep, const struct hub_channel_client *client,
                                         const struct hub_channel_ops *ops, void *owner, const char **why);

/* A hub known by the name a legacy client gives it (--app-negotiate NAME=URL), whose
 * service hub comes and goes with the app: each open finds it by the hub key the app's
 * negotiate last named (its redirect's hub=; the SDK's key may differ from the name:
 * class OpsHub at /ops is `opshub`), else by the name itself. The name is copied. */
#define SERVICE_HUB_KEY_MAX 128
struct service_named_endpoint {
    struct hub_endpoint base; /* base.name: the configured name (owned) */
    struct service *service;
    char key[SERVICE_HUB_KEY_MAX + 1]; /* learnt; "" until the first negotiate */
};
/* False when out of memory. */
bool service_named_endpoint_init(struct service_named_endpoint *ep, struct service *svc, const char *name);
void service_named_endpoint_free(struct service_named_endpoint *ep);
/* The app's negotiate named this hub key for the endpoint's hub. */
void service_named_endpoint_learn(struct service_named_endpoint *ep, struct span key);

/* ---- from the server connection (relay/service_server.c) ---- */

struct svc_client;
/* The channel a hub model client is part of (every svc_client of a service hub is a channel's). */
struct service_channel *service_channel_of(struct svc_client *client);

/* ConnectionData for this client; data_type is its ext key 5 (0 when absent). */
void service_channel_data(struct service_channel *ch, struct span payload, int data_type);
/* What one send's payloads hold, peeked once for all its recipients: a
 * recipient's session then need not look at its copy again (wsmsg.hub_kinds).
 * One slot per protocol's payload; zeroed before the send's first recipient. */
struct service_fanout_peek {
    struct {
        const char *ptr; /* the payload peeked, NULL: none yet */
        size_t len;
        unsigned kinds; /* WSMSG_KINDS_KNOWN | kind bits, or 0: malformed (the session sees it) */
    } seen[2];
};
/* A payload a send (7, 8, 9, 10, 13, 14, 34) has for this client; peek is
 * the send's (NULL: a send to this client alone). */
void service_channel_fanout(struct service_channel *ch, struct span payload, struct service_fanout_peek *peek);
/* The app closed the client (5); error absent or "" for a clean close. The
 * channel has not left the model yet: it does so here. */
void service_channel_app_closed(struct service_channel *ch, struct span error);
/* The client's server connection went; the model has already removed the client. */
void service_channel_server_lost(struct service_channel *ch, const char *why);
/* The server connection's queue fell to half the mark: every channel on
 * full_channels (its list of channels told HUB_SEND_FULL) hears `drained`. */
void service_channels_drained(struct list_node *full_channels);

#endif
