/* relay.h - the relay process: start, HTTP routing, shutdown.
 *
 * struct relay owns everything the relay holds at run time: the loop (event
 * loop, lws context, timer wheel, config, counters), the backends and one
 * hub endpoint per configured hub, the table of negotiated-but-unconnected
 * Core connections, the Core sessions and the legacy table. Nothing of it is
 * global: every callback finds the relay through lws_context_user(). relay.c
 * routes each request to the module that serves it and shuts everything
 * down in order; the modules never call back into it. */
#ifndef SR_RELAY_H
#define SR_RELAY_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/dict.h"
#include "containers/timer_wheel.h"
#include "relay/config.h"
#include "relay/backend.h"
#include "relay/core_negotiate.h"
#include "relay/core_session.h"
#include "relay/http_limits.h"
#include "relay/legacy_identity.h"
#include "relay/legacy_session.h"
#include "relay/listener.h"
#include "relay/loop.h"
#include "relay/next_head.h"
#include "relay/tls_next_head.h"
#include "relay/linger.h"
#include "relay/request_body.h"
#include "relay/proxy_channel.h"
#include "relay/service.h"
#include "relay/service_channel.h"
#include "relay/tls.h"

struct relay {
    struct loop loop;                 /* the event loop, lws context, timer wheel, config, counters */
    struct listener listener;         /* with libev: accepting, connection limits (lws listens otherwise) */
    struct backends backends;         /* the client side toward backend hubs */
    struct proxy_endpoint *endpoints; /* one per cfg->hubs entry: what serves that hub */

    struct core_negotiations negotiations;
    uint8_t dict_seed[DICT_SEED_LEN];

    struct core_sessions sessions;
    struct legacy_table legacy;       /* legacy connections, their tokens and per-hub state */
    struct service service;           /* service mode: the apps' hubs, server connections, clients */
    struct legacy_identities identities; /* service mode: legacy clients' identities from the apps' negotiate */
    struct service_named_endpoint *named; /* one per cfg->hubs entry at start: an --app-negotiate hub's, for legacy clients */
    size_t named_count;
    struct tls_front tls;             /* --tls-cert: the listener's certificate and its reload */

    struct http_refusals refusals;    /* requests refused at the front door (http_limits.h) */
    struct next_heads next_heads;     /* kept-alive connections' next heads, read before lws (next_head.h) */
    struct tls_next_heads tls_next_heads; /* the same on a TLS listener, watched while lws reads them (tls_next_head.h) */
    struct request_bodies bodies;     /* request bodies being read, each with its deadline (request_body.h) */
    struct lingers lingers;           /* client WebSockets read to their end after the relay's Close (linger.h) */
    struct lws_protocols protocols[4]; /* lws keeps a pointer: lives as long as the context */
    struct lws_protocols admin_protocols[2]; /* --admin-listen's vhost: the same */
    struct timer_entry lws_wake_timer; /* wakes lws each second, so its timeouts are looked at */
    struct timer_entry drain_timer;   /* shutdown: checks whether everything closed */
    uint64_t drain_deadline;
    bool drained;
    volatile bool stopping;
    volatile bool reload_requested;   /* SIGHUP: reread the configuration on the loop */
    int argc;                         /* what the configuration is reread from (relay_enable_reload) */
    char **argv;
    struct relay_retired *retired;    /* configurations and endpoints replaced by reloads */
    struct relay_config *owned_cfg;   /* the configuration a reload made (NULL: main's is in use) */
};

/* Creates the lws context and starts listening. Returns 0, or -1 after logging why. */
int relay_start(struct relay *relay, const struct relay_config *cfg);
/* Runs the event loop until relay_stop() (e.g. from a signal). */
void relay_run(struct relay *relay);
void relay_stop(struct relay *relay);
/* Rereading the configuration on relay_request_reload takes the command line again (the
 * --config file is read where it appears in it). argv must outlive the relay. */
void relay_enable_reload(struct relay *relay, int argc, char **argv);
/* From a signal handler: reread the configuration on the loop. Hubs added, removed or
 * re-pointed and settings changed apply to new connections; established ones stay (those of
 * a removed backend instance drain: --drain-timeout). A configuration with an error is
 * refused with a log line naming it, and the running one stays. Settings that only a restart
 * can change (listen addresses, token secret, DNS, source addresses, service keys, read
 * buffer) keep their running values, with a warning. Legacy clients follow as Core clients
 * do (hubs added, removed, re-pointed). */
void relay_request_reload(struct relay *relay);
/* relay_reload.c: the reload relay_request_reload asked for, run on the loop; and freeing what
 * reloads replaced (relay_destroy). */
void relay_reload(struct relay *relay);
void relay_free_retired(struct relay *relay);
/* relay_admin.c: /healthz, /readyz and /metrics. *served is false when path is none of them. */
int relay_route_admin(struct relay *relay, struct lws *wsi, const char *path, enum http_method method, bool *served);
/* --admin-listen: a second vhost serving only those paths (true when none is configured). */
bool relay_start_admin(struct relay *relay);
/* Closes every connection and frees everything relay_start made. */
void relay_destroy(struct relay *relay);

#endif
