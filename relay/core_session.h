/* core_session.h - one ASP.NET Core SignalR client, whatever transport carries it, connected to its hub through a hub channel.
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
 * Transports (struct core_transport): the session writes toward its client
 * through a small interface: a WebSocket (here), a Server-Sent Events stream
 * (relay/core_sse.c) or a long-poll queue (relay/core_longpoll.c); the
 * client's bytes come in through core_session_receive (WebSocket frames) or
 * core_session_client_data (the body of a POST). Toward the hub channel the
 * session is the same whatever the transport.
 *
 * Lifetime: WebSocket: created when the upgrade is accepted
 * (core_session_create), destroyed exactly once when lws destroys the
 * client's wsi. SSE and long polling: created by the first GET
 * (core_session_create_http), destroyed by their transport (relay/core_http.c). */
#ifndef SR_CORE_SESSION_H
#define SR_CORE_SESSION_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/dict.h"
#include "containers/list.h"
#include "containers/pool.h"
#include "containers/timer_wheel.h"
#include "protocol/core_peek.h"
#include "protocol/handshake.h"
#include "relay/capture.h"
#include "relay/http.h"
#include "relay/hub_channel.h"
#include "relay/loop.h"
#include "relay/wsi_role.h"
#include "relay/wsmsg.h"

struct negotiation;
struct hub_msg;
struct core_stateful;
struct core_session;

/* Every live Core session, for shutdown; those an HTTP transport carries
 * also by the token their requests name (id=). */
struct core_sessions {
    struct list_node all;
    struct dict by_token;
    struct loop *loop;
    struct pool records;    /* every struct core_session, in pages of their own (containers/pool.h) */
    struct pool extras;     /* the struct core_session_extra of those that need one */
};

void core_sessions_init(struct core_sessions *table, struct loop *loop, const uint8_t seed[DICT_SEED_LEN]);
void core_sessions_free(struct core_sessions *table);
/* The session an HTTP transport carries for token, or NULL. */
struct core_session *core_sessions_find(struct core_sessions *table, const char *token);

enum core_transport_kind { CORE_TRANSPORT_WEBSOCKETS, CORE_TRANSPORT_SSE, CORE_TRANSPORT_LONG_POLLING };

/* How a session reaches its client. Messages toward the client go on
 * s->to_client (the session counts its bytes for flow control); the
 * transport writes them out and calls core_session_sent after each write. */
struct core_transport {
    enum core_transport_kind kind;
    bool pings; /* the relay sends keepalive pings and runs the client timeout (not long polling) */
    /* m was queued on s->to_client: get it moving. */
    void (*kick)(struct core_session *s);
    /* Stops (true) or resumes (false) taking what the client sends. */
    void (*pause_reading)(struct core_session *s, bool paused);
    /* The session entered CORE_CLOSING: let s->to_client out, then end. */
    void (*closing)(struct core_session *s);
    /* SSE and long polling (NULL for WebSockets): the session is being freed
     * and lets go of its requests; its disconnect_timer fired. */
    void (*detach)(struct core_session *s);
    void (*timer_due)(struct core_session *s);
};
/* The WebSocket transport (relay/core_ws.c). */
extern const struct core_transport core_ws_transport;

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

/* What a session needs only until the hub has answered its client's
 * handshake: allocated with the session, freed when that answer comes in the
 * open state (or with the session), so an idle client holds none of it. */
struct core_pending {
    struct hub_client_copy *client;    /* what opening the channel needs; freed once it is opened */
    struct buf handshake;              /* client bytes until the handshake record is complete */
    char *hub_failure;                 /* the hub is gone before the client's handshake came:
                                          the text that handshake will be answered with */
    uint64_t hub_answer_due_ms;        /* open: when the hub must have answered the handshake */
    struct buf early;                  /* a WebSocket's: what the client POSTed before it (read once established) */
};

/* What only some sessions use, in a record of its own (from table->extras) allocated on first
 * need and freed with the session, so that a plain WebSocket client (service mode's, a proxied
 * one that skipped negotiation) holds none of it: the token (SSE, long polling, a negotiated
 * WebSocket, a stateful one), the HTTP transports' requests, --capture's file, stateful
 * reconnect's state, the connection id for the logs of a session that outlives its hub channel.
 * Every SSE and long-polling session has one (registered by core_session_create_http), and so
 * has every session found by its token. 80 bytes on x86-64. */
