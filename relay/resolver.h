/* resolver.h - an asynchronous, caching host-name resolver on the relay's
 * libev loop.
 *
 * Backend URLs name hosts ("http://chat-backend:5000/chat"). Resolving such a
 * name with getaddrinfo() blocks the one event loop every client shares, for
 * as long as the DNS server takes to answer. The resolver asks c-ares
 * instead, whose sockets and timeouts are libev watchers on the loop the
 * caller passes in, so a lookup never blocks the loop; and it caches every
 * answer for its DNS lifetime, so a name in use costs one lookup per TTL,
 * not one per connection.
 *
 * What runs synchronously (resolver_resolve returns RESOLVER_ANSWERED, fills
 * *out, never calls the callback):
 *   - numeric addresses ("10.0.0.7", "::1"): returned as they are;
 *   - "localhost" (and "localhost."): 127.0.0.1, or ::1 when family is
 *     AF_INET6, without a lookup (what glibc and c-ares answer from /etc/hosts);
 *   - a name whose cached answer is still valid, positive or negative;
 *   - a lookup c-ares finishes inside the call: a hosts-file hit (c-ares
 *     reads the file there), or an error it finds at once;
 *   - errors that need no lookup: a malformed name, too many lookups in
 *     flight or every cached name busy (RESOLVER_E_BUSY), out of memory.
 * Everything else returns RESOLVER_PENDING and calls the request's callback
 * exactly once, later, from the loop (never from inside resolver_resolve),
 * unless the request is cancelled first. Callbacks run inside libev watcher
 * callbacks (a c-ares socket became readable, a deadline passed), outside
 * any lws callback: code that starts lws work from one must wake lws (see
 * relay.c's wheel_ev_tick for why).
 *
 * The cache, per name (names compare case-insensitively):
 *   - lifetime: the smallest TTL of the answer's records (and CNAMEs), held
 *     between min_ttl_ms and max_ttl_ms; a failed lookup is remembered for
 *     negative_ttl_ms (a DNS outage costs one lookup per name per
 *     negative_ttl_ms, not one per client);
 *   - refresh: at 3/4 of the lifetime, a name that was asked for since its
 *     last lookup is looked up again in the background, so names in use
 *     never expire while their DNS server answers; until the new answer
 *     arrives (or the old one expires) the old one is served. A refresh that
 *     fails keeps the old answer until it expires and is retried after
 *     negative_ttl_ms. A name not asked for since its last lookup is dropped
 *     when it expires;
 *   - coalescing: requests for a name whose lookup is in flight wait for that
 *     lookup; there is never more than one lookup per name;
 *   - addresses: up to RESOLVER_MAX_ADDRS distinct addresses per name, in
 *     c-ares' order (RFC 6724 sorted). Each answer hands out the next one
 *     round-robin (out->addr) and borrows the whole list (out->all);
 *   - bounds: at most max_names names (the least recently used idle name is
 *     dropped for a new one) and max_pending lookups in flight; a request
 *     that would exceed either fails at once with RESOLVER_E_BUSY. Requests
 *     waiting for a lookup get RESOLVER_E_TIMEOUT lookup_timeout_ms after the
 *     first of them started waiting; the timeout is negatively cached, but the
 *     lookup itself is left to finish (c-ares cannot cancel one query), and
 *     a late answer still fills the cache.
 *
 * Name sources: c-ares' defaults (/etc/resolv.conf for servers, search list
 * and ndots; /etc/nsswitch.conf or resolv.conf "lookup" for the order of the
 * hosts file and DNS; /etc/hosts). Tests and unusual deployments can name
 * the servers, the resolv.conf file, the lookup order, and a hosts file (see
 * struct resolver_config). The hosts file is read by c-ares on each lookup
 * (a local file read, not per request: answers from it are cached like DNS
 * answers, for min_ttl_ms). resolv.conf is read once, by resolver_create.
 *
 * Timers: one ev_timer drives c-ares' retransmissions and timeouts; each
 * cached name has one ev_timer for its refresh or expiry and one for the
 * deadline of its waiting requests, all in libev's timer heap (O(log n)
 * each, no OS timer of their own: libev folds them into epoll_wait's
 * timeout). The clock is relay/clock.h's monotonic milliseconds.
 *
 * Ownership: the caller owns the struct ev_loop (it must outlive the
 * resolver) and every struct resolver_request, which it embeds in its own
 * object (like a struct timer_entry); the resolver owns the cache, its
 * c-ares channel and its watchers. Not thread-safe: one loop, one thread. */
