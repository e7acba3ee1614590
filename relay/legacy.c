/* legacy.c - the legacy SignalR endpoint's HTTP side (see legacy.h). */
#include "relay/legacy.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "relay/clock.h"
#include "hub/conn_token.h"
#include "relay/http.h"
#include "protocol/legacy_connection_data.h"
#include "protocol/legacy_cursor.h"
#include "protocol/legacy_frame.h"
#include "protocol/legacy_negotiate.h"
#include "relay/legacy_authorize.h"
#include "relay/legacy_hubs_js.h"
#include "relay/legacy_identity.h"
#include "protocol/urlencoded.h"
#include "relay/legacy_request.h"
#include "relay/legacy_session.h"
#include "relay/legacy_sse.h"
#include "relay/log.h"

#define JSON_UTF8 "application/json; charset=UTF-8"
/* The original server's defaults, which negotiate tells the client. */
#define TRANSPORT_CONNECT_TIMEOUT_MS 5000   /* TransportConnectTimeout: a transport's time to connect */

enum legacy_transport { TRANSPORT_UNKNOWN, TRANSPORT_WEBSOCKETS, TRANSPORT_SSE, TRANSPORT_LONG_POLLING, TRANSPORT_FOREVER_FRAME };

const char *legacy_route(const struct relay_config *cfg, const char *path)
{
    const char *base = cfg->legacy_path;
    size_t n = strlen(base);
    if (n == 0 || strncasecmp(path, base, n) != 0)
        return NULL;
    if (path[n] != '/' && path[n] != '\0')
        return NULL;
    return path + n;
}

static int respond_text(struct legacy_table *t, struct lws *wsi, unsigned status, const char *text)
{
    return http_respond_text(t->loop->cfg, wsi, status, text);
}

/* An answer as the original's dispatcher writes its refusals: a status and
 * its text (or nothing), without a Content-Type. */
static int respond_bare(struct legacy_table *t, struct lws *wsi, unsigned status, const char *text)
{
    return http_respond(t->loop->cfg, wsi, status, NULL, text, strlen(text));
}

/* The suffix after the endpoint, without trailing '/', equals name (case-insensitive). */
static bool suffix_is(const char *suffix, const char *name)
{
    size_t n = strlen(suffix);
    while (n > 0 && suffix[n - 1] == '/')
        n--;
    size_t m = strlen(name);
    return n >= m && strncasecmp(suffix + n - m, name, m) == 0 && (n == m || suffix[n - m - 1] == '/');
}

static enum legacy_transport transport_of(struct lws *wsi)
{
    char value[32];
    if (http_query_arg(wsi, "transport", value, sizeof value) < 0)
        return TRANSPORT_UNKNOWN;
    if (strcasecmp(value, "webSockets") == 0) return TRANSPORT_WEBSOCKETS;
    if (strcasecmp(value, "serverSentEvents") == 0) return TRANSPORT_SSE;
    if (strcasecmp(value, "longPolling") == 0) return TRANSPORT_LONG_POLLING;
    if (strcasecmp(value, "foreverFrame") == 0) return TRANSPORT_FOREVER_FRAME;
    return TRANSPORT_UNKNOWN;
}

/* Protocol 1.4 and later send /start, and pushes wait for its answer. */
static bool delayed_start(struct lws *wsi)
{
    struct buf text; /* read whole: cut, it would be another version */
    buf_init(&text);
    enum http_arg found = http_query_value(wsi, "clientProtocol", &text);
    bool delayed = legacy_protocol_delayed_start(
        legacy_protocol_resolve(found == HTTP_ARG_FOUND ? buf_span(&text) : SPAN_NONE));
    buf_free(&text);
    return delayed;
}

/* ------------------------------------------------------------- tokens */

static bool mint_connection_id(char out[37])
{
    unsigned char b[16];
    if (RAND_bytes(b, sizeof b) != 1)
        return false;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* a version 4 GUID, as Guid.NewGuid() */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    return true;
}

