/* test_resolver.c - relay/resolver.c against a real DNS server on a real
 * libev loop.
 *
 * The test starts tests/resolver/dns_server.py (python3, standard library)
 * on 127.0.0.1 and a free port, with names that answer at once, after
 * 100 ms, after 2 s, never, or with SERVFAIL, and counts the questions that
 * reach it through the server's query log. Each case makes its own resolver
 * pointed at that server only (its own resolv.conf without a search list, DNS
 * only), runs the loop until its callbacks arrive, and destroys it.
 *
 * Timing: the machine may be loaded (two cores, sanitizers, other builds),
 * so bounds are generous and no assertion is finer than "the loop was never
 * blocked for half a second", which a lookup blocking the loop for the 2 s
 * the slow name takes would fail by far. */
#include <errno.h>
#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "relay/clock.h"
#include "relay/resolver.h"

#ifndef SR_SOURCE_DIR
#define SR_SOURCE_DIR "."
#endif

static const char ZONE[] =
    "{"
    "\"fast.test\": {\"a\": [\"10.0.0.1\", \"10.0.0.2\", \"10.0.0.3\"], \"aaaa\": [\"fd00::1\"], \"ttl\": 300},"
    "\"cased.test\": {\"a\": [\"10.0.1.1\"], \"ttl\": 300},"
    "\"other.test\": {\"a\": [\"10.0.2.1\"], \"ttl\": 300},"
    "\"short.test\": {\"a_counter\": true, \"ttl\": 4},"
    "\"idle.test\": {\"a_counter\": true, \"ttl\": 2},"
    "\"slow100.test\": {\"a\": [\"10.0.3.1\"], \"ttl\": 300, \"delay_ms\": 100},"
    "\"cancel.test\": {\"a\": [\"10.0.4.1\"], \"ttl\": 300, \"delay_ms\": 300},"
    "\"p1.test\": {\"a\": [\"10.0.5.1\"], \"ttl\": 300, \"delay_ms\": 300},"
    "\"p2.test\": {\"a\": [\"10.0.5.2\"], \"ttl\": 300, \"delay_ms\": 300},"
    "\"p3.test\": {\"a\": [\"10.0.5.3\"], \"ttl\": 300, \"delay_ms\": 300},"
    "\"slow.test\": {\"a\": [\"10.0.6.1\"], \"ttl\": 300, \"delay_ms\": 2000},"
    "\"never.test\": {\"never\": true},"
    "\"fail.test\": {\"rcode\": 2}"
    "}";

/* ------------------------------------------------------- the DNS server */

static pid_t dns_pid = -1;
static int dns_port;
static char dir[] = "/tmp/sr-resolver-test-XXXXXX";
static char port_file[128], log_file[128], resolv_file[128], hosts_file[128];

static void dns_stop(void)
{
    if (dns_pid > 0) {
        kill(dns_pid, SIGTERM);
        waitpid(dns_pid, NULL, 0);
        dns_pid = -1;
    }
    unlink(port_file);
    unlink(log_file);
    unlink(resolv_file);
    unlink(hosts_file);
    rmdir(dir);
}

static bool write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fputs(text, f);
    return fclose(f) == 0;
}

static bool dns_start(void)
{
    if (!mkdtemp(dir))
        return false;
    snprintf(port_file, sizeof port_file, "%s/port", dir);
    snprintf(log_file, sizeof log_file, "%s/queries.log", dir);
    snprintf(resolv_file, sizeof resolv_file, "%s/resolv.conf", dir);
    snprintf(hosts_file, sizeof hosts_file, "%s/hosts", dir);
    /* No search list: a name is asked for as it is, so the log counts are exact. */
    if (!write_file(resolv_file, "nameserver 127.0.0.1\noptions ndots:1\n") ||
        !write_file(hosts_file, "10.7.7.7 hosted.test\n"))
        return false;
    char parent[32];
    snprintf(parent, sizeof parent, "%d", (int)getpid());
    dns_pid = fork();
    if (dns_pid < 0)
        return false;
    if (dns_pid == 0) {
        execlp("python3", "python3", SR_SOURCE_DIR "/tests/resolver/dns_server.py", "--port-file", port_file,
               "--log", log_file, "--parent", parent, "--zone", ZONE, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) { /* up to 20 s for python3 to start on a busy machine */
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%d", &dns_port);
            fclose(f);
            if (ok == 1 && dns_port > 0)
                return true;
        }
        if (waitpid(dns_pid, NULL, WNOHANG) == dns_pid) {
            dns_pid = -1;
            return false;
        }
        usleep(100 * 1000);
    }
    return false;
}

