/* proxy_channel.c - a hub channel over a negotiated backend link (see proxy_channel.h). */
#include "relay/proxy_channel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/negotiate.h"

#define OUT_OF_MEMORY_TEXT "the relay ran out of memory"

/* While negotiating: what the link will need, and what was sent meanwhile. */
struct proxy_pending {
    struct hub_client_copy *client;
    struct msg_queue early;
};

/* An open channel holds no more than this (it is per client, idle or not). */
struct proxy_channel {
    struct hub_channel base;
    struct proxy_endpoint *ep;
    struct backend_negotiate *negotiating; /* step 1, when the client's negotiate left no token */
    struct proxy_pending *pending;         /* only while negotiating */
    struct backend_link *link;             /* step 2 */
    char connection_id[24];                /* the client's negotiated id, else learnt by negotiating; "" until
                                              known (for logs: a longer one is cut, as the session's was) */
    bool full;                             /* HUB_SEND_FULL was returned; `drained` not yet */
    bool paused;                           /* the owner paused delivery */
};

static const struct hub_channel_class proxy_class;
static const struct backend_link_ops proxy_link_ops;

/* Every backend request of a proxy channel is bounded by --backend-timeout
 * (a client's own negotiate is bounded by relay/core_negotiate.c). */
static unsigned ep_timeout(const struct proxy_endpoint *ep)
{
    return ep->backends->loop->cfg->backend_timeout_ms;
}

static void pending_free(struct proxy_pending *p)
{
    if (!p)
        return;
    msg_queue_clear(&p->early);
    hub_client_copy_free(p->client);
    free(p);
}

static void proxy_free(struct proxy_channel *ch)
{
    pending_free(ch->pending);
    free(ch);
}

/* The end before `opened`: the owner hears `refused`. */
static void proxy_refuse(struct proxy_channel *ch, const char *why)
{
    hub_channel_report_end(&ch->base, false, why);
    proxy_free(ch);
}

/* Step 2: the WebSocket to the backend, with whatever was sent meanwhile. */
static bool proxy_link(struct proxy_channel *ch, const struct backend_params *params, const char *token)
{
    ch->link = backend_link_open(ch->ep->backends, params, token, &proxy_link_ops, ch);
    if (!ch->link)
        return false;
    struct wsmsg *m;
    while (ch->pending && (m = msg_queue_pop(&ch->pending->early)) != NULL)
        backend_link_send(ch->link, m);
    return true;
}

/* Step 1 answered: pick the token the backend named and open the link. */
static void proxy_negotiated(void *owner, unsigned status, const char *body, size_t len, const char *error)
{
    struct proxy_channel *ch = owner;
    struct backend_pin pin; /* the link goes where the negotiate went */
    backend_negotiate_pin(ch->negotiating, &pin);
    ch->negotiating = NULL;
    char why[300];
    if (status != 200) {
        ch->ep->backends->loop->stats.backend_failures++;
        if (status)
            snprintf(why, sizeof why, "negotiate answered HTTP %u", status);
        else
            snprintf(why, sizeof why, "%s", error ? error : "unreachable");
        proxy_refuse(ch, why);
        return;
    }
    struct negotiate_response resp;
    if (negotiate_decode_response(body, len, &resp, NULL) != PROTO_OK || span_is_set(resp.error) ||
        span_is_set(resp.url)) {
        negotiate_response_release(&resp);
        proxy_refuse(ch, "its negotiate answer could not be used");
        return;
    }
    struct span token = resp.version > 0 ? resp.connection_token : resp.connection_id;
    char *backend_token = strndup(token.ptr ? token.ptr : "", token.len);
    snprintf(ch->connection_id, sizeof ch->connection_id, "%.*s", (int)resp.connection_id.len,
             resp.connection_id.ptr ? resp.connection_id.ptr : "");
    negotiate_response_release(&resp);
    if (!backend_token) {
        free(backend_token);
        ch->ep->backends->loop->stats.out_of_memory_closes++;
        proxy_refuse(ch, OUT_OF_MEMORY_TEXT);
        return;
    }
    struct hub_client_copy *c = ch->pending->client;
    struct backend_params params = { ch->ep->route, c->query, &c->headers, c->forwarded_for, ep_timeout(ch->ep), &pin };
    bool linked = proxy_link(ch, &params, backend_token);
    free(backend_token);
    pending_free(ch->pending);
    ch->pending = NULL;
    if (!linked)
        proxy_refuse(ch, "the WebSocket connection could not be started");
}

