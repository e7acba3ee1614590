/* ares_ev.c - a c-ares channel driven by libev watchers (see ares_ev.h). */
#include "relay/ares_ev.h"

#include <stdio.h>
#include <stdlib.h>

/* One socket c-ares has open, watched for what c-ares wants of it. */
struct ares_ev_sock {
    ev_io io;
    struct list_node link; /* in ares_ev->socks */
    struct ares_ev *owner;
};

void ares_ev_rearm(struct ares_ev *a)
{
    struct timeval tv, *t = a->ready ? ares_timeout(a->channel, NULL, &tv) : NULL;
    ev_timer_stop(a->loop, &a->timer);
    if (!t)
        return;
    ev_timer_set(&a->timer, (double)t->tv_sec + (double)t->tv_usec / 1e6, 0.0);
    ev_timer_start(a->loop, &a->timer);
}

static void timer_fired(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct ares_ev *a = w->data;
    ares_process_fd(a->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    ares_ev_rearm(a);
}

static void sock_ready(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    struct ares_ev_sock *s = list_container_of(w, struct ares_ev_sock, io);
    struct ares_ev *a = s->owner;
    int fd = w->fd;
    /* May close the socket, and so free s (sock_state, 0, 0). */
    ares_process_fd(a->channel, (revents & EV_READ) ? fd : ARES_SOCKET_BAD, (revents & EV_WRITE) ? fd : ARES_SOCKET_BAD);
    ares_ev_rearm(a);
}

static struct ares_ev_sock *sock_find(struct ares_ev *a, int fd)
{
    for (struct list_node *n = a->socks.next; n != &a->socks; n = n->next) {
        struct ares_ev_sock *s = list_container_of(n, struct ares_ev_sock, link);
        if (s->io.fd == fd)
            return s;
    }
    return NULL;
}

static void sock_free(struct ares_ev *a, struct ares_ev_sock *s)
{
    ev_io_stop(a->loop, &s->io);
    list_unlink(&s->link);
    free(s);
}

/* c-ares' ARES_OPT_SOCK_STATE_CB: a socket opened, changed interest, or
 * closed (neither readable nor writable). c-ares has one or two sockets per
 * server, so a list is enough. */
static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
    struct ares_ev *a = data;
    struct ares_ev_sock *s = sock_find(a, fd);
    if (!readable && !writable) {
        if (s)
            sock_free(a, s);
        return;
    }
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            return; /* unwatched: its queries end by c-ares' timeout */
        s->owner = a;
        ev_io_init(&s->io, sock_ready, fd, 0);
        list_push_back(&a->socks, &s->link);
    }
    ev_io_stop(a->loop, &s->io);
    ev_io_set(&s->io, fd, (readable ? EV_READ : 0) | (writable ? EV_WRITE : 0));
    ev_io_start(a->loop, &s->io);
}

void ares_ev_init(struct ares_ev *a, struct ev_loop *loop)
{
    a->loop = loop;
    a->ready = false;
    list_init_head(&a->socks);
    ev_timer_init(&a->timer, timer_fired, 0.0, 0.0);
    a->timer.data = a;
}

bool ares_ev_open(struct ares_ev *a, struct ares_options *options, int optmask, const char *servers, char *err,
                  size_t err_len)
{
    options->sock_state_cb = sock_state;
    options->sock_state_cb_data = a;
    int status = ares_init_options(&a->channel, options, optmask | ARES_OPT_SOCK_STATE_CB);
    if (status != ARES_SUCCESS) {
        snprintf(err, err_len, "resolver: c-ares: %s", ares_strerror(status));
        return false;
    }
    a->ready = true;
    if (servers && (status = ares_set_servers_ports_csv(a->channel, servers)) != ARES_SUCCESS) {
        snprintf(err, err_len, "resolver: DNS servers '%s': %s", servers, ares_strerror(status));
        return false;
    }
    return true;
}

void ares_ev_close(struct ares_ev *a)
{
    if (a->ready)
        ares_destroy(a->channel); /* each pending query is called back; its sockets close */
    a->ready = false;
    while (!list_is_empty(&a->socks))
        sock_free(a, list_container_of(a->socks.next, struct ares_ev_sock, link));
    ev_timer_stop(a->loop, &a->timer);
}
