/* resolver.c - the caching host-name resolver: answers cached per name,
 * lookups on a c-ares channel driven by the relay's loop (relay/ares_ev.c)
 * (see resolver.h).
 *
 * Two parts:
 *   - the cache: one struct resolver_entry per name, in a dict by name and
 *     on an LRU list, holding the last answer, its deadlines and the requests
 *     waiting for its lookup;
 *   - requests: embedded in their owners, linked into their entry's waiters
 *     while pending, called once when the lookup ends or the deadline passes.
 *
 * An entry whose c-ares lookup is in flight is never freed, because c-ares
 * holds a pointer to it until it calls lookup_done; the same for an entry
 * whose waiters are being called. Everything else may be dropped at expiry or
 * evicted for a new name. */
#include "relay/resolver.h"

#include <ares.h>
#include <ev.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "containers/dict.h"
#include "containers/span.h"
#include "relay/ares_ev.h"
#include "relay/clock.h"

/* One name: its last answer (or failure), its deadlines, its waiters. */
struct resolver_entry {
    struct dict_entry dict;         /* key: name */
    struct list_node lru;           /* in resolver->lru, least recently asked for first */
    struct resolver *resolver;
    char name[RESOLVER_MAX_NAME + 1]; /* lower case */
    struct resolver_addr *addrs;    /* count of them, owned; NULL when count is 0 */
    size_t count;
    size_t next;                    /* round-robin cursor */
    enum resolver_status status;    /* of the answer held: RESOLVER_OK iff count > 0 */
    bool answered;                  /* holds an answer, positive or negative */
    bool used;                      /* asked for since its last lookup started */
    bool in_flight;                 /* a c-ares lookup runs with this entry as its arg */
    unsigned delivering;            /* nesting of deliver(): not to be freed meanwhile */
    uint64_t expires_at;            /* the answer is valid before this (ms) */
    uint64_t refresh_at;            /* refresh in the background from this (ms); UINT64_MAX: never */
    struct list_node waiters;       /* pending struct resolver_request */
    ev_timer tick;                  /* at refresh_at or expires_at, whichever comes first */
    ev_timer deadline;              /* lookup_timeout_ms after the first waiter */
};

struct resolver {
    struct ev_loop *loop;
    struct ares_ev dns;             /* the c-ares channel on the loop */
    bool library_ready;
    bool destroying;
    struct resolver_config cfg;     /* defaults applied; the strings are owned copies */
    struct dict names;              /* name -> struct resolver_entry */
    struct list_node lru;           /* every entry */
    size_t pending;                 /* c-ares lookups in flight */
    struct resolver_stats stats;
};

static void entry_tick(struct ev_loop *loop, ev_timer *w, int revents);
static void entry_deadline(struct ev_loop *loop, ev_timer *w, int revents);
static void lookup_done(void *arg, int status, int timeouts, struct ares_addrinfo *ai);

const char *resolver_status_text(enum resolver_status status)
{
    switch (status) {
    case RESOLVER_OK: return "ok";
    case RESOLVER_E_NOTFOUND: return "host name not found";
    case RESOLVER_E_FAILED: return "DNS servers failed to answer";
    case RESOLVER_E_TIMEOUT: return "DNS lookup timed out";
    case RESOLVER_E_BADNAME: return "not a valid host name";
    case RESOLVER_E_BUSY: return "too many DNS lookups in flight";
    case RESOLVER_E_NOMEM: return "out of memory";
    case RESOLVER_E_SHUTDOWN: return "the resolver is shutting down";
    }
    return "unknown resolver error";
}

static enum resolver_status status_from_ares(int status)
{
    switch (status) {
    case ARES_ENOTFOUND:
    case ARES_ENODATA:
    case ARES_ENONAME:
        return RESOLVER_E_NOTFOUND;
    case ARES_ETIMEOUT: return RESOLVER_E_TIMEOUT;
    case ARES_ENOMEM: return RESOLVER_E_NOMEM;
    case ARES_EBADNAME: return RESOLVER_E_BADNAME;
    default: return RESOLVER_E_FAILED;
    }
}

static void result_fail(struct resolver_result *out, enum resolver_status status)
{
    memset(out, 0, sizeof *out);
    out->status = status;
    out->error = resolver_status_text(status);
}

/* ------------------------------------------------------ names and numbers */

