/* service_client.c - /client/negotiate and the /client/ WebSocket of service mode's Core clients (see service_client.h). */
#include "relay/service_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hub/conn_token.h"
#include "hub/service_token.h"
#include "protocol/negotiate.h"
#include "relay/clock.h"
#include "relay/core_http.h"
#include "relay/http.h"
#include "relay/log.h"

/* Checks the client JWT for the hub named by hub=. *why says why not. */
static bool verify_client(struct service *svc, struct lws *wsi, struct service_hub **hub, struct svc_token *t,
                          const char **why)
{
    char key[256], jwt[SVC_TOKEN_MAX_CHARS + 1];
    int key_len = http_query_arg(wsi, "hub", key, sizeof key);
    *hub = key_len > 0 ? service_hub_find(svc, span_make(key, (size_t)key_len)) : NULL;
    if (!*hub) {
        *why = "no app has connected this hub";
        return false;
    }
    int n = service_request_token(wsi, jwt, sizeof jwt);
    struct svc_token_check check = {
        .keys = svc->keys, .key_count = svc->key_count, .now = service_unix_now(),
        .skew = SVC_TOKEN_DEFAULT_SKEW, .kind = SVC_TOKEN_CLIENT, .hub = span_from_cstr((*hub)->key),
    };
    struct proto_error err = { 0 };
    if (n <= 0) {
        *why = "no access token";
        return false;
    }
    if (svc_token_verify(span_make(jwt, (size_t)n), &check, t, &err) != PROTO_OK) {
        *why = err.detail[0] ? err.detail : "invalid access token";
        return false;
    }
    return true;
}

/* Whether the client asked for stateful reconnect (useStatefulReconnect=true) and the relay allows it.
 * As in proxy mode (core_negotiate.c), the relay keeps it: the app never sees the question. */
static bool stateful_asked(const struct relay_config *cfg, struct lws *wsi)
{
    struct buf text;
    buf_init(&text);
    bool asked = !cfg->stateful_reconnect_off && http_query_value(wsi, "useStatefulReconnect", &text) == HTTP_ARG_FOUND &&
                 negotiate_query_bool(buf_span(&text));
    buf_free(&text);
    return asked;
}

/* Remembers that id's negotiate offered stateful reconnect, for as long as its token can open. */
static bool offer_stateful(struct service *svc, const char *id)
{
    uint64_t now_ms = clock_now_ms();
    return spent_ids_add(&svc->stateful, span_from_cstr(id), now_ms + svc->loop->cfg->negotiate_ttl_ms + 2000u, now_ms);
}