/* Steps 7-8 of the original dispatch: the token is present and ours. True
 * when it is: claims are filled and the caller frees them. False when the
 * request has been answered (400) instead: *rc is then what the lws callback
 * returns, and there are no claims to free. */
static bool verify_token(struct legacy_table *t, struct lws *wsi, struct conn_token_claims *claims, bool respond,
                         int *rc)
{
    static const char missing[] = "Protocol error: Missing connection token.";
    static const char malformed[] = "The ConnectionId is in the incorrect format.";
    char token[CONN_TOKEN_MAX_CHARS + 1];
    int n = http_query_arg(wsi, "connectionToken", token, sizeof token);
    const char *refusal = NULL;
    if (n == HTTP_ARG_UNUSABLE_LEN) {
        refusal = malformed; /* longer than any token the relay gives out: not one of them */
    } else if (n <= 0) {
        refusal = missing;
    } else {
        conn_token_claims_init(claims);
        if (conn_token_verify(&t->token_key, span_make(token, (size_t)n), claims, NULL) != PROTO_OK) {
            conn_token_claims_free(claims);
            refusal = malformed;
        }
    }
    if (!refusal)
        return true;
    if (respond)
        *rc = respond_bare(t, wsi, 400, refusal);
    else
        *rc = http_refuse_upgrade(t->loop->cfg, wsi, 400, refusal);
    return false;
}

static void claims_connection_id(const struct conn_token_claims *claims, char out[40])
{
    snprintf(out, 40, "%.*s", (int)claims->conn_id.len, claims->conn_id.ptr);
}

/* ---------------------------------------------------------- negotiate */

/* Hands the request over: the caller owns it now. */
static struct legacy_request *legacy_request_take(struct legacy_request **rp)
{
    struct legacy_request *r = *rp;
    *rp = NULL;
    return r;
}


/* The negotiate answer is ready (body): written now, or once the hubs'
 * backends have said the client may use them (relay/legacy_authorize.h). */
static int negotiate_answer(struct legacy_table *t, struct lws *wsi, struct legacy_request **rp, const struct buf *body,
                            const struct span *names, size_t count)
{
    const struct relay_config *cfg = t->loop->cfg;
    struct legacy_request *r = *rp ? legacy_request_take(rp) : legacy_request_new(cfg, wsi, "negotiate");
    if (!r || !legacy_request_prepare(r, 200, JSON_UTF8, body->data, body->len)) {
        if (r)
            legacy_request_free(r);
        return respond_text(t, wsi, 500, "The relay could not complete negotiate.");
    }
    r->dispatched = true;
    if (legacy_authorize_start(t->loop, t->backends, r, names, count) != LEGACY_AUTHORIZE_NOTHING)
        return 0; /* answered when the backends have (or with the reason it could not ask them) */
    legacy_request_free(r);
    return http_respond(cfg, wsi, 200, JSON_UTF8, body->data, body->len);
}

