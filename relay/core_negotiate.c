/* core_negotiate.c - Core negotiate through the backend (see core_negotiate.h). */
#include "relay/core_negotiate.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/backend.h"
#include "containers/buf.h"
#include "relay/clock.h"
#include "hub/conn_token.h"
#include "relay/http.h"
#include "relay/log.h"
#include "relay/tls.h"
#include "protocol/negotiate.h"

static void set_text_reply(struct negotiation *n, unsigned status, const char *text);

/* The backend has not answered the negotiate in --backend-timeout: the client
 * gets 504 naming the hub rather than a connection closed without a word. */
static void backend_too_slow(struct negotiation *n)
{
    backend_negotiate_timed_out(n->request);
    n->request = NULL;
    n->table->loop->stats.backend_failures++;
    char text[512];
    snprintf(text, sizeof text, "The backend hub '%s' did not answer the negotiate within %u s.", n->hub->name,
             n->table->loop->cfg->backend_timeout_ms / 1000);
    log_warn("negotiate: %s", text);
    set_text_reply(n, 504, text);
    if (n->http_wsi)
        http_answer_ready(n->http_wsi);
}

/* One timer, two deadlines: while the backend's answer is awaited, the
 * backend timeout; once the token is in the table, its expiry. */
static void negotiation_expired(struct timer_entry *e)
{
    struct negotiation *n = list_container_of(e, struct negotiation, expiry);
    if (n->request) {
        backend_too_slow(n);
        return;
    }
    log_debug("negotiate: token for hub %s expired unused", n->hub->name);
    if (n->http_wsi) { /* its answer could not be written all this time: let that request go too */
        lws_set_opaque_user_data(n->http_wsi, NULL);
        lws_set_timeout(n->http_wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    }
    dict_remove(&n->table->by_token, &n->entry);
    n->in_table = false;
    core_negotiation_free(n);
}

void core_negotiation_free(struct negotiation *n)
{
    if (n->request)
        backend_negotiate_cancel(n->request);
    if (n->in_table)
        dict_remove(&n->table->by_token, &n->entry);
    timer_cancel(&n->expiry);
    free(n->backend_connection_id);
    free(n->backend_token);
    free(n->reply_body);
    buf_free(&n->early);
    free(n);
}

static void set_reply(struct negotiation *n, unsigned status, const char *type, const char *body, size_t len)
{
    free(n->reply_body);
    n->reply_body = malloc(len + 1);
    n->reply_len = n->reply_body ? len : 0;
    if (n->reply_body) {
        memcpy(n->reply_body, body, len);
        n->reply_body[len] = '\0';
    }
    n->reply_status = status;
    n->reply_type = type;
}

static void set_text_reply(struct negotiation *n, unsigned status, const char *text)
{
    set_reply(n, status, "text/plain", text, strlen(text));
}

/* The backend answered 200 with a negotiate body: remember its id/token and
 * give the client the relay's own token for them. */
static void accept_backend_reply(struct negotiation *n, const struct backend_pin *pin, const char *body, size_t len)
{
    struct negotiate_response resp;
    struct proto_error err = { 0 };
    if (negotiate_decode_response(body, len, &resp, &err) != PROTO_OK) {
        log_warn("negotiate: backend for hub %s answered an unreadable negotiate body: %s",
                 n->hub->name, err.detail);
        set_text_reply(n, 502, "The backend hub answered negotiate with a body the relay cannot read.");
        return;
    }
    struct buf out;
    buf_init(&out);
    if (span_is_set(resp.error)) {
        /* The backend refused (e.g. a version it does not support): pass its words on. */
        negotiate_encode_error(resp.error, &out, NULL);
        set_reply(n, 200, "application/json", out.data, out.len);
    } else if (span_is_set(resp.url)) {
        set_text_reply(n, 502, "The backend hub answered negotiate with a redirect; the relay does not follow redirects.");
    } else {
        n->backend_connection_id = strndup(resp.connection_id.ptr, resp.connection_id.len);
        struct span backend_token = resp.version > 0 ? resp.connection_token : resp.connection_id;
        char *token = strndup(backend_token.ptr, backend_token.len);
        /* The client's WebSocket goes to the backend process that answered (see backend_pin_join). */
        n->backend_token = token ? backend_pin_join(pin, token) : NULL;
        free(token);
        bool minted = n->client_version > 0 ? conn_id_generate(n->token)
                                            : (snprintf(n->token, sizeof n->token, "%s", n->backend_connection_id) > 0);
        struct negotiate_reply reply = {
            .version = n->client_version,
            .connection_id = span_from_cstr(n->backend_connection_id),
            .connection_token = span_from_cstr(n->token),
            .transports = NEGOTIATE_TRANSPORT_ALL,
            .use_stateful_reconnect = n->stateful, /* the relay keeps it, the backend never sees it */
        };
        if (!n->backend_connection_id || !n->backend_token || !minted ||
            negotiate_encode_response(&reply, &out, NULL) != PROTO_OK ||
            dict_insert(&n->table->by_token, &n->entry, span_from_cstr(n->token)) != DICT_OK) {
            set_text_reply(n, 500, "The relay could not complete negotiate.");
        } else {
            n->in_table = true;
            loop_timer_schedule(n->table->loop, &n->expiry, clock_now_ms() + n->table->loop->cfg->negotiate_ttl_ms);
            set_reply(n, 200, "application/json", out.data, out.len);
        }
    }
    buf_free(&out);
    negotiate_response_release(&resp);
}

static void backend_negotiated(void *owner, unsigned status, const char *body, size_t len, const char *error)
{
    struct negotiation *n = owner;
    struct backend_pin pin;
    backend_negotiate_pin(n->request, &pin);
    n->request = NULL;
    timer_cancel(&n->expiry); /* the backend timeout; a token's expiry is armed below */
    if (status == 0 && strncmp(error, TLS_BACKEND_REFUSED, strlen(TLS_BACKEND_REFUSED)) == 0) {
        /* It answered, with a certificate the relay does not trust: a bad gateway, not a missing one. */
        n->table->loop->stats.backend_failures++;
        log_warn("negotiate: backend for hub %s refused: %s", n->hub->name, error);
        char text[512];
        snprintf(text, sizeof text, "The backend hub '%s' cannot be trusted: %s", n->hub->name, error);
        set_text_reply(n, 502, text);
    } else if (status == 0) {
        n->table->loop->stats.backend_failures++;
        log_warn("negotiate: backend for hub %s unreachable: %s", n->hub->name, error);
        char text[512];
        snprintf(text, sizeof text, "The backend hub '%s' is unreachable: %s", n->hub->name, error);
        set_text_reply(n, 503, text);
    } else if (status == 200 && n->hub->app_negotiate) {
        /* Service mode: the app's answer is a redirect to the relay's /client/ with its token. */
        set_reply(n, 200, "application/json", body, len);
    } else if (status == 200) {
        accept_backend_reply(n, &pin, body, len);
    } else {
        /* 401/403/404 and friends: the client sees what it would have seen. */
        set_reply(n, status, "text/plain", body, len);
    }
    if (n->http_wsi)
        http_answer_ready(n->http_wsi);
}

int core_negotiate_begin(struct core_negotiations *table, struct lws *wsi, const struct hub_route *hub)
{
    const struct relay_config *cfg = table->loop->cfg;
    struct buf version_text, error_text, query;
    buf_init(&version_text);
    buf_init(&error_text);
    buf_init(&query);
    int version = 0;
    /* Read whole: a long value cut (or taken for none) would be another version. */
    enum http_arg found = http_query_value(wsi, "negotiateVersion", &version_text);
    struct span value = found == HTTP_ARG_FOUND ? buf_span(&version_text) : SPAN_NONE;
    enum proto_status parsed = found == HTTP_ARG_NOMEM ? PROTO_ERR_NOMEM
                                                       : negotiate_parse_version(value, 0, &version, &error_text, NULL);
    buf_free(&version_text);
    if (parsed == PROTO_ERR_NOMEM) {
        buf_free(&error_text);
        return http_respond_text(cfg, wsi, 500, "out of memory");
    }
    if (parsed != PROTO_OK) {
        struct buf body;
        buf_init(&body);
        negotiate_encode_error(buf_span(&error_text), &body, NULL);
        int rc = http_respond(cfg, wsi, 200, "application/json", body.data, body.len);
        buf_free(&body);
        buf_free(&error_text);
        return rc;
    }
    buf_free(&error_text);
    struct buf stateful_text;
    buf_init(&stateful_text);
    bool stateful = !cfg->stateful_reconnect_off &&
                    http_query_value(wsi, "useStatefulReconnect", &stateful_text) == HTTP_ARG_FOUND &&
                    negotiate_query_bool(buf_span(&stateful_text));
    buf_free(&stateful_text);

    struct negotiation *n = calloc(1, sizeof *n);
    static const char *const not_forwarded[] = { "negotiateVersion", "useStatefulReconnect", "id" };
    if (!n || !http_query_forward(wsi, &query, not_forwarded, sizeof not_forwarded / sizeof not_forwarded[0]) || !buf_append_byte(&query, '\0')) {
        free(n);
        buf_free(&query);
        return http_respond_text(cfg, wsi, 500, "out of memory");
    }
    /* Room for the query and the id the link adds later (the backend's token, ~22 characters). */
    if (!backend_query_fits(hub, query.len, 64)) {
        free(n);
        buf_free(&query);
        return http_respond_text(cfg, wsi, 414, "The query is too long for the relay to pass on to the backend hub.");
    }
    n->role = WSI_ROLE_NEGOTIATION;
    n->table = table;
    n->hub = hub;
    n->client_version = version;
    n->stateful = stateful;
    n->http_wsi = wsi;
    timer_entry_init(&n->expiry, negotiation_expired);
    table->loop->stats.negotiations++;

    char forwarded_for[512];
    struct header_list headers;
    header_list_capture(&headers, wsi);
    http_forwarded_for(wsi, forwarded_for, sizeof forwarded_for);
    struct backend_params params = { hub, query.data, &headers, forwarded_for, 0, NULL }; /* timed here: backend_too_slow */
    n->request = backend_negotiate_start(table->backends, &params, backend_negotiated, n);
    header_list_free(&headers);
    buf_free(&query);
    if (!n->request) {
        core_negotiation_free(n);
        return http_respond_text(cfg, wsi, 503, "The backend hub is unreachable.");
    }
    lws_set_opaque_user_data(wsi, n);
    http_answer_later(wsi);
    loop_timer_schedule(table->loop, &n->expiry, clock_now_ms() + cfg->backend_timeout_ms);
    return 0;
}

int core_negotiate_write_reply(struct negotiation *n, struct lws *wsi)
{
    if (n->request)
        return 0; /* spurious writeable before the backend answered */
    lws_set_opaque_user_data(wsi, NULL);
    n->http_wsi = NULL;
    int rc = http_respond(n->table->loop->cfg, wsi, n->reply_status, n->reply_type, n->reply_body, n->reply_len);
    if (!n->in_table)
        core_negotiation_free(n);
    else {
        free(n->reply_body);
        n->reply_body = NULL;
    }
    return rc;
}

void core_negotiate_abandon(struct negotiation *n)
{
    n->http_wsi = NULL;
    core_negotiation_free(n);
}

void core_negotiations_init(struct core_negotiations *table, struct loop *loop, struct backends *backends,
                            const uint8_t seed[DICT_SEED_LEN])
{
    dict_init(&table->by_token, seed);
    table->loop = loop;
    table->backends = backends;
}

size_t core_negotiations_pending(const struct core_negotiations *table)
{
    return dict_count(&table->by_token);
}

struct negotiation *core_negotiation_take(struct core_negotiations *table, const char *token)
{
    struct dict_entry *e = dict_remove_key(&table->by_token, span_from_cstr(token));
    if (!e)
        return NULL;
    struct negotiation *n = list_container_of(e, struct negotiation, entry);
    n->in_table = false;
    timer_cancel(&n->expiry);
    return n;
}

static struct negotiation *find(struct core_negotiations *table, const char *token)
{
    struct dict_entry *e = dict_find(&table->by_token, span_from_cstr(token));
    return e ? list_container_of(e, struct negotiation, entry) : NULL;
}

bool core_negotiation_known(struct core_negotiations *table, const char *token)
{
    return find(table, token) != NULL;
}

unsigned core_negotiation_early_send(struct core_negotiations *table, const char *token, const void *data, size_t len)
{
    struct negotiation *n = find(table, token);
    if (!n)
        return 404;
    if (n->early.len + len > table->loop->cfg->max_message_bytes)
        return 413;
    return buf_append(&n->early, data, len) ? 200 : 500;
}

void core_negotiation_take_early(struct core_negotiations *table, const char *token, struct buf *out)
{
    struct negotiation *n = find(table, token);
    if (!n)
        return;
    *out = n->early;
    buf_init(&n->early);
}

void core_negotiations_clear(struct core_negotiations *table)
{
    struct dict_iter it;
    struct dict_entry *e;
    dict_iter_begin(&it, &table->by_token);
    while ((e = dict_iter_next(&it)) != NULL) {
        struct negotiation *n = list_container_of(e, struct negotiation, entry);
        dict_remove(&table->by_token, e);
        n->in_table = false;
        core_negotiation_free(n);
    }
    dict_iter_end(&it);
    dict_free(&table->by_token);
}