/* Numeric addresses and localhost, answered without a lookup. */
static bool answer_without_lookup(const struct resolver *r, const char *name, struct resolver_result *out)
{
    unsigned char bytes[sizeof(struct in6_addr)];
    memset(out, 0, sizeof *out);
    if (inet_pton(AF_INET, name, bytes) == 1) {
        out->addr.family = AF_INET;
    } else if (inet_pton(AF_INET6, name, bytes) == 1) {
        out->addr.family = AF_INET6;
    } else if (strcasecmp(name, "localhost") == 0 || strcasecmp(name, "localhost.") == 0) {
        out->addr.family = r->cfg.family == AF_INET6 ? AF_INET6 : AF_INET;
        inet_pton(out->addr.family, out->addr.family == AF_INET6 ? "::1" : "127.0.0.1", bytes);
    } else {
        return false;
    }
    inet_ntop(out->addr.family, bytes, out->addr.text, sizeof out->addr.text);
    out->status = RESOLVER_OK;
    out->all = &out->addr;
    out->count = 1;
    return true;
}

/* Copies name into key in lower case; false unless it is a plausible host
 * name: letters, digits, '-', '_' and '.', no empty label except a final
 * dot's, labels of at most 63 characters. */
static bool name_to_key(const char *name, char key[RESOLVER_MAX_NAME + 1], size_t *len)
{
    size_t n = 0, label = 0;
    for (const char *p = name; *p; p++, n++) {
        char c = *p;
        if (n >= RESOLVER_MAX_NAME)
            return false;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c == '.') {
            if (label == 0)
                return false;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
            if (++label > 63)
                return false;
        } else {
            return false;
        }
        key[n] = c;
    }
    key[n] = '\0';
    *len = n;
    return n > 0;
}

/* ------------------------------------------------------------- the cache */

static double ms_to_s(uint64_t ms) { return (double)ms / 1000.0; }

/* Arms the entry's tick for its next event: the refresh (unless a lookup is
 * already running) or the expiry. */
static void entry_arm_tick(struct resolver_entry *e, uint64_t now)
{
    struct resolver *r = e->resolver;
    ev_timer_stop(r->loop, &e->tick);
    if (!e->answered)
        return;
    uint64_t at = e->expires_at;
    if (!e->in_flight && e->refresh_at < at)
        at = e->refresh_at;
    ev_timer_set(&e->tick, ms_to_s(at > now ? at - now : 0), 0.0);
    ev_timer_start(r->loop, &e->tick);
}

static bool entry_busy(const struct resolver_entry *e)
{
    return e->in_flight || e->delivering || !list_is_empty(&e->waiters);
}

static void entry_free(struct resolver_entry *e)
{
    struct resolver *r = e->resolver;
    ev_timer_stop(r->loop, &e->tick);
    ev_timer_stop(r->loop, &e->deadline);
    dict_remove(&r->names, &e->dict);
    list_unlink(&e->lru);
    free(e->addrs);
    free(e);
}

static struct resolver_entry *entry_find(struct resolver *r, const char *key, size_t len)
{
    struct dict_entry *d = dict_find(&r->names, span_make(key, len));
    return d ? list_container_of(d, struct resolver_entry, dict) : NULL;
}

/* Makes room for one more name: drops the least recently asked-for idle
 * entry if the cache is full. False if every entry is busy. */
static bool cache_make_room(struct resolver *r)
{
    if (dict_count(&r->names) < r->cfg.max_names)
        return true;
    for (struct list_node *n = r->lru.next; n != &r->lru; n = n->next) {
        struct resolver_entry *e = list_container_of(n, struct resolver_entry, lru);
        if (!entry_busy(e)) {
            entry_free(e);
            r->stats.evictions++;
            return true;
        }
    }
    return false;
}

static struct resolver_entry *entry_create(struct resolver *r, const char *key, size_t len,
                                           struct resolver_result *out)
{
    if (!cache_make_room(r)) {
        r->stats.busy++;
        result_fail(out, RESOLVER_E_BUSY);
        return NULL;
    }
    struct resolver_entry *e = calloc(1, sizeof *e);
    if (!e) {
        result_fail(out, RESOLVER_E_NOMEM);
        return NULL;
    }
    e->resolver = r;
    memcpy(e->name, key, len + 1);
    e->refresh_at = UINT64_MAX;
    list_init_head(&e->waiters);
    ev_timer_init(&e->tick, entry_tick, 0.0, 0.0);
    ev_timer_init(&e->deadline, entry_deadline, 0.0, 0.0);
    e->tick.data = e;
    e->deadline.data = e;
    if (dict_insert(&r->names, &e->dict, span_make(e->name, len)) != DICT_OK) {
        free(e);
        result_fail(out, RESOLVER_E_NOMEM);
        return NULL;
    }
    list_push_back(&r->lru, &e->lru);
    return e;
}

