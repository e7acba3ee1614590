/* core_negotiate.h - POST /{hub}/negotiate for ASP.NET Core SignalR clients.
 *
 * The relay negotiates with the backend hub first, so the connection id the
 * client learns is the one the backend's hub code sees (Context.ConnectionId):
 * apps that pass connection ids around keep working. The client gets a token
 * of the relay's own (v1; v0 clients use the id, as the protocol says), which
 * maps, in struct core_negotiations, to the backend's token until the client opens
 * its WebSocket or the negotiate TTL runs out on the timer wheel. */
#ifndef SR_CORE_NEGOTIATE_H
#define SR_CORE_NEGOTIATE_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relay/config.h"
#include "containers/buf.h"
#include "containers/dict.h"
#include "containers/timer_wheel.h"
#include "relay/wsi_role.h"

struct backend_negotiate;
struct backends;
struct loop;

/* The negotiations answered but not yet used, by the token the client got. */
struct core_negotiations {
    struct dict by_token;
    struct loop *loop;
    struct backends *backends;
};

void core_negotiations_init(struct core_negotiations *table, struct loop *loop, struct backends *backends,
                            const uint8_t seed[DICT_SEED_LEN]);
size_t core_negotiations_pending(const struct core_negotiations *table);
/* Frees every negotiation still waiting (relay shutdown), and the table. */
void core_negotiations_clear(struct core_negotiations *table);

struct negotiation {
    enum wsi_role role;               /* WSI_ROLE_NEGOTIATION: tags lws opaque data */
    struct dict_entry entry;          /* in table->by_token once answered */
    char token[48];                   /* what the client sends back as id= */
    struct timer_entry expiry;
    struct core_negotiations *table;
    const struct hub_route *hub;
    int client_version;               /* 0 or 1 */
    bool stateful;                    /* useStatefulReconnect: the client asked and the relay allows it */
    char *backend_connection_id;
    char *backend_token;              /* id= toward the backend */
    struct lws *http_wsi;             /* the client's request, until answered */
    struct backend_negotiate *request;/* in flight */
    unsigned reply_status;
    const char *reply_type;
    char *reply_body;
    size_t reply_len;
    bool in_table;
    struct buf early;                 /* what the client POSTed before its first GET, for the session */
};

/* Handles the request on wsi (method already known). Returns the lws callback result. */
int core_negotiate_begin(struct core_negotiations *table, struct lws *wsi, const struct hub_route *hub);
/* The deferred answer is ready to be written (LWS_CALLBACK_HTTP_WRITEABLE). */
int core_negotiate_write_reply(struct negotiation *n, struct lws *wsi);
/* The client's HTTP connection closed before the answer went out. */
void core_negotiate_abandon(struct negotiation *n);

/* Removes and returns the negotiation for this token, or NULL (unknown or expired).
 * The caller owns it and frees it with core_negotiation_free. */
struct negotiation *core_negotiation_take(struct core_negotiations *table, const char *token);

/* A POST or DELETE for a token negotiated but not yet opened (no GET yet). ASP.NET Core has the
 * connection from its negotiate on and no transport yet: a POST goes into the connection's pipe,
 * read once the first GET starts the hub; a DELETE is refused (400). So the relay keeps the
 * bytes in the negotiation, and the first GET's session takes them (core_negotiation_take_early).
 * core_negotiation_early_send answers 200, 404 (no such token) or 413 (more than
 * --max-message-size waiting). */
bool core_negotiation_known(struct core_negotiations *table, const char *token);
unsigned core_negotiation_early_send(struct core_negotiations *table, const char *token, const void *data, size_t len);
/* Moves the bytes POSTed before the first GET into out (empty if none or no such token). */
void core_negotiation_take_early(struct core_negotiations *table, const char *token, struct buf *out);
void core_negotiation_free(struct negotiation *n);

#endif