static int negotiate(struct service *svc, struct lws *wsi)
{
    const struct relay_config *cfg = svc->loop->cfg;
    struct service_hub *hub;
    struct svc_token t;
    const char *why = "";
    svc_token_init(&t);
    if (!verify_client(svc, wsi, &hub, &t, &why)) {
        log_info("service: client negotiate refused: %s", why);
        return hub ? http_respond_text(cfg, wsi, 401, "Unauthorized")
                   : http_respond_text(cfg, wsi, 404, "No app server is connected to this hub.");
    }
    struct buf version_text, body;
    buf_init(&version_text);
    buf_init(&body);
    int version = 0;
    int rc;
    /* Read whole: a long value cut (or taken for none) would be another version. v1 clients
     * connect with the relay's token (it carries the id); v0 clients (no negotiateVersion) get
     * only a connectionId and connect with it, so theirs is signed. */
    enum http_arg found = http_query_value(wsi, "negotiateVersion", &version_text);
    struct span value = found == HTTP_ARG_FOUND ? buf_span(&version_text) : SPAN_NONE;
    enum proto_status parsed = negotiate_parse_version(value, 0, &version, &body, NULL);
    buf_free(&version_text);
    if (found == HTTP_ARG_NOMEM) {
        rc = http_respond_text(cfg, wsi, 500, "out of memory");
    } else if (parsed != PROTO_OK) {
        struct buf error;
        buf_init(&error);
        negotiate_encode_error(buf_span(&body), &error, NULL);
        rc = http_respond(cfg, wsi, 200, "application/json", error.data, error.len);
        buf_free(&error);
    } else if (!service_hub_accepting(hub)) {
        rc = http_respond_text(cfg, wsi, 503, "No app server is connected to this hub.");
    } else {
        char id[CONN_ID_LEN + 1];
        struct buf token;
        buf_init(&token);
        struct span hubs[1] = { span_from_cstr(hub->key) };
        struct span user = span_is_set(t.user_id) ? t.user_id : SPAN_LIT("");
        /* Stateful reconnect needs negotiate version 1 (the client resends its token as id=). */
        struct negotiate_reply reply = { .version = version, .transports = NEGOTIATE_TRANSPORT_ALL,
                                         .use_stateful_reconnect = version > 0 && stateful_asked(cfg, wsi) };
        if (version == 0 ? conn_id_mint_signed(&svc->token_key, hubs[0], user, (uint64_t)service_unix_now(), id)
                         : conn_id_generate(id) &&
                               conn_token_mint(&svc->token_key, span_from_cstr(id), user, hubs, 1,
                                               (uint64_t)service_unix_now() * 1000u, &token) &&
                               (!reply.use_stateful_reconnect || offer_stateful(svc, id))) {
            reply.connection_id = span_from_cstr(id);
            reply.connection_token = buf_span(&token);
        }
        if (reply.connection_id.ptr && negotiate_encode_response(&reply, &body, NULL) == PROTO_OK) {
            svc->loop->stats.negotiations++;
            rc = http_respond(cfg, wsi, 200, "application/json", body.data, body.len);
        } else {
            rc = http_respond_text(cfg, wsi, 500, "The relay could not complete negotiate.");
        }
        buf_free(&token);
    }
    buf_free(&body);
    svc_token_free(&t);
    return rc;
}


struct hub_claim *service_client_claims(const struct svc_token *t, char **storage)
{
    size_t bytes = 0;
    for (size_t i = 0; i < t->claim_count; i++)
        bytes += t->claims[i].type.len + t->claims[i].value.len + 2;
    struct hub_claim *claims = calloc(t->claim_count ? t->claim_count : 1, sizeof *claims);
    char *w = *storage = malloc(bytes ? bytes : 1);
    if (!claims || !w) {
        free(claims);
        free(*storage);
        *storage = NULL;
        return NULL;
    }
    for (size_t i = 0; i < t->claim_count; i++) {
        struct span parts[2] = { t->claims[i].type, t->claims[i].value };
        for (int k = 0; k < 2; k++) {
            if (parts[k].len)
                memcpy(w, parts[k].ptr, parts[k].len);
            w[parts[k].len] = '\0';
            if (k == 0)
                claims[i].type = w;
            else
                claims[i].value = w;
            w += parts[k].len + 1;
        }
    }
    return claims;
}

/* A client connection request (the WebSocket upgrade, or the first SSE GET
 * or poll): its JWT for the hub, and the relay's own token from negotiate
 * (id=, for this hub and this user, not stale). NULL with *status and *text
 * set when refused; else the session, made by transport (NULL: a WebSocket). */