/* The entry's answer into out; advance moves the round-robin cursor on. */
static void entry_result(struct resolver_entry *e, struct resolver_result *out, bool advance)
{
    if (e->count == 0) {
        result_fail(out, e->status == RESOLVER_OK ? RESOLVER_E_NOTFOUND : e->status);
        return;
    }
    memset(out, 0, sizeof *out);
    size_t i = e->next % e->count;
    if (advance)
        e->next = (i + 1) % e->count;
    out->status = RESOLVER_OK;
    out->addr = e->addrs[i];
    out->all = e->addrs;
    out->count = e->count;
}

static bool entry_valid(const struct resolver_entry *e, uint64_t now)
{
    return e->answered && now < e->expires_at;
}

/* Stores a failure as the entry's answer for negative_ttl_ms. */
static void entry_set_negative(struct resolver_entry *e, enum resolver_status status, uint64_t now)
{
    free(e->addrs);
    e->addrs = NULL;
    e->count = 0;
    e->status = status;
    e->answered = true;
    e->expires_at = now + e->resolver->cfg.negative_ttl_ms;
    e->refresh_at = UINT64_MAX;
}

/* Calls every waiter once with the entry's answer. Waiters are moved to a
 * list of their own first, so a callback may cancel any request (one not yet
 * called is then skipped) or start new ones, for this name too. */
static void entry_deliver(struct resolver_entry *e, bool shutdown)
{
    struct resolver *r = e->resolver;
    ev_timer_stop(r->loop, &e->deadline);
    if (list_is_empty(&e->waiters))
        return;
    struct list_node due;
    list_init_head(&due);
    list_splice_back(&due, &e->waiters);
    e->delivering++;
    while (!list_is_empty(&due)) {
        struct resolver_request *req = list_container_of(due.next, struct resolver_request, link);
        list_unlink(&req->link);
        req->entry = NULL;
        struct resolver_result result;
        if (shutdown)
            result_fail(&result, RESOLVER_E_SHUTDOWN);
        else
            entry_result(e, &result, true);
        req->cb(req, &result);
    }
    e->delivering--;
}

static void entry_wait(struct resolver_entry *e, struct resolver_request *req)
{
    struct resolver *r = e->resolver;
    req->entry = e;
    list_push_back(&e->waiters, &req->link);
    if (!ev_is_active(&e->deadline)) {
        ev_timer_set(&e->deadline, ms_to_s(r->cfg.lookup_timeout_ms), 0.0);
        ev_timer_start(r->loop, &e->deadline);
    }
}

/* Starts a c-ares lookup for the entry. False if max_pending are in flight.
 * The lookup may end before this returns (a hosts-file answer, an error
 * c-ares finds at once): then the entry holds the answer already. */
static bool entry_lookup(struct resolver_entry *e, bool refresh)
{
    struct resolver *r = e->resolver;
    if (r->pending >= r->cfg.max_pending)
        return false;
    e->in_flight = true;
    e->used = false;
    r->pending++;
    r->stats.lookups++;
    if (refresh)
        r->stats.refreshes++;
    struct ares_addrinfo_hints hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = r->cfg.family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = r->cfg.hosts_from_env ? ARES_AI_ENVHOSTS : 0;
    ares_getaddrinfo(r->dns.channel, e->name, NULL, &hints, lookup_done, e);
    ares_ev_rearm(&r->dns);
    return true;
}

/* The smallest TTL of the answer (addresses and CNAMEs), in seconds. */
static int answer_ttl(const struct ares_addrinfo *ai)
{
    int ttl = -1;
    for (const struct ares_addrinfo_node *n = ai->nodes; n; n = n->ai_next)
        if (ttl < 0 || n->ai_ttl < ttl)
            ttl = n->ai_ttl;
    for (const struct ares_addrinfo_cname *c = ai->cnames; c; c = c->next)
        if (ttl < 0 || c->ttl < ttl)
            ttl = c->ttl;
    return ttl < 0 ? 0 : ttl;
}

