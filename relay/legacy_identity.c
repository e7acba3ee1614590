/* legacy_identity.c - a legacy client's identity from the app's own negotiate, in service mode (see legacy_identity.h). */
#include "relay/legacy_identity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub/conn_token.h"
#include "hub/service_token.h"
#include "protocol/legacy_connection_data.h"
#include "protocol/negotiate.h"
#include "protocol/urlencoded.h"
#include "relay/backend.h"
#include "relay/clock.h"
#include "relay/http.h"
#include "relay/legacy_request.h"
#include "relay/legacy_link.h"
#include "relay/log.h"
#include "relay/service.h"
#include "relay/service_channel.h"
#include "relay/service_client.h"

#define JSON_UTF8 "application/json; charset=UTF-8"

/* One hub's part: the app's negotiate for it, then the claims of its token. */
struct identity_hub {
    struct legacy_identity *id;
    struct legacy_hub *hub;             /* endpoint->name: the configured name */
    struct backend_negotiate *request;  /* in flight */
    struct hub_claim *claims;           /* once verified (free()), strings in storage */
    size_t claim_count;
    char *storage;
    char conn_id[CONN_ID_LEN + 1];      /* what the app knows the client by on this hub */
    legacy_identity_done done;          /* asked after connect (legacy_identity_ask): told, not the negotiate */
    void *done_owner;
};

struct legacy_identity {
    struct legacy_identities *ids;
    struct dict_entry entry;            /* ids->by_id once every hub answered */
    bool in_table;
    struct list_node link;              /* ids->in_flight while negotiating */
    struct timer_entry expiry;          /* unused after --negotiate-timeout: dropped */
    struct legacy_request *request;     /* the client's negotiate, while it waits */
    char *answer;                       /* its answer once every hub accepted the client */
    size_t answer_len;
    size_t waiting;                     /* hubs not answered yet */
    size_t hub_count;
    struct identity_hub hubs[LEGACY_MAX_HUBS];
    char connection_id[CONN_ID_LEN + 1];
};

/* ------------------------------------------------------------------ table */

void legacy_identities_init(struct legacy_identities *ids, struct loop *loop, struct backends *backends,
                            struct service *service, const uint8_t seed[DICT_SEED_LEN])
{
    ids->loop = loop;
    ids->backends = backends;
    ids->service = service;
    dict_init(&ids->by_id, seed);
    list_init_head(&ids->in_flight);
}

static void cancel_requests(struct legacy_identity *id)
{
    for (size_t i = 0; i < id->hub_count; i++) {
        if (id->hubs[i].request)
            backend_negotiate_cancel(id->hubs[i].request);
        id->hubs[i].request = NULL;
    }
}

void legacy_identity_free(struct legacy_identity *id)
{
    if (!id)
        return;
    cancel_requests(id);
    timer_cancel(&id->expiry);
    if (id->in_table)
        dict_remove(&id->ids->by_id, &id->entry);
    if (list_is_linked(&id->link))
        list_unlink(&id->link);
    if (id->request) /* its wsi still holds it: lws closes it, nobody is told */
        id->request->owner = NULL;
    for (size_t i = 0; i < id->hub_count; i++) {
        free(id->hubs[i].claims);
        free(id->hubs[i].storage);
    }
    free(id->answer);
    free(id);
}

void legacy_identities_free(struct legacy_identities *ids)
{
    if (!ids->in_flight.next)
        return; /* never initialised */
    while (!list_is_empty(&ids->in_flight)) {
        struct legacy_identity *id = list_container_of(ids->in_flight.next, struct legacy_identity, link);
        if (id->request) { /* lws closes it: nothing to answer */
            id->request->owner = NULL;
            id->request = NULL;
        }
        legacy_identity_free(id);
    }
    struct dict_iter it;
    struct dict_entry *e;
    dict_iter_begin(&it, &ids->by_id);
    while ((e = dict_iter_next(&it)) != NULL)
        legacy_identity_free(list_container_of(e, struct legacy_identity, entry));
    dict_iter_end(&it);
    dict_free(&ids->by_id);
}

static void expired(struct timer_entry *e)
{
    struct legacy_identity *id = list_container_of(e, struct legacy_identity, expiry);
    log_debug("legacy %s: negotiated identity expired unused", id->connection_id);
    legacy_identity_free(id);
}

struct legacy_identity *legacy_identity_take(struct legacy_identities *ids, const char *connection_id)
{
    struct dict_entry *e = ids ? dict_remove_key(&ids->by_id, span_from_cstr(connection_id)) : NULL;
    if (!e)
        return NULL;
    struct legacy_identity *id = list_container_of(e, struct legacy_identity, entry);
    id->in_table = false;
    timer_cancel(&id->expiry);
    return id;
}