static struct core_session *open_client(struct service *svc, struct core_sessions *sessions, struct lws *wsi,
                                        const struct core_transport *transport, unsigned *status, const char **text,
                                        bool dry_run)
{
    const struct relay_config *cfg = svc->loop->cfg;
    struct service_hub *hub;
    struct svc_token t;
    const char *why = "";
    svc_token_init(&t);
    if (!verify_client(svc, wsi, &hub, &t, &why)) {
        log_info("service: client connection refused: %s", why);
        *status = hub ? 401 : 404;
        *text = hub ? "Unauthorized" : "Not Found";
        return NULL;
    }
    /* The relay's own token from negotiate (v1), or the signed id it gave a v0 client: the id,
     * for this hub and this user, not stale. */
    char token[CONN_TOKEN_MAX_CHARS + 1];
    int n = http_query_arg(wsi, "id", token, sizeof token);
    struct span user = span_is_set(t.user_id) ? t.user_id : SPAN_LIT("");
    struct conn_token_claims ct;
    conn_token_claims_init(&ct);
    uint32_t age_s = 0;
    bool v0 = n == CONN_ID_LEN;
    bool ok = v0 ? conn_id_verify_signed(&svc->token_key, span_make(token, CONN_ID_LEN), span_from_cstr(hub->key),
                                         user, (uint64_t)service_unix_now(), &age_s) &&
                       (uint64_t)age_s * 1000u <= cfg->negotiate_ttl_ms + 1000u
                 : n > 0 && conn_token_verify(&svc->token_key, span_make(token, (size_t)n), &ct, NULL) == PROTO_OK &&
                       ct.hub_count == 1 && span_eq_nocase(ct.hubs[0], span_from_cstr(hub->key)) &&
                       span_eq(ct.user, user) && ct.conn_id.len == CONN_ID_LEN;
    /* A stateful client's next WebSocket reaches its session, however old its token: the session is live. */
    struct core_session *live = ok && !v0 && !transport ? core_sessions_find(sessions, token) : NULL;
    if (live && core_stateful_resume(live, wsi, &hub->endpoint)) {
        conn_token_claims_free(&ct);
        svc_token_free(&t);
        log_conn_debug(core_session_id(live), hub->key, "service: the client's next WebSocket (stateful reconnect)");
        return live;
    }
    ok = ok && (v0 || (uint64_t)service_unix_now() * 1000u <= ct.issued_at_ms + cfg->negotiate_ttl_ms + 1000u);
    if (!ok) {
        conn_token_claims_free(&ct);
        svc_token_free(&t);
        *status = 404;
        *text = "No Connection with that ID";
        return NULL;
    }
    char id[CONN_ID_LEN + 1];
    memcpy(id, v0 ? token : ct.conn_id.ptr, CONN_ID_LEN);
    id[CONN_ID_LEN] = '\0';
    conn_token_claims_free(&ct);
    if (svc_hub_find_client(&hub->model, span_from_cstr(id))) {
        svc_token_free(&t);
        *status = 409;
        *text = "The connection is already connected.";
        return NULL;
    }
    /* An id opens once: a request read after its connection ended (a poll sent just before the
     * client's DELETE) would open a second one that no client drives, and the app would wait out
     * its handshake timeout for it. ASP.NET Core answers 404: that connection is gone. */
    uint64_t now_ms = clock_now_ms();
    if (spent_ids_has(&svc->spent, span_from_cstr(id), now_ms)) {
        svc_token_free(&t);
        log_conn_debug(id, hub->key, "service: connection id already used, refused");
        *status = 404;
        *text = "No Connection with that ID";
        return NULL;
    }
    if (dry_run) { /* a POST or DELETE before the first GET: the connection could open */
        svc_token_free(&t);
        *status = 200;
        *text = "";
        return NULL;
    }
    if (!spent_ids_add(&svc->spent, span_from_cstr(id), now_ms + cfg->negotiate_ttl_ms + 2000u, now_ms)) {
        svc_token_free(&t);
        *status = 500;
        *text = "out of memory";
        return NULL;
    }
    /* OpenConnection carries the claims with their long types (spec 3.6, appendix A.11). */
    svc_token_map_inbound(&t);
    char *storage = NULL;
    struct hub_claim *claims = service_client_claims(&t, &storage);
    struct core_session_identity identity = { id, claims, claims ? t.claim_count : 0 };
    struct core_session *s = NULL;
    if (claims && transport)
        s = core_session_create_http(sessions, wsi, &hub->endpoint, NULL, &identity, transport, token);
    else if (claims && (s = core_session_create(sessions, wsi, &hub->endpoint, NULL, &identity)) != NULL)
        early_sends_take(&svc->early, span_make(token, (size_t)n), &s->pending->early, now_ms); /* read once established */
    if (s && !transport && !v0 && spent_ids_has(&svc->stateful, span_from_cstr(id), now_ms)) {
        /* Negotiate offered stateful reconnect: the client's next WebSocket finds the session by its token. */
        s->stateful_offered = true;
        if (!core_session_register(s, token)) {
            core_session_destroy(s);
            s = NULL;
        }
    }
    free(claims);
    free(storage);
    svc_token_free(&t);
    *status = 500;
    *text = "out of memory";
    return s;
}

