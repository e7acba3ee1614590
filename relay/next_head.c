/* next_head.c - the next request head on a kept-alive plain connection, read by the relay before lws (see next_head.h). */
#include "relay/next_head.h"

#include <stdbool.h>
#include <stdlib.h>

#include "relay/config.h"
#include "relay/http_limits.h"
#include "relay/loop.h"
#include "relay/request_head.h"

/* One kept-alive connection whose next head is being read. */
struct next_head_wait {
    struct request_head head;
    struct ptr_map_entry entry; /* in next_heads.by_wsi */
    struct lws *wsi;
    struct next_heads *table;
};

/* lws' own keep-alive timeout for a connection handed back idle: it closes it unless it holds a
 * pipelined request, which it then serves. */
#define IDLE_HANDBACK_S 1

void next_heads_init(struct next_heads *t, struct loop *loop, struct http_refusals *refusals,
                     const uint8_t seed[DICT_SEED_LEN])
{
    t->loop = loop;
    t->refusals = refusals;
    ptr_map_init(&t->by_wsi, seed);
}

static void wait_free(struct next_head_wait *w)
{
    ptr_map_remove(&w->table->by_wsi, &w->entry);
    free(w);
}

/* The head is whole (or the connection idle or gone: h->len 0): lws reads on; or it was refused
 * and answered: lws closes the connection. Runs outside lws callbacks (a libev watcher, a wheel
 * timer), so lws is woken afterwards. */
static void head_done(struct request_head *h, bool complete)
{
    struct next_head_wait *w = list_container_of(h, struct next_head_wait, head);
    struct lws *wsi = w->wsi;
    struct loop *loop = w->table->loop;
    bool idle = h->len == 0;
    request_head_release(h);
    wait_free(w);
    if (!complete) {
        lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_SYNC);
    } else {
        if (idle)
            lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_KEEPALIVE_IDLE, IDLE_HANDBACK_S);
        lws_rx_flow_control(wsi, 1);
    }
    lws_cancel_service(loop->lws); /* lws re-arms its timers and reads after socket activity only */
}

void next_head_watch(struct next_heads *t, struct lws *wsi)
{
    const struct relay_config *cfg = t->loop->cfg;
    if (!t->loop->ev || cfg->tls_cert || t->loop->destroying)
        return;
    next_head_forget(t, wsi); /* one reader per connection */
    int fd = lws_get_socket_fd(wsi);
    struct next_head_wait *w = fd >= 0 ? calloc(1, sizeof *w) : NULL;
    if (!w)
        return; /* lws reads it, as before */
    w->wsi = wsi;
    w->table = t;
    if (!ptr_map_add(&t->by_wsi, &w->entry, w->wsi)) {
        free(w);
        return;
    }
    lws_rx_flow_control(wsi, 0);
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0); /* the relay's deadline, not lws' keep-alive one */
    request_head_start_borrowed(&w->head, t->loop, fd, http_limits_head_max(cfg), cfg->header_timeout_ms,
                                NEXT_HEAD_IDLE_MS, t->refusals, head_done, w);
}

void next_head_forget(struct next_heads *t, struct lws *wsi)
{
    struct ptr_map_entry *e = ptr_map_find(&t->by_wsi, wsi);
    if (!e)
        return;
    struct next_head_wait *w = list_container_of(e, struct next_head_wait, entry);
    request_head_forget(&w->head);
    wait_free(w);
}

/* ptr_map_clear's release: one record at the relay's end. */
static void release(struct ptr_map_entry *e, void *ctx)
{
    (void)ctx;
    struct next_head_wait *w = list_container_of(e, struct next_head_wait, entry);
    request_head_forget(&w->head);
    free(w);
}

void next_heads_free(struct next_heads *t)
{
    if (!t->loop)
        return; /* never initialised (relay_start failed before it) */
    ptr_map_clear(&t->by_wsi, release, t);
}
