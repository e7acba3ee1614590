/* tls_next_head.h - the next request head on a kept-alive TLS connection: the relay's deadline and answers.
 *
 * On a plain listener relay/next_head.h reads a kept-alive connection's next head before lws. On a
 * TLS listener the bytes are encrypted and lws reads every head; lws 4.1.6 closed a late next head
 * at its header-table timeout and one beyond its header buffer at once, without an answer. Here,
 * once a response has completed a transaction and the TLS connection stays open, the next head is
 * watched as the first one is (relay/tls_head.h, tls_head_start_next): begun and not whole within
 * --header-timeout of that response, 408 with a reason; taken past the relay's limit by a record
 * in which it does not end, 414/431; silent, it is left to lws' keep-alive timeout, which closes
 * it as before. The watch ends when lws has parsed the next request, or with the connection. */
#ifndef SR_TLS_NEXT_HEAD_H
#define SR_TLS_NEXT_HEAD_H

#include <libwebsockets.h>
#include <stdint.h>

#include "containers/ptr_map.h"

struct loop;
struct http_refusals;

/* The TLS connections whose next head is watched: owned by the relay. */
struct tls_next_heads {
    struct loop *loop;
    struct http_refusals *refusals; /* counts and logs refusals, or NULL */
    struct ptr_map by_wsi;          /* struct tls_next_wait by its wsi */
};

void tls_next_heads_init(struct tls_next_heads *t, struct loop *loop, struct http_refusals *refusals,
                         const uint8_t seed[DICT_SEED_LEN]);
/* Forgets every watch left (the connections themselves are lws'). */
void tls_next_heads_free(struct tls_next_heads *t);

/* A response completed a transaction on wsi and the connection stays open (inside an lws
 * callback): watches its next head, on a TLS listener. */
void tls_next_head_watch(struct tls_next_heads *t, struct lws *wsi);
/* lws parsed wsi's next request (LWS_CALLBACK_HTTP, HTTP_CONFIRM_UPGRADE): the watch ends, and
 * lws reads again if it had been stopped. */
void tls_next_head_served(struct tls_next_heads *t, struct lws *wsi);
/* From LWS_CALLBACK_WSI_DESTROY of any wsi: forgets its watch, if any, touching nothing of it. */
void tls_next_head_forget(struct tls_next_heads *t, struct lws *wsi);

#endif
