/* backend_pool.c - each hub's backend instances, their load and their backoff (see backend_pool.h). */
#include "relay/backend_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool backend_pools_init(struct backend_pools *pools, const struct relay_config *cfg)
{
    memset(pools, 0, sizeof *pools);
    pools->hubs = calloc(cfg->hub_count ? cfg->hub_count : 1, sizeof *pools->hubs);
    if (!pools->hubs)
        return false;
    pools->count = cfg->hub_count;
    for (size_t h = 0; h < cfg->hub_count; h++) {
        struct backend_pool *p = &pools->hubs[h];
        p->route = &cfg->hubs[h];
        p->count = p->route->target_count < BACKEND_POOL_MAX ? p->route->target_count : BACKEND_POOL_MAX;
        p->instances = calloc(p->count ? p->count : 1, sizeof *p->instances);
        if (!p->instances)
            return false;
        for (size_t i = 0; i < p->count; i++)
            p->instances[i].target = &p->route->targets[i];
    }
    return true;
}

void backend_pools_free(struct backend_pools *pools)
{
    for (size_t h = 0; h < pools->count; h++)
        free(pools->hubs[h].instances);
    free(pools->hubs);
    memset(pools, 0, sizeof *pools);
}

struct backend_pool *backend_pool_of(struct backend_pools *pools, const struct hub_route *route)
{
    for (size_t h = 0; h < pools->count; h++)
        if (pools->hubs[h].route == route)
            return &pools->hubs[h];
    return NULL;
}

static bool usable(const struct backend_instance *in, uint64_t now)
{
    return in->backoff_until <= now;
}

int backend_pool_pick(struct backend_pool *pool, uint64_t now, uint32_t tried)
{
    int best = -1;
    if (pool->count == 0)
        return -1;
    for (size_t k = 0; k < pool->count; k++) {
        size_t i = (pool->next + k) % pool->count;
        const struct backend_instance *in = &pool->instances[i];
        if ((tried & (1u << i)) || !usable(in, now))
            continue;
        if (best < 0 || in->active < pool->instances[best].active)
            best = (int)i;
    }
    int best_usable = best;
    /* None usable: the one back soonest is tried all the same, so the client hears the
     * backend's own failure, as with a single backend. */
    for (size_t i = 0; best_usable < 0 && i < pool->count; i++)
        if (!(tried & (1u << i)) && (best < 0 || pool->instances[i].backoff_until < pool->instances[best].backoff_until))
            best = (int)i;
    if (best >= 0)
        pool->next = (unsigned)(best + 1) % (unsigned)pool->count;
    return best;
}

void backend_pool_failed(struct backend_pool *pool, int i, uint64_t now)
{
    struct backend_instance *in = &pool->instances[i];
    in->failures++;
    uint64_t backoff = BACKEND_BACKOFF_MIN_MS;
    for (unsigned k = 0; k < in->failures_in_row && backoff < BACKEND_BACKOFF_MAX_MS; k++)
        backoff *= 2;
    if (backoff > BACKEND_BACKOFF_MAX_MS)
        backoff = BACKEND_BACKOFF_MAX_MS;
    in->failures_in_row++;
    in->backoff_until = now + backoff;
}

void backend_pool_worked(struct backend_pool *pool, int i)
{
    struct backend_instance *in = &pool->instances[i];
    in->connects++;
    in->failures_in_row = 0;
    in->backoff_until = 0;
}

const char *backend_instance_state(const struct backend_instance *in, uint64_t now)
{
    return usable(in, now) ? "up" : "backoff";
}

size_t backend_pool_reachable(const struct backend_pool *pool)
{
    size_t n = 0;
    for (size_t i = 0; i < pool->count; i++)
        n += pool->instances[i].failures_in_row == 0;
    return n;
}

size_t backend_pool_usable(const struct backend_pool *pool, uint64_t now)
{
    size_t n = 0;
    for (size_t i = 0; i < pool->count; i++)
        n += usable(&pool->instances[i], now);
    return n;
}

void backend_pools_render_metrics(const struct backend_pools *pools, uint64_t now, struct buf *out)
{
    for (size_t h = 0; h < pools->count; h++) {
        const struct backend_pool *p = &pools->hubs[h];
        for (size_t i = 0; i < p->count; i++) {
            const struct backend_instance *in = &p->instances[i];
            char line[1024];
            int n = snprintf(line, sizeof line,
                             "signalr_relay_backend_active{hub=\"%s\",backend=\"%s\"} %llu\n"
                             "signalr_relay_backend_up{hub=\"%s\",backend=\"%s\"} %d\n"
                             "signalr_relay_backend_connects_total{hub=\"%s\",backend=\"%s\"} %llu\n"
                             "signalr_relay_backend_instance_failures_total{hub=\"%s\",backend=\"%s\"} %llu\n",
                             p->route->name, in->target->url, (unsigned long long)in->active,
                             p->route->name, in->target->url, usable(in, now) ? 1 : 0,
                             p->route->name, in->target->url, (unsigned long long)in->connects,
                             p->route->name, in->target->url, (unsigned long long)in->failures);
            if (n > 0 && (size_t)n < sizeof line)
                buf_append(out, line, (size_t)n);
        }
    }
}
