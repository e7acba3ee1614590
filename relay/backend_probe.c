/* backend_probe.c - periodic HTTP checks of the backend instances (see backend_probe.h). */
#include "relay/backend_probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay/backend_pool.h"
#include "relay/clock.h"
#include "relay/loop.h"
#include "relay/resolver.h"
#include "relay/log.h"

struct backend_probe {
    struct list_node link;          /* in probes->running */
    struct backend_probes *probes;
    struct backend_instance *inst;
    struct resolver_request dns;
    ev_io io;
    int fd;                         /* -1 until connecting */
    char answer[5];                 /* the answer's first bytes: "HTTP/" */
    size_t answer_len;
    uint64_t deadline;
};

static void probe_end(struct backend_probe *pr, bool reachable)
{
    resolver_cancel(&pr->dns);
    if (pr->fd >= 0) {
        ev_io_stop(pr->probes->loop->ev, &pr->io);
        close(pr->fd);
    }
    struct backend_instance *in = pr->inst;
    in->probing = false;
    if (reachable) {
        if (in->failures_in_row)
            log_info("backend: %s (hub %s) answers again", in->target.url, in->hub);
        in->failures_in_row = 0;
        in->backoff_until = 0;
    } else {
        if (!in->failures_in_row)
            log_warn("backend: %s (hub %s) does not answer HTTP (probe)", in->target.url, in->hub);
        backend_instance_failed(in, clock_now_ms());
    }
    list_unlink(&pr->link);
    free(pr);
}

/* The probe is dropped without a verdict (the relay's own trouble, not the backend's). */
static void probe_drop(struct backend_probe *pr)
{
    resolver_cancel(&pr->dns);
    if (pr->fd >= 0) {
        ev_io_stop(pr->probes->loop->ev, &pr->io);
        close(pr->fd);
    }
    pr->inst->probing = false;
    list_unlink(&pr->link);
    free(pr);
}

/* The backend's answer: any HTTP status line means its process serves HTTP (401 included); the
 * connection closed or failed before one means it does not. */
static void probe_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    struct backend_probe *pr = w->data;
    ssize_t n = recv(pr->fd, pr->answer + pr->answer_len, sizeof pr->answer - pr->answer_len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        probe_end(pr, false);
        return;
    }
    pr->answer_len += (size_t)n;
    if (memcmp(pr->answer, "HTTP/", pr->answer_len) != 0)
        probe_end(pr, false);
    else if (pr->answer_len == sizeof pr->answer)
        probe_end(pr, true);
    /* else the status line's first bytes: wait for the rest */
}

/* Connected: asks for the hub's path. A TLS backend's connect is the check (the probe speaks
 * no TLS). */
static void probe_ask(struct backend_probe *pr)
{
    const struct backend_target *t = &pr->inst->target;
    if (t->tls) {
        probe_end(pr, true);
        return;
    }
    char request[1024];
    int n = snprintf(request, sizeof request,
                     "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: signalr-relay-probe\r\nConnection: close\r\n\r\n",
                     t->path && t->path[0] ? t->path : "/", t->host, t->port);
    if (n <= 0 || n >= (int)sizeof request ||
        send(pr->fd, request, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)n) {
        probe_end(pr, false);
        return;
    }
    ev_io_stop(pr->probes->loop->ev, &pr->io);
    ev_io_init(&pr->io, probe_readable, pr->fd, EV_READ);
    pr->io.data = pr;
    ev_io_start(pr->probes->loop->ev, &pr->io);
}

