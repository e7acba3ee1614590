/* legacy_identity.h - service mode: who a legacy client is, as the app's own negotiate says.
 *
 * Legacy ASP.NET SignalR clients do not follow a Core negotiate's redirect:
 * they negotiate at the relay's legacy endpoint and stay there. For every hub
 * of its connectionData that an app serves in service mode (a hub given with
 * --app-negotiate NAME=URL), the relay forwards the client's negotiate to the
 * app's Core negotiate at URL (the client's query minus the legacy protocol's
 * own arguments, its Authorization and Cookie headers): the app authenticates
 * it as it would a Core client and answers with its redirect to the service,
 * {url: .../client/?hub=KEY..., accessToken: JWT}. The relay verifies that
 * JWT with the service keys (hub/service_token.h) for hub KEY and keeps its
 * claims (asrs.s.uid, the user id; the others mapped to their long types) for
 * the connection's OpenConnection. Any refusal of the app (401, 403, ...) is
 * the legacy negotiate's answer, with the app's status and text; the legacy
 * negotiate is answered only once every hub's identity is known.
 *
 * The identity waits in a table, under the connection id, from negotiate
 * until the connection's first connect takes it (at most --negotiate-timeout),
 * then belongs to the legacy session. A hub not named in connectionData has
 * no identity at first: the original server lets a client invoke any hub, so
 * on its first invocation the session asks the app's negotiate for that hub
 * in the same way (legacy_identity_ask, with the headers and query of the
 * client's connect), holds the invocations meanwhile, and opens the hub
 * connection with the claims, or answers each held invocation with the
 * app's refusal.
 *
 * OWNERSHIP: struct legacy_identities owns the identities in its table and the
 * negotiations in flight; a taken identity is the caller's (legacy_identity_free). */
#ifndef SR_LEGACY_IDENTITY_H
#define SR_LEGACY_IDENTITY_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "containers/dict.h"
#include "containers/list.h"
#include "containers/span.h"
#include "relay/hub_channel.h"
#include "relay/loop.h"

struct backends;
struct service;
struct legacy_hub;

struct legacy_identities {
    struct loop *loop;
    struct backends *backends;      /* the app negotiates go out as backend negotiates */
    struct service *service;        /* the keys the app's tokens are checked with */
    struct dict by_id;              /* connection id -> struct legacy_identity, negotiated, not connected */
    struct list_node in_flight;     /* struct legacy_identity.link: awaiting the app's answers */
};

struct legacy_identity;

void legacy_identities_init(struct legacy_identities *ids, struct loop *loop, struct backends *backends,
                            struct service *service, const uint8_t seed[DICT_SEED_LEN]);
/* Relay shutdown: every identity and negotiation is dropped (their requests are closed by lws). */
void legacy_identities_free(struct legacy_identities *ids);

/* Whether any of the hubs is an app's hub in service mode (legacy_hub.app_identity). */
bool legacy_identity_needed(struct legacy_hub *const *hubs, size_t hub_count);

/* The legacy negotiate of wsi for connection id, whose answer is body: asks
 * the app's negotiate of every service-mode hub in hubs first, and answers
 * body once all accepted the client, or the first refusal. Returns the lws
 * callback result. */
int legacy_identity_negotiate(struct legacy_identities *ids, struct lws *wsi, const char *suffix,
                              const char *connection_id, struct legacy_hub *const *hubs, size_t hub_count,
                              const char *body, size_t body_len);

/* The identity negotiated for connection_id, now the caller's; NULL when none. */
struct legacy_identity *legacy_identity_take(struct legacy_identities *ids, const char *connection_id);
/* The claims of the hub (its configured name) in id, and the connection id the app knows the
 * client by on that hub; false when id has none for it. The SDK keeps one table of connections
 * for all the hubs of an app: the first hub gets the legacy connection's own id, each other
 * hub an id of its own (as each hub of a legacy connection has its own in proxy mode). */
bool legacy_identity_claims(const struct legacy_identity *id, const char *hub, const struct hub_claim **claims,
                            size_t *count, const char **connection_id);
void legacy_identity_free(struct legacy_identity *id);

/* A hub the client named that only an app in service mode serves, without --app-negotiate
 * for it: true, with a text for the client naming the flag. */
/* What the app's negotiate is sent for a hub asked after connect (the client's connect request's). */
struct legacy_identity_source {
    const struct header_list *headers;
    const char *query;              /* already without the legacy protocol's own arguments */
    const char *forwarded_for;
};

/* refusal NULL: hub's claims are now in the identity (legacy_identity_claims); else why the app
 * did not take the client (for the invocation's error). Called from the loop, never from inside
 * legacy_identity_ask. */
typedef void (*legacy_identity_done)(void *owner, struct legacy_hub *hub, const char *refusal);

/* After connect: asks hub's app (a --app-negotiate hub) who the client is there, as at negotiate;
 * *idp (the session's identity) is created when NULL and owns the request (legacy_identity_free
 * cancels it). False when it could not be asked (out of memory, too many hubs, a query too long). */
bool legacy_identity_ask(struct legacy_identities *ids, struct legacy_identity **idp, const char *connection_id,
                         struct legacy_hub *hub, const struct legacy_identity_source *from, legacy_identity_done done,
                         void *owner);

bool legacy_identity_unserved(struct legacy_identities *ids, struct span hub, char *text, size_t text_len);

#endif
