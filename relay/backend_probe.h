/* backend_probe.h - an HTTP check of every configured backend instance now and then, so that
 * /readyz and the backoff of relay/backend_pool.h follow a backend that died, hangs or came
 * back even while no client connects.
 *
 * Every --probe-interval (default 5 s, 0: off) each instance of a configured hub that has no
 * probe in flight gets one: its host name resolved (relay/resolver.h, off the loop), a
 * non-blocking connect to its first address, then "GET <hub path>" (Connection: close). Any
 * HTTP answer within the interval (ASP.NET Core answers 400 "Connection ID required", or 401
 * for an [Authorize] hub: the app answered either way) makes the instance reachable and usable
 * again at once; a connect refused, a connection closed without a status line, or no answer
 * within the interval (a process that accepts TCP and hangs) backs it off as a refused client
 * connection would. A GET of the hub's path creates nothing on the backend (a negotiate would
 * leave a connection behind until it expires). An https:// backend is checked by its TCP
 * connect only: the probe speaks no TLS.
 *
 * The interval runs on an ev_timer of its own, and a probe's deadline is checked at the next
 * tick. Needs the libev loop (none on lws' own poll() loop). Ownership: struct backend_probes is
 * embedded in struct backends; each probe is its own allocation, owned here, freed by
 * backend_probes_stop (before the resolver goes). */
#ifndef SR_BACKEND_PROBE_H
#define SR_BACKEND_PROBE_H

#include <stdbool.h>

#include <ev.h>

#include "containers/list.h"

struct backend_pools;
struct loop;
struct resolver;

struct backend_probes {
    struct loop *loop;
    struct resolver *resolver;
    struct backend_pools *pools;
    ev_timer tick;            /* a libev timer, like the resolver's: not one of the wheel's (whose
                                 count /metrics shows as the timers of connections) */
    struct list_node running; /* struct backend_probe in flight */
    bool started;
};

/* Starts probing the instances of `pools` every loop->cfg->probe_interval_ms (nothing if 0 or
 * without libev), resolving names with `resolver`. */
void backend_probes_start(struct backend_probes *p, struct loop *loop, struct resolver *resolver,
                          struct backend_pools *pools);
/* Stops the timer and abandons every probe in flight (sockets closed, lookups cancelled). */
void backend_probes_stop(struct backend_probes *p);

#endif
