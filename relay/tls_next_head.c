/* tls_next_head.c - the next request head on a kept-alive TLS connection: the relay's deadline and answers (see tls_next_head.h). */
#include "relay/tls_next_head.h"

#include <stdbool.h>
#include <stdlib.h>

#include "relay/config.h"
#include "relay/http_limits.h"
#include "relay/loop.h"
#include "relay/tls_head.h"

/* One kept-alive TLS connection whose next head is watched. */
struct tls_next_wait {
    struct tls_head head;
    struct ptr_map_entry entry; /* in tls_next_heads.by_wsi */
    struct lws *wsi;
    struct tls_next_heads *table;
};

void tls_next_heads_init(struct tls_next_heads *t, struct loop *loop, struct http_refusals *refusals,
                         const uint8_t seed[DICT_SEED_LEN])
{
    t->loop = loop;
    t->refusals = refusals;
    ptr_map_init(&t->by_wsi, seed);
}

static struct tls_next_wait *find(struct tls_next_heads *t, struct lws *wsi)
{
    struct ptr_map_entry *e = ptr_map_find(&t->by_wsi, wsi);
    return e ? list_container_of(e, struct tls_next_wait, entry) : NULL;
}

static void wait_free(struct tls_next_wait *w)
{
    ptr_map_remove(&w->table->by_wsi, &w->entry);
    free(w);
}

/* The watch is over: silent (lws' keep-alive ends it), or the connection must go (answered). */
static void head_closed(struct tls_head *h, bool kill)
{
    struct tls_next_wait *w = list_container_of(h, struct tls_next_wait, head);
    struct lws *wsi = w->wsi;
    struct loop *loop = w->table->loop;
    if (!kill) {
        wait_free(w);
        return;
    }
    lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, LWS_TO_KILL_SYNC); /* its WSI_DESTROY frees w */
    lws_cancel_service(loop->lws);
}

void tls_next_head_watch(struct tls_next_heads *t, struct lws *wsi)
{
    const struct relay_config *cfg = t->loop->cfg;
    /* (lws may have begun serving a pipelined request already: its target is in the header table) */
    if (!t->loop->ev || !cfg->tls_cert || t->loop->destroying || !lws_get_ssl(wsi) ||
        http_limits_target_length(wsi) > 0)
        return;
    struct tls_next_wait *w = find(t, wsi);
    if (w) { /* one watch per connection */
        tls_head_served(&w->head);
        wait_free(w);
    }
    w = calloc(1, sizeof *w);
    if (!w)
        return; /* lws times it, as before */
    w->wsi = wsi;
    w->table = t;
    if (!ptr_map_add(&t->by_wsi, &w->entry, w->wsi)) {
        free(w);
        return;
    }
    tls_head_start_next(&w->head, t->loop, wsi, http_limits_head_max(cfg), cfg->header_timeout_ms,
                        config_lws_timeout_secs(cfg), t->refusals, head_closed);
}

void tls_next_head_served(struct tls_next_heads *t, struct lws *wsi)
{
    struct tls_next_wait *w = find(t, wsi);
    if (!w)
        return;
    tls_head_served(&w->head);
    wait_free(w);
}

void tls_next_head_forget(struct tls_next_heads *t, struct lws *wsi)
{
    struct tls_next_wait *w = find(t, wsi);
    if (!w)
        return;
    tls_head_forget(&w->head);
    wait_free(w);
}

/* ptr_map_clear's release: one record at the relay's end. */
static void release(struct ptr_map_entry *e, void *ctx)
{
    (void)ctx;
    struct tls_next_wait *w = list_container_of(e, struct tls_next_wait, entry);
    tls_head_forget(&w->head);
    free(w);
}

void tls_next_heads_free(struct tls_next_heads *t)
{
    if (!t->loop)
        return; /* never initialised (relay_start failed before it) */
    ptr_map_clear(&t->by_wsi, release, t);
}