/* Questions for name of type ("A", "AAAA", or NULL: any) the server saw. */
static int queries(const char *name, const char *type)
{
    FILE *f = fopen(log_file, "r");
    if (!f)
        return 0;
    char line[300], qname[260], qtype[16];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%259s %15s", qname, qtype) == 2 && strcmp(qname, name) == 0 &&
            (!type || strcmp(qtype, type) == 0))
            n++;
    fclose(f);
    return n;
}

/* ------------------------------------------------------------- helpers */

static struct ev_loop *loop;

static struct resolver *make_resolver(int family, uint32_t timeout_ms, uint32_t max_pending, uint32_t max_names)
{
    char servers[64], err[256] = "";
    snprintf(servers, sizeof servers, "127.0.0.1:%d", dns_port);
    struct resolver_config cfg = {
        .servers = servers,
        .resolv_conf = resolv_file,
        .lookups = "b",
        .family = family,
        .min_ttl_ms = 1000,
        .negative_ttl_ms = 1000,
        .lookup_timeout_ms = timeout_ms,
        .max_pending = max_pending,
        .max_names = max_names,
    };
    struct resolver *r = resolver_create(loop, &cfg, err, sizeof err);
    if (!r)
        fprintf(stderr, "resolver_create: %s\n", err);
    return r;
}

/* A request and what its callback saw. */
struct waiter {
    struct resolver_request req;
    int calls;
    enum resolver_status status;
    struct resolver_addr addr;
    size_t count;
    uint64_t at;                 /* when it was called (ms) */
    struct resolver_request *cancel_in_callback;
    struct resolver *ask_again;  /* if set, the callback asks for `again_name` */
    const char *again_name;
    enum resolver_outcome again_outcome;
    struct resolver_result again;
};

static int callbacks_total;

static void on_result(struct resolver_request *req, const struct resolver_result *res)
{
    struct waiter *w = list_container_of(req, struct waiter, req);
    w->calls++;
    w->status = res->status;
    w->addr = res->addr;
    w->count = res->count;
    w->at = clock_now_ms();
    callbacks_total++;
    if (w->cancel_in_callback)
        resolver_cancel(w->cancel_in_callback);
    if (w->ask_again) {
        static struct resolver_request again_req; /* only for an answer from the cache */
        resolver_request_init(&again_req, on_result);
        w->again_outcome = resolver_resolve(w->ask_again, w->again_name, &again_req, &w->again);
        if (w->again_outcome == RESOLVER_PENDING)
            resolver_cancel(&again_req);
    }
}

static void waiter_init(struct waiter *w)
{
    memset(w, 0, sizeof *w);
    resolver_request_init(&w->req, on_result);
}

static enum resolver_outcome ask(struct resolver *r, const char *name, struct waiter *w, struct resolver_result *out)
{
    return resolver_resolve(r, name, &w->req, out);
}

static bool guard_expired;

static void guard_fired(struct ev_loop *l, ev_timer *t, int revents)
{
    (void)l;
    (void)t;
    (void)revents;
    guard_expired = true;
}

/* Runs the loop until *count reaches want or `seconds` pass; true if it did. */
static bool run_until_count(const int *count, int want, double seconds)
{
    ev_timer guard;
    ev_timer_init(&guard, guard_fired, seconds, 0.0);
    guard_expired = false;
    ev_timer_start(loop, &guard);
    while (*count < want && !guard_expired)
        ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &guard);
    return *count >= want;
}

/* Runs the loop for `seconds`, whatever happens. */
static void run_for(double seconds)
{
    int never = 0;
    run_until_count(&never, 1, seconds);
}

/* Runs the loop until the server has seen `want` questions for name/type. */
static bool run_until_queries(const char *name, const char *type, int want, double seconds)
{
    uint64_t end = clock_now_ms() + (uint64_t)(seconds * 1000);
    while (queries(name, type) < want && clock_now_ms() < end)
        run_for(0.05);
    return queries(name, type) >= want;
}