struct core_session_extra {
    struct core_session *session;
    /* The token the requests carry (SSE, long polling; a WebSocket's negotiated
     * id=): by_token.key owns its bytes while the session's in_table. */
    struct dict_entry by_token;
    /* SSE and long polling (relay/core_http.c): the request that is streaming or polling now. */
    struct core_http_request *request;  /* the SSE stream or the pending poll, or NULL */
    struct core_http_post *post_held;   /* a POST whose answer waits for `drained` */
    struct capture_file *capture;       /* --capture: the file this connection records into, or NULL */
    struct core_stateful *stateful;     /* stateful reconnect (relay/core_stateful.c), or NULL */
    char *kept_id;                      /* the hub's id for the logs once the channel is gone (owned), or NULL */
};

/* s's extra part, allocated now if it had none; NULL when out of memory (relay/core_session_extra.c). */
struct core_session_extra *core_session_extra(struct core_session *s);
/* For logs: the id the hub knows the client by (its channel's, else the one kept when the
 * channel went, else the negotiated one until the channel opens), or "-". */
const char *core_session_id(const struct core_session *s);
/* The channel is going (its id, for the logs from now on, is kept in the extra part). */
void core_session_keep_id(struct core_session *s, const char *id);
/* --capture: the file the connection on wsi records into, if any, kept in s's extra part. */
void core_session_capture_begin(struct core_session *s, struct lws *wsi);
/* The extra part goes (with the session): its capture file is released; the token and the
 * requests must be gone already. */
void core_session_extra_free(struct core_session *s);

/* Held as long as the client: its small fields share the first two words
 * (200 bytes on x86-64, from table->records). */
struct core_session {
    enum wsi_role role;                /* WSI_ROLE_CORE_SESSION */
    enum wsmsg_close_state ws_close;   /* WebSockets: the relay's lingering close (relay/wsmsg.h) */
    bool client_paused;                /* we stopped reading the client (the hub side is slow) */
    /* One bit or two each (none is address-taken), in the word client_paused begins. */
    enum core_session_state state : 2;
    bool in_table : 1;                 /* extra->by_token is in table->by_token */
    bool first_poll_done : 1;          /* long polling (relay/core_http.c) */
    bool client_pinged : 1;
    bool handshake_answered : 1;       /* the hub's handshake response reached the queue */
    bool hub_sent_close : 1;
    bool hub_paused : 1;               /* we paused the channel (the client is slow, or has not acked) */
    bool stateful_offered : 1;         /* negotiate answered useStatefulReconnect: true */
    bool client_closed : 1;            /* the client's WebSocket Close frame came */
    bool keepalive_armed : 1;          /* keepalive_due is set (else: no deadline) */
    bool timeout_armed : 1;            /* timeout_due is set */
    bool disconnect_armed : 1;         /* disconnect_due is set */
    enum hub_protocol protocol;
    struct list_node link;             /* in core_sessions.all */
    struct core_sessions *table;       /* table->loop is the session's loop */
    struct lws *wsi;                   /* the WebSocket; NULL for SSE and long polling */
    const struct core_transport *transport;
    struct hub_endpoint *endpoint;

    /* The hub side, opened when the WebSocket is established. */
    struct hub_channel *channel;
    struct core_pending *pending;      /* until the hub answered the client's handshake, else NULL */

    struct msg_queue to_client;
    struct wsmsg *rx_partial;

    /* One wheel entry for the session's three deadlines (each with its *_armed bit), armed
     * for the earliest (core_session_rearm): the keepalive; the handshake timeout, then the
     * hub's answer to it and the client timeout, then the close timeout; the transport's
     * disconnect deadline (SSE, long polling, a stateful client away: its timer_due). The
     * deadlines and last_received are 32-bit times (relay/clock32.h: every one is at most
     * 86,400 s away, so they stay exact however long the relay runs). */
    struct timer_entry timer;
    uint32_t keepalive_due;
    uint32_t timeout_due;
    uint32_t disconnect_due;
    uint32_t last_received;            /* when the client last sent anything */
    uint64_t last_sent_ms;

    struct core_session_extra *extra;  /* what only some sessions use (above), or NULL */
};

/* Service mode: who the client is, as the relay verified it before the
 * upgrade (relay/service_client.c). Copied by core_session_create. */
struct core_session_identity {
    const char *connection_id;      /* the id the relay minted at negotiate */
    const struct hub_claim *claims; /* OpenConnection's claims */
    size_t claim_count;
};

#define CORE_NO_DEADLINE UINT64_MAX

/* The transport's deadline (its timer_due runs then): SSE and long polling between
 * requests and for a poll's timeout, a stateful client away (relay/core_stateful.c). */
