/* backend_pool.c - each hub's backend instances, their load, backoff and draining (see backend_pool.h). */
#include "relay/backend_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void backend_pools_init(struct backend_pools *pools)
{
    list_init_head(&pools->hubs);
    list_init_head(&pools->instances);
    pools->next_id = 1;
}

static void instance_free(struct backend_instance *in)
{
    list_unlink(&in->link);
    free(in->hub);
    free(in->target.url);
    free(in->target.host);
    free(in->target.path);
    free(in);
}

static void pool_free(struct backend_pool *p)
{
    list_unlink(&p->link);
    free(p->name);
    free(p->members);
    free(p);
}

void backend_pools_free(struct backend_pools *pools)
{
    while (!list_is_empty(&pools->hubs))
        pool_free(list_container_of(pools->hubs.next, struct backend_pool, link));
    while (!list_is_empty(&pools->instances))
        instance_free(list_container_of(pools->instances.next, struct backend_instance, link));
}

static struct backend_pool *pool_named(struct backend_pools *pools, const char *hub, bool removed_too)
{
    for (struct list_node *n = pools->hubs.next; n != &pools->hubs; n = n->next) {
        struct backend_pool *p = list_container_of(n, struct backend_pool, link);
        if ((removed_too || !p->removed) && strcasecmp(p->name, hub) == 0)
            return p;
    }
    return NULL;
}

struct backend_pool *backend_pool_of(struct backend_pools *pools, const char *hub)
{
    return pool_named(pools, hub, false);
}

struct backend_instance *backend_instance_find(struct backend_pools *pools, uint32_t id)
{
    for (struct list_node *n = pools->instances.next; n != &pools->instances; n = n->next) {
        struct backend_instance *in = list_container_of(n, struct backend_instance, link);
        if (in->id == id)
            return in;
    }
    return NULL;
}

/* The instance of (hub, url), made if there is none. */
static struct backend_instance *instance_for(struct backend_pools *pools, const char *hub,
                                             const struct backend_target *t)
{
    for (struct list_node *n = pools->instances.next; n != &pools->instances; n = n->next) {
        struct backend_instance *in = list_container_of(n, struct backend_instance, link);
        if (strcasecmp(in->hub, hub) == 0 && strcmp(in->target.url, t->url) == 0)
            return in;
    }
    struct backend_instance *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    list_init_head(&in->conns);
    in->hub = strdup(hub);
    in->target = (struct backend_target){ strdup(t->url), t->tls, strdup(t->host), t->port, strdup(t->path) };
    list_push_back(&pools->instances, &in->link);
    if (!in->hub || !in->target.url || !in->target.host || !in->target.path) {
        instance_free(in);
        return NULL;
    }
    in->id = pools->next_id++;
    return in;
}

/* Points the pool of `route` at its configured instances. */
static bool pool_apply(struct backend_pools *pools, const struct hub_route *route)
{
    struct backend_pool *p = pool_named(pools, route->name, true);
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p || !(p->name = strdup(route->name))) {
            free(p);
            return false;
        }
        list_push_back(&pools->hubs, &p->link);
    }
    size_t count = route->target_count < BACKEND_POOL_MAX ? route->target_count : BACKEND_POOL_MAX;
    struct backend_instance **members = calloc(count ? count : 1, sizeof *members);
    if (!members)
        return false;
    for (size_t i = 0; i < count; i++) {
        if (!(members[i] = instance_for(pools, route->name, &route->targets[i]))) {
            free(members);
            return false;
        }
        members[i]->draining = false;
    }
    free(p->members);
    p->members = members;
    p->count = count;
    p->next = 0;
    p->removed = false;
    return true;
}

static bool is_member(const struct backend_pools *pools, const struct backend_instance *in)
{
    for (const struct list_node *n = pools->hubs.next; n != &pools->hubs; n = n->next) {
        const struct backend_pool *p = list_container_of(n, const struct backend_pool, link);
        for (size_t i = 0; !p->removed && i < p->count; i++)
            if (p->members[i] == in)
                return true;
    }
    return false;
}