int service_client_confirm(struct service *svc, struct core_sessions *sessions, struct lws *wsi)
{
    unsigned status = 500;
    const char *text = "";
    struct core_session *s = open_client(svc, sessions, wsi, NULL, &status, &text, false);
    if (!s)
        return status == 500 ? -1 : http_refuse_upgrade(svc->loop->cfg, wsi, status, text);
    lws_set_opaque_user_data(wsi, s);
    return 0;
}

/* The first SSE GET or poll on /client/ (core_http.c's opener). */
struct service_opener_arg {
    struct service *svc;
    struct core_sessions *sessions;
};

static struct core_session *open_http(void *arg, struct lws *wsi, const char *token,
                                      const struct core_transport *transport, unsigned *status, const char **text)
{
    (void)token; /* open_client reads it again, with the JWT */
    struct service_opener_arg *a = arg;
    return open_client(a->svc, a->sessions, wsi, transport, status, text, false);
}

/* A POST or DELETE before the connection's first GET (core_http.h's struct core_http_early):
 * its bytes wait in svc->early while the token could still open the connection. */
static bool early_known(void *ctx, struct lws *wsi, const char *token)
{
    (void)token; /* open_client reads it again, with the JWT */
    unsigned status = 404;
    const char *text = "";
    open_client(ctx, NULL, wsi, &core_longpoll_transport, &status, &text, true);
    return status == 200;
}

static unsigned early_send(void *ctx, const char *token, const void *data, size_t len)
{
    struct service *svc = ctx;
    const struct relay_config *cfg = svc->loop->cfg;
    uint64_t now = clock_now_ms();
    switch (early_sends_append(&svc->early, span_from_cstr(token), data, len, cfg->max_message_bytes,
                               now + cfg->negotiate_ttl_ms + 1000u, now)) {
    case EARLY_OK: return 200;
    case EARLY_TOO_LARGE: return 413;
    case EARLY_NO_MEMORY: return 500;
    default: return 404;
    }
}

static void early_take(void *ctx, const char *token, struct buf *out)
{
    struct service *svc = ctx;
    early_sends_take(&svc->early, span_from_cstr(token), out, clock_now_ms());
}

int service_client_http(struct service *svc, struct core_sessions *sessions, struct lws *wsi, const char *suffix)
{
    const struct relay_config *cfg = svc->loop->cfg;
    enum http_method method = http_request_method(wsi);
    if (method == HTTP_OPTIONS)
        return http_respond_preflight(cfg, wsi);
    if (strcmp(suffix, "/negotiate") == 0 || strcmp(suffix, "/negotiate/") == 0)
        return method == HTTP_POST ? negotiate(svc, wsi) : http_respond_text(cfg, wsi, 405, "");
    if (strcmp(suffix, "") != 0 && strcmp(suffix, "/") != 0)
        return http_respond_text(cfg, wsi, 404, "Not Found");
    /* Server-Sent Events and long polling: a known token is its session's;
     * a new one is verified as the WebSocket upgrade is. */
    struct service_opener_arg arg = { svc, sessions };
    struct core_http_opener opener = { open_http, &arg, { early_known, early_send, early_take, svc } };
    return core_http_handle(sessions, wsi, &opener);
}
