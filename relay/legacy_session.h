/* legacy_session.h - one legacy ASP.NET SignalR 2.x connection, translated to Core hub links.
 *
 * A legacy connection is a logical thing: it lives from /connect until
 * /abort, or until the client has been away longer than the disconnect
 * timeout, while its WebSocket may come and go (/reconnect). The session owns:
 *  - one backend link per hub the client named in connectionData (opened at
 *    /connect), plus links opened on demand for hubs it invokes without
 *    listing them (their server pushes are not delivered, as in the original);
 *    each link is an ordinary Core JSON connection to that hub's backend;
 *  - the replay ring of every message pushed to the client, so /reconnect
 *    replays exactly what came after the client's cursor;
 *  - the current WebSocket (or none), its outgoing queue and its timers.
 * Translation: a client invocation {"H","M","A","I"} becomes a Core
 * Invocation on that hub's link under a relay-chosen invocation id; the Core
 * Completion becomes the legacy hub result {"I","R"|"E"}; Core server
 * invocations become M elements; stream items become progress messages.
 * Methods that the backend serves as streams are learnt from its answer
 * ("attempted to invoke the streaming 'M' method with a non-streaming
 * invocation") and re-invoked as StreamInvocations, remembered per hub. */
#ifndef SR_LEGACY_SESSION_H
#define SR_LEGACY_SESSION_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/dict.h"
#include "relay/http.h"
#include "protocol/legacy_connection_data.h"
#include "containers/list.h"
#include "hub/replay_ring.h"
#include "containers/timer_wheel.h"
#include "relay/wsi_role.h"
#include "relay/wsmsg.h"

struct relay;
struct legacy_link;

/* A /start request waiting for the session's backend links. */
struct legacy_start_wait {
    enum wsi_role role; /* WSI_ROLE_LEGACY_START */
    struct legacy_session *session;
    struct lws *wsi;
};

struct legacy_session {
    enum wsi_role role;              /* WSI_ROLE_LEGACY_SESSION: the channel wsi's opaque data */
    struct dict_entry entry;         /* relay->legacy_sessions, keyed by connection_id */
    struct list_node all;            /* relay->legacy_list: every session, ended ones too */
    char connection_id[40];
    struct relay *relay;

    struct legacy_link **links;      /* one per hub in use */
    size_t link_count;
    size_t listed_count;             /* the first listed_count links were named in connectionData */

    struct lws *wsi;                 /* the current receive channel, NULL while the client is away */
    bool channel_live;               /* established: pushes go out at once (else only to the ring) */
    bool channel_reconnect;          /* the channel came through /reconnect: replay, no init frame */
    uint64_t reconnect_cursor;       /* with it: replay after this */
    bool reconnect_gap;              /* the cursor could not be honoured */
    struct msg_queue to_client;
    struct wsmsg *rx_partial;
    struct replay_ring ring;

    struct legacy_start_wait start;  /* start.wsi != NULL while a /start waits */
    struct timer_entry keepalive_timer;
    struct timer_entry disconnect_timer;
    struct timer_entry reap_timer;   /* frees an ended session from the wheel, outside any callback */
    uint64_t last_sent_ms;
    uint64_t last_heard_ms;          /* any frame or pong from the client */
    bool ping_due;                   /* a WebSocket ping goes out on the next WRITEABLE */

    struct header_list headers;      /* forwarded to backend links opened later */
    char *query;
    char forwarded_for[128];

    bool in_table;
    bool started;                    /* /start was answered "started" */
    bool client_paused;              /* reading the client paused: a backend link is slow */
    bool closing;                    /* ended: flushing the last frames, then gone */
};

/* Creates the session for a verified token and registers it. hubs are the
 * hub names as the client spelled them (from the token). NULL on failure. */
struct legacy_session *legacy_session_create(struct relay *relay, const char *connection_id,
                                             const struct legacy_hub_list *hubs, struct lws *wsi);
struct legacy_session *legacy_session_find(struct relay *relay, const char *connection_id);

/* Attaches a new WebSocket as the receive channel (connect or reconnect),
 * ending any older one. */
void legacy_session_attach(struct legacy_session *s, struct lws *wsi, bool reconnect, uint64_t cursor,
                           bool cursor_ok);
/* The channel's WebSocket is established: init frame or replay. */
void legacy_session_established(struct legacy_session *s);
int legacy_session_receive(struct legacy_session *s, const void *in, size_t len);
int legacy_session_writeable(struct legacy_session *s, struct lws *wsi);
/* A pong (or anything) arrived from the client: it is alive. */
void legacy_session_heard(struct legacy_session *s);
/* The channel's wsi is going away (not an abort: the client may reconnect). */
void legacy_session_channel_closed(struct legacy_session *s, struct lws *wsi);

/* /start: answers now or when every listed link is ready. Returns the lws callback result. */
int legacy_session_start(struct legacy_session *s, struct lws *wsi);
int legacy_session_start_writeable(struct legacy_start_wait *w, struct lws *wsi);
void legacy_session_start_abandoned(struct legacy_start_wait *w);

/* /abort: closes the backend links (the backend runs OnDisconnectedAsync) and the channel. */
void legacy_session_abort(struct legacy_session *s);

/* Relay shutdown, first step: ends every connection (backend links closed,
 * sockets closed after their last frames). */
void legacy_sessions_shutdown(struct relay *relay);

/* Relay shutdown, before the lws context goes: detaches every session from
 * its wsi and frees it. */
void legacy_sessions_clear(struct relay *relay);

#endif
