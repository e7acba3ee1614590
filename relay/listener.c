/* listener.c - the front door: accepting, connection limits, the back-off at the descriptor limit (see listener.h). */
/* accept4 needs _GNU_SOURCE, which the build defines. */
#include "relay/listener.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay/clock.h"
#include "relay/http_limits.h"
#include "relay/loop.h"
#include "relay/request_head.h"
#include "relay/tls_head.h"

/* Accepts per wake-up, so one busy listener cannot hold the loop. */
#define ACCEPT_BATCH 64

/* How many connections one peer address holds. Key: family byte + address. */
struct source_count {
    struct dict_entry entry;
    uint8_t key[17];
    size_t key_len;
    size_t count;
};

/* One accepted connection lws reads the first head of (TLS), or one over a
 * limit: from accept until its first request is served (listener_request),
 * or to WSI_DESTROY for one refused or still silent. A served connection,
 * and one whose head was read here (adopt_served), keeps only its source, as
 * the wsi's lws user pointer (lws_set_wsi_user: the relay's protocols have no
 * per-session data): idle clients cost the listener no memory of their own. */
struct accepted_conn {
    struct dict_entry entry;     /* in listener.conns, keyed by the bytes of wsi */
    struct lws *wsi;
    struct source_count *source; /* NULL for a refused connection (not counted) */
    struct list_node pending;    /* in listener.unidentified until its first request */
    uint64_t accepted_at;
    const char *refusal;         /* over a limit: why (a static string), else NULL */
    struct timer_entry linger;   /* refused: closes it REFUSED_LINGER_MS after accept */
    struct tls_head *tls;        /* TLS listener: its handshake and first head (relay/tls_head.h); owned */
};

/* A connection whose first request head the relay reads itself (relay/request_head.h). */
struct head_wait {
    struct request_head head;
    struct listener *l;
    struct list_node node;       /* in listener.reading, oldest first */
    uint64_t accepted_at;
    struct sockaddr_storage sa;
    socklen_t sa_len;
};

void listener_init(struct listener *l, struct loop *loop, const uint8_t seed[DICT_SEED_LEN])
{
    memset(l, 0, sizeof *l);
    l->loop = loop;
    l->fd = -1;
    dict_init(&l->conns, seed);
    dict_init(&l->sources, seed);
    list_init_head(&l->unidentified);
    list_init_head(&l->reading);
    l->accept_log.interval_ms = 10000;
    l->refuse_log.interval_ms = 10000;
}

/* ------------------------------------------------------- closing sockets */

/* Closes an accepted connection now; its WSI_DESTROY frees the record. Only
 * from outside lws callbacks (our own libev watchers and wheel timers). */
static void kill_now(struct lws *wsi)
{
    lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_SYNC);
}

static void head_wait_free(struct head_wait *w)
{
    list_unlink(&w->node);
    free(w);
}

/* Closes the connections that have sent no request for UNIDENTIFIED_GRACE_MS, oldest first. */
static size_t close_unidentified(struct listener *l, uint64_t now)
{
    size_t closed = 0;
    while (!list_is_empty(&l->reading)) {
        struct head_wait *w = list_container_of(l->reading.next, struct head_wait, node);
        if (now - w->accepted_at < UNIDENTIFIED_GRACE_MS)
            break;
        closed++;
        request_head_abort(&w->head); /* frees w */
    }
    while (!list_is_empty(&l->unidentified)) {
        struct accepted_conn *c = list_container_of(l->unidentified.next, struct accepted_conn, pending);
        if (now - c->accepted_at < UNIDENTIFIED_GRACE_MS)
            break;
        list_unlink(&c->pending);
        closed++;
        kill_now(c->wsi); /* frees c */
    }
    l->stats.unidentified_closed += closed;
    return closed;
}

/* The TLS handshake or head of a connection ended it (late, or answered and lingered). */
static void tls_head_close(struct tls_head *h, bool kill)
{
    (void)kill; /* always: a first head */
    kill_now(h->wsi); /* frees the record, h with it */
}

/* On a TLS listener: the relay's deadline and answers for the handshake and first head. */
static void watch_tls_head(struct listener *l, struct accepted_conn *c)
{
    const struct relay_config *cfg = l->loop->cfg;
    c->tls = calloc(1, sizeof *c->tls);
    if (c->tls) /* else lws' own timeouts bound it */
        tls_head_start(c->tls, l->loop, c->wsi, http_limits_head_max(cfg), cfg->header_timeout_ms,
                       config_lws_timeout_secs(cfg), l->refusals, tls_head_close);
}

