/* hub_channel.h - the seam between a client session and whatever serves its hub.
 *
 * A client session (Core or legacy, whatever transport carries it) reaches
 * its hub through one hub channel and never learns what kind it holds:
 *  - proxy mode (relay/proxy_channel.c): one backend WebSocket per (client,
 *    hub), an ordinary ASP.NET Core SignalR connection, negotiated first when
 *    the client's own negotiate did not already do it;
 *  - service mode: a connection id on one of the app's multiplexed server
 *    connections (service-protocol.md §3.2, §4.2): OpenConnection, then
 *    ConnectionData both ways, CloseConnection.
 * A channel in turn never learns which transport or client protocol sits
 * above it: it carries whole Core hub messages, JSON or MessagePack.
 *
 * The conversation, in order:
 *   session                                   channel
 *   hub_channel_open(endpoint, client, ...) ->           (proxy: negotiate if needed, connect;
 *                                                         service: pick a server connection)
 *   hub_channel_begin(protocol, handshake)  ->           the client's raw handshake request
 *                                                         (proxy: first WebSocket message;
 *                                                         service: OpenConnection{protocol} +
 *                                                         ConnectionData{handshake bytes})
 *                                           <- opened    the hub took the connection
 *                                           <- message   FIRST: the hub's handshake answer
 *                                                        ({} or {"error":...} + 0x1E; the hub,
 *                                                        not the relay, answers it; a service
 *                                                        channel holds what the app sends the
 *                                                        client before it: spec appendix A.2)
 *   hub_channel_send(msg)                   -> ...  <- message ...
 *   hub_channel_close(error)                ->           or <- closed(why) / <- refused(why)
 * `opened` may come before or after begin (proxy: when the backend WebSocket
 * is up; service: once OpenConnection went out). A session that refuses the
 * client's handshake itself closes the channel without begin: the hub then
 * hears nothing of the client (service: no OpenConnection was ever sent).
 *
 * Messages. A message is one struct wsmsg (relay/wsmsg.h): one or more whole
 * hub protocol records, exactly as the client or the hub wrote them, with
 * LWS_PRE bytes of headroom so it can be written to a WebSocket without a
 * copy; `binary` is set for MessagePack, clear for JSON. Ownership passes
 * with every message, both ways, in every case (also when a send fails and
 * when the channel is already closing: the callee frees it).
 *
 * Callbacks. The ops run only from the event loop, never synchronously inside
 * a hub_channel_* call: open, begin, send, pause and close call no op before
 * they return. Inside opened, message and drained the owner may call begin,
 * send, pause and close on that channel (close inside `message` is the usual
 * way to end it). The owner may free itself inside an op only after
 * hub_channel_close, or inside closed/refused.
 *
 * End. Exactly one of these ends every channel that open returned:
 *  - hub_channel_close() by the owner: from that call on no op runs and the
 *    handle must not be touched; what was sent is still delivered to the hub,
 *    in order, then the hub hears the end (proxy: WebSocket close 1000, the
 *    hub runs OnDisconnectedAsync; service: CloseConnection with `error`);
 *  - refused(why): the channel never opened (negotiate or connect failed, no
 *    server connection, the connection was lost before `opened`);
 *  - closed(why): after opened; why == NULL when the hub ended it cleanly
 *    (usually after a Close message, which was delivered first; service: a
 *    CloseConnection whose error is nil or ""), else a text for logs and for
 *    the client's error.
 * The handle is invalid once refused or closed is called: do not close it.
 *
 * Flow control, both ways, with the same high-water mark (--max-buffered):
 *  - toward the hub: send and begin return HUB_SEND_FULL when the channel's
 *    queue for this client is above the mark. The message is queued all the
 *    same; the session should stop reading its client. The channel then calls
 *    `drained` once, when the queue fell to half the mark. Messages sent
 *    before the channel opened are queued too and count the same way.
 *  - toward the client: hub_channel_pause(ch, true) when the session's queue
 *    toward its client is above the mark, (ch, false) when it fell to half.
 *    Messages the channel had already taken in may still arrive while paused
 *    (proxy: at most what lws had read); a channel that cannot stop its
 *    source (service mode: a shared server connection) must bound what it
 *    still delivers, and past its limit close with a reason, never drop.
 *
 * Out of memory (docs/ARCHITECTURE.md): a channel that cannot queue or
 * deliver a message ends with refused/closed and a reason, and counts it;
 * it never drops a message silently. */