static int negotiate(struct legacy_table *t, struct lws *wsi, struct legacy_request **rp)
{
    /* Both read whole, however long (the request line's limit bounds them): a value cut to a
     * buffer would mean something else (no hubs at all, another protocol version). */
    struct buf data, protocol_text;
    buf_init(&data);
    buf_init(&protocol_text);
    enum http_arg data_found = http_query_value(wsi, "connectionData", &data);
    enum http_arg proto_found = http_query_value(wsi, "clientProtocol", &protocol_text);
    struct legacy_hub_list hubs;
    struct proto_error err = { 0 };
    legacy_hub_list_init(&hubs);
    if (data_found == HTTP_ARG_NOMEM || proto_found == HTTP_ARG_NOMEM) {
        buf_free(&data);
        buf_free(&protocol_text);
        return respond_text(t, wsi, 500, "The relay could not complete negotiate.");
    }
    if (data.len > 0 && legacy_connection_data_decode(data.data, data.len, &hubs, &err) != PROTO_OK) {
        char text[300];
        snprintf(text, sizeof text, "connectionData is not valid: %s", err.detail);
        legacy_hub_list_release(&hubs);
        buf_free(&data);
        buf_free(&protocol_text);
        return respond_text(t, wsi, 500, text);
    }
    struct span names[LEGACY_MAX_HUBS];
    struct legacy_hub *resolved[LEGACY_MAX_HUBS];
    for (size_t i = 0; i < hubs.count; i++) {
        if (!legacy_table_hub(t, hubs.names[i]) || hubs.names[i].len > CONN_TOKEN_MAX_HUB_LEN) {
            /* The original throws here: 500 with nothing in it. The text goes to the log. */
            log_info("legacy negotiate: '%.*s' Hub could not be resolved.", (int)hubs.names[i].len, hubs.names[i].ptr);
            char text[512]; /* service mode: an app's hub without --app-negotiate gets told so */
            bool unserved = legacy_identity_unserved(t->identities, hubs.names[i], text, sizeof text);
            legacy_hub_list_release(&hubs);
            buf_free(&data);
            buf_free(&protocol_text);
            return unserved ? respond_text(t, wsi, 500, text) : respond_bare(t, wsi, 500, "");
        }
        names[i] = hubs.names[i];
        resolved[i] = legacy_table_hub(t, hubs.names[i]);
    }
    char id[37];
    struct buf token, body;
    buf_init(&token);
    buf_init(&body);
    /* Service mode: the id is the app's Context.ConnectionId, a Core one (22 characters). */
    bool service = t->identities && legacy_identity_needed(resolved, hubs.count);
    bool ok = (service ? conn_id_generate(id) : mint_connection_id(id)) &&
              conn_token_mint(&t->token_key, span_from_cstr(id), SPAN_LIT(""), names, hubs.count,
                              clock_now_ms(), &token);
    const struct relay_config *cfg = t->loop->cfg;
    struct legacy_negotiate n = {
        .url = span_from_cstr(cfg->legacy_path),
        .connection_token = buf_span(&token),
        .connection_id = span_from_cstr(id),
        .keep_alive_timeout_ms = 2 * cfg->legacy_keepalive_ms,
        .disconnect_timeout_ms = cfg->legacy_disconnect_ms,
        .connection_timeout_ms = cfg->legacy_poll_timeout_ms,
        .try_websockets = cfg->legacy_websockets != LEGACY_WEBSOCKETS_OFF,
        .protocol = legacy_protocol_resolve(proto_found == HTTP_ARG_FOUND ? buf_span(&protocol_text) : SPAN_NONE),
        .transport_connect_timeout_ms = TRANSPORT_CONNECT_TIMEOUT_MS,
        .long_poll_delay_ms = cfg->legacy_long_poll_delay_ms,
    };
    int rc;
    if (ok && service && legacy_negotiate_encode(&body, &n)) { /* answered once the apps say who the client is */
        rc = legacy_identity_negotiate(t->identities, wsi, "/negotiate", id, resolved, hubs.count, body.data, body.len);
    } else if (ok && legacy_negotiate_encode(&body, &n)) {
        t->loop->stats.legacy_negotiations++;
        rc = negotiate_answer(t, wsi, rp, &body, names, hubs.count);
    } else {
        rc = respond_text(t, wsi, 500, "The relay could not complete negotiate.");
    }
    legacy_hub_list_release(&hubs);
    buf_free(&token);
    buf_free(&body);
    buf_free(&data);
    buf_free(&protocol_text);
    return rc;
}

/* ------------------------------------------------------- proxy script */

/* GET /signalr/hubs (and /signalr/js): the generated proxies for every served hub. */
static int hubs_script(struct legacy_table *t, struct lws *wsi)
{
    const struct relay_config *cfg = t->loop->cfg;
    struct legacy_hubs_js_hub *hubs = calloc(t->hub_count ? t->hub_count : 1, sizeof *hubs);
    struct buf js;
    buf_init(&js);
    bool ok = hubs != NULL;
    size_t served = 0;
    for (size_t i = 0; ok && i < t->hub_count; i++) {
        if (t->hubs[i]->removed)
            continue;
        hubs[served].name = t->hubs[i]->endpoint->name;
        hubs[served].methods = config_hub_methods(cfg, hubs[served].name);
        served++;
    }
    ok = ok && legacy_hubs_js(&js, cfg->legacy_path, hubs, served);
    free(hubs);
    int rc = ok ? http_respond(cfg, wsi, 200, "application/javascript; charset=UTF-8", js.data, js.len)
                : respond_text(t, wsi, 500, "The relay could not generate the hub proxy script.");
    buf_free(&js);
    return rc;
}

