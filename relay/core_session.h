/* core_session.h - one ASP.NET Core SignalR client on a WebSocket, connected to its hub through a hub channel.
 *
 * The session owns the client's side (its wsi's queue of outgoing messages,
 * the handshake it is waiting for, its timers) and its hub channel
 * (relay/hub_channel.h; in proxy mode, a backend link). Hub
 * traffic passes through untouched, whole WebSocket message by whole message,
 * in both directions: JSON stays JSON and MessagePack stays MessagePack, byte
 * for byte. The relay itself speaks only where a server must: handshake
 * errors and timeouts, keepalive pings when nothing else was sent for the
 * keepalive interval, the client timeout, and a Close message when the
 * hub channel is lost.
 *
 * Lifetime: created when the upgrade is accepted (core_session_create),
 * destroyed exactly once when lws destroys the client's wsi. */
#ifndef SR_CORE_SESSION_H
#define SR_CORE_SESSION_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/list.h"
#include "containers/timer_wheel.h"
#include "protocol/handshake.h"
#include "relay/http.h"
#include "relay/hub_channel.h"
#include "relay/loop.h"
#include "relay/wsi_role.h"
#include "relay/wsmsg.h"

struct negotiation;

/* Every live Core session, for shutdown. */
struct core_sessions {
    struct list_node all;
    struct loop *loop;
};

void core_sessions_init(struct core_sessions *table, struct loop *loop);
/* Relay shutdown: a Close with allowReconnect to every session (so the
 * client reconnects, to another relay instance if there is one), then the
 * sockets close. */
void core_sessions_shutdown(struct core_sessions *table);
static inline bool core_sessions_empty(const struct core_sessions *table)
{
    return list_is_empty(&table->all);
}

enum core_session_state {
    CORE_AWAIT_HANDSHAKE, /* upgraded; waiting for the client's handshake */
    CORE_OPEN,            /* handshake forwarded; traffic flows */
    CORE_CLOSING,         /* flushing the last messages, then closing */
};

struct core_session {
    enum wsi_role role;                /* WSI_ROLE_CORE_SESSION */
    struct list_node link;             /* in core_sessions.all */
    struct loop *loop;
    struct lws *wsi;
    struct hub_endpoint *endpoint;
    enum core_session_state state;
    enum hub_protocol protocol;

    /* The hub side, opened when the WebSocket is established. */
    struct hub_channel *channel;
    struct hub_client_copy *client;    /* what opening the channel needs; freed once it is opened */

    struct buf handshake;              /* client bytes until the handshake record is complete */
    struct msg_queue to_client;
    struct wsmsg *rx_partial;

    struct timer_entry keepalive_timer;
    struct timer_entry timeout_timer;  /* handshake timeout, then the hub's answer to it and the client
                                          timeout, then the close timeout */
    uint64_t hub_answer_due_ms;        /* open: when the hub must have answered the handshake */
    uint64_t last_sent_ms;
    uint64_t last_received_ms;

    char *hub_failure;                 /* the hub is gone before the client's handshake came:
                                          the text that handshake will be answered with */
    bool client_pinged;
    bool handshake_answered;           /* the hub's handshake response reached the queue */
    bool hub_sent_close;
    bool client_paused;                /* we stopped reading the client (the hub side is slow) */
    bool hub_paused;                   /* we paused the channel (the client is slow) */
    char connection_id[48];            /* for logs: the hub's id, or "-" */
};

/* Service mode: who the client is, as the relay verified it before the
 * upgrade (relay/service_client.c). Copied by core_session_create. */
struct core_session_identity {
    const char *connection_id;      /* the id the relay minted at negotiate */
    const struct hub_claim *claims; /* OpenConnection's claims */
    size_t claim_count;
};

/* Accepts an upgrade for the hub `endpoint` serves: negotiation is what
 * core_negotiation_take returned for the id= token (ownership passes), or
 * NULL for a client that skipped negotiation; identity is NULL in proxy
 * mode (the backend authenticates the client itself: access_token is then
 * forwarded in the query; with an identity it is not). NULL when out of memory. */
struct core_session *core_session_create(struct core_sessions *table, struct lws *wsi, struct hub_endpoint *endpoint,
                                         struct negotiation *negotiation, const struct core_session_identity *identity);
void core_session_established(struct core_session *s);
int core_session_receive(struct core_session *s, const void *in, size_t len);
int core_session_writeable(struct core_session *s);
void core_session_destroy(struct core_session *s);

#endif
