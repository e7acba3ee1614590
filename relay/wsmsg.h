/* wsmsg.h - one whole WebSocket message on its way from one peer to the other.
 *
 * Allocated once with LWS_PRE bytes of headroom in front of the payload, as
 * lws_write() needs, so a message received from one side is queued and written
 * to the other side without another copy. A msg_queue owns the messages on it;
 * the total byte count drives flow control. */
#ifndef SR_WSMSG_H
#define SR_WSMSG_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/list.h"
#include "relay/loop.h"

/* How long a connection the relay is closing may take to take its last
 * messages (and a close frame) before its socket is closed anyway, as
 * ASP.NET Core's WebSocket CloseTimeout (5 s). A peer that stops reading
 * would otherwise hold the session, its queue and its socket forever. */
#define RELAY_CLOSE_TIMEOUT_MS 5000

struct wsmsg {
    struct list_node link;
    size_t len;
    size_t cap;          /* payload capacity (excluding headroom) */
    bool binary;
    /* For a message from a hub: WSMSG_KINDS_KNOWN | the union of its records' kind bits
     * (protocol/core_peek.h), when whoever made it peeked once for many recipients (a
     * service-mode fan-out); 0 when nobody did (the recipient peeks itself). */
    unsigned hub_kinds;
    unsigned char *payload; /* = storage + LWS_PRE */
    unsigned char storage[];
};

#define WSMSG_KINDS_KNOWN (1u << 31)

/* A message with room for cap payload bytes; NULL when out of memory. */
struct wsmsg *wsmsg_new(size_t cap, bool binary);
/* Appends bytes, growing the message; returns the (possibly moved) message or
 * NULL on failure (the old message is then still valid and still owned by the
 * caller). Besides wsmsg_receive, service mode's server connections batch
 * their service messages with it (relay/service_server.c). */
struct wsmsg *wsmsg_append(struct wsmsg *m, const void *data, size_t len);
/* A message holding a copy of data; NULL when out of memory. */
struct wsmsg *wsmsg_copy(const void *data, size_t len, bool binary);
void wsmsg_free(struct wsmsg *m);

struct msg_queue {
    struct list_node head;
    size_t bytes;
    size_t count;
};

void msg_queue_init(struct msg_queue *q);
void msg_queue_push(struct msg_queue *q, struct wsmsg *m);
struct wsmsg *msg_queue_pop(struct msg_queue *q);
void msg_queue_clear(struct msg_queue *q);
static inline bool msg_queue_is_empty(const struct msg_queue *q) { return q->count == 0; }

struct lws;

enum wsmsg_fault {
    WSMSG_MORE,      /* no fault: the message is not complete yet */
    WSMSG_TOO_LARGE, /* over --max-message-size: counted as a protocol error */
    WSMSG_NOMEM,     /* out of memory: counted in out_of_memory_closes */
    WSMSG_BAD_UTF8,  /* a text message that is not UTF-8 (RFC 6455 §8.1): counted as a
                        protocol error; a server closes with 1007 */
};

/* The one receive path of every WebSocket the relay reads (client sessions
 * and backend links): adds one RECEIVE callback's piece (in/len) to
 * *partial, which starts NULL and is owned by the connection. lws hands over
 * large messages in several pieces; the relay forwards only whole messages,
 * so they are collected here, up to limit bytes (config_client_message_limit
 * or config_hub_message_limit: who sends it). Returns the whole
 * message once complete (now the caller's), else NULL with *fault saying
 * whether more is to come or the message cannot be taken; then it has been
 * counted and logged (as `who`; too large: rate-limited), the partial message dropped, and the caller
 * closes its connection with a reason (docs/ARCHITECTURE.md, out of memory). */
struct wsmsg *wsmsg_receive(struct wsmsg **partial, struct lws *wsi, const void *in, size_t len, struct loop *loop,
                            size_t limit, const char *who, enum wsmsg_fault *fault);