bool legacy_identity_claims(const struct legacy_identity *id, const char *hub, const struct hub_claim **claims,
                            size_t *count, const char **connection_id)
{
    for (size_t i = 0; id && i < id->hub_count; i++) {
        if (id->hubs[i].hub && id->hubs[i].claims && span_eq_nocase(span_from_cstr(id->hubs[i].hub->endpoint->name), span_from_cstr(hub))) {
            *claims = id->hubs[i].claims;
            *count = id->hubs[i].claim_count;
            *connection_id = id->hubs[i].conn_id;
            return true;
        }
    }
    return false;
}

bool legacy_identity_needed(struct legacy_hub *const *hubs, size_t hub_count)
{
    for (size_t i = 0; i < hub_count; i++)
        if (hubs[i]->app_identity)
            return true;
    return false;
}

/* -------------------------------------------------------------- answers */

/* The client's negotiate is answered with the refusal; the identity goes. */
static void refuse(struct legacy_identity *id, unsigned status, const char *text, size_t len)
{
    if (id->request) {
        struct legacy_request *r = id->request;
        id->request = NULL;
        r->owner = NULL;
        legacy_request_answer(r, status, "text/plain", text, len);
    }
    legacy_identity_free(id);
}

static void accepted(struct legacy_identity *id);

/* A hub asked after connect: its asker hears why, the slot is free again. */
static void late_refused(struct identity_hub *ih, const char *text)
{
    legacy_identity_done done = ih->done;
    void *owner = ih->done_owner;
    struct legacy_hub *hub = ih->hub;
    free(ih->claims);
    free(ih->storage);
    memset(ih, 0, sizeof *ih);
    done(owner, hub, text);
}