static void probe_writable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    struct backend_probe *pr = w->data;
    int error = 0;
    socklen_t len = sizeof error;
    if (getsockopt(pr->fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
        error = errno;
    if (error != 0)
        probe_end(pr, false);
    else
        probe_ask(pr);
}

static void probe_connect(struct backend_probe *pr, const struct resolver_addr *addr)
{
    struct sockaddr_storage ss;
    socklen_t ss_len;
    memset(&ss, 0, sizeof ss);
    if (addr->family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)pr->inst->target.port);
        inet_pton(AF_INET6, addr->text, &s6->sin6_addr);
        ss_len = sizeof *s6;
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)pr->inst->target.port);
        inet_pton(AF_INET, addr->text, &s4->sin_addr);
        ss_len = sizeof *s4;
    }
    pr->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (pr->fd < 0) {
        probe_drop(pr); /* out of descriptors: no verdict on the backend */
        return;
    }
    ev_io_init(&pr->io, probe_writable, pr->fd, EV_WRITE);
    pr->io.data = pr;
    if (connect(pr->fd, (struct sockaddr *)&ss, ss_len) == 0) {
        probe_ask(pr);
        return;
    }
    if (errno != EINPROGRESS) {
        probe_end(pr, false);
        return;
    }
    ev_io_start(pr->probes->loop->ev, &pr->io);
}

static void probe_resolved(struct resolver_request *req, const struct resolver_result *result)
{
    struct backend_probe *pr = list_container_of(req, struct backend_probe, dns);
    if (result->status == RESOLVER_OK)
        probe_connect(pr, &result->addr);
    else
        probe_end(pr, false);
}

static void probe_start(struct backend_probes *p, struct backend_instance *in, uint64_t now)
{
    struct backend_probe *pr = calloc(1, sizeof *pr);
    if (!pr)
        return;
    pr->probes = p;
    pr->inst = in;
    pr->fd = -1;
    pr->deadline = now + p->loop->cfg->probe_interval_ms;
    resolver_request_init(&pr->dns, probe_resolved);
    list_push_back(&p->running, &pr->link);
    in->probing = true;
    struct resolver_result res;
    if (resolver_resolve(p->resolver, in->target.host, &pr->dns, &res) == RESOLVER_PENDING)
        return;
    if (res.status == RESOLVER_OK)
        probe_connect(pr, &res.addr);
    else
        probe_end(pr, false);
}

static void probes_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct backend_probes *p = w->data;
    uint64_t now = clock_now_ms();
    for (struct list_node *n = p->running.next, *next; n != &p->running; n = next) {
        next = n->next;
        struct backend_probe *pr = list_container_of(n, struct backend_probe, link);
        if (now >= pr->deadline)
            probe_end(pr, false); /* no connect, or no HTTP answer, in a whole interval */
    }
    for (struct list_node *n = p->pools->instances.next; n != &p->pools->instances; n = n->next) {
        struct backend_instance *in = list_container_of(n, struct backend_instance, link);
        if (!in->draining && !in->probing)
            probe_start(p, in, now);
    }
    if (p->loop->cfg->probe_interval_ms) {
        ev_timer_set(&p->tick, p->loop->cfg->probe_interval_ms / 1000.0, 0.0);
        ev_timer_start(p->loop->ev, &p->tick);
    }
}

void backend_probes_start(struct backend_probes *p, struct loop *loop, struct resolver *resolver,
                          struct backend_pools *pools)
{
    p->loop = loop;
    p->resolver = resolver;
    p->pools = pools;
    list_init_head(&p->running);
    ev_timer_init(&p->tick, probes_tick, 0.0, 0.0);
    p->tick.data = p;
    p->started = loop->ev != NULL;
    if (p->started && resolver && loop->cfg->probe_interval_ms) {
        ev_timer_set(&p->tick, loop->cfg->probe_interval_ms / 1000.0, 0.0);
        ev_timer_start(loop->ev, &p->tick);
    }
}

void backend_probes_stop(struct backend_probes *p)
{
    if (!p->started)
        return;
    ev_timer_stop(p->loop->ev, &p->tick);
    while (!list_is_empty(&p->running))
        probe_drop(list_container_of(p->running.next, struct backend_probe, link));
    p->started = false;
}
