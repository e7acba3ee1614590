/* backend_pool.h - the backend instances of each hub: which one a new connection goes to,
 * which ones are taken out for a while after failing, and which ones are draining.
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
 * Instances outlive configurations: backend_pools_apply (start, and each reload) keeps the
 * instance of a (hub, URL) that stays, makes new ones, and marks the ones no longer
 * configured as draining: no new connection goes there, connections already there stay
 * (the owner of the pools decides when to end them). Each instance has an id that never
 * changes, which pins name (relay/backend_conn.h): a WebSocket goes where its negotiate went,
 * even across a reload, even to a draining instance.
 *
 * Ownership: struct backend_pools owns every pool and instance (freed together by
 * backend_pools_free, at shutdown); a pool or instance pointer stays valid until then. */
#ifndef SR_BACKEND_POOL_H
#define SR_BACKEND_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/list.h"
#include "containers/timer_wheel.h"
#include "relay/config.h"

#define BACKEND_BACKOFF_MIN_MS 2000u
#define BACKEND_BACKOFF_MAX_MS 30000u
/* Instances per hub a connection can try in turn (the `tried` mask). */
#define BACKEND_POOL_MAX 32

/* Addresses an instance's host name resolved to, each with its own count and backoff: the
 * connections of an instance spread over its addresses by fewest connections too. */
#define BACKEND_INSTANCE_ADDRS 8

struct backend_address {
    char text[46];                  /* numeric (INET6_ADDRSTRLEN); "" = a free slot */
    uint64_t active;
    uint64_t backoff_until;
    unsigned failures_in_row;
};

struct backend_instance {
    struct list_node link;          /* in pools->instances */
    struct list_node conns;         /* backend links to it (struct backend_conn.inst_link), for draining */
    uint32_t id;                    /* never changes, never reused (from 1) */
    char *hub;                      /* the hub's name, owned */
    struct backend_target target;   /* owned copy */
    uint64_t active;                /* backend connections open or opening */
    uint64_t connects;              /* connections that reached it (negotiate answered, WebSocket open) */
    uint64_t failures;              /* connections refused or timed out */
    unsigned failures_in_row;
    uint64_t backoff_until;         /* ms (relay/clock.h); 0: not backing off */
    bool draining;                  /* no longer configured */
    bool probing;                   /* relay/backend_probe.c has a probe in flight */
    struct backend_address addrs[BACKEND_INSTANCE_ADDRS];
    struct timer_entry drain_timer; /* the owner's: when to end its connections */
};

struct backend_pool {
    struct list_node link;             /* in pools->hubs */
    char *name;                        /* the hub's, owned */
    struct backend_instance **members; /* count of them, in configured order */
    size_t count;
    unsigned next;                     /* where ties start, taken in turn */
    bool removed;                      /* the hub is no longer configured */
};

struct backend_pools {
    struct list_node hubs;      /* struct backend_pool */
    struct list_node instances; /* struct backend_instance, draining ones too */
    uint32_t next_id;
};

void backend_pools_init(struct backend_pools *pools);
/* Makes the pools match cfg's hubs (see above). `draining` is called for each instance that
 * starts draining now. False when out of memory (the pools are then partly updated, still
 * consistent). */
bool backend_pools_apply(struct backend_pools *pools, const struct relay_config *cfg,
                         void (*draining)(void *ctx, struct backend_instance *in), void *ctx);
void backend_pools_free(struct backend_pools *pools);

/* The pool of the configured hub of that name, or NULL. */
struct backend_pool *backend_pool_of(struct backend_pools *pools, const char *hub);
/* The instance with that id (draining ones too), or NULL. */
struct backend_instance *backend_instance_find(struct backend_pools *pools, uint32_t id);

/* The usable member with the fewest active connections, skipping those whose bit (member
 * index) is set in *tried, which it then sets; when none is usable, the one back soonest;
 * NULL when every one was tried. */
struct backend_instance *backend_pool_pick(struct backend_pool *pool, uint64_t now, uint32_t *tried);

/* Of the addresses `texts[0..count)` the name resolved to now (count >= 1), the usable one with
 * the fewest active connections (ties from texts[first] on, in turn), else the one back soonest:
 * its slot index, or -1 when no slot is free for it (then texts[first] is used uncounted). */
int backend_instance_choose_address(struct backend_instance *in, const char *const *texts, size_t count, size_t first,
                                    uint64_t now);
/* The slot of one address (made if there is room), or -1. */
int backend_instance_address_slot(struct backend_instance *in, const char *text);
/* A connection to slot `a` (-1: none) was refused or timed out: that address backs off, and the
 * instance too when none of its addresses is usable any more. */
void backend_instance_address_failed(struct backend_instance *in, int a, uint64_t now);
/* A connection to slot `a` (-1: none) worked. */
void backend_instance_address_worked(struct backend_instance *in, int a);

/* A connection to it was refused or timed out: it backs off. */
void backend_instance_failed(struct backend_instance *in, uint64_t now);
/* A connection to it worked: it is usable again at once. */
void backend_instance_worked(struct backend_instance *in);

/* How many members of the pool are reachable as far as the relay knows: the last connection
 * to it worked, or none was tried yet. */
size_t backend_pool_reachable(const struct backend_pool *pool);

/* /readyz's lines for one pool: its members in configured order, then the draining instances of
 * the same hub that still hold connections, each "  backend URL: STATE, N active links\n", STATE
 * one of "up", "backed off for another S s (F failures in a row)", "not reachable (...)" (its
 * backoff is over but the last connection or probe failed: the next client tries it), "draining". */
void backend_pool_render_readyz(const struct backend_pools *pools, const struct backend_pool *pool, uint64_t now,
                                struct buf *out);

/* Per-instance lines for /metrics (Prometheus text), draining instances with connections too. */
void backend_pools_render_metrics(const struct backend_pools *pools, uint64_t now, struct buf *out);

#endif
