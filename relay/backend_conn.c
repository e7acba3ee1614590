/* backend_conn.c - the start of every backend connection: instance, name lookup, lws connect,
 * deadline (see backend_conn.h). */
#include "relay/backend_conn.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers/buf.h"
#include "relay/clock.h"
#include "relay/hub_channel.h"
#include "relay/log.h"

/* ------------------------------------------------------------- backends */

bool backends_init(struct backends *b, struct loop *loop)
{
    memset(b, 0, sizeof *b);
    b->loop = loop;
    backend_pools_init(&b->pools);
    if (!backends_apply_config(b))
        return false;
    const char *list = loop->cfg->backend_source_addresses;
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0) {
            char **grown = realloc(b->sources, (b->source_count + 1) * sizeof *grown);
            if (!grown)
                return false;
            b->sources = grown;
            if (!(b->sources[b->source_count] = strndup(p, n)))
                return false;
            b->source_count++;
        }
        p += n + (p[n] == ',');
    }
    return true;
}

bool backends_start_resolver(struct backends *b)
{
    if (!b->loop->ev) {
        log_warn("backend: no libev loop: backend host names are resolved by lws, on the loop");
        return true;
    }
    struct resolver_config rc = {
        .servers = b->loop->cfg->dns_servers,
        .resolv_conf = b->loop->cfg->resolv_conf,
        .family = AF_INET, /* the lws context has IPv6 off */
    };
    char err[256];
    b->resolver = resolver_create(b->loop->ev, &rc, err, sizeof err);
    if (!b->resolver)
        log_error("backend: cannot start the DNS resolver: %s", err);
    else
        backend_probes_start(&b->probes, b->loop, b->resolver, &b->pools);
    return b->resolver != NULL;
}

void backends_stop_resolver(struct backends *b)
{
    backend_probes_stop(&b->probes);
    struct resolver *r = b->resolver;
    b->resolver = NULL;
    resolver_destroy(r);
}

void backends_free(struct backends *b)
{
    backends_stop_resolver(b);
    for (unsigned i = 0; i < b->source_count; i++)
        free(b->sources[i]);
    free(b->sources);
    b->sources = NULL;
    b->source_count = 0;
    for (struct list_node *n = b->pools.instances.next; n != &b->pools.instances; n = n->next)
        timer_cancel(&list_container_of(n, struct backend_instance, link)->drain_timer);
    backend_pools_free(&b->pools);
}

/* --drain-timeout passed for a removed instance: its links end, their clients may reconnect. */
static void drain_expired(struct timer_entry *e)
{
    struct backend_instance *in = list_container_of(e, struct backend_instance, drain_timer);
    log_info("backend: %s (hub %s) removed from the configuration: ending its %llu connection(s)", in->target.url,
             in->hub, (unsigned long long)in->active);
    while (!list_is_empty(&in->conns)) {
        struct backend_conn *c = list_container_of(in->conns.next, struct backend_conn, inst_link);
        list_unlink(&c->inst_link);
        c->kind->drain(c, "the backend instance was removed from the relay's configuration");
    }
}

static void instance_draining(void *ctx, struct backend_instance *in)
{
    struct backends *b = ctx;
    log_info("backend: %s (hub %s) removed from the configuration: draining its %llu connection(s)",
             in->target.url, in->hub, (unsigned long long)in->active);
    timer_entry_init(&in->drain_timer, drain_expired);
    loop_timer_schedule(b->loop, &in->drain_timer, clock_now_ms() + b->loop->cfg->drain_timeout_ms);
}

bool backends_apply_config(struct backends *b)
{
    bool ok = backend_pools_apply(&b->pools, b->loop->cfg, instance_draining, b);
    for (struct list_node *n = b->pools.instances.next; n != &b->pools.instances; n = n->next) {
        struct backend_instance *in = list_container_of(n, struct backend_instance, link);
        if (!in->draining) /* configured again: it stays */
            timer_cancel(&in->drain_timer);
    }
    return ok;
}

