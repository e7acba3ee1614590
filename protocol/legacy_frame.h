/* legacy_frame.h - everything the server writes to a legacy SignalR 2.x client.
 *
 *   PersistentResponse   {"C":"<cursor>"[,"S":1][,"T":1][,"G":"<token>"][,"L":<ms>],"M":[...]}
 *                        the receive-channel frame; M holds invocation and progress
 *                        elements, built here one element at a time
 *   invocation element   {"H":"ChatHub","M":"addMessage","A":[...][,"S":{...}]}
 *   progress element     {"I":"P|7","P":{"I":"7","D":50}}
 *   hub result           {"R":3,"I":"1"}   answer to one invocation (S,R,I,H,E,D order)
 *   keep-alive           {}
 *   /start, /ping        { "Response": "started" }, { "Response": "pong" }
 *   error frame          {"E":"..."}
 *
 * Field order and spacing are the original server's (PersistentResponse.cs,
 * HubResponse.cs, PersistentConnection.cs). Payloads (arguments, results,
 * state, progress values) are spliced in as the raw JSON they arrived as;
 * a MessagePack payload is refused with PROTO_ERR_VALUE (convert it first).
 *
 * Every encoder appends to a caller-owned buf and, when it fails, leaves the
 * buf exactly as it found it. */
#ifndef SR_LEGACY_FRAME_H
#define SR_LEGACY_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"
#include "protocol/hub_msg.h"
#include "protocol/proto_status.h"
#include "containers/span.h"

/* Fixed bodies, byte for byte as the original writes them. */
#define LEGACY_KEEPALIVE_FRAME "{}"
#define LEGACY_START_RESPONSE "{ \"Response\": \"started\" }"
#define LEGACY_PING_RESPONSE "{ \"Response\": \"pong\" }"

/* ---- PersistentResponse, built incrementally ---- */

struct legacy_response_head {
    struct span cursor;         /* C, required and non-empty */
    bool initializing;          /* "S":1, the init frame after /connect */
    bool reconnect;             /* "T":1, server shutting down: reconnect */
    struct span groups_token;   /* G, written when set (ptr != NULL) */
    bool has_long_poll_delay;   /* L, long polling with a non-zero delay */
    long long long_poll_delay_ms;
};

struct legacy_response {
    struct buf *out;
    size_t frame_start;   /* where this frame began in out */
    size_t elements;      /* M elements written so far */
};

/* Starts a frame in out: everything up to and including "M":[ . */
enum proto_status legacy_response_begin(struct legacy_response *r, struct buf *out,
                                        const struct legacy_response_head *head,
                                        struct proto_error *err);
/* Adds one element that already is JSON (a queued invocation or progress
 * element). The bytes are trusted: they come from our own encoders. */
enum proto_status legacy_response_add_raw(struct legacy_response *r, struct span element,
                                          struct proto_error *err);
/* Adds {"H","M","A"[,"S"]} (see legacy_invocation_element_encode). */
enum proto_status legacy_response_add_invocation(struct legacy_response *r, struct span hub,
                                                 struct span method, struct payload args,
                                                 struct payload state, struct proto_error *err);
/* Adds a progress element (see legacy_progress_encode). */
enum proto_status legacy_response_add_progress(struct legacy_response *r,
                                               struct span invocation_id, struct payload value,
                                               struct payload state, struct proto_error *err);
/* Closes the frame with ]} . */
enum proto_status legacy_response_end(struct legacy_response *r, struct proto_error *err);
/* Removes the unfinished frame from out (after a failure, or to drop it). */
void legacy_response_abandon(struct legacy_response *r);

/* ---- elements and answers, each a complete JSON value ---- */

/* {"H":hub,"M":method,"A":args[,"S":state]}: a server->client invocation.
 * args PAYLOAD_NONE is written as []; state is left out when NONE or null.
 * Never carries I (clients would take it for a hub result). */
enum proto_status legacy_invocation_element_encode(struct buf *out, struct span hub,
                                                   struct span method, struct payload args,
                                                   struct payload state, struct proto_error *err);

/* [{"S":state,]"I":"P|<id>","P":{"I":"<id>","D":value}}: progress of the
 * invocation <id>, an element of M. value PAYLOAD_NONE is written as null. */
enum proto_status legacy_progress_encode(struct buf *out, struct span invocation_id,
                                         struct payload value, struct payload state,
                                         struct proto_error *err);

/* The answer to one invocation: on the WebSocket, or the /send body. */
struct legacy_hub_result {
    struct span id;            /* I, required, always written as a string */
    struct payload state;      /* S, changed hub state; left out when NONE or null */
    struct payload result;     /* R, left out when NONE or null, as the original does */
    struct span error;         /* E, left out when absent (ptr NULL) */
    bool hub_exception;        /* "H":true, a HubException (only written with E) */
    struct payload error_data; /* D, HubException data; left out when NONE or null */
};

enum proto_status legacy_hub_result_encode(struct buf *out, const struct legacy_hub_result *res,
                                           struct proto_error *err);

/* {"E":"message"}: a global error. Never sent by the 2.x server; jQuery and
 * the .NET client stop the connection on it without reconnecting (the C++
 * client ignores it). The relay sends it just before closing a channel for
 * good, so those clients stop instead of looping on /reconnect: the backend
 * refused or dropped the connection with an error and no reconnect allowed,
 * or the client was cut off for exceeding its outbound queue limit. False
 * only when out of memory. */
bool legacy_error_frame_encode(struct buf *out, struct span message);

#endif