#ifndef SR_HUB_CHANNEL_H
#define SR_HUB_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "protocol/handshake.h"
#include "relay/http.h"
#include "relay/wsmsg.h"

/* One claim of the client's identity (service mode: OpenConnection claims,
 * a str -> str map whose keys may repeat). */
struct hub_claim {
    const char *type;
    const char *value;
};

/* Who the client is and what it asked for. Everything is copied by open as
 * needed: none of it has to outlive the call. */
struct hub_channel_client {
    /* The connection id the client knows and the hub's code sees
     * (Context.ConnectionId), or NULL when not known yet (proxy mode without
     * a client negotiate: the backend assigns it). Service mode: required. */
    const char *connection_id;
    /* What the relay's negotiate step left for this connection, or NULL.
     * Proxy mode: the backend's connection token, with the backend instance
     * and address that issued it (relay/backend_conn.h, backend_pin_join)
     * (NULL: the channel negotiates itself). Service mode: unused. */
    const char *negotiated_token;
    /* The client's identity as the relay verified it: service mode sends
     * these as OpenConnection claims; proxy mode ignores them (the backend
     * authenticates the forwarded Authorization/Cookie headers itself). */
    const struct hub_claim *claims;
    size_t claim_count;
    /* The client's request headers the hub should see (Authorization, Cookie,
     * User-Agent, Origin, ...). NULL for none. */
    const struct header_list *headers;
    /* The client's query arguments minus the transport's own (id, legacy's
     * transport/connectionToken/...), URL-encoded "a=b&c=d", with no leading
     * '?' or '&'; "" when none. Service mode prefixes '?'. */
    const char *query;
    /* The value for X-Forwarded-For (the client's address, after any proxies
     * it came through), or NULL. */
    const char *forwarded_for;
};

/* How a refusal's `why` begins when the hub did not answer within --backend-timeout (a proxy
 * channel's negotiate or WebSocket): a session that answers the refusal over HTTP says 504 for
 * it and 502 for any other refusal (hub_channel_refusal_status). */
#define HUB_CHANNEL_TIMED_OUT "the backend did not answer within"

static inline unsigned hub_channel_refusal_status(const char *why)
{
    return why && strncmp(why, HUB_CHANNEL_TIMED_OUT, sizeof HUB_CHANNEL_TIMED_OUT - 1) == 0 ? 504 : 502;
}

struct hub_channel_ops {
    /* The hub took the connection. May be NULL. connection_id is the id the
     * hub knows it by (for logs), valid during the call. */
    void (*opened)(void *owner, const char *connection_id);
    /* Messages for the client, in the hub's order; ownership passes. The
     * first one carries the hub's handshake answer record first. */
    void (*message)(void *owner, struct wsmsg *msg);
    /* The queue toward the hub fell to half the mark after a HUB_SEND_FULL. */
    void (*drained)(void *owner);
    /* The channel never opened; why says why. The handle is gone. */
    void (*refused)(void *owner, const char *why);
    /* The channel ended after opening; why == NULL: cleanly by the hub. The handle is gone. */
    void (*closed)(void *owner, const char *why);
};

enum hub_send_result {
    HUB_SEND_OK,     /* queued or written */
    HUB_SEND_FULL,   /* queued, and the queue is above the mark: `drained` will follow */
    HUB_SEND_CLOSED, /* the channel is ending (its closed/refused is on the way); freed */
};

struct hub_channel;