#ifndef SR_RESOLVER_H
#define SR_RESOLVER_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/list.h"

struct ev_loop;
struct resolver;
struct resolver_entry;

/* At most this many distinct addresses are kept per name (the rest of a
 * larger answer is ignored). */
#define RESOLVER_MAX_ADDRS 32
/* Longest host name accepted (RFC 1035's 253 characters, plus a final dot). */
#define RESOLVER_MAX_NAME 254

/* Defaults for zero fields of struct resolver_config. */
#define RESOLVER_DEFAULT_MIN_TTL_MS 5000u
#define RESOLVER_DEFAULT_MAX_TTL_MS 300000u
#define RESOLVER_DEFAULT_NEGATIVE_TTL_MS 5000u
#define RESOLVER_DEFAULT_LOOKUP_TIMEOUT_MS 5000u
#define RESOLVER_DEFAULT_MAX_NAMES 1024u
#define RESOLVER_DEFAULT_MAX_PENDING 64u

struct resolver_config {
    /* "127.0.0.1:5353,[::1]:53" (ares_set_servers_ports_csv); NULL: the
     * nameservers of resolv.conf. */
    const char *servers;
    /* A resolv.conf to read instead of /etc/resolv.conf (search list, ndots,
     * nameservers unless `servers` is set); NULL: the system's. */
    const char *resolv_conf;
    /* Lookup order as c-ares spells it: "fb" hosts file then DNS, "b" DNS
     * only, "f" hosts file only; NULL: from nsswitch.conf / resolv.conf. */
    const char *lookups;
    /* Read the hosts file named by the CARES_HOSTS environment variable
     * instead of /etc/hosts (c-ares' ARES_AI_ENVHOSTS; the variable is read
     * at each lookup, the resolver never sets it). */
    bool hosts_from_env;
    /* AF_UNSPEC (0: A and AAAA), AF_INET (A only) or AF_INET6 (AAAA only).
     * The relay's lws context has IPv6 disabled, so it asks for AF_INET. */
    int family;
    uint32_t min_ttl_ms;        /* 0: RESOLVER_DEFAULT_MIN_TTL_MS */
    uint32_t max_ttl_ms;        /* 0: RESOLVER_DEFAULT_MAX_TTL_MS */
    uint32_t negative_ttl_ms;   /* 0: RESOLVER_DEFAULT_NEGATIVE_TTL_MS */
    uint32_t lookup_timeout_ms; /* 0: RESOLVER_DEFAULT_LOOKUP_TIMEOUT_MS */
    uint32_t max_names;         /* 0: RESOLVER_DEFAULT_MAX_NAMES */
    uint32_t max_pending;       /* 0: RESOLVER_DEFAULT_MAX_PENDING */
};

enum resolver_status {
    RESOLVER_OK = 0,
    RESOLVER_E_NOTFOUND, /* no such name, or no address of the family asked for */
    RESOLVER_E_FAILED,   /* the servers failed (SERVFAIL, refused, bad answer) */
    RESOLVER_E_TIMEOUT,  /* no answer within lookup_timeout_ms */
    RESOLVER_E_BADNAME,  /* not a host name */
    RESOLVER_E_BUSY,     /* max_pending lookups in flight, or max_names busy names */
    RESOLVER_E_NOMEM,
    RESOLVER_E_SHUTDOWN, /* resolver_destroy with the request still waiting */
};

/* One address, numeric: `text` is what lws' connect info ->address takes. */
struct resolver_addr {
    int family;                  /* AF_INET or AF_INET6 */
    char text[INET6_ADDRSTRLEN];
};

