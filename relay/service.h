/* service.h - service mode's shared state: the AccessKeys, the hubs the apps connected, the counters.
 *
 * In service mode (docs/ARCHITECTURE.md, specs/service-protocol.md) ASP.NET
 * Core apps using the Azure SignalR SDK connect their hubs to the relay over
 * a few multiplexed server connections (relay/service_server.c), their
 * clients are redirected to the relay (relay/service_client.c), and each
 * client reaches its hub through a service channel (relay/service_channel.c),
 * a connection id on one of those server connections. The relay owns the
 * clients, groups and users in one hub model per hub (hub/service_hub.h).
 *
 * A hub exists from the first server connection that names it (`hub=` of
 * /server/, the SDK's lower-cased hub key) until the relay stops: clients,
 * groups and users live in it, and its endpoint is what Core sessions open
 * their channels on. OWNERSHIP: struct service owns its hubs; the hubs' model
 * tables link memory owned by the server connections and the channels. */
#ifndef SR_SERVICE_H
#define SR_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/dict.h"
#include "containers/list.h"
#include "containers/pool.h"
#include "containers/span.h"
#include "hub/conn_token.h"
#include "hub/service_hub.h"
#include "hub/early_sends.h"
#include "hub/spent_ids.h"
#include "relay/hub_channel.h"
#include "relay/loop.h"

/* The SDK drops a connection that heard nothing for 30 s; the relay pings
 * every 5 s, as Azure does, and takes 30 s of silence as the app's death. */
#define SERVICE_PING_MS 5000u
#define SERVICE_SILENCE_MS 30000u

struct service_stats {
    uint64_t servers_accepted;      /* server connections that completed the service handshake */
    uint64_t servers_refused;       /* 401s and handshake refusals */
    uint64_t server_protocol_errors;
    uint64_t clients_opened;        /* OpenConnection sent */
    uint64_t fanout_messages;       /* 7/8/9/10/13/14 handled */
    uint64_t fanout_deliveries;     /* recipients reached by them */
    uint64_t acks_sent;
    uint64_t slow_client_closes;    /* clients closed for not reading what the app sent them */
    uint64_t dropped_unknown;       /* messages for connection ids the relay does not hold (A.4) */
    uint64_t fanout_turns_deferred; /* times a server connection's messages waited for the next loop turn */
};

struct service;

/* A server connection as the service channels see it (relay/service_server.c
 * embeds one; svc_server_conn.owner points at it): where a client's messages
 * to the app go. It keeps channels and server connections from including
 * each other: the server connection calls into the channels, the channels
 * reach the connection only through this. */
struct service_uplink {
    /* Appends one encoded service message. False if the connection is
     * closing or out of memory (its end then reaches the channel). */
    bool (*write)(struct service_uplink *up, const struct buf *encoded);
    /* Bytes waiting to be written on the connection. */
    size_t (*queued)(const struct service_uplink *up);
    /* Channels told HUB_SEND_FULL, to hear `drained` when the queue fell to half the mark. */
    struct list_node full_channels;
};

/* What opens a client's channel on a hub (service_channel_open). */
typedef struct hub_channel *(*service_channel_open_fn)(struct hub_endpoint *ep, const struct hub_channel_client *client,
                                                       const struct hub_channel_ops *ops, void *owner,
                                                       const char **why);

/* One hub as the apps named it. */
struct service_hub {
    struct hub_endpoint endpoint;   /* what its Core sessions open channels on */
    struct list_node link;          /* in service.hubs */
    struct service *service;
    struct svc_hub model;           /* servers, clients, groups, users */
    size_t clients_by_protocol[SVC_PROTOCOL_COUNT]; /* clients in the model, for /metrics */
    struct list_node invocations;   /* struct service_invocation.link: client results across servers */
    /* Channels with work for the next loop turn (a refusal, flushing what they held): one
     * wheel entry for the hub rather than one per client (relay/service_channel.c). */
    struct list_node deferred;      /* struct service_channel.defer_link */
    struct timer_entry deferred_timer; /* runs service_channels_deferred */
    char key[];                     /* the hub key, lower case; endpoint.name */
};