bool backend_pools_apply(struct backend_pools *pools, const struct relay_config *cfg,
                         void (*draining)(void *ctx, struct backend_instance *in), void *ctx)
{
    bool ok = true;
    for (struct list_node *n = pools->hubs.next; n != &pools->hubs; n = n->next)
        list_container_of(n, struct backend_pool, link)->removed = true;
    for (size_t h = 0; h < cfg->hub_count; h++)
        ok = pool_apply(pools, &cfg->hubs[h]) && ok;
    for (struct list_node *n = pools->instances.next; n != &pools->instances; n = n->next) {
        struct backend_instance *in = list_container_of(n, struct backend_instance, link);
        if (!in->draining && !is_member(pools, in)) {
            in->draining = true;
            if (draining)
                draining(ctx, in);
        }
    }
    return ok;
}

static bool usable(const struct backend_instance *in, uint64_t now)
{
    return in->backoff_until <= now;
}

struct backend_instance *backend_pool_pick(struct backend_pool *pool, uint64_t now, uint32_t *tried)
{
    int best = -1;
    for (size_t k = 0; k < pool->count; k++) {
        size_t i = (pool->next + k) % pool->count;
        const struct backend_instance *in = pool->members[i];
        if ((*tried & (1u << i)) || !usable(in, now))
            continue;
        if (best < 0 || in->active < pool->members[best]->active)
            best = (int)i;
    }
    /* None usable: the one back soonest is tried all the same, so the client hears the
     * backend's own failure, as with a single backend. */
    for (size_t i = 0; best < 0 && i < pool->count; i++)
        if (!(*tried & (1u << i)))
            best = (int)i;
    for (size_t i = 0; best >= 0 && !usable(pool->members[best], now) && i < pool->count; i++)
        if (!(*tried & (1u << i)) && pool->members[i]->backoff_until < pool->members[best]->backoff_until)
            best = (int)i;
    if (best < 0)
        return NULL;
    pool->next = (unsigned)(best + 1) % (unsigned)pool->count;
    *tried |= 1u << best;
    return pool->members[best];
}

int backend_instance_address_slot(struct backend_instance *in, const char *text)
{
    int empty = -1, idle = -1;
    for (int a = 0; a < BACKEND_INSTANCE_ADDRS; a++) {
        if (in->addrs[a].text[0] && strcmp(in->addrs[a].text, text) == 0)
            return a;
        if (empty < 0 && !in->addrs[a].text[0])
            empty = a;
        if (idle < 0 && in->addrs[a].text[0] && in->addrs[a].active == 0)
            idle = a;
    }
    /* A free slot, else one no connection uses (its address may be gone from the answers). */
    int free_slot = empty >= 0 ? empty : idle;
    if (free_slot < 0 || strlen(text) >= sizeof in->addrs[0].text)
        return -1;
    memset(&in->addrs[free_slot], 0, sizeof in->addrs[free_slot]);
    strcpy(in->addrs[free_slot].text, text);
    return free_slot;
}

int backend_instance_choose_address(struct backend_instance *in, const char *const *texts, size_t count, size_t first,
                                    uint64_t now)
{
    int best = -1, soonest = -1;
    if (count > BACKEND_INSTANCE_ADDRS) /* a larger answer: the first ones of this turn */
        count = BACKEND_INSTANCE_ADDRS;
    for (size_t k = 0; k < count; k++) {
        int a = backend_instance_address_slot(in, texts[(first + k) % count]);
        if (a < 0)
            continue;
        const struct backend_address *ad = &in->addrs[a];
        if (ad->backoff_until <= now && (best < 0 || ad->active < in->addrs[best].active))
            best = a;
        if (soonest < 0 || ad->backoff_until < in->addrs[soonest].backoff_until)
            soonest = a;
    }
    return best >= 0 ? best : soonest;
}

void backend_instance_address_failed(struct backend_instance *in, int a, uint64_t now)
{
    if (a < 0) {
        backend_instance_failed(in, now);
        return;
    }
    struct backend_address *ad = &in->addrs[a];
    uint64_t backoff = BACKEND_BACKOFF_MIN_MS;
    for (unsigned k = 0; k < ad->failures_in_row && backoff < BACKEND_BACKOFF_MAX_MS; k++)
        backoff *= 2;
    ad->failures_in_row++;
    ad->backoff_until = now + (backoff < BACKEND_BACKOFF_MAX_MS ? backoff : BACKEND_BACKOFF_MAX_MS);
    bool any_usable = false;
    for (int i = 0; i < BACKEND_INSTANCE_ADDRS; i++)
        any_usable = any_usable || (in->addrs[i].text[0] && in->addrs[i].backoff_until <= now);
    if (any_usable)
        in->failures++;
    else
        backend_instance_failed(in, now);
}

