/* request_body.c - the deadline of a request body the relay reads, on the timer wheel (see request_body.h). */
#include "relay/request_body.h"

#include <stdlib.h>

#include "containers/timer_wheel.h"

#include "relay/clock.h"
#include "relay/config.h"
#include "relay/http.h"
#include "relay/log.h"
#include "relay/loop.h"

/* One request whose body is awaited. */
struct request_body {
    struct ptr_map_entry entry;  /* in request_bodies.by_wsi */
    struct timer_entry deadline;
    struct lws *wsi;
    struct request_bodies *table;
    bool late;                /* the deadline passed: answered at the next writable callback */
    bool awaited;             /* read by the relay: --header-timeout for each piece, then 408 */
    bool draining;            /* answered: the rest of the body is read and dropped */
};

void request_bodies_init(struct request_bodies *t, struct loop *loop, const uint8_t seed[DICT_SEED_LEN])
{
    t->loop = loop;
    ptr_map_init(&t->by_wsi, seed);
    loop->drain_body = request_body_drain; /* http.c asks before it completes a transaction */
    loop->drain_body_ctx = t;
}

static struct request_body *find(struct request_bodies *t, struct lws *wsi)
{
    struct ptr_map_entry *e = ptr_map_find(&t->by_wsi, wsi);
    return e ? list_container_of(e, struct request_body, entry) : NULL;
}

static void body_free(struct request_body *b)
{
    timer_cancel(&b->deadline);
    ptr_map_remove(&b->table->by_wsi, &b->entry);
    free(b);
}

/* No byte for --header-timeout: the request is answered from its next writable callback (lws
 * writes only there). A body being drained did not all come within --header-timeout of the
 * answer: the connection is closed. Outside lws callbacks, so lws is woken. */
static void body_late(struct timer_entry *e)
{
    struct request_body *b = list_container_of(e, struct request_body, deadline);
    if (b->draining) {
        log_info("http: the body of an answered request did not all arrive within %u ms; closing the connection",
                 b->table->loop->cfg->header_timeout_ms);
        b->late = true; /* should the rest come before lws closes it: closed all the same */
        lws_set_timeout(b->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        lws_cancel_service(b->table->loop->lws);
        return;
    }
    b->late = true;
    lws_callback_on_writable(b->wsi);
    lws_cancel_service(b->table->loop->lws);
}

bool request_body_announced(struct lws *wsi)
{
    char length[32];
    return http_header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, length, sizeof length) > 0 &&
           strtoull(length, NULL, 10) > 0;
}

/* wsi's entry, made when there is none; NULL when out of memory (lws' own timeouts still bound
 * the body then). */
static struct request_body *find_or_add(struct request_bodies *t, struct lws *wsi)
{
    struct request_body *b = find(t, wsi);
    if (b)
        return b;
    b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->wsi = wsi;
    b->table = t;
    timer_entry_init(&b->deadline, body_late);
    if (!ptr_map_add(&t->by_wsi, &b->entry, b->wsi)) {
        free(b);
        return NULL;
    }
    return b;
}

void request_body_expect(struct request_bodies *t, struct lws *wsi)
{
    struct request_body *b = find(t, wsi);
    if (b) /* a new request on the connection: nothing of the last one's */
        body_free(b);
    if (request_body_announced(wsi))
        (void)find_or_add(t, wsi);
}

bool request_body_drain(void *bodies, struct lws *wsi)
{
    struct request_bodies *t = bodies;
    struct request_body *b = find(t, wsi);
    if (!b || b->late)
        return false;
    if (!b->draining) {
        b->draining = true;
        timer_cancel(&b->deadline);
        loop_timer_schedule(t->loop, &b->deadline, clock_now_ms() + t->loop->cfg->header_timeout_ms);
        /* lws may hold the body's first bytes already, read with the head: on the libev loop it
         * serves such held input only once the loop wakes (its idle watcher), and a request
         * answered later had its reading paused meanwhile, so the loop is woken now. */
        lws_cancel_service(t->loop->lws);
    }
    return true;
}

bool request_body_draining(struct request_bodies *t, struct lws *wsi)
{
    struct request_body *b = find(t, wsi);
    return b && b->draining;
}

int request_body_drained(struct request_bodies *t, struct lws *wsi)
{
    struct request_body *b = find(t, wsi);
    bool late = b && b->late;
    if (b)
        body_free(b);
    return late || lws_http_transaction_completed(wsi) ? -1 : 0;
}

void request_body_wait(struct request_bodies *t, struct lws *wsi)
{
    struct request_body *b = find_or_add(t, wsi);
    if (!b || b->draining)
        return;
    b->awaited = true;
    timer_cancel(&b->deadline);
    loop_timer_schedule(t->loop, &b->deadline, clock_now_ms() + t->loop->cfg->header_timeout_ms);
}

bool request_body_awaited(struct request_bodies *t, struct lws *wsi)
{
    struct request_body *b = find(t, wsi);
    return b && b->awaited;
}

void request_body_done(struct request_bodies *t, struct lws *wsi)
{
    struct request_body *b = find(t, wsi);
    if (b)
        body_free(b);
}

bool request_body_late(struct request_bodies *t, struct lws *wsi)
{
    struct request_body *b = find(t, wsi);
    if (!b || !b->late || b->draining)
        return false;
    body_free(b);
    return true;
}

/* ptr_map_clear's release: one record at the relay's end. */
static void release(struct ptr_map_entry *e, void *ctx)
{
    (void)ctx;
    struct request_body *b = list_container_of(e, struct request_body, entry);
    timer_cancel(&b->deadline);
    free(b);
}

void request_bodies_free(struct request_bodies *t)
{
    if (!t->loop)
        return; /* never initialised (relay_start failed before it) */
    ptr_map_clear(&t->by_wsi, release, t);
}