/* Requests made and cancelled at random over a few names (fast, slow,
 * never answered, failing) with small limits, the loop turning between them:
 * every request is answered at most once, never after its cancel, and
 * resolver_destroy answers the rest. ASan checks the rest. */
struct stress_req {
    struct resolver_request req;
    bool outstanding;
    int calls;
};

static int stress_errors;

static void stress_cb(struct resolver_request *req, const struct resolver_result *res)
{
    struct stress_req *q = list_container_of(req, struct stress_req, req);
    if (!q->outstanding)
        stress_errors++;
    q->outstanding = false;
    q->calls++;
    if (res->status == RESOLVER_OK && (res->count == 0 || !res->all))
        stress_errors++;
}

static void test_stress(void)
{
    static const char *const names[] = { "fast.test", "cased.test", "other.test", "slow100.test", "cancel.test",
                                         "p1.test", "never.test", "nope.test", "fail.test", "10.0.0.1" };
    enum { NREQ = 48 };
    struct resolver *r = make_resolver(AF_UNSPEC, 500, 3, 4);
    struct stress_req q[NREQ];
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int pending_seen = 0;
    stress_errors = 0;
    for (int i = 0; i < NREQ; i++) {
        memset(&q[i], 0, sizeof q[i]);
        resolver_request_init(&q[i].req, stress_cb);
    }
    for (int step = 0; step < 400; step++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        struct stress_req *x = &q[rng % NREQ];
        unsigned op = (unsigned)(rng >> 32) % 10;
        if (op < 5 && !x->outstanding) {
            struct resolver_result res;
            x->outstanding = true;
            if (resolver_resolve(r, names[(rng >> 20) % 10], &x->req, &res) == RESOLVER_ANSWERED)
                x->outstanding = false;
            else
                pending_seen++;
        } else if (op < 7) {
            resolver_cancel(&x->req);
            x->outstanding = false;
        } else {
            run_for(0.01);
        }
        CHECK(resolver_pending_lookups(r) <= 3 && resolver_cached_names(r) <= 4);
        for (int i = 0; i < NREQ; i++)
            if (q[i].outstanding != resolver_request_pending(&q[i].req))
                stress_errors++;
    }
    const struct resolver_stats *st = resolver_stats(r);
    printf("test_resolver: stress: %d pending requests, %llu lookups, %llu coalesced, %llu evictions, %llu busy, "
           "%llu timeouts\n", pending_seen, (unsigned long long)st->lookups, (unsigned long long)st->coalesced,
           (unsigned long long)st->evictions, (unsigned long long)st->busy, (unsigned long long)st->timeouts);
    resolver_destroy(r);
    for (int i = 0; i < NREQ; i++)
        CHECK(!q[i].outstanding && !resolver_request_pending(&q[i].req));
    CHECK(pending_seen > 10);
    CHECK_EQ_INT(stress_errors, 0);
}

/* --------------------------------------------------------------- cases */

static void test_without_lookup(void)
{
    struct resolver *r = make_resolver(AF_INET, 2000, 0, 0);
    struct waiter w;
    struct resolver_result res;
    waiter_init(&w);
    CHECK(ask(r, "10.1.2.3", &w, &res) == RESOLVER_ANSWERED);
    CHECK(res.status == RESOLVER_OK && res.count == 1 && strcmp(res.addr.text, "10.1.2.3") == 0);
    CHECK(res.all == &res.addr && !res.cached);
    CHECK(ask(r, "::1", &w, &res) == RESOLVER_ANSWERED);
    CHECK(res.status == RESOLVER_OK && res.addr.family == AF_INET6 && strcmp(res.addr.text, "::1") == 0);
    CHECK(ask(r, "LocalHost", &w, &res) == RESOLVER_ANSWERED);
    CHECK(res.status == RESOLVER_OK && strcmp(res.addr.text, "127.0.0.1") == 0);
    CHECK(ask(r, "bad name!", &w, &res) == RESOLVER_ANSWERED && res.status == RESOLVER_E_BADNAME);
    CHECK(ask(r, "a..b", &w, &res) == RESOLVER_ANSWERED && res.status == RESOLVER_E_BADNAME);
    CHECK(ask(r, "", &w, &res) == RESOLVER_ANSWERED && res.status == RESOLVER_E_BADNAME);
    CHECK(res.error && strlen(res.error) > 0);
    CHECK(resolver_peek(r, "10.9.9.9", &res) && res.status == RESOLVER_OK);
    CHECK(!resolver_peek(r, "fast.test", &res));
    CHECK_EQ_INT(w.calls, 0);
    CHECK_EQ_INT(resolver_stats(r)->lookups, 0);
    CHECK_EQ_INT(resolver_cached_names(r), 0);
    resolver_destroy(r);
}

