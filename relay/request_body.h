/* request_body.h - the deadline of a request body the relay reads, on the timer wheel.
 *
 * A request whose body the relay reads (a Core POST of messages, a legacy /send or long-polling
 * request with form fields) waited for it under libwebsockets' own timeout
 * (PENDING_TIMEOUT_HTTP_CONTENT: its timeout_secs, 20 s, from each piece of the body), which
 * closes the connection without a word. Here the wait is on the wheel: no byte of the body for
 * --header-timeout and the request is answered 408 with a reason and Connection: close (as
 * Kestrel answers a body that stops arriving), then closed; counted and logged as a refusal.
 * lws' own timeout stays behind it (config_lws_timeout_secs). */
#ifndef SR_REQUEST_BODY_H
#define SR_REQUEST_BODY_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/dict.h"
#include "containers/timer_wheel.h"

struct loop;

#define REQUEST_BODY_LATE "Request Timeout: the request body stopped arriving (no byte within the relay's --header-timeout)."

/* The requests whose body is awaited: owned by the relay. */
struct request_bodies {
    struct loop *loop;
    struct dict by_wsi; /* struct request_body by the bytes of its wsi pointer */
};

void request_bodies_init(struct request_bodies *t, struct loop *loop, const uint8_t seed[DICT_SEED_LEN]);
/* Forgets every wait (the connections are lws'). */
void request_bodies_free(struct request_bodies *t);

/* Whether the request on wsi announces a body (Content-Length above 0). */
bool request_body_announced(struct lws *wsi);
/* The request's body is awaited (from LWS_CALLBACK_HTTP), or a piece of it arrived
 * (LWS_CALLBACK_HTTP_BODY, only when awaited): --header-timeout from now for the next byte. */
void request_body_wait(struct request_bodies *t, struct lws *wsi);
/* Whether wsi's body is awaited. */
bool request_body_awaited(struct request_bodies *t, struct lws *wsi);
/* The body is whole, or the connection is gone: no deadline. */
void request_body_done(struct request_bodies *t, struct lws *wsi);
/* From LWS_CALLBACK_HTTP_WRITEABLE: true (once) when wsi's body missed its deadline, and the
 * request is to be answered 408 now. */
bool request_body_late(struct request_bodies *t, struct lws *wsi);

#endif