static void linger_expired(struct timer_entry *e)
{
    struct accepted_conn *c = list_container_of(e, struct accepted_conn, linger);
    kill_now(c->wsi);
}

/* ------------------------------------------------------------- back-off */

static void start_watching(struct listener *l)
{
    if (!l->watching && l->fd >= 0) {
        ev_io_start(l->loop->ev, &l->io);
        l->watching = true;
    }
}

static void stop_watching(struct listener *l)
{
    if (l->watching) {
        ev_io_stop(l->loop->ev, &l->io);
        l->watching = false;
    }
}

static void resume_accepting(struct timer_entry *e)
{
    struct listener *l = list_container_of(e, struct listener, resume);
    start_watching(l);
}

/* accept() found no descriptor (or no memory): stop reading the listening
 * socket for a while, so the loop does not spin on it, and free what can be
 * freed. Clients that connect meanwhile wait in the backlog. */
static void out_of_descriptors(struct listener *l, int err)
{
    uint64_t now = clock_now_ms();
    stop_watching(l);
    l->stats.accept_pauses++;
    loop_timer_schedule(l->loop, &l->resume, now + ACCEPT_BACKOFF_MS);
    size_t closed = close_unidentified(l, now);
    log_limited(&l->accept_log, LOG_WARN,
                "relay: accept: %s; not accepting for %d ms, closed %zu connection%s that sent no request within %d ms "
                "(%zu client connections held; raise ulimit -n or lower --max-connections)",
                strerror(err), ACCEPT_BACKOFF_MS, closed, closed == 1 ? "" : "s", UNIDENTIFIED_GRACE_MS, l->active);
}

/* --------------------------------------------------------------- limits */

static void source_key(const struct sockaddr_storage *sa, uint8_t key[17], size_t *key_len)
{
    key[0] = (uint8_t)sa->ss_family;
    if (sa->ss_family == AF_INET6) {
        memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        *key_len = 17;
    } else {
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        *key_len = 5;
    }
}

/* The source's record, made if need be; NULL when out of memory. */
static struct source_count *source_get(struct listener *l, const struct sockaddr_storage *sa)
{
    uint8_t key[17];
    size_t key_len;
    source_key(sa, key, &key_len);
    struct dict_entry *found = dict_find(&l->sources, span_make((const char *)key, key_len));
    if (found)
        return list_container_of(found, struct source_count, entry);
    struct source_count *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    memcpy(s->key, key, key_len);
    s->key_len = key_len;
    if (dict_insert(&l->sources, &s->entry, span_make((const char *)s->key, s->key_len)) != DICT_OK) {
        free(s);
        return NULL;
    }
    return s;
}

/* Forgets a source that holds no connection. */
static void source_drop_if_unused(struct listener *l, struct source_count *s)
{
    if (s->count == 0) {
        dict_remove(&l->sources, &s->entry);
        free(s);
    }
}

static void source_put(struct listener *l, struct source_count *s)
{
    s->count--;
    source_drop_if_unused(l, s);
}

/* Why a new connection from this source may not be served, or NULL. */
static const char *over_limit(struct listener *l, const struct source_count *s)
{
    const struct relay_config *cfg = l->loop->cfg;
    if (cfg->max_connections && l->active >= cfg->max_connections)
        return "Too many connections: the relay holds --max-connections already.";
    if (cfg->max_connections_per_address && s->count >= cfg->max_connections_per_address)
        return "Too many connections from this address (--max-connections-per-address).";
    return NULL;
}