/* A first request waits for the lookup; the next ones are answered from the
 * cache at once, without a question to the server, round-robin. */
static void test_resolve_and_cache(void)
{
    struct resolver *r = make_resolver(AF_INET, 3000, 0, 0);
    struct waiter w;
    struct resolver_result res;
    waiter_init(&w);
    CHECK(ask(r, "fast.test", &w, &res) == RESOLVER_PENDING);
    CHECK(resolver_request_pending(&w.req));
    CHECK_EQ_INT(w.calls, 0); /* never from inside resolver_resolve */
    CHECK(run_until_count(&w.calls, 1, 10.0));
    CHECK_EQ_INT(w.calls, 1);
    CHECK(!resolver_request_pending(&w.req));
    CHECK_EQ_INT(w.status, RESOLVER_OK);
    CHECK_EQ_INT(w.count, 3);
    CHECK(strncmp(w.addr.text, "10.0.0.", 7) == 0);
    CHECK_EQ_INT(queries("fast.test", "A"), 1);
    CHECK_EQ_INT(queries("fast.test", "AAAA"), 0); /* AF_INET: A only */

    bool seen[4] = { false };
    int first = w.addr.text[7] - '0';
    if (first >= 1 && first <= 3)
        seen[first] = true;
    for (int i = 0; i < 2; i++) {
        CHECK(ask(r, "fast.test", &w, &res) == RESOLVER_ANSWERED);
        CHECK(res.status == RESOLVER_OK && res.cached && res.count == 3 && res.all);
        int k = res.addr.text[7] - '0';
        CHECK(k >= 1 && k <= 3 && !seen[k]);
        if (k >= 1 && k <= 3)
            seen[k] = true;
    }
    CHECK(seen[1] && seen[2] && seen[3]); /* three requests, three addresses */
    CHECK(ask(r, "FAST.Test", &w, &res) == RESOLVER_ANSWERED && res.cached); /* names compare in lower case */
    CHECK(resolver_peek(r, "fast.test", &res) && res.count == 3 && strcmp(res.addr.text, res.all[0].text) == 0);
    run_for(0.2);
    CHECK_EQ_INT(queries("fast.test", "A"), 1);
    CHECK_EQ_INT(w.calls, 1);
    CHECK_EQ_INT(resolver_stats(r)->lookups, 1);
    CHECK_EQ_INT(resolver_stats(r)->cache_hits, 3);
    resolver_destroy(r);

    /* Both families: A and AAAA, every address in the list. */
    r = make_resolver(AF_UNSPEC, 3000, 0, 0);
    waiter_init(&w);
    CHECK(ask(r, "fast.test", &w, &res) == RESOLVER_PENDING);
    CHECK(run_until_count(&w.calls, 1, 10.0));
    CHECK_EQ_INT(w.status, RESOLVER_OK);
    CHECK_EQ_INT(w.count, 4);
    CHECK(resolver_peek(r, "fast.test", &res) && res.count == 4);
    bool v6 = false;
    for (size_t i = 0; i < res.count; i++)
        v6 |= res.all[i].family == AF_INET6 && strcmp(res.all[i].text, "fd00::1") == 0;
    CHECK(v6);
    CHECK_EQ_INT(queries("fast.test", "AAAA"), 1);
    resolver_destroy(r);
}