void backend_instance_address_worked(struct backend_instance *in, int a)
{
    if (a >= 0) {
        in->addrs[a].failures_in_row = 0;
        in->addrs[a].backoff_until = 0;
    }
    backend_instance_worked(in);
}

void backend_instance_failed(struct backend_instance *in, uint64_t now)
{
    in->failures++;
    uint64_t backoff = BACKEND_BACKOFF_MIN_MS;
    for (unsigned k = 0; k < in->failures_in_row && backoff < BACKEND_BACKOFF_MAX_MS; k++)
        backoff *= 2;
    if (backoff > BACKEND_BACKOFF_MAX_MS)
        backoff = BACKEND_BACKOFF_MAX_MS;
    in->failures_in_row++;
    in->backoff_until = now + backoff;
}

void backend_instance_worked(struct backend_instance *in)
{
    in->connects++;
    in->failures_in_row = 0;
    in->backoff_until = 0;
}

size_t backend_pool_reachable(const struct backend_pool *pool)
{
    size_t n = 0;
    for (size_t i = 0; i < pool->count; i++)
        n += pool->members[i]->failures_in_row == 0;
    return n;
}

static void readyz_line(const struct backend_instance *in, uint64_t now, struct buf *out)
{
    char state[128];
    if (in->draining)
        snprintf(state, sizeof state, "draining (no new clients)");
    else if (in->backoff_until > now)
        snprintf(state, sizeof state, "backed off for another %.1f s (%u failure%s in a row)",
                 (double)(in->backoff_until - now) / 1000.0, in->failures_in_row, in->failures_in_row == 1 ? "" : "s");
    else if (in->failures_in_row)
        snprintf(state, sizeof state, "not reachable (its last connection or probe failed; the next client tries it)");
    else
        snprintf(state, sizeof state, "up");
    char line[1536];
    int len = snprintf(line, sizeof line, "  backend %s: %s, %llu active link%s\n", in->target.url, state,
                       (unsigned long long)in->active, in->active == 1 ? "" : "s");
    if (len > 0 && (size_t)len < sizeof line)
        buf_append(out, line, (size_t)len);
}

void backend_pool_render_readyz(const struct backend_pools *pools, const struct backend_pool *pool, uint64_t now,
                                struct buf *out)
{
    for (size_t i = 0; i < pool->count; i++)
        readyz_line(pool->members[i], now, out);
    for (const struct list_node *n = pools->instances.next; n != &pools->instances; n = n->next) {
        const struct backend_instance *in = list_container_of(n, const struct backend_instance, link);
        if (in->draining && in->active > 0 && strcmp(in->hub, pool->name) == 0)
            readyz_line(in, now, out);
    }
}

void backend_pools_render_metrics(const struct backend_pools *pools, uint64_t now, struct buf *out)
{
    for (const struct list_node *n = pools->instances.next; n != &pools->instances; n = n->next) {
        const struct backend_instance *in = list_container_of(n, const struct backend_instance, link);
        if (in->draining && in->active == 0)
            continue;
        const char *hub = in->hub, *url = in->target.url;
        char line[1536];
        int len = snprintf(line, sizeof line,
                           "signalr_relay_backend_active{hub=\"%s\",backend=\"%s\"} %llu\n"
                           "signalr_relay_backend_up{hub=\"%s\",backend=\"%s\"} %d\n"
                           "signalr_relay_backend_draining{hub=\"%s\",backend=\"%s\"} %d\n"
                           "signalr_relay_backend_connects_total{hub=\"%s\",backend=\"%s\"} %llu\n"
                           "signalr_relay_backend_instance_failures_total{hub=\"%s\",backend=\"%s\"} %llu\n",
                           hub, url, (unsigned long long)in->active, hub, url, usable(in, now) ? 1 : 0, hub, url,
                           in->draining ? 1 : 0, hub, url, (unsigned long long)in->connects, hub, url,
                           (unsigned long long)in->failures);
        if (len > 0 && (size_t)len < sizeof line)
            buf_append(out, line, (size_t)len);
        for (int a = 0; a < BACKEND_INSTANCE_ADDRS; a++) {
            if (!in->addrs[a].text[0])
                continue;
            len = snprintf(line, sizeof line, "signalr_relay_backend_address_active{hub=\"%s\",backend=\"%s\",address=\"%s\"} %llu\n",
                           hub, url, in->addrs[a].text, (unsigned long long)in->addrs[a].active);
            if (len > 0 && (size_t)len < sizeof line)
                buf_append(out, line, (size_t)len);
        }
    }
}