static struct hub_channel *proxy_open(struct hub_endpoint *base, const struct hub_channel_client *client,
                                      const struct hub_channel_ops *ops, void *owner, const char **why)
{
    struct proxy_endpoint *ep = (struct proxy_endpoint *)base;
    struct proxy_channel *ch = calloc(1, sizeof *ch);
    if (!ch) {
        ep->backends->loop->stats.out_of_memory_closes++;
        *why = OUT_OF_MEMORY_TEXT;
        return NULL;
    }
    hub_channel_init(&ch->base, &proxy_class, ops, owner);
    ch->ep = ep;
    if (client->connection_id)
        snprintf(ch->connection_id, sizeof ch->connection_id, "%s", client->connection_id);
    struct backend_params params = { ep->route, client->query, client->headers, client->forwarded_for, ep_timeout(ep),
                                     NULL };
    if (client->negotiated_token) {
        struct backend_pin pin; /* where the relay's negotiate went */
        const char *token = backend_pin_split(client->negotiated_token, &pin);
        params.pin = &pin;
        if (!proxy_link(ch, &params, token)) {
            *why = "the WebSocket connection could not be started";
            proxy_free(ch);
            return NULL;
        }
        return &ch->base;
    }
    ch->pending = calloc(1, sizeof *ch->pending);
    if (ch->pending) {
        msg_queue_init(&ch->pending->early);
        ch->pending->client = hub_client_copy_new(client);
    }
    if (!ch->pending || !ch->pending->client) {
        ep->backends->loop->stats.out_of_memory_closes++;
        *why = OUT_OF_MEMORY_TEXT;
        proxy_free(ch);
        return NULL;
    }
    ch->negotiating = backend_negotiate_start(ep->backends, &params, proxy_negotiated, ch);
    if (!ch->negotiating) {
        *why = "negotiate could not be started";
        proxy_free(ch);
        return NULL;
    }
    return &ch->base;
}

void proxy_endpoint_init(struct proxy_endpoint *ep, struct backends *backends, const struct hub_route *route)
{
    ep->base.name = route->name;
    ep->base.open = proxy_open;
    ep->backends = backends;
    ep->route = route;
}

/* ------------------------------------------------------------ link ops */

static void proxy_link_opened(void *owner)
{
    struct proxy_channel *ch = owner;
    if (ch->paused) /* paused before the WebSocket was open */
        backend_link_pause_reading(ch->link, true);
    char connection_id[sizeof ch->connection_id]; /* the owner may close (free) the channel in `opened` */
    memcpy(connection_id, ch->connection_id, sizeof connection_id);
    hub_channel_report_opened(&ch->base, connection_id);
}

static void proxy_link_message(void *owner, struct wsmsg *msg)
{
    struct proxy_channel *ch = owner;
    hub_channel_deliver(&ch->base, msg);
}

static void proxy_link_closed(void *owner, bool was_open, const char *why)
{
    struct proxy_channel *ch = owner;
    ch->link = NULL;
    hub_channel_report_end(&ch->base, was_open, why);
    proxy_free(ch);
}

static void proxy_link_drained(void *owner)
{
    struct proxy_channel *ch = owner;
    if (!ch->full)
        return;
    ch->full = false;
    hub_channel_report_drained(&ch->base);
}

static const struct backend_link_ops proxy_link_ops = {
    proxy_link_opened, proxy_link_message, proxy_link_closed, proxy_link_drained,
};

/* -------------------------------------------------------- channel class */

static enum hub_send_result proxy_send(struct hub_channel *base, struct wsmsg *msg)
{
    struct proxy_channel *ch = (struct proxy_channel *)base;
    size_t queued;
    if (ch->link) {
        if (!backend_link_send(ch->link, msg))
            return HUB_SEND_CLOSED;
        queued = backend_link_queued(ch->link);
    } else { /* negotiating: there is no link without pending */
        msg_queue_push(&ch->pending->early, msg);
        queued = ch->pending->early.bytes;
    }
    if (queued <= ch->ep->backends->loop->cfg->max_buffered_bytes)
        return HUB_SEND_OK;
    ch->full = true;
    return HUB_SEND_FULL;
}

/* The backend reads the protocol from the handshake itself. */
static enum hub_send_result proxy_begin(struct hub_channel *base, enum hub_protocol protocol, struct wsmsg *handshake)
{
    (void)protocol;
    return proxy_send(base, handshake);
}

static void proxy_pause(struct hub_channel *base, bool paused)
{
    struct proxy_channel *ch = (struct proxy_channel *)base;
    ch->paused = paused;
    if (ch->link)
        backend_link_pause_reading(ch->link, paused);
}

static void proxy_close(struct hub_channel *base, const char *error)
{
    (void)error; /* the backend hears a normal close (1000) either way */
    struct proxy_channel *ch = (struct proxy_channel *)base;
    if (ch->negotiating)
        backend_negotiate_cancel(ch->negotiating);
    if (ch->link)
        backend_link_close(ch->link); /* writes what is queued first */
    proxy_free(ch);
}

static const char *proxy_id(const struct hub_channel *base)
{
    return ((const struct proxy_channel *)base)->connection_id;
}

static const struct hub_channel_class proxy_class = {
    proxy_begin, proxy_send, proxy_pause, proxy_close, proxy_id,
};