/* Concurrent requests for a name share one lookup. */
static void test_coalesce(void)
{
    struct resolver *r = make_resolver(AF_INET, 3000, 0, 0);
    struct waiter w[5];
    struct resolver_result res;
    callbacks_total = 0;
    for (int i = 0; i < 5; i++) {
        waiter_init(&w[i]);
        CHECK(ask(r, "slow100.test", &w[i], &res) == RESOLVER_PENDING);
    }
    w[0].ask_again = r; /* from inside the callback: the fresh answer, from the cache */
    w[0].again_name = "slow100.test";
    CHECK_EQ_INT(resolver_pending_lookups(r), 1);
    CHECK(run_until_count(&callbacks_total, 5, 10.0));
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(w[i].calls, 1);
        CHECK_EQ_INT(w[i].status, RESOLVER_OK);
        CHECK(strcmp(w[i].addr.text, "10.0.3.1") == 0);
    }
    CHECK(w[0].again_outcome == RESOLVER_ANSWERED && w[0].again.cached && w[0].again.status == RESOLVER_OK);
    CHECK_EQ_INT(queries("slow100.test", "A"), 1);
    CHECK_EQ_INT(resolver_stats(r)->coalesced, 4);
    CHECK_EQ_INT(resolver_pending_lookups(r), 0);
    resolver_destroy(r);
}

/* A name in use is looked up again before it expires, so requests after
 * its first lifetime are still answered at once; a name asked for only once
 * is not refreshed, and is dropped when it expires. */
static void test_refresh(void)
{
    struct resolver *r = make_resolver(AF_INET, 3000, 0, 0);
    struct waiter w, idle;
    struct resolver_result res;
    waiter_init(&w);
    waiter_init(&idle);
    CHECK(ask(r, "short.test", &w, &res) == RESOLVER_PENDING);
    CHECK(ask(r, "idle.test", &idle, &res) == RESOLVER_PENDING);
    CHECK(run_until_count(&w.calls, 1, 10.0) && run_until_count(&idle.calls, 1, 10.0));
    CHECK(strcmp(w.addr.text, "10.99.0.1") == 0);
    uint64_t answered = w.at;
    CHECK(ask(r, "short.test", &w, &res) == RESOLVER_ANSWERED && res.cached); /* in use */
    /* TTL 4 s: refresh at 3 s, expiry at 4 s. */
    CHECK(run_until_queries("short.test", "A", 2, 15.0));
    run_for(0.3);
    CHECK(resolver_peek(r, "short.test", &res) && strcmp(res.addr.text, "10.99.0.2") == 0);
    while (clock_now_ms() < answered + 4500) /* past the first answer's expiry */
        run_for(0.1);
    CHECK(ask(r, "short.test", &w, &res) == RESOLVER_ANSWERED);
    CHECK(res.status == RESOLVER_OK && res.cached && strcmp(res.addr.text, "10.99.0.2") == 0);
    CHECK_EQ_INT(w.calls, 1);
    CHECK(resolver_stats(r)->refreshes >= 1);
    /* idle.test (TTL 2 s) was asked for once: not refreshed, gone by now. */
    CHECK_EQ_INT(queries("idle.test", "A"), 1);
    CHECK(!resolver_peek(r, "idle.test", &res));
    CHECK_EQ_INT(resolver_cached_names(r), 1);
    resolver_destroy(r);
}

/* A server that never answers: the waiters fail after lookup_timeout_ms, and
 * the failure is cached; SERVFAIL and NXDOMAIN fail at once. */
static void test_timeout_and_failures(void)
{
    struct resolver *r = make_resolver(AF_INET, 1000, 0, 0);
    struct waiter w, f, nx;
    struct resolver_result res;
    waiter_init(&w);
    waiter_init(&f);
    waiter_init(&nx);
    uint64_t start = clock_now_ms();
    CHECK(ask(r, "never.test", &w, &res) == RESOLVER_PENDING);
    CHECK(ask(r, "fail.test", &f, &res) == RESOLVER_PENDING);
    CHECK(ask(r, "nope.test", &nx, &res) == RESOLVER_PENDING);
    CHECK(run_until_count(&nx.calls, 1, 10.0));
    CHECK_EQ_INT(nx.status, RESOLVER_E_NOTFOUND);
    /* Negatively cached for negative_ttl_ms (1 s): asked again at once, no new question. */
    CHECK(ask(r, "nope.test", &nx, &res) == RESOLVER_ANSWERED && res.status == RESOLVER_E_NOTFOUND && res.cached);
    CHECK_EQ_INT(queries("nope.test", "A"), 1);
    CHECK(run_until_count(&f.calls, 1, 10.0));
    CHECK_EQ_INT(f.status, RESOLVER_E_FAILED);
    CHECK(run_until_count(&w.calls, 1, 15.0));
    CHECK_EQ_INT(w.calls, 1);
    CHECK_EQ_INT(w.status, RESOLVER_E_TIMEOUT);
    CHECK(w.at - start >= 800 && w.at - start < 8000);
    CHECK(ask(r, "never.test", &w, &res) == RESOLVER_ANSWERED); /* negatively cached */
    CHECK(res.status == RESOLVER_E_TIMEOUT && res.cached && res.count == 0);
    CHECK_EQ_INT(resolver_stats(r)->timeouts, 1);
    resolver_destroy(r); /* never.test's lookup may still be in flight: c-ares cancels it */
}