/* ---------------------------------------------------------- requests */

static int start(struct legacy_table *t, struct lws *wsi, const struct conn_token_claims *claims)
{
    char id[40];
    claims_connection_id(claims, id);
    struct legacy_session *s = legacy_session_find(t, id);
    if (!s)
        return respond_text(t, wsi, 500, "The connection was not found: it never connected, or it has ended.");
    return legacy_session_start(s, wsi);
}

static int abort_connection(struct legacy_table *t, struct lws *wsi, const struct conn_token_claims *claims)
{
    char id[40];
    claims_connection_id(claims, id);
    struct legacy_session *s = legacy_session_find(t, id);
    if (s)
        legacy_session_abort(s);
    return respond_text(t, wsi, 200, "");
}

/* ------------------------------------------------- receive channels */

/* The session a receive channel (connect, reconnect, poll) belongs to,
 * created for a connect, and the client's cursor: messageId from the query,
 * else from the form body (jQuery long polling). NULL when out of memory. */
static struct legacy_session *channel_session(struct legacy_table *t, struct lws *wsi,
                                              const struct conn_token_claims *claims, bool reconnect,
                                              const struct buf *body, uint64_t *cursor, bool *cursor_ok,
                                              bool *fresh_out)
{
    char id[40];
    claims_connection_id(claims, id);
    struct legacy_session *s = legacy_session_find(t, id);
    bool fresh = s == NULL;
    if (!s) {
        struct legacy_hub_list hubs;
        legacy_hub_list_init(&hubs);
        if (!reconnect) {
            hubs.count = claims->hub_count;
            for (size_t i = 0; i < claims->hub_count; i++)
                hubs.names[i] = claims->hubs[i];
        }
        /* A reconnect for a connection the relay no longer has gets a session
         * without hubs whose only message tells the client to start over. */
        s = legacy_session_create(t, id, &hubs, wsi);
        if (!s)
            return NULL;
        if (!reconnect && !delayed_start(wsi))
            legacy_session_start_implied(s); /* no /start to wait for: OnConnected's pushes go out at once */
    }
    uint32_t instance = 0;
    char message_id[LEGACY_CURSOR_MAX + 8];
    int n = http_query_arg(wsi, "messageId", message_id, sizeof message_id);
    struct buf form_value;
    buf_init(&form_value);
    if (n < 0 && body && body->len > 0) {
        struct urlencoded_limits limits = { body->len, 64, sizeof message_id - 1, 64 };
        if (urlencoded_find(body->data, body->len, "messageId", URLENCODED_PLUS_IS_SPACE, &limits, &form_value,
                            NULL) == PROTO_OK) {
            memcpy(message_id, form_value.data, form_value.len);
            n = (int)form_value.len;
        }
    }
    buf_free(&form_value);
    /* A reconnect for a connection this relay no longer has can never be honoured, whatever its
     * cursor says (even "nothing seen yet"): the new session only tells the client to start over. */
    *cursor = 0;
    if (fresh_out)
        *fresh_out = fresh;
    *cursor_ok = !(reconnect && fresh) && n > 0 &&
                 legacy_cursor_parse(span_make(message_id, (size_t)n), &instance, cursor) &&
                 instance == t->instance_id;
    return s;
}

static int open_sse(struct legacy_table *t, struct lws *wsi, const char *suffix, const struct conn_token_claims *claims)
{
    bool reconnect = !suffix_is(suffix, "connect");
    uint64_t cursor;
    bool cursor_ok;
    struct legacy_session *s = channel_session(t, wsi, claims, reconnect, NULL, &cursor, &cursor_ok, NULL);
    if (!s)
        return respond_text(t, wsi, 500, "The relay ran out of memory.");
    legacy_session_attach(s, wsi, LEGACY_CARRIER_SSE, reconnect, cursor, cursor_ok);
    if (!legacy_sse_begin(t->loop->cfg, wsi))
        return -1;
    legacy_session_established(s);
    return 0;
}