void core_session_disconnect_at(struct core_session *s, uint64_t when);
void core_session_disconnect_cancel(struct core_session *s);
static inline bool core_session_disconnect_armed(const struct core_session *s)
{
    return s->disconnect_armed;
}
/* The client's WebSocket is gone (stateful, relay/core_stateful.c): no keepalive, no timeout. */
void core_session_client_deadlines_off(struct core_session *s);

/* What the hub channel will be opened with, from the request on wsi (relay/core_client_copy.c):
 * its headers and query, the negotiate's backend token and id (taken from negotiation, which
 * stays the caller's), identity's id and claims. NULL when out of memory. */
struct hub_client_copy *core_client_copy_capture(struct lws *wsi, struct negotiation *negotiation,
                                                 const struct core_session_identity *identity);

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

/* SSE and long polling: a session for the request on wsi (its headers and
 * query are what the hub channel is opened with), carried by transport and
 * known by token from now on; it starts at once (core_session_established). */
struct core_session *core_session_create_http(struct core_sessions *table, struct lws *wsi,
                                              struct hub_endpoint *endpoint, struct negotiation *negotiation,
                                              const struct core_session_identity *identity,
                                              const struct core_transport *transport, const char *token);
/* Makes s known by token (a WebSocket's negotiated id=), so that requests
 * naming it get the server's answers (405, 409) rather than 404. False when out of memory. */
bool core_session_register(struct core_session *s, const char *token);
/* No longer known by its token (nothing if it was not). */
void core_session_unregister(struct core_session *s);
/* The body of one POST: one or more whole messages from the client. */
void core_session_client_data(struct core_session *s, const void *data, size_t len);
/* The transport wrote some of s->to_client: resumes the hub when below half the mark. */
void core_session_sent(struct core_session *s);
/* The client went away (SSE stream closed, long polling deleted or timed out):
 * the hub hears the end and the session is freed. */
void core_session_client_gone(struct core_session *s);
/* For relay/core_stateful.c: m toward the client (owned from here); a
 * message of the relay's own in the client's protocol (false when it could
 * not be encoded or allocated: the session is closing then); the
 * connection ends with a Close carrying error; the hub's pause re-checked
 * (the client's queue over --max-buffered, or the stateful buffer full). */
void core_session_queue(struct core_session *s, struct wsmsg *m);
/* The kind bits of a hub message's records: m->hub_kinds when its channel
 * peeked them once for every recipient of a fan-out, else peeked here. False
 * if a record is malformed. */
static inline bool core_hub_kinds(bool binary, const struct wsmsg *m, unsigned *kinds)
{
    *kinds = m->hub_kinds & ~WSMSG_KINDS_KNOWN;
    return (m->hub_kinds & WSMSG_KINDS_KNOWN) ||
           core_peek_kinds(binary, (const char *)m->payload, m->len, kinds, NULL) == PROTO_OK;
}
bool core_session_send_own(struct core_session *s, const struct hub_msg *msg);
void core_session_fail(struct core_session *s, const char *error);
void core_session_flow(struct core_session *s);
/* The client's WebSocket ended: a stateful session waits for its next one
 * (relay/core_stateful.c), any other is destroyed. */
void core_session_ws_closed(struct core_session *s);
/* Stateful reconnect (relay/core_stateful.c, whose first comment tells the whole of it). */
/* The client's handshake was accepted with this protocol version. */
void core_stateful_start(struct core_session *s, int version);
void core_stateful_free(struct core_session *s);
/* Whether the unacked bytes are over the bound (false when not stateful). */
bool core_stateful_full(const struct core_session *s);

/* A message from the hub (first: it began with the handshake answer). True:
 * queue it toward the client; false: it was taken (the client is away) or
 * the session is closing. */
bool core_stateful_from_hub(struct core_session *s, struct wsmsg *m, bool first);
/* A whole WebSocket message from the client: what to pass to the hub (m
 * itself, a copy without Ack, Sequence and duplicates, or NULL for nothing). */
struct wsmsg *core_stateful_from_client(struct core_session *s, struct wsmsg *m);

/* A WebSocket upgrade naming s's token for endpoint: true when s takes it
 * as its client's next WebSocket (wsi's opaque data must then be s). */
bool core_stateful_resume(struct core_session *s, struct lws *wsi, const struct hub_endpoint *endpoint);
/* The WebSocket from core_stateful_resume is established: Sequence and the
 * resend go out. False for any other session. */
bool core_stateful_resumed(struct core_session *s);

static inline bool core_session_done(const struct core_session *s)
{
    return s->state == CORE_CLOSING && msg_queue_is_empty(&s->to_client);
}

#endif
