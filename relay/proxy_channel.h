/* proxy_channel.h - proxy mode's hub channel: one backend WebSocket per (client, hub).
 *
 * The first implementation of relay/hub_channel.h. One proxy endpoint per
 * configured hub; each channel it opens is an ordinary ASP.NET Core SignalR
 * connection to that hub's backend, reached the one way every session uses:
 * negotiate with the backend (unless the client's own negotiate already did,
 * and left the backend's token), pick the token the answer names, open the
 * WebSocket, and pass the client's handshake, which the backend answers.
 * Messages sent before the WebSocket is open wait in the channel, then in the
 * link's queue; both count toward --max-buffered. */
#ifndef SR_PROXY_CHANNEL_H
#define SR_PROXY_CHANNEL_H

#include "relay/backend.h"
#include "relay/config.h"
#include "relay/hub_channel.h"

struct proxy_endpoint {
    struct hub_endpoint base;
    struct backends *backends;
    const struct hub_route *route;
};

void proxy_endpoint_init(struct proxy_endpoint *ep, struct backends *backends, const struct hub_route *route);

#endif