static bool has_message_id(struct lws *wsi, const struct buf *body)
{
    char scratch[LEGACY_CURSOR_MAX + 8];
    if (http_query_arg(wsi, "messageId", scratch, sizeof scratch) > 0)
        return true;
    struct buf value;
    buf_init(&value);
    struct urlencoded_limits limits = { body->len, 64, body->len, 64 };
    bool found = body->len > 0 && urlencoded_find(body->data, body->len, "messageId", URLENCODED_PLUS_IS_SPACE, &limits,
                                                  &value, NULL) == PROTO_OK && value.len > 0;
    buf_free(&value);
    return found;
}

static int long_poll(struct legacy_table *t, struct lws *wsi, const char *suffix,
                     const struct conn_token_claims *claims, struct legacy_request *r)
{
    bool connect = suffix_is(suffix, "connect");
    if (!r && !(r = legacy_request_new(t->loop->cfg, wsi, suffix)))
        return respond_text(t, wsi, 500, "The relay ran out of memory.");
    r->dispatched = true;
    uint64_t cursor;
    bool cursor_ok;
    bool fresh;
    struct legacy_session *s = channel_session(t, wsi, claims, !connect, &r->body, &cursor, &cursor_ok, &fresh);
    if (!s) {
        legacy_request_free(r);
        return respond_text(t, wsi, 500, "The relay ran out of memory.");
    }
    if (!connect && !fresh && !cursor_ok && !has_message_id(wsi, &r->body)) {
        /* A poll without messageId (the original subscribes it from now). */
        cursor = replay_ring_last_seq(&s->ring);
        cursor_ok = true;
    }
    legacy_session_poll(s, r, connect, cursor, cursor_ok);
    return 0;
}

static int send_invocation(struct legacy_table *t, struct lws *wsi, const char *suffix,
                           const struct conn_token_claims *claims, struct legacy_request *r)
{
    char id[40];
    claims_connection_id(claims, id);
    struct legacy_session *s = legacy_session_find(t, id);
    if (r && !s)
        legacy_request_free(r);
    if (!s)
        return respond_text(t, wsi, 500, "The connection was not found: it never connected, or it has ended.");
    if (!r && !(r = legacy_request_new(t->loop->cfg, wsi, suffix)))
        return respond_text(t, wsi, 500, "The relay ran out of memory.");
    r->dispatched = true;
    return legacy_session_send(s, r);
}

/* Whether the request has a body to read before it can be served. */
static bool has_body(struct lws *wsi)
{
    char length[32];
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0)
        return true;
    return http_header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, length, sizeof length) > 0 && strtoull(length, NULL, 10) > 0;
}

static int dispatch(struct legacy_table *t, struct lws *wsi, const char *suffix, struct legacy_request *r);
static int dispatch_request(struct legacy_table *t, struct lws *wsi, const char *suffix, struct legacy_request **rp);

int legacy_http(struct legacy_table *t, struct lws *wsi, const char *suffix)
{
    if (has_body(wsi) && !lws_get_opaque_user_data(wsi)) {
        /* Read it whole first (form fields of /send and long polling): served at its end. */
        return legacy_request_new(t->loop->cfg, wsi, suffix) ? 0 : -1;
    }
    return dispatch(t, wsi, suffix, NULL);
}

int legacy_http_body_complete(struct legacy_table *t, struct legacy_request *r)
{
    if (r->dispatched)
        return 0;
    r->dispatched = true;
    char *suffix = r->suffix; /* taken: only serving it needs it, and r may be freed or held meanwhile */
    r->suffix = NULL;
    int rc = dispatch(t, r->wsi, suffix, r);
    free(suffix);
    return rc;
}