static void describe_peer(const struct sockaddr_storage *sa, socklen_t len, char *out, size_t out_len)
{
    if (getnameinfo((const struct sockaddr *)sa, len, out, (socklen_t)out_len, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(out, out_len, "?");
}

/* ------------------------------------------------------------ accepting */

/* A connection within the limits whose first head was read here (so it is
 * not silent) needs no record: it holds its place through its wsi at once. */
static bool adopt_served(struct listener *l, struct source_count *s, struct lws *wsi)
{
    if (over_limit(l, s))
        return false;
    l->stats.accepted++;
    s->count++;
    l->active++;
    lws_set_wsi_user(wsi, s);
    return true;
}

/* Hands an accepted socket to lws and records it; closes it on failure.
 * head_read: its first request head was read here (request_head.h). */
static void adopt(struct listener *l, int fd, const struct sockaddr_storage *sa, socklen_t sa_len, bool head_read)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct source_count *s = source_get(l, sa);
    if (!s) {
        close(fd);
        log_limited(&l->accept_log, LOG_WARN, "relay: out of memory accepting a connection; closed it");
        return;
    }
    struct lws *wsi = lws_adopt_socket_vhost(l->loop->vhost, fd); /* closes fd on failure */
    if (!wsi) {
        source_drop_if_unused(l, s);
        log_limited(&l->accept_log, LOG_WARN, "relay: lws could not take an accepted connection; closed it");
        return;
    }
    if (head_read && adopt_served(l, s, wsi))
        return;
    struct accepted_conn *c = calloc(1, sizeof *c);
    if (!c) {
        source_drop_if_unused(l, s);
        kill_now(wsi);
        log_limited(&l->accept_log, LOG_WARN, "relay: out of memory accepting a connection; closed it");
        return;
    }
    c->wsi = wsi;
    c->accepted_at = clock_now_ms();
    timer_entry_init(&c->linger, linger_expired);
    if (dict_insert(&l->conns, &c->entry, span_make((const char *)&c->wsi, sizeof c->wsi)) != DICT_OK) {
        source_drop_if_unused(l, s);
        free(c);
        kill_now(wsi);
        return;
    }
    list_push_back(&l->unidentified, &c->pending);
    l->stats.accepted++;
    if (l->loop->cfg->tls_cert)
        watch_tls_head(l, c);
    c->refusal = over_limit(l, s);
    if (!c->refusal) {
        c->source = s;
        s->count++;
        l->active++;
        return;
    }
    l->stats.refused++;
    source_drop_if_unused(l, s);
    loop_timer_schedule(l->loop, &c->linger, c->accepted_at + REFUSED_LINGER_MS);
    char peer[64];
    describe_peer(sa, sa_len, peer, sizeof peer);
    log_limited(&l->refuse_log, LOG_WARN, "relay: refused a connection from %s: %s", peer, c->refusal);
    close_unidentified(l, c->accepted_at); /* idle sockets go first */
}

/* The first head is whole (hand it over) or the connection closed (refused, silent, gone). */
static void head_done(struct request_head *h, bool complete)
{
    struct head_wait *w = list_container_of(h, struct head_wait, head);
    struct listener *l = w->l;
    if (complete) {
        int fd = h->fd;
        struct sockaddr_storage sa = w->sa;
        socklen_t sa_len = w->sa_len;
        request_head_release(h);
        head_wait_free(w);
        adopt(l, fd, &sa, sa_len, true);
        lws_cancel_service(l->loop->lws); /* lws re-arms its timers after socket activity only */
        return;
    }
    head_wait_free(w);
}

/* A new connection: its first request head is read here first, on a plain listener. */
static void accepted(struct listener *l, int fd, const struct sockaddr_storage *sa, socklen_t sa_len)
{
    const struct relay_config *cfg = l->loop->cfg;
    if (cfg->tls_cert) { /* lws decrypts: it reads the head itself */
        adopt(l, fd, sa, sa_len, false);
        return;
    }
    struct head_wait *w = calloc(1, sizeof *w);
    if (!w) {
        close(fd);
        log_limited(&l->accept_log, LOG_WARN, "relay: out of memory accepting a connection; closed it");
        return;
    }
    w->l = l;
    w->accepted_at = clock_now_ms();
    memcpy(&w->sa, sa, sa_len);
    w->sa_len = sa_len;
    list_push_back(&l->reading, &w->node);
    request_head_start(&w->head, l->loop, fd, http_limits_head_max(cfg), cfg->header_timeout_ms, l->refusals,
                       head_done, w);
}

static void on_readable(struct ev_loop *ev, ev_io *io, int revents)
{
    (void)ev;
    (void)revents;
    struct listener *l = io->data;
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        struct sockaddr_storage sa;
        socklen_t sa_len = sizeof sa;
        int fd = accept4(l->fd, (struct sockaddr *)&sa, &sa_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            accepted(l, fd, &sa, sa_len);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
            continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            out_of_descriptors(l, errno);
        else if (errno != EAGAIN && errno != EWOULDBLOCK)
            log_limited(&l->accept_log, LOG_WARN, "relay: accept: %s", strerror(errno));
        break;
    }
    /* lws re-arms its own timers (the adopted sockets' timeouts) after socket activity only. */
    lws_cancel_service(l->loop->lws);
}

/* --------------------------------------------------------------- socket */

bool listener_open(struct listener *l, const char *address, int port)
{
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
    struct addrinfo *ai = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(address, service, &hints, &ai);
    if (rc != 0) {
        log_error("relay: --listen %s: %s", address, gai_strerror(rc));
        return false;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        log_error("relay: listening on %s:%d: %s", address, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return false;
    }
    freeaddrinfo(ai);
    l->fd = fd;
    ev_io_init(&l->io, on_readable, fd, EV_READ);
    l->io.data = l;
    timer_entry_init(&l->resume, resume_accepting);
    start_watching(l);
    return true;
}

void listener_close(struct listener *l)
{
    /* First heads still being read are given up here, while the event loop they are watched on
     * still exists (relay_destroy closes the listener before the loop). */
    while (l->reading.next && !list_is_empty(&l->reading))
        request_head_abort(&list_container_of(l->reading.next, struct head_wait, node)->head); /* frees it */
    stop_watching(l);
    if (l->resume.cb)
        timer_cancel(&l->resume);
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

void listener_free(struct listener *l)
{
    listener_close(l);
    struct dict_iter it;
    struct dict_entry *e;
    dict_iter_begin(&it, &l->conns);
    while ((e = dict_iter_next(&it))) {
        struct accepted_conn *c = list_container_of(e, struct accepted_conn, entry);
        dict_remove(&l->conns, e);
        timer_cancel(&c->linger);
        if (c->tls)
            tls_head_forget(c->tls);
        free(c->tls);
        free(c);
    }
    dict_iter_end(&it);
    dict_iter_begin(&it, &l->sources);
    while ((e = dict_iter_next(&it))) {
        dict_remove(&l->sources, e);
        free(list_container_of(e, struct source_count, entry));
    }
    dict_iter_end(&it);
    dict_free(&l->conns);
    dict_free(&l->sources);
    list_init_head(&l->unidentified);
    l->active = 0;
}

/* ------------------------------------------------------- per connection */

static struct accepted_conn *find(struct listener *l, struct lws *wsi)
{
    if (dict_count(&l->conns) == 0)
        return NULL;
    struct dict_entry *e = dict_find(&l->conns, span_make((const char *)&wsi, sizeof wsi));
    return e ? list_container_of(e, struct accepted_conn, entry) : NULL;
}

static void conn_free(struct listener *l, struct accepted_conn *c)
{
    if (c->tls)
        tls_head_forget(c->tls);
    free(c->tls);
    dict_remove(&l->conns, &c->entry);
    if (list_is_linked(&c->pending))
        list_unlink(&c->pending);
    timer_cancel(&c->linger);
    free(c);
}

/* The connection leaves the limits: its place is free again. */
static void release_place(struct listener *l, struct source_count *s)
{
    source_put(l, s);
    l->active--;
}

const char *listener_request(struct listener *l, struct lws *wsi)
{
    struct accepted_conn *c = find(l, wsi);
    if (!c)
        return NULL;
    if (c->tls)
        tls_head_served(c->tls);
    if (c->refusal) {
        if (list_is_linked(&c->pending))
            list_unlink(&c->pending);
        return c->refusal; /* the record stays: its linger closes the connection */
    }
    /* Served: from here on the connection only holds its place, through its wsi. */
    lws_set_wsi_user(wsi, c->source);
    conn_free(l, c);
    return NULL;
}

void listener_wsi_destroyed(struct listener *l, struct lws *wsi)
{
    struct accepted_conn *c = find(l, wsi);
    if (c) {
        if (c->source)
            release_place(l, c->source);
        conn_free(l, c);
        return;
    }
    struct source_count *s = lws_wsi_user(wsi); /* a served connection accepted here, or NULL */
    if (s) {
        lws_set_wsi_user(wsi, NULL);
        release_place(l, s);
    }
}
