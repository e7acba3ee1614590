/* relay.h - the relay process: one libwebsockets context, one event loop,
 * one timer wheel, and the tables that outlive a single request.
 *
 * struct relay owns everything the relay holds at run time: the lws context
 * and vhost, the timer wheel and the one lws scheduled callback that drives
 * it, the table of negotiated-but-unconnected Core connections, the token
 * key, and the counters /metrics shows. Nothing of it is global: every
 * callback finds the relay through lws_context_user(). */
#ifndef SR_RELAY_H
#define SR_RELAY_H

#include <ev.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/buf.h"
#include "relay/config.h"
#include "containers/dict.h"
#include "containers/list.h"
#include "hub/conn_token.h"
#include "containers/timer_wheel.h"
#include "relay/backend.h"
#include "relay/core_negotiate.h"
#include "relay/core_session.h"
#include "relay/legacy_session.h"
#include "relay/loop.h"
#include "relay/proxy_channel.h"
#include "relay/service.h"

struct relay {
    struct loop loop;                 /* the event loop, lws context, timer wheel, config, counters */
    struct backends backends;         /* the client side toward backend hubs */
    struct proxy_endpoint *endpoints; /* one per cfg->hubs entry: what serves that hub */

    struct core_negotiations negotiations;
    uint8_t dict_seed[DICT_SEED_LEN];

    struct core_sessions sessions;
    struct legacy_table legacy;       /* legacy connections, their tokens and per-hub state */
    struct service service;           /* service mode: the apps' hubs, server connections, clients */

    struct lws_protocols protocols[4]; /* lws keeps a pointer: lives as long as the context */
    struct timer_entry drain_timer;   /* shutdown: checks whether everything closed */
    uint64_t drain_deadline;
    bool drained;
    volatile bool stopping;
};

/* Creates the lws context and starts listening. Returns 0, or -1 after logging why. */
int relay_start(struct relay *relay, const struct relay_config *cfg);
/* Runs the event loop until relay_stop() (e.g. from a signal). */
void relay_run(struct relay *relay);
void relay_stop(struct relay *relay);
/* Closes every connection and frees everything relay_start made. */
void relay_destroy(struct relay *relay);

/* Renders /metrics (Prometheus text format) into out. */
void relay_render_metrics(struct relay *relay, struct buf *out);

#endif