/* Serves a request; r holds its body when it had one (and is freed or kept here). */
static int dispatch(struct legacy_table *t, struct lws *wsi, const char *suffix, struct legacy_request *r)
{
    int rc = dispatch_request(t, wsi, suffix, &r);
    if (r)
        legacy_request_free(r);
    return rc;
}

static int dispatch_request(struct legacy_table *t, struct lws *wsi, const char *suffix, struct legacy_request **rp)
{
    char scratch[8];
    if (http_query_arg(wsi, "callback", scratch, sizeof scratch) != HTTP_ARG_ABSENT_LEN) /* any length */
        return respond_bare(t, wsi, 403, ""); /* JSONP is off, as the original's default */
    if (http_request_method(wsi) == HTTP_OPTIONS)
        return http_respond_preflight(t->loop->cfg, wsi);
    if (suffix_is(suffix, "hubs") || suffix_is(suffix, "js"))
        return hubs_script(t, wsi);
    if (suffix_is(suffix, "negotiate"))
        return negotiate(t, wsi, rp);
    if (suffix_is(suffix, "ping"))
        return http_respond(t->loop->cfg, wsi, 200, JSON_UTF8, LEGACY_PING_RESPONSE, sizeof LEGACY_PING_RESPONSE - 1);
    enum legacy_transport transport = transport_of(wsi);
    /* foreverFrame (old Internet Explorer only) is declined as the original
     * declines a transport it does not serve: jQuery then falls back to longPolling. */
    if (transport == TRANSPORT_UNKNOWN || transport == TRANSPORT_FOREVER_FRAME)
        return respond_bare(t, wsi, 400, "Protocol error: Unknown transport.");
    struct conn_token_claims claims;
    int rc = 0;
    if (!verify_token(t, wsi, &claims, true, &rc))
        return rc;
    if (!*rp && lws_get_opaque_user_data(wsi)) {
        conn_token_claims_free(&claims);
        return 0;
    }
    if (suffix_is(suffix, "start"))
        rc = start(t, wsi, &claims);
    else if (suffix_is(suffix, "abort"))
        rc = abort_connection(t, wsi, &claims);
    else if (transport == TRANSPORT_WEBSOCKETS)
        rc = respond_text(t, wsi, 400, "Not a valid web socket request.");
    else if (suffix_is(suffix, "send"))
        rc = send_invocation(t, wsi, suffix, &claims, legacy_request_take(rp));
    else if (transport == TRANSPORT_SSE)
        rc = open_sse(t, wsi, suffix, &claims);
    else
        rc = long_poll(t, wsi, suffix, &claims, legacy_request_take(rp));
    conn_token_claims_free(&claims);
    return rc;
}

int legacy_confirm_upgrade(struct legacy_table *t, struct lws *wsi, const char *suffix)
{
    char scratch[8];
    if (http_query_arg(wsi, "callback", scratch, sizeof scratch) != HTTP_ARG_ABSENT_LEN) /* any length */
        return http_refuse_upgrade(t->loop->cfg, wsi, 403, "Forbidden: JSONP is disabled.");
    if (transport_of(wsi) != TRANSPORT_WEBSOCKETS || t->loop->cfg->legacy_websockets != LEGACY_WEBSOCKETS_ON) {
        static const char text[] = "Protocol error: Unknown transport.";
        return http_refuse_upgrade(t->loop->cfg, wsi, 400, text);
    }
    struct conn_token_claims claims;
    int rc = 0;
    if (!verify_token(t, wsi, &claims, false, &rc))
        return rc;
    bool reconnect = !suffix_is(suffix, "connect");
    uint64_t cursor;
    bool cursor_ok;
    struct legacy_session *s = channel_session(t, wsi, &claims, reconnect, NULL, &cursor, &cursor_ok, NULL);
    if (!s) {
        conn_token_claims_free(&claims);
        return -1;
    }
    legacy_session_attach(s, wsi, LEGACY_CARRIER_WEBSOCKET, reconnect, cursor, cursor_ok);
    conn_token_claims_free(&claims);
    return 0;
}