/* The distinct addresses of the answer, in its order, into a new array. */
static size_t answer_addresses(const struct ares_addrinfo *ai, struct resolver_addr **out)
{
    size_t count = 0;
    *out = NULL;
    for (const struct ares_addrinfo_node *n = ai->nodes; n; n = n->ai_next)
        count++;
    if (count > RESOLVER_MAX_ADDRS)
        count = RESOLVER_MAX_ADDRS;
    struct resolver_addr *addrs = count ? calloc(count, sizeof *addrs) : NULL;
    if (!addrs)
        return 0;
    size_t kept = 0;
    for (const struct ares_addrinfo_node *n = ai->nodes; n && kept < count; n = n->ai_next) {
        struct resolver_addr a;
        memset(&a, 0, sizeof a);
        a.family = n->ai_family;
        const void *bytes = NULL;
        if (n->ai_family == AF_INET && n->ai_addr)
            bytes = &((const struct sockaddr_in *)(const void *)n->ai_addr)->sin_addr;
        else if (n->ai_family == AF_INET6 && n->ai_addr)
            bytes = &((const struct sockaddr_in6 *)(const void *)n->ai_addr)->sin6_addr;
        if (!bytes || !inet_ntop(a.family, bytes, a.text, sizeof a.text))
            continue;
        bool seen = false;
        for (size_t i = 0; i < kept && !seen; i++)
            seen = addrs[i].family == a.family && strcmp(addrs[i].text, a.text) == 0;
        if (!seen)
            addrs[kept++] = a;
    }
    if (kept == 0) {
        free(addrs);
        return 0;
    }
    *out = addrs;
    return kept;
}

/* Stores a successful answer: lifetime clamped, refresh at 3/4 of it. */
static void entry_set_answer(struct resolver_entry *e, struct resolver_addr *addrs, size_t count, int ttl_s,
                             uint64_t now)
{
    const struct resolver_config *cfg = &e->resolver->cfg;
    uint64_t ttl = (uint64_t)ttl_s * 1000u;
    if (ttl < cfg->min_ttl_ms)
        ttl = cfg->min_ttl_ms;
    if (ttl > cfg->max_ttl_ms)
        ttl = cfg->max_ttl_ms;
    free(e->addrs);
    e->addrs = addrs;
    e->count = count;
    e->status = RESOLVER_OK;
    e->answered = true;
    e->expires_at = now + ttl;
    e->refresh_at = now + ttl * 3 / 4;
}

/* c-ares' callback for entry_lookup. */
static void lookup_done(void *arg, int status, int timeouts, struct ares_addrinfo *ai)
{
    (void)timeouts;
    struct resolver_entry *e = arg;
    struct resolver *r = e->resolver;
    e->in_flight = false;
    r->pending--;
    if (status == ARES_EDESTRUCTION || r->destroying) {
        ares_freeaddrinfo(ai);
        return;
    }
    uint64_t now = clock_now_ms();
    struct resolver_addr *addrs = NULL;
    size_t count = status == ARES_SUCCESS && ai ? answer_addresses(ai, &addrs) : 0;
    if (count > 0) {
        entry_set_answer(e, addrs, count, answer_ttl(ai), now);
    } else {
        r->stats.failures++;
        enum resolver_status why = status == ARES_SUCCESS ? RESOLVER_E_NOTFOUND : status_from_ares(status);
        if (e->count > 0 && entry_valid(e, now)) {
            /* A failed refresh: serve the old answer until it expires; try again later. */
            e->refresh_at = now + r->cfg.negative_ttl_ms;
        } else {
            entry_set_negative(e, why, now);
        }
    }
    ares_freeaddrinfo(ai);
    entry_arm_tick(e, now);
    entry_deliver(e, false);
}

/* The deadline of the entry's waiters passed: they get RESOLVER_E_TIMEOUT,
 * which the entry remembers for negative_ttl_ms. The lookup runs on. */
static void entry_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct resolver_entry *e = w->data;
    uint64_t now = clock_now_ms();
    e->resolver->stats.timeouts++;
    entry_set_negative(e, RESOLVER_E_TIMEOUT, now);
    entry_arm_tick(e, now);
    entry_deliver(e, false);
}

/* Refresh time or expiry. A name asked for since its last lookup is looked
 * up again; one that was not is left to expire, and then dropped. */
