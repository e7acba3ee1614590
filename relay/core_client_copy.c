/* core_client_copy.c - what a Core session's hub channel will be opened with, captured from the client's request (see core_session.h). */
#include <stdlib.h>
#include <string.h>

#include "relay/core_negotiate.h"
#include "relay/core_session.h"
#include "relay/http.h"

/* The identity into the copy (hub_client_copy_free frees it): the id and each claim's strings. */
static bool identity_copy(struct hub_client_copy *c, const struct core_session_identity *identity)
{
    c->connection_id = strdup(identity->connection_id);
    c->claims = identity->claim_count ? calloc(identity->claim_count, sizeof *c->claims) : NULL;
    if (!c->connection_id || (identity->claim_count && !c->claims))
        return false;
    for (; c->claim_count < identity->claim_count; c->claim_count++) {
        struct hub_claim *dst = &c->claims[c->claim_count];
        dst->type = strdup(identity->claims[c->claim_count].type);
        dst->value = strdup(identity->claims[c->claim_count].value);
        if (!dst->type || !dst->value) {
            c->claim_count++; /* freed with the others */
            return false;
        }
    }
    return true;
}

/* What the channel will be opened with, from the upgrade request. */
struct hub_client_copy *core_client_copy_capture(struct lws *wsi, struct negotiation *negotiation,
                                                 const struct core_session_identity *identity)
{
    /* In service mode the relay checked the client's token itself: it is not the app's business. */
    static const char *const not_forwarded[] = { "id", "access_token" };
    struct hub_client_copy *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    struct buf query;
    buf_init(&query);
    char forwarded_for[400];
    http_forwarded_for(wsi, forwarded_for, sizeof forwarded_for);
    header_list_capture(&c->headers, wsi);
    bool ok = http_query_forward(wsi, &query, not_forwarded, identity ? 2 : 1) && buf_append_byte(&query, '\0') &&
              (!identity || identity_copy(c, identity));
    c->query = query.data; /* ownership moves from the buf */
    c->forwarded_for = strdup(forwarded_for);
    if (negotiation) {
        c->negotiated_token = negotiation->backend_token;
        negotiation->backend_token = NULL;
        c->connection_id = negotiation->backend_connection_id;
        negotiation->backend_connection_id = NULL;
    }
    if (!ok || !c->forwarded_for) {
        hub_client_copy_free(c);
        return NULL;
    }
    return c;
}
