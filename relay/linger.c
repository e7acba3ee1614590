/* linger.c - the read side of the relay's lingering close of a client WebSocket (see linger.h). */
#include "relay/linger.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "relay/loop.h"

/* One socket read to its end. */
struct lingering {
    struct ptr_map_entry entry; /* in lingers.by_wsi */
    ev_io io;
    struct lws *wsi;
    struct lingers *table;
};

/* At most this much is read per wakeup, so that one client that keeps sending cannot hold the loop. */
#define LINGER_READ_PER_WAKEUP (64 * 1024)

void lingers_init(struct lingers *t, struct loop *loop, const uint8_t seed[DICT_SEED_LEN])
{
    t->loop = loop;
    ptr_map_init(&t->by_wsi, seed);
    loop->linger_read = linger_start; /* wsmsg_close_lingering asks once it has shut the socket down */
    loop->linger_read_ctx = t;
}

static struct lingering *find(struct lingers *t, struct lws *wsi)
{
    struct ptr_map_entry *e = ptr_map_find(&t->by_wsi, wsi);
    return e ? list_container_of(e, struct lingering, entry) : NULL;
}

static void linger_free(struct lingering *l)
{
    ev_io_stop(l->table->loop->ev, &l->io);
    ptr_map_remove(&l->table->by_wsi, &l->entry);
    free(l);
}

/* Reads and drops what the client sent; its EOF (or an error) has lws close the socket. */
static void on_readable(struct ev_loop *ev, ev_io *io, int revents)
{
    (void)ev;
    (void)revents;
    struct lingering *l = io->data;
    char sink[16384];
    for (size_t taken = 0; taken < LINGER_READ_PER_WAKEUP;) {
        ssize_t n = recv(l->io.fd, sink, sizeof sink, 0);
        if (n > 0) {
            taken += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        struct lws *wsi = l->wsi;
        linger_free(l);
        /* At once: this runs from the loop, not inside an lws callback on wsi, so lws may close
         * it here (its asynchronous kill waited for lws' next look at its timers: seconds). */
        lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_SYNC);
        return;
    }
}

bool linger_start(void *lingers, struct lws *wsi)
{
    struct lingers *t = lingers;
    if (!t->loop->ev)
        return false;
    if (find(t, wsi))
        return true;
    struct lingering *l = calloc(1, sizeof *l);
    if (!l)
        return false;
    l->wsi = wsi;
    l->table = t;
    if (!ptr_map_add(&t->by_wsi, &l->entry, l->wsi)) {
        free(l);
        return false;
    }
    lws_rx_flow_control(wsi, 0);
    ev_io_init(&l->io, on_readable, lws_get_socket_fd(wsi), EV_READ);
    l->io.data = l;
    ev_io_start(t->loop->ev, &l->io);
    return true;
}

void linger_forget(struct lingers *t, struct lws *wsi)
{
    struct lingering *l = find(t, wsi);
    if (l)
        linger_free(l);
}

/* ptr_map_clear's release: one record at the relay's end. */
static void release(struct ptr_map_entry *e, void *ctx)
{
    struct lingers *t = ctx;
    struct lingering *l = list_container_of(e, struct lingering, entry);
    ev_io_stop(t->loop->ev, &l->io);
    free(l);
}

void lingers_free(struct lingers *t)
{
    if (!t->loop)
        return; /* never initialised (relay_start failed before it) */
    ptr_map_clear(&t->by_wsi, release, t);
}
