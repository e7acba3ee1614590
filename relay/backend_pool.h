/* backend_pool.h - the backend instances of each hub: which one a new connection goes to,
 * and which ones are taken out for a while after failing.
 *
 * A hub may have several backend instances (--hub chat=URL1,URL2,...). Each has a count of
 * the connections the relay holds or is opening to it (backend WebSockets and negotiate
 * requests). A new client goes to the usable instance with the fewest, ties taken in turn.
 * An instance whose connection is refused or times out is taken out ("backoff") for
 * BACKEND_BACKOFF_MIN_MS, doubling with each failure in a row up to BACKEND_BACKOFF_MAX_MS;
 * a connection that works puts it back at once. When every instance is out, the one back
 * soonest is tried all the same: clients then get the backend's own failure, in the usual
 * error naming the hub, as with a single backend.
 *
 * What stays with one instance (stickiness) is not decided here: a negotiate's pin
 * (struct backend_pin, relay/backend.h) sends the WebSocket that follows it to the same
 * instance and address.
 *
 * Ownership: struct backend_pools is embedded in struct backends; it refers to the routes of
 * the configuration it was made from, which must outlive it. */
#ifndef SR_BACKEND_POOL_H
#define SR_BACKEND_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/buf.h"
#include "relay/config.h"

#define BACKEND_BACKOFF_MIN_MS 2000u
#define BACKEND_BACKOFF_MAX_MS 30000u
/* Instances per hub a connection can try in turn (the `tried` mask). */
#define BACKEND_POOL_MAX 32

struct backend_instance {
    const struct backend_target *target;
    uint64_t active;         /* backend connections open or opening */
    uint64_t connects;       /* connections that reached it (negotiate answered, WebSocket open) */
    uint64_t failures;       /* connections refused or timed out */
    unsigned failures_in_row;
    uint64_t backoff_until;  /* ms (relay/clock.h); 0: not backing off */
};

struct backend_pool {
    const struct hub_route *route;
    struct backend_instance *instances; /* route->target_count of them */
    size_t count;
    unsigned next;           /* where ties start, taken in turn */
};

struct backend_pools {
    struct backend_pool *hubs; /* one per configured hub, in cfg->hubs order */
    size_t count;
};

/* One pool per hub of cfg. False when out of memory (free still applies). */
bool backend_pools_init(struct backend_pools *pools, const struct relay_config *cfg);
void backend_pools_free(struct backend_pools *pools);

/* The pool of a configured route, or NULL for a route this configuration does not hold. */
struct backend_pool *backend_pool_of(struct backend_pools *pools, const struct hub_route *route);

/* The usable instance with the fewest active connections, skipping those whose bit is set in
 * `tried`; when none is usable, the one back soonest; -1 when every one was tried. */
int backend_pool_pick(struct backend_pool *pool, uint64_t now, uint32_t tried);

/* A connection to instance i was refused or timed out: it backs off. */
void backend_pool_failed(struct backend_pool *pool, int i, uint64_t now);
/* A connection to instance i worked: it is usable again at once. */
void backend_pool_worked(struct backend_pool *pool, int i);

/* "up" or "backoff". */
const char *backend_instance_state(const struct backend_instance *in, uint64_t now);
/* How many instances of the pool are reachable as far as the relay knows: the last connection
 * to it worked, or none was tried yet. */
size_t backend_pool_reachable(const struct backend_pool *pool);
/* How many instances of the pool are usable now. */
size_t backend_pool_usable(const struct backend_pool *pool, uint64_t now);

/* Per-instance lines for /metrics (Prometheus text). */
void backend_pools_render_metrics(const struct backend_pools *pools, uint64_t now, struct buf *out);

#endif
