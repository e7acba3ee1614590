/* legacy_link.h - one legacy connection's link to one hub: calls, their Core answers, the streaming-method cache.
 *
 * A legacy connection holds one link per hub it uses; each link is a hub
 * channel (relay/hub_channel.h) speaking Core JSON to that hub on the
 * client's behalf. The link turns legacy invocations into Core Invocations
 * under relay-chosen ids (legacy ids restart at 0 on reconnect), and the
 * hub's answers back into legacy frames: a Completion becomes the hub result
 * {"I","R"|"E"}, server invocations and stream items become elements for the
 * client. Methods the hub serves as streams are learnt from its refusal
 * ("attempted to invoke the streaming 'M' method with a non-streaming
 * invocation"), re-invoked as StreamInvocations, and remembered per hub in
 * struct legacy_hub, which outlives every connection.
 *
 * The link reports up through legacy_link_ops; it calls none of them from
 * inside legacy_link_open. */
#ifndef SR_LEGACY_LINK_H
#define SR_LEGACY_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/list.h"
#include "containers/span.h"
#include "hub/conn_token.h"
#include "hub/replay_ring.h"
#include "protocol/hub_msg.h"
#include "relay/hub_channel.h"
#include "relay/loop.h"
#include "relay/wsmsg.h"

/* What the legacy side knows about one served hub, for every connection. */
#define LEGACY_HUB_MAX_STREAMING_METHODS 64
struct legacy_hub {
    struct hub_endpoint *endpoint;
    bool app_identity;   /* service mode (--app-negotiate): a service_named_endpoint; the client's
                            identity comes from the app's negotiate (relay/legacy_identity.h) */
    struct loop *loop;
    bool removed;              /* no longer configured (reload): new connections cannot name it; its
                                  open links keep the endpoint they were opened with */
    char *streaming_methods[LEGACY_HUB_MAX_STREAMING_METHODS]; /* learnt from the hub's answers */
    size_t streaming_count;
    /* The last server invocation translated for this hub: a send to many legacy recipients
     * (a group, All) brings each of them the same Core record in turn, translated once; each
     * connection's replay ring then holds a reference to the one element, and its frame adds
     * only its own cursor around it. */
    struct buf last_record;
    struct replay_text *last_element; /* a reference of the hub's, or NULL */
};

void legacy_hub_free(struct legacy_hub *hub);

struct legacy_link;

struct legacy_link_ops {
    /* An element for the client's next M frame (server invocations, stream
     * progress): the owner puts it through the replay ring, taking a reference
     * of its own if it keeps it (the link's is valid during the call). */
    void (*push)(void *owner, struct replay_text *element);
    /* A frame straight to the client (hub results, not replayed, as the original). */
    void (*reply)(void *owner, const char *frame, size_t len);
    /* The link became ready or failed (see state and failure). */
    void (*changed)(void *owner, struct legacy_link *l);
    /* The link can take more again after legacy_link_full() said it was full. */
    void (*drained)(void *owner);
};

enum legacy_link_state {
    LEGACY_LINK_OPENING, /* the channel is opening; the hub has not answered the handshake */
    LEGACY_LINK_READY,
    LEGACY_LINK_FAILED,  /* failure says why; the channel is gone */
};

struct legacy_link {
    struct legacy_hub *hub;
    const struct legacy_link_ops *ops;
    void *owner;
    char hub_as_spelled[CONN_TOKEN_MAX_HUB_LEN + 1]; /* in connectionData; pushes name the hub as configured */
    bool listed;               /* named in connectionData: server pushes are delivered */
    bool full;                 /* the channel's queue is above --max-buffered */
    bool out_of_memory;        /* a message for the hub could not be built: the link fails */
    bool awaiting_identity;    /* opened later (legacy_link_open_later): no channel yet, messages held */
    struct msg_queue held;     /* what was sent while awaiting_identity, in order */
    enum legacy_link_state state;
    struct hub_channel *channel;
    struct list_node calls;    /* struct legacy_call awaiting completions */
    uint64_t next_id;
    char failure[256];
    unsigned failure_status;   /* HTTP status for a /start that fails on it: 504 timed out, 502 refused, 500 */
};

/* Opens a link to hub for the client. NULL when out of memory; a link whose
 * channel could not even start comes back LEGACY_LINK_FAILED. */
struct legacy_link *legacy_link_open(struct legacy_hub *hub, const struct hub_channel_client *client,
                                     struct span spelled, bool listed, const struct legacy_link_ops *ops, void *owner);

/* A link (not listed) whose channel opens later: service mode, while the app's negotiate is asked
 * who the client is on that hub. Invocations are held meanwhile (OPENING), then sent in order by
 * legacy_link_connect, or answered with the refusal's text by legacy_link_refuse. NULL when out
 * of memory. */
struct legacy_link *legacy_link_open_later(struct legacy_hub *hub, struct span spelled,
                                           const struct legacy_link_ops *ops, void *owner);
void legacy_link_connect(struct legacy_link *l, const struct hub_channel_client *client);
/* The link fails with why (it "could not connect to the backend hub"): its calls get that error. */
void legacy_link_refuse(struct legacy_link *l, const char *why);

/* Sends one legacy invocation (msg: hub, target, args; legacy_id "" for
 * none: fire and forget). Its answer comes through ops->reply / ops->push.
 * Errors the relay answers itself (out of memory, a failed link) are sent
 * as the hub result for legacy_id. */
void legacy_link_invoke(struct legacy_link *l, const char *legacy_id, const struct hub_msg *msg);

static inline bool legacy_link_full(const struct legacy_link *l)
{
    return l->full;
}
/* Stops (true) or resumes passing the hub's messages: the client is slow. */
void legacy_link_pause(struct legacy_link *l, bool paused);
/* Closes the channel (the hub runs OnDisconnectedAsync); no ops after it. */
void legacy_link_close(struct legacy_link *l);
void legacy_link_free(struct legacy_link *l);

/* The hub result {"I":id,"E":text} for an invocation the relay answers itself, encoded into out. */
bool legacy_result_error(struct buf *out, const char *legacy_id, const char *text);

#endif