/* A cancelled request is never called; the lookup still fills the cache. */
static void test_cancel(void)
{
    struct resolver *r = make_resolver(AF_INET, 3000, 0, 0);
    struct waiter a, b, c, d;
    struct resolver_result res;
    waiter_init(&a);
    waiter_init(&b);
    waiter_init(&c);
    waiter_init(&d);
    CHECK(ask(r, "cancel.test", &a, &res) == RESOLVER_PENDING);
    CHECK(ask(r, "cancel.test", &b, &res) == RESOLVER_PENDING);
    CHECK(ask(r, "cancel.test", &c, &res) == RESOLVER_PENDING);
    resolver_cancel(&a.req);
    CHECK(!resolver_request_pending(&a.req));
    resolver_cancel(&a.req); /* twice is fine */
    b.cancel_in_callback = &c.req; /* called before c: c must then not be called */
    CHECK(run_until_count(&b.calls, 1, 10.0));
    run_for(0.2);
    CHECK_EQ_INT(a.calls, 0);
    CHECK_EQ_INT(b.calls, 1);
    CHECK_EQ_INT(c.calls, 0);

    /* The only waiter goes away: the answer still lands in the cache. */
    CHECK(ask(r, "other.test", &d, &res) == RESOLVER_PENDING);
    resolver_cancel(&d.req);
    CHECK(run_until_queries("other.test", "A", 1, 10.0));
    uint64_t end = clock_now_ms() + 10000;
    while (resolver_pending_lookups(r) > 0 && clock_now_ms() < end)
        run_for(0.05);
    CHECK_EQ_INT(d.calls, 0);
    CHECK(ask(r, "other.test", &d, &res) == RESOLVER_ANSWERED && res.cached &&
          strcmp(res.addr.text, "10.0.2.1") == 0);

    /* Destroying the resolver calls what is still waiting, with SHUTDOWN. */
    struct waiter s;
    waiter_init(&s);
    CHECK(ask(r, "slow.test", &s, &res) == RESOLVER_PENDING);
    resolver_destroy(r);
    CHECK_EQ_INT(s.calls, 1);
    CHECK_EQ_INT(s.status, RESOLVER_E_SHUTDOWN);
}

/* The point of the resolver: while one lookup waits 2 s for a slow server,
 * the loop keeps turning (a 50 ms ticker keeps its cadence) and other names
 * resolve meanwhile. */
struct ticker {
    ev_timer timer;
    uint64_t last;
    uint64_t max_gap;
    int ticks;
};

static void ticker_fired(struct ev_loop *l, ev_timer *t, int revents)
{
    (void)l;
    (void)revents;
    struct ticker *k = (struct ticker *)t;
    uint64_t now = clock_now_ms();
    if (now - k->last > k->max_gap)
        k->max_gap = now - k->last;
    k->last = now;
    k->ticks++;
}

