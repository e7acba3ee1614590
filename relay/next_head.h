/* next_head.h - the next request head on a kept-alive plain connection, read by the relay before lws.
 *
 * libwebsockets 4.1.6 closes a connection without a word when a request head does not fit its
 * header buffer or table, or does not arrive in time (relay/request_head.h has the details), and
 * the listener reads each connection's first head itself to answer those 431, 414 and 408. A
 * kept-alive connection's later heads went to lws directly, so they were closed silently. Here,
 * once a response has completed a transaction and the connection stays open, the relay pauses
 * lws' reading of it (lws_rx_flow_control) and reads the next head the same way
 * (request_head_start_borrowed, on the socket lws owns): a whole head within the limits goes
 * back to lws (reading resumed, the bytes untouched in the socket); a refused one is answered
 * 414/431/408 with a reason (408: begun, not whole within --header-timeout of the response),
 * its input dropped for up to REQUEST_HEAD_LINGER_MS, and the connection closed. A connection
 * that sends nothing for NEXT_HEAD_IDLE_MS (lws' own keep-alive timeout), or that the peer
 * closes, goes back to lws, which closes it a second later (IDLE_HANDBACK_S) unless it holds a
 * request already: a client that pipelines may have sent its next request with the last one,
 * and lws keeps such bytes in its own buffer, out of the relay's sight (lws 4.1.6 says nothing
 * of them: no call tells whether it holds any), so that request is served NEXT_HEAD_IDLE_MS late.
 * (No common client pipelines: browsers, .NET's HttpClient, Node's http and curl do not.)
 *
 * Not on a TLS listener (the bytes are encrypted: lws still reads those heads), nor on lws'
 * poll() loop (no listener). */
#ifndef SR_NEXT_HEAD_H
#define SR_NEXT_HEAD_H

#include <libwebsockets.h>
#include <stdint.h>

#include "containers/ptr_map.h"

struct loop;
struct http_refusals;

/* How long a kept-alive connection may stay silent before it goes back to lws (its own
 * keep-alive timeout, vhost keepalive_timeout, is 5 s). */
#define NEXT_HEAD_IDLE_MS 5000

/* The connections whose next head is being read: owned by the relay. */
struct next_heads {
    struct loop *loop;
    struct http_refusals *refusals; /* counts and logs refusals, or NULL */
    struct ptr_map by_wsi;          /* struct next_head_wait by its wsi */
};

void next_heads_init(struct next_heads *t, struct loop *loop, struct http_refusals *refusals,
                     const uint8_t seed[DICT_SEED_LEN]);
/* Forgets every head still being read (the connections themselves are lws'). */
void next_heads_free(struct next_heads *t);

/* A response completed a transaction on wsi and the connection stays open (from inside an lws
 * callback): reads its next head first, when that can be done (see above). */
void next_head_watch(struct next_heads *t, struct lws *wsi);
/* Stops reading wsi's next head, if that was being done: from LWS_CALLBACK_WSI_DESTROY of any
 * wsi, and from every request lws has parsed (should lws have read one meanwhile, the relay must
 * not read on). */
void next_head_forget(struct next_heads *t, struct lws *wsi);

#endif