/* The relay's own close of a client WebSocket, done as a lingering close
 * (nginx's lingering_close, Kestrel's): the Close frame (1000) is written
 * behind everything already sent, then, once lws holds none of it, the
 * socket is shut down for writing (the kernel sends what it still holds, then
 * a FIN) and stays open: lws keeps reading it and the session discards what
 * the client sends, until the client closes (its Close frame or EOF: lws then
 * closes the socket) or the session's closing deadline
 * (RELAY_CLOSE_TIMEOUT_MS, on the wheel) closes it. Closing the descriptor at
 * once instead would let the client's next bytes (its ping) meet a closed
 * socket: the kernel answers with a reset, and a client that had paused
 * reading loses every message and the Close still in its buffers. */
enum wsmsg_close_state {
    WSMSG_CLOSE_NONE,     /* the relay has not closed this WebSocket */
    WSMSG_CLOSE_INVALID,  /* Close 1007 due (wsmsg_close_invalid_payload), not written yet */
    WSMSG_CLOSE_SENT,     /* its Close frame is written; lws may hold part of it */
    WSMSG_CLOSE_LINGERING /* shut down for writing; reading until the client goes */
};

/* From the WRITEABLE callback once nothing is queued and nothing is partly
 * written: advances *state (see above). Returns what the callback returns: 0
 * (the socket stays, lingering or flushing the Close), -1 when the write
 * failed (lws closes it). */
int wsmsg_close_lingering(struct lws *wsi, enum wsmsg_close_state *state);

/* Ends a client WebSocket that sent a text message that is not UTF-8 with the same lingering
 * close, its Close frame saying 1007 (invalid payload data) and why, as RFC 6455 §8.1 asks of
 * the receiving side. As ASP.NET Core's WebSocket transport does on a receive error, the Close
 * goes out at once, behind only what lws already holds of an earlier frame: what is still
 * queued for the client (q) is dropped (its sending loop stops; the hub's messages still in
 * its pipe are never written). The socket gets the closing deadline (RELAY_CLOSE_TIMEOUT_MS,
 * lws' timer on the socket itself) whatever the session does meanwhile. Called from the
 * RECEIVE callback, which then returns 0: the socket stays open, and the session discards
 * what the client sends after (*state is no longer WSMSG_CLOSE_NONE). Closing the descriptor
 * at once instead (as it once did) let the client's next frames meet a closed socket: a
 * reset, and a client that never saw the 1007. */
void wsmsg_close_invalid_payload(struct lws *wsi, struct msg_queue *q, enum wsmsg_close_state *state);

/* Flow control on the reading side: stops reading wsi (counted in
 * flow_control_pauses) / reads it again; *paused remembers which. wsi may be
 * NULL (nothing to pause). */
void wsmsg_pause_reading(struct lws *wsi, bool *paused, struct loop *loop);
void wsmsg_resume_reading(struct lws *wsi, bool *paused);

/* Sends m on an established WebSocket: at once when nothing is ahead of it
 * (the queue is empty and lws holds no unsent rest of an earlier write),
 * otherwise queued behind the others with a WRITEABLE callback requested.
 * Writing at once saves the epoll_ctl pair and the loop turn that every
 * lws_callback_on_writable round trip costs, per message. Ownership of m
 * passes in every case. False when the socket failed: lws will close it. */
bool wsmsg_send(struct lws *wsi, struct msg_queue *q, struct wsmsg *m);

/* As wsmsg_send, for bytes the caller keeps: data has LWS_PRE writable bytes
 * in front of it (lws writes the frame header there). Written at once from
 * there when nothing is ahead of them, with no allocation and no copy (what
 * the kernel does not take, lws keeps a copy of); else copied into a message
 * and queued. A sender that builds each frame in one reused buffer (a legacy
 * recipient's frame of a fan-out) so pays no malloc, copy and free per
 * message. False when the socket failed, or when the copy could not be
 * allocated (*nomem set: the caller ends the connection with a reason). */
bool wsmsg_send_borrowed(struct lws *wsi, struct msg_queue *q, unsigned char *data, size_t len, bool binary,
                         bool *nomem);

/* From the WRITEABLE callback: writes queued messages while the socket takes
 * them whole, and asks for another callback if some remain. False on a write
 * error (the callback then returns -1). */
bool wsmsg_flush(struct lws *wsi, struct msg_queue *q);

#endif