/* The next local address to bind to, or NULL for the kernel's choice. */
static const char *next_source(struct backends *b, bool link)
{
    unsigned *next = link ? &b->source_next_link : &b->source_next_negotiate;
    return b->source_count ? b->sources[(*next)++ % b->source_count] : NULL;
}

/* ------------------------------------------------------------------ pins */

char *backend_pin_join(const struct backend_pin *pin, const char *token)
{
    size_t n = strlen(token) + sizeof pin->addr + 32;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%u %s\t%s", pin->instance, pin->addr, token);
    return s;
}

const char *backend_pin_split(const char *s, struct backend_pin *pin)
{
    pin->instance = 0;
    pin->addr[0] = '\0';
    const char *tab = strchr(s, '\t');
    const char *space = tab ? memchr(s, ' ', (size_t)(tab - s)) : NULL;
    if (!tab || !space)
        return s;
    char *end;
    unsigned long instance = strtoul(s, &end, 10);
    size_t addr_len = (size_t)(tab - space - 1);
    if (end != space || instance == 0 || instance > UINT32_MAX || addr_len >= sizeof pin->addr)
        return s;
    pin->instance = (uint32_t)instance;
    memcpy(pin->addr, space + 1, addr_len);
    pin->addr[addr_len] = '\0';
    return tab + 1;
}

/* -------------------------------------------------------------- headers */

static bool forwarded_copy(struct forwarded *f, const struct backend_params *p)
{
    bool ok = true;
    if (p->headers)
        ok = header_list_copy(&f->headers, p->headers);
    else
        buf_init(&f->headers.pairs);
    f->forwarded_for = p->forwarded_for ? strdup(p->forwarded_for) : NULL;
    return ok && (!p->forwarded_for || f->forwarded_for);
}

void backend_conn_drop_headers(struct backend_conn *c)
{
    header_list_free(&c->fwd.headers);
    free(c->fwd.forwarded_for);
    c->fwd.forwarded_for = NULL;
}

/* lws writes Origin itself from the connect info, so it is skipped here. */
int backend_conn_append_headers(struct lws *wsi, const struct backend_conn *c, void *in, size_t len)
{
    const struct forwarded *f = &c->fwd;
    unsigned char **p = (unsigned char **)in, *end = (*p) + len;
    const char *name = f->headers.pairs.data, *stop = name + f->headers.pairs.len;
    while (name && name < stop) {
        const char *value = name + strlen(name) + 1;
        if (strcmp(name, "origin:") != 0 &&
            lws_add_http_header_by_name(wsi, (const unsigned char *)name, (const unsigned char *)value,
                                        (int)strlen(value), p, end))
            return -1;
        name = value + strlen(value) + 1;
    }
    if (f->forwarded_for &&
        lws_add_http_header_by_name(wsi, (const unsigned char *)"x-forwarded-for:",
                                    (const unsigned char *)f->forwarded_for, (int)strlen(f->forwarded_for), p, end))
        return -1;
    return 0;
}

/* ------------------------------------------------------------- instance */

static void instance_enter(struct backend_conn *c, struct backend_instance *in)
{
    c->inst = in;
    c->addr_slot = -1;
    c->pin.instance = in->id;
    c->pin.addr[0] = '\0';
    c->target = &in->target;
    in->active++;
    if (c->method == NULL) /* a link: ended if its instance drains out */
        list_push_back(&in->conns, &c->inst_link);
}

static void instance_leave(struct backend_conn *c)
{
    if (c->inst) {
        c->inst->active--;
        if (c->addr_slot >= 0)
            c->inst->addrs[c->addr_slot].active--;
        c->addr_slot = -1;
        if (list_is_linked(&c->inst_link))
            list_unlink(&c->inst_link);
    }
    c->inst = NULL;
}

void backend_conn_worked(struct backend_conn *c)
{
    timer_cancel(&c->deadline);
    if (c->inst)
        backend_instance_address_worked(c->inst, c->addr_slot);
}

