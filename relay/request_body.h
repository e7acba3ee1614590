/* request_body.h - the deadline of a request body the relay reads, on the timer wheel.
 *
 * A request whose body the relay reads (a Core POST of messages, a legacy /send or long-polling
 * request with form fields) waited for it under libwebsockets' own timeout
 * (PENDING_TIMEOUT_HTTP_CONTENT: its timeout_secs, 20 s, from each piece of the body), which
 * closes the connection without a word. Here the wait is on the wheel: no byte of the body for
 * --header-timeout and the request is answered 408 with a reason and Connection: close (as
 * Kestrel answers a body that stops arriving), then closed; counted and logged as a refusal.
 * lws' own timeout stays behind it (config_lws_timeout_secs).
 *
 * A body the relay does not read (one on a GET, on /healthz, on an unknown path, on a negotiate;
 * or a Content-Length larger than what then arrives) is drained as Kestrel drains it: the request
 * is answered at once, without Connection: close, then its body is read and discarded (lws hands
 * its pieces over; the relay drops them) and the connection carries the next request once the
 * body is whole. Kestrel gives that drain 5 s (RequestBodyDrainTimeout) and then aborts the
 * connection; here the whole body must arrive within --header-timeout of the answer, or the
 * connection is closed (the answer long out). It was bounded only by lws' own timeouts and the
 * next head's idle wait (5-20 s), and a kept-alive next request sent with the body waited
 * NEXT_HEAD_IDLE_MS (relay/next_head.h read the body as if it were that request's head). */
#ifndef SR_REQUEST_BODY_H
#define SR_REQUEST_BODY_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/ptr_map.h"
#include "containers/timer_wheel.h"

struct loop;

#define REQUEST_BODY_LATE "Request Timeout: the request body stopped arriving (no byte within the relay's --header-timeout)."

/* The requests whose body is awaited: owned by the relay. */
struct request_bodies {
    struct loop *loop;
    struct ptr_map by_wsi; /* struct request_body by its wsi */
};

/* Also sets loop->drain_body (loop.h) to request_body_drain on t. */
void request_bodies_init(struct request_bodies *t, struct loop *loop, const uint8_t seed[DICT_SEED_LEN]);
/* Forgets every wait (the connections are lws'). */
void request_bodies_free(struct request_bodies *t);

/* Whether the request on wsi announces a body (Content-Length above 0). */
bool request_body_announced(struct lws *wsi);
/* A request that announces a body (from LWS_CALLBACK_HTTP, before it is routed): remembered
 * until the body is whole, so that an answer before then drains it. No deadline yet. */
void request_body_expect(struct request_bodies *t, struct lws *wsi);
/* loop.h's drain_body, from http.c once a response is whole: true when wsi's body has not all
 * arrived; it is then drained (above) under its deadline, and the transaction completes from
 * request_body_drained. False: nothing to drain (or no memory to remember it: lws discards). */
bool request_body_drain(void *bodies, struct lws *wsi);
/* Whether wsi's request was answered and its body is being drained: LWS_CALLBACK_HTTP_BODY
 * pieces are dropped, and LWS_CALLBACK_HTTP_BODY_COMPLETION returns request_body_drained. */
bool request_body_draining(struct request_bodies *t, struct lws *wsi);
/* The drained body is whole: completes the transaction (lws then reads the next request, or
 * closes when the request or the answer said Connection: close). Returns what the callback
 * returns. */
int request_body_drained(struct request_bodies *t, struct lws *wsi);
/* The request's body is awaited (from LWS_CALLBACK_HTTP), or a piece of it arrived
 * (LWS_CALLBACK_HTTP_BODY, only when awaited): --header-timeout from now for the next byte.
 * Nothing for a body being drained (its deadline is the whole body's). */
void request_body_wait(struct request_bodies *t, struct lws *wsi);
/* Whether wsi's body is awaited (read by the relay, with request_body_wait). */
bool request_body_awaited(struct request_bodies *t, struct lws *wsi);
/* The body is whole, or the connection is gone: no deadline. */
void request_body_done(struct request_bodies *t, struct lws *wsi);
/* From LWS_CALLBACK_HTTP_WRITEABLE: true (once) when wsi's body missed its deadline, and the
 * request is to be answered 408 now. */
bool request_body_late(struct request_bodies *t, struct lws *wsi);

#endif
