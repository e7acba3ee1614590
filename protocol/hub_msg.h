/* hub_msg.h - the common hub message that crosses every layer.
 *
 * Legacy frames, Core JSON records and Core MessagePack frames all decode into
 * a struct hub_msg and encode from one. Method names, ids and error texts are
 * spans; arguments, results, stream items, headers and legacy hub state stay
 * as the raw encoded bytes they arrived in (struct payload), tagged with their
 * encoding, so a JSON client talking to a JSON backend never re-serialises.
 * Conversion between encodings lives in convert.h and happens only where the
 * two ends really differ.
 *
 * Ownership: a decoded hub_msg borrows from the input buffer it was decoded
 * from. Strings that had to be unescaped are copied into memory the message
 * owns (hub_msg_own_copy); hub_msg_release frees that memory. So: keep the
 * input alive while you use the message, and call hub_msg_release when done. */
#ifndef SR_HUB_MSG_H
#define SR_HUB_MSG_H

#include <stdbool.h>
#include <stdint.h>

#include "containers/span.h"

enum hub_msg_kind {
    HUB_MSG_NONE = 0,
    HUB_MSG_INVOCATION = 1,
    HUB_MSG_STREAM_ITEM = 2,
    HUB_MSG_COMPLETION = 3,
    HUB_MSG_STREAM_INVOCATION = 4,
    HUB_MSG_CANCEL_INVOCATION = 5,
    HUB_MSG_PING = 6,
    HUB_MSG_CLOSE = 7,
    HUB_MSG_ACK = 8,
    HUB_MSG_SEQUENCE = 9,
};

enum payload_encoding {
    PAYLOAD_NONE = 0, /* absent */
    PAYLOAD_JSON,
    PAYLOAD_MSGPACK,
};

/* Exactly one complete encoded value (an array, an object/map, a scalar). */
struct payload {
    enum payload_encoding encoding;
    struct span bytes;
};

/* Values match the MessagePack ResultKind of the Core protocol. */
enum completion_kind {
    COMPLETION_NONE = 0,   /* not a completion */
    COMPLETION_ERROR = 1,  /* error text in hub_msg.error */
    COMPLETION_VOID = 2,   /* no result at all (stream end, upload end) */
    COMPLETION_RESULT = 3, /* result in hub_msg.result (may encode null) */
};

#define HUB_MSG_MAX_OWNED 6

struct hub_msg {
    enum hub_msg_kind kind;

    struct span hub;           /* legacy: per message; Core: empty (per connection) */
    struct span target;        /* method name (Invocation, StreamInvocation) */
    struct span invocation_id; /* absent or empty = fire and forget */

    struct payload headers;    /* Core headers map (types 1-5); NONE if absent or empty */
    struct payload args;       /* Invocation/StreamInvocation arguments (an array) */
    struct payload stream_ids; /* client upload stream ids (an array of strings); NONE if absent */
    struct payload item;       /* StreamItem value */
    struct payload result;     /* Completion result when completion == COMPLETION_RESULT */
    struct payload state;      /* legacy hub state object `S`; never reaches a Core backend */

    enum completion_kind completion;
    struct span error;         /* Completion error / Close error; absent = none */
    bool allow_reconnect;      /* Close */
    int64_t sequence_id;       /* Ack, Sequence */

    /* Memory this message owns (unescaped strings); see hub_msg_release. */
    char *owned[HUB_MSG_MAX_OWNED];
    unsigned owned_count;
};

void hub_msg_init(struct hub_msg *msg);
/* Frees what the message owns and re-initialises it. Safe to call twice. */
void hub_msg_release(struct hub_msg *msg);
/* Copies (p, len) into memory owned by msg and points *out at it. False when
 * out of memory or when the message already owns HUB_MSG_MAX_OWNED strings. */
bool hub_msg_own_copy(struct hub_msg *msg, const char *p, size_t len, struct span *out);

#endif