/* What an implementation provides; sessions use the hub_channel_* wrappers. */
struct hub_channel_class {
    enum hub_send_result (*begin)(struct hub_channel *ch, enum hub_protocol protocol, struct wsmsg *handshake);
    enum hub_send_result (*send)(struct hub_channel *ch, struct wsmsg *msg);
    void (*pause)(struct hub_channel *ch, bool paused);
    void (*close)(struct hub_channel *ch, const char *error);
    const char *(*id)(const struct hub_channel *ch);
};

/* The head of every channel implementation's struct. */
struct hub_channel {
    const struct hub_channel_class *cls;
    const struct hub_channel_ops *ops; /* NULL once the owner let go or heard the end */
    void *owner;
};

/* Whatever serves one hub: proxy mode, its backend URL; service mode, the
 * app's server connections for it. The relay makes one per served hub and
 * hands it to the sessions of that hub. */
struct hub_endpoint {
    const char *name; /* the hub's configured name */
    /* Starts a channel for one client. NULL when it cannot even start; then
     * *why (static text) says why and no op will ever run. */
    struct hub_channel *(*open)(struct hub_endpoint *ep, const struct hub_channel_client *client,
                                const struct hub_channel_ops *ops, void *owner, const char **why);
};

static inline struct hub_channel *hub_channel_open(struct hub_endpoint *ep, const struct hub_channel_client *client,
                                                   const struct hub_channel_ops *ops, void *owner,
                                                   const char **why)
{
    return ep->open(ep, client, ops, owner, why);
}

/* The first message on every channel: the client's handshake request record
 * and anything that followed it, as received (a legacy session, which speaks
 * JSON to the hub on the client's behalf, encodes one). Nothing may be sent
 * before it. */
static inline enum hub_send_result hub_channel_begin(struct hub_channel *ch, enum hub_protocol protocol,
                                                     struct wsmsg *handshake)
{
    return ch->cls->begin(ch, protocol, handshake);
}

/* One message from the client, after begin. */
static inline enum hub_send_result hub_channel_send(struct hub_channel *ch, struct wsmsg *msg)
{
    return ch->cls->send(ch, msg);
}

/* Stops (true) or resumes (false) passing messages up: the client is slow. */
static inline void hub_channel_pause(struct hub_channel *ch, bool paused)
{
    ch->cls->pause(ch, paused);
}

/* The connection id the hub knows the client by, for logs ("" while not known yet; one
 * longer than 23 characters is cut). Also valid inside the channel's refused and closed,
 * so that an owner outliving its channel can keep a copy. */
static inline const char *hub_channel_id(const struct hub_channel *ch)
{
    return ch->cls->id(ch);
}

/* The owner lets go (see End above). error == NULL: the client left
 * normally; else why the relay ends it (service mode: CloseConnection's
 * error; proxy mode: logged only). */
static inline void hub_channel_close(struct hub_channel *ch, const char *error)
{
    ch->cls->close(ch, error);
}

/* An owned copy of a client's strings, for whoever opens a channel later
 * than it learnt them (a session before its WebSocket is up, a proxy channel
 * while it negotiates). view() gives the struct open takes. */
struct hub_client_copy {
    char *connection_id;
    char *negotiated_token;
    struct hub_claim *claims;
    size_t claim_count;
    struct header_list headers;
    char *query;
    char *forwarded_for;
};
/* A deep copy of src, or NULL when out of memory. */
struct hub_client_copy *hub_client_copy_new(const struct hub_channel_client *src);
void hub_client_copy_free(struct hub_client_copy *c);
struct hub_channel_client hub_client_copy_view(const struct hub_client_copy *c);

/* ---- for implementations ------------------------------------------------ */

void hub_channel_init(struct hub_channel *ch, const struct hub_channel_class *cls,
                      const struct hub_channel_ops *ops, void *owner);
/* Passes a message up, or frees it when the owner let go. */
void hub_channel_deliver(struct hub_channel *ch, struct wsmsg *msg);
void hub_channel_report_opened(struct hub_channel *ch, const char *connection_id);
void hub_channel_report_drained(struct hub_channel *ch);
/* The end (once; nothing after it): refused if !was_open, else closed. */
void hub_channel_report_end(struct hub_channel *ch, bool was_open, const char *why);

#endif