void backend_conn_failed(struct backend_conn *c)
{
    if (c->inst)
        backend_instance_address_failed(c->inst, c->addr_slot, clock_now_ms());
}

void backend_conn_release(struct backend_conn *c)
{
    resolver_cancel(&c->dns);
    timer_cancel(&c->deadline);
    backend_conn_drop_headers(c);
    free(c->rest);
    c->rest = NULL;
    instance_leave(c);
}

/* -------------------------------------------------------------- connect */

static void conn_resolved(struct resolver_request *req, const struct resolver_result *result);
static void conn_deadline(struct timer_entry *e);

/* Starts the lws client connection for c to `address` (numeric once
 * resolved). lws may fail inside the call and even destroy the new wsi there
 * (at the descriptor limit it does): the callbacks it runs meanwhile only
 * take note (connecting is set), so the object stays the caller's until this
 * returns. */
static enum conn_start conn_connect(struct backend_conn *c, const char *address)
{
    const struct backend_target *t = c->target;
    struct buf path;
    buf_init(&path);
    if (!buf_append_cstr(&path, t->path) || !buf_append_cstr(&path, c->rest) || !buf_append_byte(&path, '\0')) {
        buf_free(&path);
        return CONN_FAILED_FREE_NOW;
    }
    if (path.len + sizeof "DELETE  HTTP/1.1\r\n" > BACKEND_MAX_REQUEST_LINE) {
        /* lws would cut the request line: refuse rather than send another request. */
        log_warn("backend: a request to %s is too long for one request line (%zu bytes)", t->url, path.len);
        buf_free(&path);
        return CONN_FAILED_FREE_NOW;
    }
    struct lws_client_connect_info info;
    char host[300];
    memset(&info, 0, sizeof info);
    info.context = c->loop->lws;
    info.vhost = c->loop->vhost;
    info.address = address;
    info.port = t->port;
    info.ssl_connection = (t->tls ? LCCSCF_USE_SSL : 0) | LCCSCF_HTTP_NO_FOLLOW_REDIRECT;
    info.path = path.data;
    snprintf(host, sizeof host, "%s:%d", t->host, t->port);
    info.host = host; /* the Host header and the TLS server name: the name, not the address */
    const char *origin = header_list_get(&c->fwd.headers, "origin:");
    info.origin = origin ? origin : host;
    info.iface = next_source(c->backends, c->method == NULL);
    info.retry_and_idle_policy = &loop_lws_retry_policy;
    info.ietf_version_or_minus_one = -1;
    info.method = c->method;
    info.local_protocol_name = c->protocol_name;
    info.opaque_user_data = c;
    info.pwsi = &c->wsi;
    c->failed_while_connecting = c->destroyed_while_connecting = false;
    c->connecting = true;
    struct lws *wsi = lws_client_connect_via_info(&info);
    c->connecting = false;
    buf_free(&path);
    if (wsi && !c->failed_while_connecting && !c->destroyed_while_connecting)
        return CONN_STARTED;
    log_warn("backend: cannot start %s to %s", c->method ? "negotiate" : "WebSocket", t->url);
    if (!wsi || c->destroyed_while_connecting) {
        c->wsi = NULL;
        return CONN_FAILED_FREE_NOW;
    }
    return CONN_FAILED_LWS_FREES;
}

/* Resolves the target's host name, or connects at once when the address is known (pinned,
 * numeric, localhost, cached). */
/* Counts c on one address of its instance. */
static void address_enter(struct backend_conn *c, int slot)
{
    c->addr_slot = slot;
    if (slot >= 0)
        c->inst->addrs[slot].active++;
}

/* Of the addresses the name resolved to, the one with the fewest connections of this instance:
 * into c->pin.addr. */