/* deferred_timer's callback (relay/service_channel.c). */
void service_channels_deferred(struct timer_entry *e);
/* Makes `channels` the pool of struct service_channel (relay/service_channel.c). */
void service_channel_pool_init(struct pool *channels);
/* turn_timer's callback (relay/service_server.c). */
void service_servers_turn(struct timer_entry *e);

struct service {
    struct loop *loop;
    bool enabled;                   /* some --service-key was given */
    bool stopping;                  /* the relay is draining: no new server connections */
    struct span *keys;              /* the configured AccessKeys' bytes */
    size_t key_count;
    struct token_key token_key;     /* signs the connection tokens of /client/negotiate */
    struct spent_ids spent;         /* client ids that opened once: never again while their token lasts */
    struct spent_ids stateful;      /* client ids whose negotiate offered stateful reconnect, while their token lasts */
    struct early_sends early;       /* what clients POSTed before their first SSE GET or poll, while their token lasts */
    uint8_t seed[DICT_SEED_LEN];
    struct list_node hubs;          /* struct service_hub.link */
    size_t hub_count;
    struct list_node servers;       /* struct service_server.link: every server connection */
    size_t server_count;
    /* Server connections whose messages wait for the next loop turn (their turn's
     * --service-fanout-budget was spent), in the order they take turns; the timer runs
     * service_servers_turn on the next turn. */
    struct list_node behind;        /* struct service_server.behind_link */
    struct timer_entry turn_timer;
    struct service_stats stats;
    struct pool channels;           /* every struct service_channel (relay/service_channel.c) */
};

/* False when out of memory or randomness. Service mode is off (and nothing
 * else is needed) without configured keys. */
bool service_init(struct service *svc, struct loop *loop, const uint8_t seed[DICT_SEED_LEN]);
/* After every connection is gone (the lws context destroyed). */
void service_free(struct service *svc);

/* The hub with this key (ASCII case-insensitive), or NULL. */
struct service_hub *service_hub_find(struct service *svc, struct span key);
/* The same, created when absent with `open` as its endpoint's open; NULL for
 * a key that is not a hub key (1-128 of [A-Za-z0-9_.-]) or when out of memory. */
struct service_hub *service_hub_get(struct service *svc, struct span key, service_channel_open_fn open);
/* A client result one app server asked of a client bound to another (spec
 * 3.5), from the 34 until its answer (35/36) passed: a client that leaves
 * first gets the asker an ErrorCompletion (36), or its InvokeAsync would wait
 * for its own cancellation. A handful at a time: a list. */
struct service_invocation {
    struct list_node link;
    char *invocation_id;
    char *conn_id;
    char *caller_server_id;
    char bytes[];                   /* the three strings */
};

/* False when out of memory (the result then just has no fallback). */
bool service_invocation_add(struct service_hub *hub, struct span invocation_id, struct span conn_id,
                            struct span caller_server_id);
/* Its answer passed: forget it. */
void service_invocation_done(struct service_hub *hub, struct span invocation_id);
/* The client left: each result still asked of it ends with a 36 to its asker. */
void service_invocations_client_gone(struct service_hub *hub, struct span conn_id);

/* A connection of the app server server_id in the hub (an accepting one if
 * it has one), or NULL. */
struct svc_server_conn *service_hub_server(struct service_hub *hub, struct span server_id);

/* True if some server connection of the hub takes new clients. */
bool service_hub_accepting(const struct service_hub *hub);

/* The bearer token of a request (the JWT of a server connection or a client):
 * Authorization: Bearer first, else the access_token query argument.
 * Returns its length, or -1 when absent or longer than out (out_len - 1). */
struct lws;
int service_request_token(struct lws *wsi, char *out, size_t out_len);

/* Unix seconds, for the JWTs. */
int64_t service_unix_now(void);

/* Appends the service-mode lines of /metrics. */
void service_render_metrics(struct service *svc, struct buf *out);

#endif
