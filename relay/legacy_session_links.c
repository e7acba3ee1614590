/* legacy_session_links.c - a legacy session's hub links: one per hub it uses, opened at connect for
 * the hubs of its connectionData and on demand for others, and what they bring back to the session
 * (see legacy_session.h). In service mode, a hub the client did not list is opened only once the
 * app's negotiate said who the client is there (relay/legacy_identity.h). */
#include "relay/legacy_session.h"

#include <stdlib.h>

#include "relay/legacy_identity.h"
#include "relay/wsmsg.h"

static const struct legacy_link_ops session_link_ops;

static bool any_link_full(const struct legacy_session *s)
{
    for (size_t i = 0; i < s->link_count; i++)
        if (legacy_link_full(s->links[i]))
            return true;
    return false;
}

static void link_push(void *owner, struct replay_text *element)
{
    legacy_session_push_text(owner, element);
}

/* A hub result: in the answer of the /send that waits for it (SSE, long
 * polling), else on the WebSocket. */
static void link_reply(void *owner, const char *frame, size_t len)
{
    if (!legacy_send_result(owner, frame, len))
        legacy_session_queue_text(owner, frame, len);
}

static void link_changed(void *owner, struct legacy_link *l)
{
    struct legacy_session *s = owner;
    if (l->state == LEGACY_LINK_FAILED && l->listed && s->start.wsi == NULL && s->started)
        legacy_session_end(s, l->failure);
    else
        legacy_start_check(&s->start);
}

/* A link drained: the client is read again once no link is full. */
static void link_drained(void *owner)
{
    struct legacy_session *s = owner;
    if (!any_link_full(s)) {
        wsmsg_resume_reading(s->carrier == LEGACY_CARRIER_WEBSOCKET ? s->wsi : NULL, &s->client_paused);
        legacy_send_resume(s);
    }
}

static const struct legacy_link_ops session_link_ops = {
    link_push, link_reply, link_changed, link_drained,
};

/* Who the client is to hub's channel: in service mode the claims the app's negotiate gave
 * (none: the service channel refuses the client). */
static struct hub_channel_client session_client(const struct legacy_session *s, const struct legacy_hub *hub)
{
    struct hub_channel_client client = {
        .connection_id = s->connection_id,
        .headers = &s->headers,
        .query = s->query,
        .forwarded_for = s->forwarded_for,
    };
    if (hub->app_identity)
        legacy_identity_claims(s->identity, hub->endpoint->name, &client.claims, &client.claim_count,
                               &client.connection_id);
    return client;
}

/* The app answered who the client is on a hub it did not list: its held link opens or fails. */
static void identity_known(void *owner, struct legacy_hub *hub, const char *refusal)
{
    struct legacy_session *s = owner;
    for (size_t i = 0; i < s->link_count && !s->closing; i++) {
        struct legacy_link *l = s->links[i];
        if (l->hub != hub || !l->awaiting_identity)
            continue;
        if (refusal) {
            legacy_link_refuse(l, refusal);
        } else {
            struct hub_channel_client client = session_client(s, hub);
            legacy_link_connect(l, &client);
        }
        return;
    }
}

/* Service mode, a hub not listed at negotiate: the app is asked who the client is there first. */
static struct legacy_link *open_link_later(struct legacy_session *s, struct legacy_hub *hub, struct span spelled)
{
    struct legacy_link *l = legacy_link_open_later(hub, spelled, &session_link_ops, s);
    struct legacy_identity_source from = { &s->headers, s->query, s->forwarded_for };
    if (l && !legacy_identity_ask(s->table->identities, &s->identity, s->connection_id, hub, &from, identity_known, s)) {
        legacy_link_refuse(l, "the relay could not ask the app's negotiate who the client is on this hub");
    }
    return l;
}

struct legacy_link *legacy_session_open_link(struct legacy_session *s, struct legacy_hub *hub, struct span spelled, bool listed)
{
    struct legacy_link **grown = realloc(s->links, (s->link_count + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    s->links = grown;
    struct hub_channel_client client = session_client(s, hub);
    struct legacy_link *l = hub->app_identity && !listed && !client.claims
                                ? open_link_later(s, hub, spelled)
                                : legacy_link_open(hub, &client, spelled, listed, &session_link_ops, s);
    if (!l)
        return NULL;
    s->links[s->link_count++] = l;
    if (s->links_paused)
        legacy_link_pause(l, true);
    return l;
}

struct legacy_link *legacy_session_find_link(struct legacy_session *s, struct span hub)
{
    for (size_t i = 0; i < s->link_count; i++)
        if (span_eq_nocase(span_from_cstr(s->links[i]->hub->endpoint->name), hub))
            return s->links[i];
    return NULL;
}