static void test_loop_not_blocked(void)
{
    struct resolver *r = make_resolver(AF_INET, 8000, 0, 0);
    struct ticker k = { .last = clock_now_ms() };
    ev_timer_init(&k.timer, ticker_fired, 0.05, 0.05);
    ev_timer_start(loop, &k.timer);
    struct waiter slow, fast;
    struct resolver_result res;
    waiter_init(&slow);
    waiter_init(&fast);
    uint64_t start = clock_now_ms();
    CHECK(ask(r, "slow.test", &slow, &res) == RESOLVER_PENDING);
    run_for(0.2);
    CHECK(ask(r, "cased.test", &fast, &res) == RESOLVER_PENDING);
    CHECK(run_until_count(&slow.calls, 1, 15.0));
    ev_timer_stop(loop, &k.timer);
    CHECK_EQ_INT(slow.status, RESOLVER_OK);
    CHECK(strcmp(slow.addr.text, "10.0.6.1") == 0);
    CHECK(slow.at - start >= 1500); /* it did wait for the slow server */
    CHECK_EQ_INT(fast.calls, 1);
    CHECK_EQ_INT(fast.status, RESOLVER_OK);
    CHECK(fast.at < slow.at); /* resolved while the slow lookup was in flight */
    CHECK(k.ticks >= 10);
    CHECK(k.max_gap < 500);
    printf("test_resolver: slow lookup %llu ms; ticker: %d ticks, largest gap %llu ms\n",
           (unsigned long long)(slow.at - start), k.ticks, (unsigned long long)k.max_gap);
    resolver_destroy(r);
}

/* max_pending lookups in flight, max_names names. */
static void test_limits(void)
{
    struct resolver *r = make_resolver(AF_INET, 3000, 2, 2);
    struct waiter w[3];
    struct resolver_result res;
    callbacks_total = 0;
    for (int i = 0; i < 3; i++)
        waiter_init(&w[i]);
    CHECK(ask(r, "p1.test", &w[0], &res) == RESOLVER_PENDING);
    CHECK(ask(r, "p2.test", &w[1], &res) == RESOLVER_PENDING);
    CHECK(ask(r, "p3.test", &w[2], &res) == RESOLVER_ANSWERED);
    CHECK_EQ_INT(res.status, RESOLVER_E_BUSY); /* both names busy, both lookups in use */
    CHECK(run_until_count(&callbacks_total, 2, 10.0));
    CHECK_EQ_INT(resolver_cached_names(r), 2);
    CHECK(ask(r, "p1.test", &w[0], &res) == RESOLVER_ANSWERED && res.cached); /* p2 is now the older */
    CHECK(ask(r, "p3.test", &w[2], &res) == RESOLVER_PENDING);
    CHECK(run_until_count(&w[2].calls, 1, 10.0));
    CHECK_EQ_INT(w[2].status, RESOLVER_OK);
    CHECK_EQ_INT(resolver_cached_names(r), 2);
    CHECK_EQ_INT(resolver_stats(r)->evictions, 1);
    CHECK(resolver_peek(r, "p1.test", &res));
    CHECK(!resolver_peek(r, "p2.test", &res));
    resolver_destroy(r);
}

/* A hosts file (named by CARES_HOSTS, lookups "fb") answers without DNS,
 * and c-ares reads it inside ares_getaddrinfo: a synchronous answer. */
static void test_hosts_file(void)
{
    char servers[64], err[256];
    snprintf(servers, sizeof servers, "127.0.0.1:%d", dns_port);
    setenv("CARES_HOSTS", hosts_file, 1);
    struct resolver_config cfg = {
        .servers = servers, .resolv_conf = resolv_file, .lookups = "fb", .hosts_from_env = true, .family = AF_INET,
    };
    struct resolver *r = resolver_create(loop, &cfg, err, sizeof err);
    CHECK(r != NULL);
    if (!r)
        return;
    struct waiter w;
    struct resolver_result res;
    waiter_init(&w);
    CHECK(ask(r, "hosted.test", &w, &res) == RESOLVER_ANSWERED);
    CHECK(res.status == RESOLVER_OK && strcmp(res.addr.text, "10.7.7.7") == 0);
    CHECK(ask(r, "hosted.test", &w, &res) == RESOLVER_ANSWERED && res.cached);
    CHECK_EQ_INT(queries("hosted.test", NULL), 0);
    CHECK_EQ_INT(w.calls, 0);
    resolver_destroy(r);
    unsetenv("CARES_HOSTS");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    loop = ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOENV);
    if (!loop || !dns_start()) {
        fprintf(stderr, "test_resolver: cannot start the test DNS server (python3?)\n");
        dns_stop();
        return 1;
    }
    test_without_lookup();
    test_resolve_and_cache();
    test_coalesce();
    test_timeout_and_failures();
    test_cancel();
    test_loop_not_blocked();
    test_limits();
    test_hosts_file();
    test_stress();
    test_refresh();
    dns_stop();
    ev_loop_destroy(loop);
    return test_main_result("test_resolver");
}
