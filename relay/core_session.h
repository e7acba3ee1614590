/* core_session.h - one ASP.NET Core SignalR client on a WebSocket, proxied to its backend link.
 *
 * The session owns the client's side (its wsi's queue of outgoing messages,
 * the handshake it is waiting for, its timers) and its backend link. Hub
 * traffic passes through untouched, whole WebSocket message by whole message,
 * in both directions: JSON stays JSON and MessagePack stays MessagePack, byte
 * for byte. The relay itself speaks only where a server must: handshake
 * errors and timeouts, keepalive pings when nothing else was sent for the
 * keepalive interval, the client timeout, and a Close message when the
 * backend link is lost.
 *
 * Lifetime: created when the upgrade is accepted (core_session_create),
 * destroyed exactly once when lws destroys the client's wsi. */
#ifndef SR_CORE_SESSION_H
#define SR_CORE_SESSION_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/buf.h"
#include "relay/config.h"
#include "protocol/handshake.h"
#include "relay/http.h"
#include "containers/list.h"
#include "containers/timer_wheel.h"
#include "relay/wsi_role.h"
#include "relay/wsmsg.h"

struct relay;
struct negotiation;
struct backend_link;
struct backend_negotiate;

enum core_session_state {
    CORE_AWAIT_HANDSHAKE, /* upgraded; waiting for the client's handshake */
    CORE_OPEN,            /* handshake forwarded; traffic flows */
    CORE_CLOSING,         /* flushing the last messages, then closing */
};

struct core_session {
    enum wsi_role role;                /* WSI_ROLE_CORE_SESSION */
    struct list_node link;             /* in relay->sessions */
    struct relay *relay;
    struct lws *wsi;
    const struct hub_route *hub;
    enum core_session_state state;
    enum hub_protocol protocol;

    /* The backend side: negotiating (skip-negotiation clients), then linked. */
    struct backend_negotiate *negotiating;
    struct backend_link *backend;
    char *backend_token;
    char *query;                       /* forwarded query ("&a=b..."); freed once the link is open */
    struct header_list headers;        /* forwarded headers; freed once the link is open */
    char *forwarded_for;               /* X-Forwarded-For to send; freed once the link is open */

    struct buf handshake;              /* client bytes until the handshake record is complete */
    struct msg_queue early;            /* client messages before the backend link exists */
    struct msg_queue to_client;
    struct wsmsg *rx_partial;

    struct timer_entry keepalive_timer;
    struct timer_entry timeout_timer;  /* handshake timeout, then client timeout */
    uint64_t last_sent_ms;
    uint64_t last_received_ms;

    char *backend_failure;             /* the backend is gone before the client's handshake came:
                                          the text that handshake will be answered with */
    bool client_pinged;
    bool handshake_answered;           /* the backend's handshake response reached the queue */
    bool backend_sent_close;
    bool client_paused;                /* we stopped reading the client (backend is slow) */
    bool backend_paused;               /* we stopped reading the backend (client is slow) */
    char connection_id[48];            /* for logs: the backend's id, or "-" */
};

/* Accepts an upgrade for `hub`: negotiation is what core_negotiation_take
 * returned for the id= token (ownership passes), or NULL for a client that
 * skipped negotiation. NULL when out of memory. */
struct core_session *core_session_create(struct relay *relay, struct lws *wsi, const struct hub_route *hub,
                                         struct negotiation *negotiation);
void core_session_established(struct core_session *s);
int core_session_receive(struct core_session *s, const void *in, size_t len);
int core_session_writeable(struct core_session *s);
void core_session_destroy(struct core_session *s);
/* Relay shutdown: a Close with allowReconnect (so the client reconnects, to
 * another relay instance if there is one), then the socket closes. */
void core_session_shutdown(struct core_session *s);

#endif