static void entry_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct resolver_entry *e = w->data;
    uint64_t now = clock_now_ms();
    if (now >= e->expires_at) {
        if (!entry_busy(e))
            entry_free(e);
        return; /* a busy entry is re-armed when its lookup ends */
    }
    if (now >= e->refresh_at && !e->in_flight) {
        if (!e->used)
            e->refresh_at = UINT64_MAX;
        else if (!entry_lookup(e, true))
            e->refresh_at = now + 1000; /* max_pending in flight: try again soon */
        else if (!e->in_flight)
            return; /* answered at once: lookup_done armed the tick */
    }
    entry_arm_tick(e, now);
}

/* ------------------------------------------------------------ requests */

void resolver_request_init(struct resolver_request *req, resolver_cb cb)
{
    list_init_node(&req->link);
    req->cb = cb;
    req->entry = NULL;
}

void resolver_cancel(struct resolver_request *req)
{
    struct resolver_entry *e = req->entry;
    if (!e)
        return;
    list_unlink(&req->link);
    req->entry = NULL;
    if (list_is_empty(&e->waiters))
        ev_timer_stop(e->resolver->loop, &e->deadline);
}

enum resolver_outcome resolver_resolve(struct resolver *r, const char *name, struct resolver_request *req,
                                       struct resolver_result *out)
{
    char key[RESOLVER_MAX_NAME + 1];
    size_t len;
    if (answer_without_lookup(r, name, out))
        return RESOLVER_ANSWERED;
    if (r->destroying) { /* a callback of resolver_destroy asking again */
        result_fail(out, RESOLVER_E_SHUTDOWN);
        return RESOLVER_ANSWERED;
    }
    if (!name_to_key(name, key, &len)) {
        result_fail(out, RESOLVER_E_BADNAME);
        return RESOLVER_ANSWERED;
    }
    r->stats.requests++;
    uint64_t now = clock_now_ms();
    struct resolver_entry *e = entry_find(r, key, len);
    if (!e && !(e = entry_create(r, key, len, out)))
        return RESOLVER_ANSWERED;
    list_unlink(&e->lru);
    list_push_back(&r->lru, &e->lru);
    e->used = true;
    if (entry_valid(e, now)) {
        r->stats.cache_hits++;
        /* Due for a refresh (a request came before the tick did): start it;
         * if it answers at once, the new answer is the one served. */
        if (e->count > 0 && now >= e->refresh_at && !e->in_flight)
            entry_lookup(e, true);
        entry_result(e, out, true);
        out->cached = true;
        return RESOLVER_ANSWERED;
    }
    if (e->in_flight) {
        r->stats.coalesced++;
        entry_wait(e, req);
        return RESOLVER_PENDING;
    }
    if (!entry_lookup(e, false)) {
        r->stats.busy++;
        if (!entry_busy(e))
            entry_free(e); /* holds nothing valid, and nothing else would free it */
        result_fail(out, RESOLVER_E_BUSY);
        return RESOLVER_ANSWERED;
    }
    if (!e->in_flight) { /* answered at once */
        entry_result(e, out, true);
        return RESOLVER_ANSWERED;
    }
    entry_wait(e, req);
    return RESOLVER_PENDING;
}

bool resolver_peek(struct resolver *r, const char *name, struct resolver_result *out)
{
    char key[RESOLVER_MAX_NAME + 1];
    size_t len;
    if (answer_without_lookup(r, name, out))
        return true;
    struct resolver_entry *e = name_to_key(name, key, &len) ? entry_find(r, key, len) : NULL;
    if (!e || !entry_valid(e, clock_now_ms()))
        return false;
    entry_result(e, out, false);
    if (out->count > 0)
        out->addr = out->all[0];
    out->cached = true;
    return true;
}

size_t resolver_cached_names(const struct resolver *r) { return dict_count(&r->names); }
size_t resolver_pending_lookups(const struct resolver *r) { return r->pending; }
const struct resolver_stats *resolver_stats(const struct resolver *r) { return &r->stats; }

/* ------------------------------------------------------------- lifecycle */

static char *dup_or_null(const char *s, bool *ok)
{
    if (!s)
        return NULL;
    char *copy = strdup(s);
    if (!copy)
        *ok = false;
    return copy;
}