static void address_choose(struct backend_conn *c, const struct resolver_result *res)
{
    const char *texts[BACKEND_INSTANCE_ADDRS];
    size_t count = res->count < BACKEND_INSTANCE_ADDRS ? res->count : BACKEND_INSTANCE_ADDRS, first = 0;
    for (size_t i = 0; i < count; i++) {
        texts[i] = res->all[i].text;
        if (strcmp(res->all[i].text, res->addr.text) == 0)
            first = i;
    }
    int slot = count ? backend_instance_choose_address(c->inst, texts, count, first, clock_now_ms()) : -1;
    snprintf(c->pin.addr, sizeof c->pin.addr, "%s", slot >= 0 ? c->inst->addrs[slot].text : res->addr.text);
    address_enter(c, slot);
}

static enum conn_start conn_resolve(struct backend_conn *c)
{
    if (c->pin.addr[0]) {
        address_enter(c, backend_instance_address_slot(c->inst, c->pin.addr));
        return conn_connect(c, c->pin.addr);
    }
    if (!c->backends->resolver)
        return conn_connect(c, c->target->host);
    struct resolver_result res;
    if (resolver_resolve(c->backends->resolver, c->target->host, &c->dns, &res) == RESOLVER_PENDING)
        return CONN_STARTED;
    if (res.status != RESOLVER_OK) { /* a failure the cache remembers was logged when it happened */
        log_line(res.cached ? LOG_DEBUG : LOG_WARN, "backend: cannot resolve '%s' for %s: %s", c->target->host,
                 c->target->url, res.error ? res.error : resolver_status_text(res.status));
        backend_conn_failed(c);
        return CONN_FAILED_FREE_NOW;
    }
    address_choose(c, &res);
    return conn_connect(c, c->pin.addr);
}

/* Picks the next instance not tried yet and starts toward it, as long as instances are left. */
static enum conn_start conn_try(struct backend_conn *c)
{
    for (;;) {
        struct backend_instance *in = backend_pool_pick(c->pool, clock_now_ms(), &c->tried);
        if (!in)
            return CONN_FAILED_FREE_NOW; /* every instance tried */
        instance_enter(c, in);
        enum conn_start st = conn_resolve(c);
        if (st != CONN_FAILED_FREE_NOW || c->method == NULL)
            return st;
        instance_leave(c);
    }
}

enum conn_start backend_conn_start(struct backend_conn *c, struct backends *b, const struct backend_params *params,
                                   const char *suffix, const char *first_arg, const char *method,
                                   const char *protocol_name)
{
    c->loop = b->loop;
    c->backends = b;
    c->method = method;
    c->protocol_name = protocol_name;
    c->destroy_text = "the relay is shutting down";
    list_init_node(&c->inst_link);
    resolver_request_init(&c->dns, conn_resolved);
    timer_entry_init(&c->deadline, conn_deadline);
    struct buf rest;
    buf_init(&rest);
    bool more = params->query && *params->query;
    if (!forwarded_copy(&c->fwd, params) || !buf_append_cstr(&rest, suffix) || !buf_append_byte(&rest, '?') ||
        !buf_append_cstr(&rest, first_arg) ||
        (more && (!buf_append_byte(&rest, '&') || !buf_append_cstr(&rest, params->query))) ||
        !buf_append_byte(&rest, '\0')) {
        buf_free(&rest);
        return CONN_FAILED_FREE_NOW;
    }
    c->rest = rest.data; /* now c's */
    struct backend_instance *pinned = params->pin && params->pin->instance
                                          ? backend_instance_find(&b->pools, params->pin->instance) : NULL;
    enum conn_start st;
    if (pinned) { /* where the negotiate went, draining or not */
        c->pinned = true;
        instance_enter(c, pinned);
        snprintf(c->pin.addr, sizeof c->pin.addr, "%s", params->pin->addr);
        st = conn_resolve(c);
    } else {
        c->pool = backend_pool_of(&b->pools, params->route->name);
        if (!c->pool)
            return CONN_FAILED_FREE_NOW;
        st = conn_try(c);
    }
    if (st == CONN_STARTED && params->timeout_ms) {
        c->timeout_ms = params->timeout_ms;
        loop_timer_schedule(c->loop, &c->deadline, clock_now_ms() + params->timeout_ms);
    }
    return st;
}

