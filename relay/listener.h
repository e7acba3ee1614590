/* listener.h - the front door: the listening socket, connection limits, and backing off at the descriptor limit.
 *
 * On the libev loop the relay accepts client connections itself and hands
 * each to lws (lws_adopt_socket_vhost), instead of letting lws listen. lws
 * 4.1's own accept loop logs and returns when accept() fails with EMFILE,
 * with the listening socket still readable: the loop wakes straight back up,
 * so a relay out of descriptors spun at 100 % CPU writing ~180,000
 * "accept: errno 24" lines a second while new clients timed out. Here an
 * accept that fails for lack of descriptors (or memory) stops watching the
 * socket for ACCEPT_BACKOFF_MS (pending clients wait in the kernel's
 * backlog), logs one rate-limited line, and closes the connections that
 * were accepted but have sent no request yet for UNIDENTIFIED_GRACE_MS, the
 * oldest first: idle unidentified sockets go before anything that works.
 *
 * Limits: --max-connections (client connections held at once) and
 * --max-connections-per-address. A connection over a limit is still
 * accepted, so that it can be told why: its request (HTTP or WebSocket
 * upgrade) is answered 503 with the reason, one rate-limited log line says
 * so, and the connection is closed REFUSED_LINGER_MS later whatever it does.
 *
 * A connection refused, or one lws reads the first head of (TLS), has a
 * record, found by its wsi, from accept until its first request is served
 * (listener_request; relay.c reports each request), or to
 * LWS_CALLBACK_WSI_DESTROY (listener_wsi_destroyed) when it was refused or
 * never sent one. A served connection holds its place in the
 * limits through its wsi alone: lws' user pointer of the wsi names its
 * source's count (so nothing else may set it on a client wsi), and its
 * WSI_DESTROY gives the place back. Without libev lws listens itself, as
 * before, and none of this applies (a warning at start says so). */
#ifndef SR_LISTENER_H
#define SR_LISTENER_H

#include <ev.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/dict.h"
#include "containers/list.h"
#include "containers/timer_wheel.h"
#include "relay/log.h"

struct loop;
struct http_refusals;

/* How long accepting pauses after accept() found no descriptor. */
#define ACCEPT_BACKOFF_MS 500
/* A connection that has sent no complete request for this long is closed when the relay runs out of descriptors. */
#define UNIDENTIFIED_GRACE_MS 2000
/* How long a connection over a limit stays open to read its answer. */
#define REFUSED_LINGER_MS 2000

struct listener_stats {
    uint64_t accepted;          /* client connections accepted */
    uint64_t refused;           /* of those, over a limit (answered 503) */
    uint64_t accept_pauses;     /* times accepting paused for lack of descriptors */
    uint64_t unidentified_closed; /* connections closed because they sent no request while descriptors ran out */
};

struct listener {
    struct loop *loop;
    int fd;                     /* -1 when lws listens itself (no libev) */
    ev_io io;
    bool watching;              /* io is started */
    struct timer_entry resume;  /* ends a pause */
    struct dict conns;          /* struct accepted_conn by wsi pointer, until served */
    struct dict sources;        /* struct source_count by peer address */
    struct list_node unidentified; /* accepted_conns with no request yet, oldest first */
    struct list_node reading;   /* connections whose first request head is read here (plain listener), oldest first */
    struct http_refusals *refusals; /* the relay's refusal counter and log limit, or NULL */
    size_t active;              /* connections within the limits (refused ones not counted) */
    struct listener_stats stats;
    struct log_limit accept_log;
    struct log_limit refuse_log;
};

/* Nothing allocated; seed keys the per-address table (peers choose its keys). */
void listener_init(struct listener *l, struct loop *loop, const uint8_t seed[DICT_SEED_LEN]);
/* Binds and listens on address:port and starts accepting on loop->ev into
 * loop->vhost (both made by loop_create_context). False (logged) on failure. */
bool listener_open(struct listener *l, const char *address, int port);
/* Stops accepting and closes the socket; connections still sending their first request head are
 * closed (the others stay). Must run while the event loop exists. */
void listener_close(struct listener *l);
/* Frees what is left once lws has destroyed every connection. */
void listener_free(struct listener *l);

/* A request (HTTP, or a WebSocket upgrade) arrived on wsi. NULL to serve it,
 * or the reason it must be answered 503 (the connection is over a limit). */
const char *listener_request(struct listener *l, struct lws *wsi);
/* From LWS_CALLBACK_WSI_DESTROY of any wsi: forgets it if it was accepted here. */
void listener_wsi_destroyed(struct listener *l, struct lws *wsi);

/* The current number of client connections held (within the limits). */
static inline size_t listener_active(const struct listener *l) { return l->active; }

#endif