static void config_apply_defaults(struct resolver_config *c)
{
    if (!c->min_ttl_ms) c->min_ttl_ms = RESOLVER_DEFAULT_MIN_TTL_MS;
    if (!c->max_ttl_ms) c->max_ttl_ms = RESOLVER_DEFAULT_MAX_TTL_MS;
    if (c->max_ttl_ms < c->min_ttl_ms) c->max_ttl_ms = c->min_ttl_ms;
    if (!c->negative_ttl_ms) c->negative_ttl_ms = RESOLVER_DEFAULT_NEGATIVE_TTL_MS;
    if (!c->lookup_timeout_ms) c->lookup_timeout_ms = RESOLVER_DEFAULT_LOOKUP_TIMEOUT_MS;
    if (!c->max_names) c->max_names = RESOLVER_DEFAULT_MAX_NAMES;
    if (!c->max_pending) c->max_pending = RESOLVER_DEFAULT_MAX_PENDING;
}

/* c-ares' own retransmission: each server is tried twice, the first time
 * for half of lookup_timeout_ms, the second (c-ares doubles it) for all of
 * it. So with one server c-ares gives up at 1.5 x lookup_timeout_ms: after
 * the waiters did (entry_deadline), while the late answer can still fill the
 * cache. */
static int channel_open(struct resolver *r, char *err, size_t err_len)
{
    struct ares_options o;
    memset(&o, 0, sizeof o);
    int mask = ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
    o.timeout = (int)(r->cfg.lookup_timeout_ms / 2 > 100 ? r->cfg.lookup_timeout_ms / 2 : 100);
    o.tries = 2;
    if (r->cfg.lookups) {
        o.lookups = (char *)r->cfg.lookups;
        mask |= ARES_OPT_LOOKUPS;
    }
    if (r->cfg.resolv_conf) {
        o.resolvconf_path = (char *)r->cfg.resolv_conf;
        mask |= ARES_OPT_RESOLVCONF;
    }
    return ares_ev_open(&r->dns, &o, mask, r->cfg.servers, err, err_len) ? 0 : -1;
}

struct resolver *resolver_create(struct ev_loop *loop, const struct resolver_config *cfg, char *err,
                                 size_t err_len)
{
    if (!loop) {
        snprintf(err, err_len, "resolver: needs a libev loop");
        return NULL;
    }
    struct resolver *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, err_len, "resolver: out of memory");
        return NULL;
    }
    r->loop = loop;
    list_init_head(&r->lru);
    ares_ev_init(&r->dns, loop);
    if (cfg)
        r->cfg = *cfg;
    config_apply_defaults(&r->cfg);
    bool ok = true;
    r->cfg.servers = dup_or_null(r->cfg.servers, &ok);
    r->cfg.resolv_conf = dup_or_null(r->cfg.resolv_conf, &ok);
    r->cfg.lookups = dup_or_null(r->cfg.lookups, &ok);
    uint8_t seed[DICT_SEED_LEN];
    if (!ok || RAND_bytes(seed, sizeof seed) != 1) {
        snprintf(err, err_len, "resolver: out of memory or randomness");
        resolver_destroy(r);
        return NULL;
    }
    dict_init(&r->names, seed);
    int status = ares_library_init(ARES_LIB_INIT_ALL);
    if (status != ARES_SUCCESS) {
        snprintf(err, err_len, "resolver: c-ares: %s", ares_strerror(status));
        resolver_destroy(r);
        return NULL;
    }
    r->library_ready = true;
    if (channel_open(r, err, err_len) < 0) {
        resolver_destroy(r);
        return NULL;
    }
    return r;
}

void resolver_destroy(struct resolver *r)
{
    if (!r)
        return;
    r->destroying = true;
    for (struct list_node *n = r->lru.next; n != &r->lru; n = n->next) {
        struct resolver_entry *e = list_container_of(n, struct resolver_entry, lru);
        ev_timer_stop(r->loop, &e->tick);
        entry_deliver(e, true);
    }
    ares_ev_close(&r->dns); /* lookup_done(ARES_EDESTRUCTION) for each lookup */
    while (!list_is_empty(&r->lru))
        entry_free(list_container_of(r->lru.next, struct resolver_entry, lru));
    dict_free(&r->names);
    if (r->library_ready)
        ares_library_cleanup();
    free((char *)r->cfg.servers);
    free((char *)r->cfg.resolv_conf);
    free((char *)r->cfg.lookups);
    free(r);
}