/* Another address of the same instance, while it has a usable one (the one that failed backs
 * off, so it is not chosen again). */
static enum conn_start retry_address(struct backend_conn *c)
{
    if (!c->inst || c->addr_slot < 0 || c->addr_retries >= BACKEND_INSTANCE_ADDRS ||
        c->inst->backoff_until > clock_now_ms())
        return CONN_FAILED_FREE_NOW;
    c->addr_retries++;
    c->inst->addrs[c->addr_slot].active--;
    c->addr_slot = -1;
    c->pin.addr[0] = '\0';
    return conn_resolve(c);
}

bool backend_conn_retry(struct backend_conn *c)
{
    if (c->pinned || c->method == NULL)
        return false;
    enum conn_start st = retry_address(c);
    if (st == CONN_FAILED_FREE_NOW && c->pool) {
        instance_leave(c);
        st = conn_try(c);
    }
    if (st == CONN_STARTED)
        return true;
    if (st == CONN_FAILED_LWS_FREES) {
        c->destroy_text = "the backend connection could not be started";
        return true;
    }
    return false;
}

bool backend_conn_ended(struct backend_conn *c, struct lws *wsi)
{
    c->wsi = NULL;
    if (c->connecting) {
        c->failed_while_connecting = true;
        return false;
    }
    lws_set_opaque_user_data(wsi, NULL);
    return true;
}

bool backend_conn_destroyed(struct backend_conn *c)
{
    c->wsi = NULL;
    if (!c->connecting)
        return true;
    c->destroyed_while_connecting = true;
    return false;
}

/* Stops waiting for the backend: the owner hears why, and the wsi, if any,
 * is closed (its close callbacks then find no owner and free the object). */
static void conn_give_up(struct backend_conn *c, const char *why)
{
    c->kind->report_failure(c, why);
    if (!c->wsi) {
        c->kind->free(c);
        return;
    }
    lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

/* The backend's host name is resolved (outside any lws callback: lws is
 * woken afterwards, as for the wheel's timers). */
static void conn_resolved(struct resolver_request *req, const struct resolver_result *result)
{
    struct backend_conn *c = list_container_of(req, struct backend_conn, dns);
    struct lws_context *lws = c->loop->lws;
    char why[400];
    enum conn_start st;
    if (result->status != RESOLVER_OK) {
        snprintf(why, sizeof why, "cannot resolve the backend host '%s': %s", c->target->host,
                 result->error ? result->error : resolver_status_text(result->status));
        log_warn("backend: %s (%s)", why, c->target->url);
        backend_conn_failed(c);
        st = backend_conn_retry(c) ? CONN_STARTED : CONN_FAILED_FREE_NOW;
    } else {
        address_choose(c, result);
        st = conn_connect(c, c->pin.addr);
        if (st == CONN_FAILED_FREE_NOW && backend_conn_retry(c))
            st = CONN_STARTED;
        snprintf(why, sizeof why, "the backend connection could not be started");
    }
    if (st == CONN_FAILED_FREE_NOW)
        conn_give_up(c, why);
    else if (st == CONN_FAILED_LWS_FREES)
        c->kind->report_failure(c, why); /* its WSI_DESTROY frees it */
    if (lws)
        lws_cancel_service(lws);
}

/* --backend-timeout passed before the backend answered. */
static void conn_deadline(struct timer_entry *e)
{
    struct backend_conn *c = list_container_of(e, struct backend_conn, deadline);
    char why[200];
    snprintf(why, sizeof why, HUB_CHANNEL_TIMED_OUT " %u s", c->timeout_ms / 1000);
    log_info("backend: %s %s: %s", c->method ? "negotiate to" : "WebSocket to", c->target->url, why);
    c->loop->stats.backend_failures++;
    backend_conn_failed(c);
    resolver_cancel(&c->dns);
    conn_give_up(c, why);
}