/* An answer. On success addr is the round-robin pick and all[0..count) every
 * address of the name. `all` is borrowed from the cache (or, for a numeric
 * name or localhost, points at addr): valid until the callback returns, or
 * for a synchronous answer until the next call into the resolver. Copy what
 * you keep. On failure count is 0 and error says why, for logs. */
struct resolver_result {
    enum resolver_status status;
    const char *error;           /* static text; NULL on success */
    struct resolver_addr addr;
    const struct resolver_addr *all;
    size_t count;
    bool cached;                 /* answered from the cache (not numeric, not a lookup just made) */
};

struct resolver_request;
typedef void (*resolver_cb)(struct resolver_request *req, const struct resolver_result *result);

/* Embed one in the owner; recover the owner in the callback with
 * list_container_of(req, struct owner, member). Fields are the resolver's. */
struct resolver_request {
    struct list_node link;        /* in its name's waiters while pending */
    resolver_cb cb;
    struct resolver_entry *entry; /* the name it waits for; NULL when not pending */
};

enum resolver_outcome {
    RESOLVER_ANSWERED, /* *out is filled; the callback will not be called */
    RESOLVER_PENDING,  /* the callback will be called once, unless cancelled */
};

/* Counters for /metrics and tests (never reset). */
struct resolver_stats {
    uint64_t requests;      /* resolver_resolve calls for names (not numeric, not localhost) */
    uint64_t cache_hits;    /* answered from a valid cache entry, positive or negative */
    uint64_t coalesced;     /* joined a lookup already in flight */
    uint64_t lookups;       /* c-ares lookups started, refreshes included */
    uint64_t refreshes;     /* of which background refreshes */
    uint64_t failures;      /* lookups that ended without an address */
    uint64_t timeouts;      /* waiting requests failed by lookup_timeout_ms */
    uint64_t evictions;     /* names dropped for max_names */
    uint64_t busy;          /* requests refused with RESOLVER_E_BUSY */
};

/* Creates a resolver on `loop` (not NULL; it must outlive the resolver: on
 * lws' own poll() loop, without libev, there is none). Reads resolv.conf
 * (or cfg->resolv_conf) now. cfg may be NULL (all defaults) and is copied,
 * its strings too. Returns NULL after writing the reason to err. */
struct resolver *resolver_create(struct ev_loop *loop, const struct resolver_config *cfg, char *err,
                                 size_t err_len);

/* Calls every pending request's callback once with RESOLVER_E_SHUTDOWN (the
 * callbacks may free their owners but must not call into the resolver except
 * resolver_cancel), stops every watcher and frees everything. Must not be
 * called from a resolver callback. NULL is fine. */
void resolver_destroy(struct resolver *r);

/* Prepares an idle request that will call `cb`. */
void resolver_request_init(struct resolver_request *req, resolver_cb cb);

static inline bool resolver_request_pending(const struct resolver_request *req) { return req->entry != NULL; }

/* Resolves `name` (a host name or a numeric address, without port or
 * brackets). RESOLVER_ANSWERED: *out holds the answer, success or failure.
 * RESOLVER_PENDING: req's callback gets it later. req must not be pending
 * already. May be called from a resolver callback, for any request. */
enum resolver_outcome resolver_resolve(struct resolver *r, const char *name, struct resolver_request *req,
                                       struct resolver_result *out);

/* Withdraws a pending request: its callback will not be called. The lookup
 * goes on and fills the cache for others. Does nothing if req is not
 * pending. May be called from any callback, for any request. */
void resolver_cancel(struct resolver_request *req);

/* Every address the cache holds for `name` right now, without starting a
 * lookup, counting as use or advancing the round-robin cursor: true if a
 * valid entry (positive or negative), a numeric name or localhost answers,
 * with *out as resolver_resolve fills it (out->addr is all[0]); false if
 * nothing valid is cached. */
bool resolver_peek(struct resolver *r, const char *name, struct resolver_result *out);

/* Names cached (valid, expired-but-busy and negative), lookups in flight. */
size_t resolver_cached_names(const struct resolver *r);
size_t resolver_pending_lookups(const struct resolver *r);
const struct resolver_stats *resolver_stats(const struct resolver *r);

const char *resolver_status_text(enum resolver_status status);

#endif
