/* legacy_session.h - one legacy ASP.NET SignalR 2.x connection: its receive channel, replay and hub links.
 *
 * A legacy connection is a logical thing: it lives from /connect until
 * /abort, or until the client has been away longer than the disconnect
 * timeout, while what carries it comes and goes (/reconnect, every long
 * poll, a fallback to another transport). It has at most one receive channel
 * at a time, and a new one ends the old:
 *  - a WebSocket (frames both ways),
 *  - a Server-Sent Events stream (relay/legacy_sse.h; the client sends
 *    through /send),
 *  - a held long poll (relay/legacy_longpoll.c; answered with everything
 *    after the client's cursor, then the channel is gone until the next poll).
 * All three draw on the same replay ring and cursors, so a client that
 * changes transport loses nothing. The session owns:
 *  - one hub link per hub the client named in connectionData (opened at
 *    /connect), plus links opened on demand for hubs it invokes without
 *    listing them (their server pushes are not delivered, as in the original);
 *    see relay/legacy_link.h for the links and the translation;
 *  - the replay ring of every message pushed to the client, so /reconnect
 *    replays exactly what came after the client's cursor;
 *  - the current stream (WebSocket or SSE) or held poll (or none), its
 *    outgoing queue and its timers, and the /send requests awaiting results;
 *  - the /start request waiting for the links (relay/legacy_start.h).
 * Flow control both ways: a link whose queue toward the hub is full stops
 * reading the client (a WebSocket; /sends are held, relay/legacy_send.c)
 * until every full link drained; a queue toward the client
 * over --max-buffered pauses every link until it fell to half. */
#ifndef SR_LEGACY_SESSION_H
#define SR_LEGACY_SESSION_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/dict.h"
#include "containers/list.h"
#include "containers/timer_wheel.h"
#include "hub/conn_token.h"
#include "hub/replay_ring.h"
#include "protocol/legacy_connection_data.h"
#include "relay/capture.h"
#include "relay/http.h"
#include "relay/legacy_link.h"
#include "relay/legacy_request.h"
#include "relay/legacy_start.h"
#include "relay/loop.h"
#include "relay/wsi_role.h"
#include "relay/wsmsg.h"

/* The replay ring of each connection: what /reconnect (and every long poll) can replay. */
#define LEGACY_REPLAY_MAX_MESSAGES 1000 /* the original keeps 1000 per stream */
#define LEGACY_REPLAY_MAX_BYTES (1u << 20)

struct legacy_identities;
struct legacy_identity;

/* Every legacy connection of the process, and what they share. */
struct legacy_table {
    struct loop *loop;
    struct dict by_id;               /* connection id -> struct legacy_session (live ones) */
    struct list_node all;            /* every session, ended ones too */
    struct legacy_hub **hubs;        /* one per hub served since start (removed ones marked), owned */
    size_t hub_count;
    struct token_key token_key;      /* signs legacy connection tokens */
    uint32_t instance_id;            /* random per process: in legacy cursors */
    struct legacy_identities *identities; /* service mode: identities from the apps' negotiate, else NULL */
    struct backends *backends;       /* proxy mode: asked at negotiate whether the client may use its hubs */
    struct buf frame;                /* a pushed element's frame being built, LWS_PRE bytes first: reused
                                        by every push (legacy_session_push_text), owned */
};

/* hub_count hubs, whose endpoint the caller then sets. False when out of
 * memory or randomness. */
bool legacy_table_init(struct legacy_table *t, struct loop *loop, size_t hub_count, const uint8_t seed[DICT_SEED_LEN]);
/* The served hub of that name (ASCII case-insensitive), or NULL (a hub removed by a reload too). */
struct legacy_hub *legacy_table_hub(struct legacy_table *t, struct span name);
/* A reload: endpoints[0..count) are the hubs served from now on. A hub already known takes its new
 * endpoint (its open links keep theirs); a new one is added; one no longer among them is marked
 * removed: legacy_table_hub no longer finds it, so negotiate refuses it as an unknown hub, and its
 * open links stay until their connection leaves (or its backend instances drain). The endpoints
 * must outlive every link opened on them. False when out of memory (the table is unchanged). */
bool legacy_table_apply(struct legacy_table *t, struct hub_endpoint *const *endpoints, size_t count);
/* Relay shutdown, first step: ends every connection (hub links closed,
 * sockets closed after their last frames). */