static void refuse_text(struct identity_hub *ih, unsigned status, const char *fmt, const char *hub, const char *why)
{
    char text[600];
    int n = snprintf(text, sizeof text, fmt, hub, why ? why : "");
    log_info("legacy %s %s: %s", ih->done ? "late identity" : "negotiate", ih->id->connection_id, text);
    if (ih->done)
        late_refused(ih, text);
    else
        refuse(ih->id, status, text, n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
}

/* The hub's claims are known: the negotiate goes on, or the asker is told. */
static void hub_verified(struct identity_hub *ih)
{
    struct legacy_identity *id = ih->id;
    if (ih->done) {
        legacy_identity_done done = ih->done;
        ih->done = NULL;
        done(ih->done_owner, ih->hub, NULL);
    } else if (--id->waiting == 0) {
        accepted(id);
    }
}

/* Every hub accepted the client: the identity waits for the connect, the client gets its answer. */
static void accepted(struct legacy_identity *id)
{
    struct legacy_identities *ids = id->ids;
    list_unlink(&id->link);
    if (dict_insert(&ids->by_id, &id->entry, span_from_cstr(id->connection_id)) != DICT_OK) {
        refuse(id, 500, "The relay could not complete negotiate.", 39);
        return;
    }
    id->in_table = true;
    loop_timer_schedule(ids->loop, &id->expiry, clock_now_ms() + ids->loop->cfg->negotiate_ttl_ms);
    struct legacy_request *r = id->request;
    id->request = NULL;
    r->owner = NULL;
    ids->loop->stats.legacy_negotiations++;
    legacy_request_answer(r, 200, JSON_UTF8, id->answer, id->answer_len);
    free(id->answer);
    id->answer = NULL;
}

/* The hub key of the app's redirect (its hub= argument). False when there is none. */
static bool redirect_hub_key(struct span url, struct buf *key)
{
    const char *q = url.ptr ? memchr(url.ptr, '?', url.len) : NULL;
    if (!q)
        return false;
    size_t len = url.len - (size_t)(q + 1 - url.ptr);
    struct urlencoded_limits limits = URLENCODED_QUERY_LIMITS;
    return urlencoded_find(q + 1, len, "hub", URLENCODED_PLUS_IS_SPACE, &limits, key, NULL) == PROTO_OK &&
           key->len > 0 && key->len <= SERVICE_HUB_KEY_MAX;
}

/* The app's redirect: its token must verify for its hub key, whose service hub takes clients. */
static void verify_redirect(struct identity_hub *ih, const struct negotiate_response *resp)
{
    struct legacy_identity *id = ih->id;
    struct service *svc = id->ids->service;
    const char *name = ih->hub->endpoint->name;
    struct buf key;
    buf_init(&key);
    if (!span_is_set(resp->url) || !span_is_set(resp->access_token) || !redirect_hub_key(resp->url, &key)) {
        buf_free(&key);
        refuse_text(ih, 502, "The app's negotiate for hub '%s' did not redirect its client to a service hub%s: is the "
                             "app in service mode, pointed at this relay?", name, "");
        return;
    }
    struct svc_token t;
    svc_token_init(&t);
    struct svc_token_check check = {
        .keys = svc->keys, .key_count = svc->key_count, .now = service_unix_now(),
        .skew = SVC_TOKEN_DEFAULT_SKEW, .kind = SVC_TOKEN_CLIENT, .hub = buf_span(&key),
    };
    struct proto_error err = { 0 };
    struct service_hub *hub = service_hub_find(svc, buf_span(&key));
    if (svc_token_verify(resp->access_token, &check, &t, &err) != PROTO_OK) {
        refuse_text(ih, 502, "The app's access token for hub '%s' does not verify with the relay's service keys: %s",
                    name, err.detail[0] ? err.detail : "invalid");
    } else if (!hub || !service_hub_accepting(hub)) {
        refuse_text(ih, 503, "No app server is connected to hub '%s'%s.", name, "");
    } else {
        svc_token_map_inbound(&t); /* OpenConnection's long claim types, as for Core clients */
        ih->claims = service_client_claims(&t, &ih->storage);
        ih->claim_count = ih->claims ? t.claim_count : 0;
        service_named_endpoint_learn((struct service_named_endpoint *)ih->hub->endpoint, buf_span(&key));
        if (!ih->claims)
            refuse_text(ih, 500, "The relay ran out of memory for hub '%s'%s.", name, "");
        else
            hub_verified(ih);
    }
    svc_token_free(&t);
    buf_free(&key);
}

static void app_negotiated(void *owner, unsigned status, const char *body, size_t len, const char *error)
{
    struct identity_hub *ih = owner;
    struct legacy_identity *id = ih->id;
    const char *name = ih->hub->endpoint->name;
    ih->request = NULL;
    if (status == 0) {
        refuse_text(ih, 503, "The app's negotiate for hub '%s' is unreachable: %s", name, error);
        return;
    }
    if (status != 200 && ih->done) {
        char why[300];
        snprintf(why, sizeof why, "%u%s%.*s", status, len ? ", " : "", (int)(len < 200 ? len : 200), body ? body : "");
        refuse_text(ih, status, "the app's negotiate for hub '%s' refused the client (%s)", name, why);
        return;
    }
    if (status != 200) { /* the app's refusal ([Authorize] and friends) is the legacy client's */
        log_info("legacy negotiate %s: the app refused the client for hub %s (%u)", id->connection_id, name, status);
        refuse(id, status, body, len);
        return;
    }
    struct negotiate_response resp;
    struct proto_error err = { 0 };
    if (negotiate_decode_response(body, len, &resp, &err) != PROTO_OK) {
        refuse_text(ih, 502, "The app answered the negotiate for hub '%s' with a body the relay cannot read: %s", name,
                    err.detail);
        return;
    }
    if (span_is_set(resp.error)) {
        char why[300];
        snprintf(why, sizeof why, "%.*s", (int)resp.error.len, resp.error.ptr);
        refuse_text(ih, 403, "The app refused the negotiate for hub '%s': %s", name, why);
    } else {
        verify_redirect(ih, &resp);
    }
    negotiate_response_release(&resp);
}

/* -------------------------------------------------------------- negotiate */

static void client_left(void *owner, struct legacy_request *r)
{
    struct legacy_identity *id = owner;
    (void)r;
    id->request = NULL;
    legacy_identity_free(id);
}

/* Starts the app's negotiate for every service-mode hub of the list. False when one could not start. */
static bool start_requests(struct legacy_identity *id, struct lws *wsi, struct legacy_hub *const *hubs,
                           size_t hub_count)
{
    static const char *const not_forwarded[] = { "transport", "clientProtocol", "connectionToken", "connectionData",
                                                 "messageId", "groupsToken", "tid", "_", "noCache", "frameId" };
    struct buf query;
    buf_init(&query);
    char forwarded_for[512];
    struct header_list headers;
    header_list_capture(&headers, wsi);
    http_forwarded_for(wsi, forwarded_for, sizeof forwarded_for);
    bool ok = http_query_forward(wsi, &query, not_forwarded, sizeof not_forwarded / sizeof not_forwarded[0]) &&
              buf_append_byte(&query, '\0');
    for (size_t i = 0; ok && i < hub_count; i++) {
        struct legacy_hub *hub = hubs[i];
        bool seen = false;
        for (size_t k = 0; k < id->hub_count; k++)
            seen = seen || id->hubs[k].hub == hub;
        if (!hub->app_identity || seen)
            continue;
        const struct relay_config *cfg = id->ids->loop->cfg;
        const char *name = hub->endpoint->name;
        const struct hub_route *route = config_find_hub(cfg, name, strlen(name));
        struct identity_hub *ih = &id->hubs[id->hub_count++];
        ih->id = id;
        ih->hub = hub;
        if (id->hub_count == 1)
            snprintf(ih->conn_id, sizeof ih->conn_id, "%s", id->connection_id);
        else
            ok = conn_id_generate(ih->conn_id);
        id->waiting++;
        struct backend_params params = { route, query.data, &headers, forwarded_for, cfg->backend_timeout_ms, NULL };
        ok = ok && route && backend_query_fits(route, query.len, 0) &&
             (ih->request = backend_negotiate_start(id->ids->backends, &params, app_negotiated, ih)) != NULL;
    }
    header_list_free(&headers);
    buf_free(&query);
    return ok;
}

int legacy_identity_negotiate(struct legacy_identities *ids, struct lws *wsi, const char *suffix,
                              const char *connection_id, struct legacy_hub *const *hubs, size_t hub_count,
                              const char *body, size_t body_len)
{
    const struct relay_config *cfg = ids->loop->cfg;
    struct legacy_identity *id = calloc(1, sizeof *id);
    char *answer = malloc(body_len ? body_len : 1);
    struct legacy_request *r = id && answer && !lws_get_opaque_user_data(wsi) ? legacy_request_new(cfg, wsi, suffix)
                                                                                : NULL;
    if (!r) {
        free(id);
        free(answer);
        return http_respond_text(cfg, wsi, 500, "The relay could not complete negotiate.");
    }
    memcpy(answer, body, body_len);
    id->ids = ids;
    id->answer = answer;
    id->answer_len = body_len;
    snprintf(id->connection_id, sizeof id->connection_id, "%s", connection_id);
    timer_entry_init(&id->expiry, expired);
    list_push_back(&ids->in_flight, &id->link);
    r->dispatched = true;
    /* The query and headers are read before the request waits (lws lets its headers go then). */
    if (!start_requests(id, wsi, hubs, hub_count)) {
        legacy_identity_free(id);
        legacy_request_free(r);
        return http_respond_text(cfg, wsi, 503, "The relay could not ask the app's negotiate who the client is.");
    }
    id->request = r;
    legacy_request_wait(r, id, client_left);
    return 0;
}

/* A free slot of the identity for hub (one a refusal left, or a new one); NULL when all are taken. */
static struct identity_hub *late_slot(struct legacy_identity *id)
{
    for (size_t i = 0; i < id->hub_count; i++)
        if (!id->hubs[i].hub)
            return &id->hubs[i];
    return id->hub_count < LEGACY_MAX_HUBS ? &id->hubs[id->hub_count++] : NULL;
}

static struct legacy_identity *identity_new(struct legacy_identities *ids, const char *connection_id)
{
    struct legacy_identity *id = calloc(1, sizeof *id);
    if (!id)
        return NULL;
    id->ids = ids;
    snprintf(id->connection_id, sizeof id->connection_id, "%s", connection_id);
    timer_entry_init(&id->expiry, expired);
    return id;
}

bool legacy_identity_ask(struct legacy_identities *ids, struct legacy_identity **idp, const char *connection_id,
                         struct legacy_hub *hub, const struct legacy_identity_source *from, legacy_identity_done done,
                         void *owner)
{
    if (!ids || !hub->app_identity)
        return false;
    if (!*idp && !(*idp = identity_new(ids, connection_id)))
        return false;
    struct legacy_identity *id = *idp;
    bool first = true;
    for (size_t i = 0; i < id->hub_count; i++)
        first = first && !id->hubs[i].hub;
    struct identity_hub *ih = late_slot(id);
    if (!ih)
        return false;
    const struct relay_config *cfg = ids->loop->cfg;
    const char *name = hub->endpoint->name;
    const struct hub_route *route = config_find_hub(cfg, name, strlen(name));
    const char *query = from->query ? from->query : "";
    *ih = (struct identity_hub){ .id = id, .hub = hub, .done = done, .done_owner = owner };
    if (first)
        snprintf(ih->conn_id, sizeof ih->conn_id, "%s", connection_id);
    struct backend_params params = { route, query, from->headers, from->forwarded_for, cfg->backend_timeout_ms, NULL };
    if ((first || conn_id_generate(ih->conn_id)) && route && backend_query_fits(route, strlen(query), 0) &&
        (ih->request = backend_negotiate_start(ids->backends, &params, app_negotiated, ih)) != NULL) {
        log_debug("legacy %s: asking the app who the client is on hub %s, which it did not list", connection_id, name);
        return true;
    }
    memset(ih, 0, sizeof *ih);
    return false;
}

bool legacy_identity_unserved(struct legacy_identities *ids, struct span hub, char *text, size_t text_len)
{
    if (!ids || !service_hub_find(ids->service, hub))
        return false;
    snprintf(text, text_len,
             "The hub '%.*s' is served by an app in service mode; the relay takes legacy clients to it only with "
             "--app-negotiate %.*s=<the app's hub URL>, whose negotiate tells who the client is.",
             (int)hub.len, hub.ptr, (int)hub.len, hub.ptr);
    return true;
}
