/* linger.h - the read side of the relay's lingering close of a client WebSocket.
 *
 * Once the relay has written its Close and shut its socket down for writing
 * (wsmsg_close_lingering, relay/wsmsg.h), what the client still sends is read and dropped here,
 * by the relay, with lws' own reading of the socket paused. lws read it before and parsed it as
 * frames: a WebSocket ping made it write a pong on the shut-down socket, the write failed and lws
 * closed the descriptor there and then (the client's next bytes met a reset, the linger was over
 * at the first ping), and a malformed frame had lws close it at once too. Now no frame the
 * client sends after the relay's Close is answered (RFC 6455: nothing is sent after a Close) and
 * none ends the linger; the client's EOF (or a read error) does: lws then closes the socket (no
 * unread input left, so no reset). The session's closing deadline still bounds it (the wheel
 * closes the socket through lws). Only on the libev loop (loop->ev); on lws' poll() loop lws
 * keeps reading, as before. */
#ifndef SR_LINGER_H
#define SR_LINGER_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/ptr_map.h"

struct loop;

/* The sockets being read to their end: owned by the relay. */
struct lingers {
    struct loop *loop;
    struct ptr_map by_wsi; /* struct lingering (linger.c) by its wsi */
};

/* Also sets loop->linger_read (loop.h) to linger_start on t. */
void lingers_init(struct lingers *t, struct loop *loop, const uint8_t seed[DICT_SEED_LEN]);
/* Stops every read (the sockets are lws'). */
void lingers_free(struct lingers *t);

/* loop.h's linger_read, from wsmsg_close_lingering once the socket is shut down for writing:
 * pauses lws' reading of wsi and reads it here until the client's EOF. False when that cannot be
 * done (no libev loop, no memory): lws keeps reading it. */
bool linger_start(void *lingers, struct lws *wsi);
/* wsi is going (LWS_CALLBACK_WSI_DESTROY): its read stops. */
void linger_forget(struct lingers *t, struct lws *wsi);

#endif