void legacy_table_shutdown(struct legacy_table *t);
/* Relay shutdown, before the lws context goes: detaches every session from
 * its wsi and frees it, then the table. */
void legacy_table_free(struct legacy_table *t);

/* What s->wsi is. */
enum legacy_carrier {
    LEGACY_CARRIER_WEBSOCKET,
    LEGACY_CARRIER_SSE,
};

struct legacy_session {
    enum wsi_role role;              /* WSI_ROLE_LEGACY_SESSION: the channel wsi's opaque data */
    struct dict_entry entry;         /* table->by_id, keyed by connection_id */
    struct list_node all;            /* table->all: every session, ended ones too */
    char connection_id[40];
    struct legacy_table *table;
    struct loop *loop;

    struct legacy_link **links;      /* one per hub in use */
    size_t link_count;
    size_t listed_count;             /* the first listed_count links were named in connectionData */

    struct lws *wsi;                 /* the current stream channel, NULL while there is none */
    enum legacy_carrier carrier;     /* what wsi is */
    struct legacy_request *poll;     /* the held long poll (the channel while wsi is NULL), or NULL */
    struct list_node sends;          /* struct legacy_request: /send requests awaiting their hub results */
    struct list_node waiting_sends;  /* struct legacy_request: /sends held while a hub link is full, in order */
    struct timer_entry poll_timer;   /* the held poll's time is up */
    bool long_polling;               /* the client polls: flow control by what it has not yet polled */
    uint64_t acked_seq;              /* long polling: the cursor of its last poll */
    size_t unacked_bytes;            /* long polling: bytes in the ring after acked_seq */
    uint64_t stream_frames_queued;   /* SSE: frames queued so far, and written: a /send result */
    uint64_t stream_frames_written;  /* waits until the frames before it are out */
    uint64_t progress_seq;           /* the ring seq of the last progress message pushed ... */
    uint64_t progress_frame;         /* ... and its SSE frame number: what a /send result waits for */
    bool channel_live;               /* established: pushes go out at once once started (else only to the ring) */
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

    struct header_list headers;      /* forwarded to hub links opened later */
    struct legacy_identity *identity; /* service mode: the claims per hub (relay/legacy_identity.h), or NULL */
    char *query;
    char forwarded_for[128];

    bool in_table;
    bool started;                    /* /start was answered "started" */
    bool client_paused;              /* reading the client paused: a hub link is full */
    bool links_paused;               /* the links paused: the queue toward the client is full */
    bool closing;                    /* ended: flushing the last frames, then gone */
    uint64_t close_deadline_ms;      /* closing: the sockets still open then are closed */
    enum wsmsg_close_state ws_close; /* the WebSocket's lingering close (relay/wsmsg.h) */
    struct capture_file *capture;    /* --capture: the file this connection records into, or NULL */
};

/* For log lines: the hub of a connection to one hub (most are), else NULL. */
static inline const char *legacy_session_log_hub(const struct legacy_session *s)
{
    return s->link_count == 1 ? s->links[0]->hub->endpoint->name : NULL;
}

/* Creates the session for a verified token and registers it. hubs are the
 * hub names as the client spelled them (from the token). NULL on failure. */
struct legacy_session *legacy_session_create(struct legacy_table *t, const char *connection_id,
                                             const struct legacy_hub_list *hubs, struct lws *wsi);
struct legacy_session *legacy_session_find(struct legacy_table *t, const char *connection_id);

/* Attaches a new stream (a WebSocket, or an SSE response whose headers the
 * caller writes) as the receive channel (connect or reconnect), ending any
 * older channel. */
void legacy_session_attach(struct legacy_session *s, struct lws *wsi, enum legacy_carrier carrier, bool reconnect,
                           uint64_t cursor, bool cursor_ok);
/* The stream is established: init frame or replay. */
void legacy_session_established(struct legacy_session *s);
int legacy_session_receive(struct legacy_session *s, const void *in, size_t len);
int legacy_session_writeable(struct legacy_session *s, struct lws *wsi);
/* A pong (or anything) arrived from the client: it is alive. */
void legacy_session_heard(struct legacy_session *s);
/* The channel's wsi is going away (not an abort: the client may reconnect). */
void legacy_session_channel_closed(struct legacy_session *s, struct lws *wsi);

/* /start: answers now or when every listed link is ready. Returns the lws callback result. */
int legacy_session_start(struct legacy_session *s, struct lws *wsi);
/* A client of protocol < 1.4 sends no /start: it counts as started at its connect. */
void legacy_session_start_implied(struct legacy_session *s);

/* longPolling /connect (connect), /poll or /reconnect with the client's
 * cursor: answered at once when something waits (the init frame for a
 * connect), else held until a message comes or --legacy-poll-timeout.
 * Defined in relay/legacy_longpoll.c. */
void legacy_session_poll(struct legacy_session *s, struct legacy_request *r, bool connect, uint64_t cursor,
                         bool cursor_ok);
/* /send over serverSentEvents or longPolling (r's body holds data=<invocation>):
 * answered with the hub result. Returns the lws callback result. Defined in
 * relay/legacy_send.c. */
int legacy_session_send(struct legacy_session *s, struct legacy_request *r);

/* /abort: closes the hub links (the hub runs OnDisconnectedAsync) and the channel. */
void legacy_session_abort(struct legacy_session *s);

/* ---- for the transports' own files (legacy_longpoll.c, legacy_send.c), not for others ---- */

/* The PersistentResponse {"C":<last>,"M":[every message after `after`]}, with
 * "S":1 when init and "L" for long polling when a delay is set. False when out of memory. */
bool legacy_session_encode_after(struct legacy_session *s, struct buf *out, uint64_t after, bool init);
/* Ends the current channel, whatever it is (a held poll is answered). */
void legacy_session_end_channel(struct legacy_session *s);
/* The client has seen everything up to seq (long polling): flow control.
 * Defined in relay/legacy_longpoll.c. */
void legacy_session_acked(struct legacy_session *s, uint64_t seq);
/* Stops (true) or resumes every hub link: the client is slow. */
void legacy_session_pause_links(struct legacy_session *s, bool paused);
/* There is no channel now: the disconnect timeout runs. */
void legacy_session_channel_gone(struct legacy_session *s);
/* Frees s at once: no message to anyone, its timers cancelled (legacy_table_free, at exit). */
void legacy_session_free(struct legacy_session *s);
/* Ends the connection with an error text for the client (NULL: none). */
void legacy_session_end(struct legacy_session *s, const char *error_text);
/* One invocation from the client (legacy JSON), as a WebSocket frame would bring it. */
void legacy_session_invoke(struct legacy_session *s, struct hub_msg *msg);
/* legacy_longpoll.c: answers the held poll with what is after its cursor
 * (error_text: with that error frame instead). */
void legacy_poll_answer(struct legacy_session *s, const char *error_text);
/* legacy_longpoll.c: the held poll's --legacy-poll-timeout is up (s->poll_timer). */
void legacy_poll_due(struct timer_entry *e);
/* legacy_send.c: a hub result for a waiting /send (true), or for none (false). */
bool legacy_send_result(struct legacy_session *s, const char *frame, size_t len);
/* legacy_send.c: the client got further (a poll acked, the stream flushed): held /send answers go out. */
void legacy_send_release(struct legacy_session *s);
/* legacy_send.c: the session ends; every waiting /send is answered with text as its error. */
void legacy_send_end_all(struct legacy_session *s, const char *text);
/* A hub link drained: the /sends held while one was full go out, in order, until one is full again. */
void legacy_send_resume(struct legacy_session *s);

/* For legacy_invoke.c: the link of a hub on this connection (NULL when none), a link
 * opened on demand, and an invocation answered with an error. */
#define LEGACY_OUT_OF_MEMORY_TEXT "The relay ran out of memory."
struct legacy_link *legacy_session_find_link(struct legacy_session *s, struct span hub);
struct legacy_link *legacy_session_open_link(struct legacy_session *s, struct legacy_hub *hub, struct span spelled,
                                             bool listed);
void legacy_session_result_error(struct legacy_session *s, const char *legacy_id, const char *text);

/* For legacy_session_links.c: an element for the client's next M frame (through the replay ring),
 * a frame straight to the client. */
void legacy_session_push_text(struct legacy_session *s, struct replay_text *element);
void legacy_session_queue_text(struct legacy_session *s, const char *data, size_t len);

#endif
