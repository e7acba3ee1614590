/* relay.c - the relay process: start, HTTP routing, shutdown (see relay.h). */
#include "relay/relay.h"

#include <openssl/rand.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "relay/backend.h"
#include "relay/capture.h"
#include "relay/clock.h"
#include "relay/core_http.h"
#include "relay/core_negotiate.h"
#include "relay/core_session.h"
#include "relay/demo.h"
#include "relay/http.h"
#include "relay/http_limits.h"
#include "relay/legacy.h"
#include "relay/legacy_session.h"
#include "relay/listener.h"
#include "relay/log.h"
#include "relay/service_client.h"
#include "relay/service_server.h"

/* The context's user is the relay, and loop_of_wsi finds its loop there. */
_Static_assert(offsetof(struct relay, loop) == 0, "struct relay starts with its loop");

/* --------------------------------------------------------------- routing */

/* Splits "<prefix>/<hub>[/negotiate][/]" and finds the hub. */
static const struct hub_route *route_hub(const struct relay *relay, const char *path, bool *negotiate)
{
    size_t prefix_len = strlen(relay->loop.cfg->path_prefix);
    if (strncasecmp(path, relay->loop.cfg->path_prefix, prefix_len) != 0)
        return NULL;
    path += prefix_len;
    if (*path != '/')
        return NULL;
    path++;
    size_t name_len = strcspn(path, "/");
    const char *rest = path + name_len;
    *negotiate = false;
    if (strcasecmp(rest, "/negotiate") == 0 || strcasecmp(rest, "/negotiate/") == 0)
        *negotiate = true;
    else if (*rest && strcmp(rest, "/") != 0)
        return NULL;
    return config_find_hub(relay->loop.cfg, path, name_len);
}

static int respond_text(struct relay *relay, struct lws *wsi, unsigned status, const char *text)
{
    return http_respond_text(relay->loop.cfg, wsi, status, text);
}

/* A request on a hub path that is not a WebSocket upgrade: the Server-Sent
 * Events and long-polling transports. Answered as the ASP.NET Core server
 * answers for a transport it does not offer. */
static int refuse_http_transport(struct relay *relay, struct lws *wsi, enum http_method method)
{
    char accept[256] = "";
    http_header(wsi, WSI_TOKEN_HTTP_ACCEPT, accept, sizeof accept);
    if (method == HTTP_GET && strstr(accept, "text/event-stream"))
        return respond_text(relay, wsi, 404, "ServerSentEvents transport not supported by this end point type");
    if (method == HTTP_GET || method == HTTP_POST || method == HTTP_DELETE)
        return respond_text(relay, wsi, 404, "LongPolling transport not supported by this end point type");
    return respond_text(relay, wsi, 405, "");
}

/* Service mode's paths, which the SDK builds without any prefix: "/server/"
 * and "/client/..." (NULL if path is neither or service mode is off). */
static const char *service_route(const struct relay *relay, const char *path, const char *base)
{
    size_t n = strlen(base);
    if (!relay->service.enabled || strncmp(path, base, n) != 0 || (path[n] && path[n] != '/'))
        return NULL;
    return path + n;
}

/* Proxy mode: the first SSE GET or poll of a negotiated token starts its session. */
struct proxy_opener_arg {
    struct relay *relay;
    const struct hub_route *hub;
};

static struct core_session *proxy_open_http(void *arg, struct lws *wsi, const char *token,
                                            const struct core_transport *transport, unsigned *status,
                                            const char **text)
{
    struct proxy_opener_arg *a = arg;
    struct relay *relay = a->relay;
    struct negotiation *n = core_negotiation_take(&relay->negotiations, token);
    if (n && strcasecmp(n->hub->name, a->hub->name) != 0) { /* by name: a reload may have come between */
        core_negotiation_free(n);
        n = NULL;
    }
    *status = 404;
    *text = "No Connection with that ID";
    if (!n)
        return NULL;
    struct core_session *s = core_session_create_http(&relay->sessions, wsi,
                                                      &relay->endpoints[a->hub - relay->loop.cfg->hubs].base, n, NULL,
                                                      transport, token);
    if (!s) {
        *status = 500;
        *text = "out of memory";
    }
    return s;
}

/* A negotiated token before its first GET (core_http.h's struct core_http_early). */
static bool early_known(void *ctx, struct lws *wsi, const char *token)
{
    (void)wsi;
    return core_negotiation_known(ctx, token);
}

static unsigned early_send(void *ctx, const char *token, const void *data, size_t len)
{
    return core_negotiation_early_send(ctx, token, data, len);
}

static void early_take(void *ctx, const char *token, struct buf *out)
{
    core_negotiation_take_early(ctx, token, out);
}

static int route_http(struct relay *relay, struct lws *wsi)
{
    char path[1024];
    const char *refusal = listener_request(&relay->listener, wsi);
    if (refusal)
        return respond_text(relay, wsi, 503, refusal);
    unsigned status = http_check_request(relay->loop.cfg, wsi, &refusal);
    if (status)
        return http_refuse_request(relay->loop.cfg, &relay->refusals, wsi, status, refusal);
    enum http_method method = http_request_method(wsi);
    if (!http_request_path(wsi, path, sizeof path))
        return respond_text(relay, wsi, 414, "URI Too Long");
    if (!relay->loop.cfg->admin_address) { /* no admin address: served here, as before it existed */
        bool served;
        int rc = relay_route_admin(relay, wsi, path, method, &served);
        if (served)
            return rc;
    }
    const char *client_suffix = service_route(relay, path, "/client");
    if (client_suffix)
        return capture_http_request(wsi, CAPTURE_CORE), service_client_http(&relay->service, &relay->sessions, wsi, client_suffix);
    if (service_route(relay, path, "/server"))
        return respond_text(relay, wsi, 400, "App server connections are WebSockets.");
    const char *legacy_suffix = legacy_route(relay->loop.cfg, path);
    if (legacy_suffix)
        return capture_http_request(wsi, CAPTURE_LEGACY), legacy_http(&relay->legacy, wsi, legacy_suffix);
    bool negotiate;
    const struct hub_route *hub = route_hub(relay, path, &negotiate);
    if (!hub && demo_route(path)) /* a hub named demo comes first */
        return demo_http(relay->loop.cfg, wsi, path, method);
    if (!hub)
        return respond_text(relay, wsi, 404, "Not Found");
    capture_http_request(wsi, CAPTURE_CORE);
    if (method == HTTP_OPTIONS)
        return http_respond_preflight(relay->loop.cfg, wsi);
    if (negotiate)
        return method == HTTP_POST ? core_negotiate_begin(&relay->negotiations, wsi, hub) : respond_text(relay, wsi, 405, "");
    if (hub->app_negotiate) /* app-negotiate hubs: clients connect at /client/ */
        return refuse_http_transport(relay, wsi, method);
    struct proxy_opener_arg arg = { relay, hub };
    struct core_http_opener opener = { proxy_open_http, &arg,
                                       { early_known, early_send, early_take, &relay->negotiations } };
    return core_http_handle(&relay->sessions, wsi, &opener);
}

/* lws' receive buffer per WebSocket (--ws-read-buffer), and the larger one of service mode's
 * server connections, which carry the traffic of many clients. lws 4.1 sizes a connection's
 * buffer from its protocol's rx_buffer_size when it allocates it, right before
 * LWS_CALLBACK_ESTABLISHED, and reads at most that much from the socket per turn; it has no
 * per-connection setting (lws_bind_protocol is not exported). So a server connection's upgrade
 * raises the size in the vhost's copy of protocols[0] (lws copies the table; the copy is its
 * heap, reached through the wsi) in LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION, and ESTABLISHED puts
 * it back (so do the next upgrade and the connection's end, should the handshake fail between).
 * Frames are still handed over in pieces of the protocol's size; only the reads are larger. */
#define SERVICE_SERVER_RX_BYTES 16384u

static size_t client_rx_bytes(const struct relay_config *cfg)
{
    return cfg->ws_read_buffer_bytes ? cfg->ws_read_buffer_bytes : 256;
}

static void rx_size_for_servers(struct relay *relay, struct lws *wsi, bool server)
{
    struct lws_protocols *p = (struct lws_protocols *)lws_get_protocol(wsi);
    if (p && p->callback == relay->protocols[0].callback)
        p->rx_buffer_size = server ? SERVICE_SERVER_RX_BYTES : client_rx_bytes(relay->loop.cfg);
}

/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: accept a WebSocket only for a known hub
 * and a live negotiate token (or none: skip negotiation). */
static int confirm_upgrade(struct relay *relay, struct lws *wsi)
{
    rx_size_for_servers(relay, wsi, false);
    char path[1024];
    bool negotiate;
    const char *refusal = listener_request(&relay->listener, wsi);
    if (refusal)
        return http_refuse_upgrade(relay->loop.cfg, wsi, 503, refusal);
    unsigned status = http_check_request(relay->loop.cfg, wsi, &refusal);
    if (status)
        return http_refuse_request(relay->loop.cfg, &relay->refusals, wsi, status, refusal);
    if (!http_request_path(wsi, path, sizeof path))
        return http_refuse_request(relay->loop.cfg, &relay->refusals, wsi, 414, "URI Too Long");
    const char *service_suffix = service_route(relay, path, "/server");
    if (service_suffix)
        return strcmp(service_suffix, "") == 0 || strcmp(service_suffix, "/") == 0
                   ? service_server_confirm(&relay->service, wsi)
                   : http_refuse_upgrade(relay->loop.cfg, wsi, 404, "Not Found");
    service_suffix = service_route(relay, path, "/client");
    if (service_suffix && (capture_ws_open(wsi, CAPTURE_CORE), true))
        return strcmp(service_suffix, "") == 0 || strcmp(service_suffix, "/") == 0
                   ? service_client_confirm(&relay->service, &relay->sessions, wsi)
                   : http_refuse_upgrade(relay->loop.cfg, wsi, 404, "Not Found");
    const char *legacy_suffix = legacy_route(relay->loop.cfg, path);
    if (legacy_suffix)
        return capture_ws_open(wsi, CAPTURE_LEGACY), legacy_confirm_upgrade(&relay->legacy, wsi, legacy_suffix);
    const struct hub_route *hub = route_hub(relay, path, &negotiate);
    if (!hub || negotiate || hub->app_negotiate) /* app-negotiate hubs: clients connect at /client/ */
        return http_refuse_upgrade(relay->loop.cfg, wsi, 404, "Not Found");
    capture_ws_open(wsi, CAPTURE_CORE);
    struct negotiation *n = NULL;
    struct buf id;
    buf_init(&id);
    enum http_arg found = http_query_value(wsi, "id", &id);
    if (found == HTTP_ARG_NOMEM) {
        buf_free(&id);
        return -1;
    }
    bool has_id = found == HTTP_ARG_FOUND && id.len > 0;
    if (has_id) {
        /* Read whole, however long: an id no negotiate gave out is refused, never taken for none. */
        n = core_negotiation_take(&relay->negotiations, id.data);
        if (n && strcasecmp(n->hub->name, hub->name) != 0) { /* by name: a reload may have come between */
            core_negotiation_free(n);
            n = NULL;
        }
        struct core_session *live = n ? NULL : core_sessions_find(&relay->sessions, id.data);
        int refused = 0;
        if (live && core_stateful_resume(live, wsi, &relay->endpoints[hub - relay->loop.cfg->hubs].base)) {
            lws_set_opaque_user_data(wsi, live); /* a stateful client's next WebSocket */
            buf_free(&id);
            return 0;
        }
        if (live) /* as the server: a second WebSocket 409, another transport's connection 400 */
            refused = live->transport->kind == CORE_TRANSPORT_WEBSOCKETS
                          ? http_refuse_upgrade(relay->loop.cfg, wsi, 409, "")
                          : http_refuse_upgrade(relay->loop.cfg, wsi, 400, "Cannot change transports mid-connection");
        else if (!n)
            refused = http_refuse_upgrade(relay->loop.cfg, wsi, 404, "No Connection with that ID");
        if (live || !n) {
            buf_free(&id);
            return refused;
        }
    }
    struct buf early; /* POSTed before this WebSocket: the session reads it once established */
    buf_init(&early);
    if (n) {
        early = n->early;
        buf_init(&n->early);
    }
    struct core_session *s = core_session_create(&relay->sessions, wsi, &relay->endpoints[hub - relay->loop.cfg->hubs].base, n, NULL);
    if (s)
        s->pending->early = early;
    else
        buf_free(&early);
    bool registered = s && (!has_id || core_session_register(s, id.data));
    buf_free(&id);
    if (!s)
        return -1;
    if (!registered) {
        core_session_destroy(s);
        return -1;
    }
    lws_set_opaque_user_data(wsi, s);
    return 0;
}

static struct core_session *session_of(void *owner)
{
    return owner && *(enum wsi_role *)owner == WSI_ROLE_CORE_SESSION ? owner : NULL;
}

static struct negotiation *negotiation_of(void *owner)
{
    return owner && *(enum wsi_role *)owner == WSI_ROLE_NEGOTIATION ? owner : NULL;
}

static enum wsi_role role_of(void *owner)
{
    return owner ? *(enum wsi_role *)owner : WSI_ROLE_NONE;
}

static void detach_and_destroy(struct lws *wsi, void *owner)
{
    lws_set_opaque_user_data(wsi, NULL);
    switch (role_of(owner)) {
    case WSI_ROLE_CORE_SESSION: core_session_ws_closed(owner); break;
    case WSI_ROLE_NEGOTIATION: core_negotiate_abandon(owner); break;
    case WSI_ROLE_LEGACY_SESSION: legacy_session_channel_closed(owner, wsi); break;
    case WSI_ROLE_LEGACY_START: legacy_start_abandoned(owner); break;
    case WSI_ROLE_LEGACY_REQUEST: legacy_request_closed(owner); break;
    case WSI_ROLE_BACKEND_NEGOTIATE:
    case WSI_ROLE_BACKEND_LINK: backend_wsi_destroyed(owner); break;
    case WSI_ROLE_SERVICE_SERVER: service_server_destroy(owner); break;
    case WSI_ROLE_CORE_HTTP:
    case WSI_ROLE_CORE_POST: core_http_closed(owner); break;
    case WSI_ROLE_NONE: break;
    }
}


static int server_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    struct relay *relay = lws_context_user(lws_get_context(wsi));
    void *owner = lws_get_opaque_user_data(wsi);
    switch (reason) {
    case LWS_CALLBACK_HTTP: {
        next_head_forget(&relay->next_heads, wsi);
        tls_next_head_served(&relay->tls_next_heads, wsi);
        request_body_expect(&relay->bodies, wsi); /* drained if answered before it is whole */
        int rc = route_http(relay, wsi);
        owner = lws_get_opaque_user_data(wsi);
        if (rc == 0 && (role_of(owner) == WSI_ROLE_CORE_POST || role_of(owner) == WSI_ROLE_LEGACY_REQUEST) &&
            request_body_announced(wsi))
            request_body_wait(&relay->bodies, wsi); /* --header-timeout for each piece of it */
        return rc;
    }
    case LWS_CALLBACK_OPENSSL_LOAD_EXTRA_SERVER_VERIFY_CERTS:
        return tls_front_ctx_created(&relay->tls, user);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (request_body_late(&relay->bodies, wsi))
            return http_refuse_request(relay->loop.cfg, &relay->refusals, wsi, 408, REQUEST_BODY_LATE);
        if (negotiation_of(owner))
            return core_negotiate_write_reply(owner, wsi);
        if (role_of(owner) == WSI_ROLE_LEGACY_START)
            return legacy_start_writeable(owner, wsi);
        if (role_of(owner) == WSI_ROLE_CORE_HTTP || role_of(owner) == WSI_ROLE_CORE_POST)
            return core_http_writeable(owner, wsi);
        if (role_of(owner) == WSI_ROLE_LEGACY_REQUEST)
            return legacy_request_writeable(owner, wsi);
        if (role_of(owner) == WSI_ROLE_LEGACY_SESSION) /* a Server-Sent Events stream */
            return legacy_session_writeable(owner, wsi);
        return 0;
    case LWS_CALLBACK_HTTP_BODY:
        if (request_body_draining(&relay->bodies, wsi))
            return 0; /* the request is answered: its body is dropped (relay/request_body.h) */
        if (request_body_awaited(&relay->bodies, wsi))
            request_body_wait(&relay->bodies, wsi);
        capture_http_body(wsi, in, len);
        if (role_of(owner) == WSI_ROLE_CORE_POST)
            return core_http_body(owner, in, len);
        if (role_of(owner) == WSI_ROLE_LEGACY_REQUEST)
            legacy_request_body(owner, in, len);
        return 0;
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        if (request_body_draining(&relay->bodies, wsi))
            return request_body_drained(&relay->bodies, wsi);
        request_body_done(&relay->bodies, wsi);
        capture_http_body_done(wsi);
        if (role_of(owner) == WSI_ROLE_CORE_POST)
            return core_http_body_done(owner, wsi);
        if (role_of(owner) == WSI_ROLE_LEGACY_REQUEST)
            return legacy_http_body_complete(&relay->legacy, owner);
        return 0;
    case LWS_CALLBACK_CLOSED_HTTP:
        request_body_done(&relay->bodies, wsi);
        if (role_of(owner) == WSI_ROLE_NEGOTIATION || role_of(owner) == WSI_ROLE_LEGACY_START ||
            role_of(owner) == WSI_ROLE_CORE_HTTP || role_of(owner) == WSI_ROLE_CORE_POST ||
            role_of(owner) == WSI_ROLE_LEGACY_REQUEST || role_of(owner) == WSI_ROLE_LEGACY_SESSION)
            detach_and_destroy(wsi, owner);
        return 0;
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        next_head_forget(&relay->next_heads, wsi);
        tls_next_head_served(&relay->tls_next_heads, wsi);
        return confirm_upgrade(relay, wsi);
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        rx_size_for_servers(relay, wsi, role_of(owner) == WSI_ROLE_SERVICE_SERVER);
        return 0;
    case LWS_CALLBACK_ESTABLISHED:
        rx_size_for_servers(relay, wsi, false);
        capture_ws_accepted(wsi);
        if (session_of(owner)) {
            core_session_established(owner);
            core_http_read_early(owner); /* POSTed before the WebSocket: read first, as on the server */
        } else if (role_of(owner) == WSI_ROLE_LEGACY_SESSION)
            legacy_session_established(owner);
        else if (role_of(owner) == WSI_ROLE_SERVICE_SERVER)
            service_server_established(owner);
        return 0;
    case LWS_CALLBACK_RECEIVE:
        if (session_of(owner))
            return core_session_receive(owner, in, len);
        if (role_of(owner) == WSI_ROLE_LEGACY_SESSION)
            return legacy_session_receive(owner, in, len);
        if (role_of(owner) == WSI_ROLE_SERVICE_SERVER)
            return service_server_receive(owner, in, len);
        return -1;
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if (session_of(owner))
            ((struct core_session *)owner)->client_closed = true; /* a goodbye, not a drop */
        capture_ws_client_close(wsi, in, len);
        return 0;
    case LWS_CALLBACK_RECEIVE_PONG:
        if (role_of(owner) == WSI_ROLE_LEGACY_SESSION)
            legacy_session_heard(owner);
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        if (session_of(owner))
            return core_session_writeable(owner);
        if (role_of(owner) == WSI_ROLE_LEGACY_SESSION)
            return legacy_session_writeable(owner, wsi);
        if (role_of(owner) == WSI_ROLE_SERVICE_SERVER)
            return service_server_writeable(owner);
        return 0;
    case LWS_CALLBACK_CLOSED:
        if (owner)
            detach_and_destroy(wsi, owner);
        return 0;
    case LWS_CALLBACK_WSI_DESTROY:
        if (role_of(owner) == WSI_ROLE_SERVICE_SERVER)
            rx_size_for_servers(relay, wsi, false);
        if (owner)
            detach_and_destroy(wsi, owner);
        capture_wsi_gone(wsi);
        listener_wsi_destroyed(&relay->listener, wsi);
        next_head_forget(&relay->next_heads, wsi);
        tls_next_head_forget(&relay->tls_next_heads, wsi);
        request_body_done(&relay->bodies, wsi);
        linger_forget(&relay->lingers, wsi);
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        /* relay_stop() woke the loop (lws_cancel_service): with libev, lws_service() runs
         * ev_run() until someone breaks it, so stopping means breaking it here. */
        if (relay->stopping)
            loop_break(&relay->loop);
        else if (relay->reload_requested) {
            relay->reload_requested = false;
            relay_reload(relay);
        }
        return 0;
    default:
        return 0;
    }
}

/* ------------------------------------------------------------- lifecycle */

/* The most lws may send() at once for us (see relay_start). */
#define RELAY_TX_PACKET_BYTES (16u << 20)
/* Shutdown: how long connections get to say goodbye, and how often the relay looks. */
#define DRAIN_MAX_MS 2000
#define DRAIN_CHECK_MS 50

/* lws 4.1 on the libev loop re-arms its own timer only after socket activity,
 * so its per-connection timeouts (--header-timeout: headers that never end,
 * an idle connection that never sends any) waited for some other socket to
 * wake it: a lone slow client was never closed. Waking lws once a second
 * makes them fire within a second of their time. */
#define LWS_WAKE_MS 1000

static void lws_wake_tick(struct timer_entry *e)
{
    struct relay *relay = list_container_of(e, struct relay, lws_wake_timer);
    lws_cancel_service(relay->loop.lws);
    loop_timer_schedule(&relay->loop, e, clock_now_ms() + LWS_WAKE_MS);
}

/* Service mode: legacy clients reach an --app-negotiate hub through the apps' server
 * connections, with the identity the app's negotiate gives them (relay/legacy_identity.h). */
static bool relay_legacy_service_hubs(struct relay *relay)
{
    const struct relay_config *cfg = relay->loop.cfg;
    legacy_identities_init(&relay->identities, &relay->loop, &relay->backends, &relay->service, relay->dict_seed);
    relay->named = calloc(cfg->hub_count ? cfg->hub_count : 1, sizeof *relay->named);
    if (!relay->named) {
        log_error("relay: out of memory");
        return false;
    }
    relay->named_count = cfg->hub_count;
    if (!relay->service.enabled)
        return true;
    relay->legacy.identities = &relay->identities;
    for (size_t i = 0; i < cfg->hub_count; i++) {
        if (!cfg->hubs[i].app_negotiate)
            continue;
        if (!service_named_endpoint_init(&relay->named[i], &relay->service, cfg->hubs[i].name)) {
            log_error("relay: out of memory");
            return false;
        }
        relay->legacy.hubs[i]->endpoint = &relay->named[i].base;
        relay->legacy.hubs[i]->app_identity = true;
    }
    return true;
}

/* loop.h's next_request: a kept-alive connection's next head, read first (plain) or watched (TLS). */
static void relay_next_request(void *ctx, struct lws *wsi)
{
    struct relay *relay = ctx;
    if (relay->loop.cfg->tls_cert)
        tls_next_head_watch(&relay->tls_next_heads, wsi);
    else
        next_head_watch(&relay->next_heads, wsi);
}

int relay_start(struct relay *relay, const struct relay_config *cfg)
{
    memset(relay, 0, sizeof *relay);
    loop_init(&relay->loop, cfg);
    static const uint8_t unseeded[DICT_SEED_LEN];
    listener_init(&relay->listener, &relay->loop, unseeded); /* seeded below, once there is a seed */
    if (!tls_front_init(&relay->tls, cfg))
        return -1;
    if (RAND_bytes(relay->dict_seed, sizeof relay->dict_seed) != 1) {
        log_error("relay: no randomness from OpenSSL");
        return -1;
    }
    listener_init(&relay->listener, &relay->loop, relay->dict_seed);
    char capture_err[512];
    if (cfg->capture_dir && !(relay->loop.capture = capture_new(&relay->loop, cfg->capture_dir, capture_err, sizeof capture_err))) {
        log_error("relay: %s", capture_err);
        return -1;
    }
    relay->listener.refusals = &relay->refusals;
    next_heads_init(&relay->next_heads, &relay->loop, &relay->refusals, relay->dict_seed);
    request_bodies_init(&relay->bodies, &relay->loop, relay->dict_seed);
    relay->loop.next_request = relay_next_request;
    relay->loop.next_request_ctx = relay;
    tls_next_heads_init(&relay->tls_next_heads, &relay->loop, &relay->refusals, relay->dict_seed);
    lingers_init(&relay->lingers, &relay->loop, relay->dict_seed);
    core_sessions_init(&relay->sessions, &relay->loop, relay->dict_seed);
    core_negotiations_init(&relay->negotiations, &relay->loop, &relay->backends, relay->dict_seed);
    if (!service_init(&relay->service, &relay->loop, relay->dict_seed)) {
        log_error("relay: out of memory or randomness");
        return -1;
    }
    if (!legacy_table_init(&relay->legacy, &relay->loop, cfg->hub_count, relay->dict_seed)) {
        log_error("relay: out of memory or randomness");
        return -1;
    }
    relay->endpoints = calloc(cfg->hub_count ? cfg->hub_count : 1, sizeof *relay->endpoints);
    if (!backends_init(&relay->backends, &relay->loop) || !relay->endpoints) {
        log_error("relay: out of memory");
        return -1;
    }
    relay->legacy.backends = &relay->backends;
    for (size_t i = 0; i < cfg->hub_count; i++) {
        proxy_endpoint_init(&relay->endpoints[i], &relay->backends, &cfg->hubs[i]);
        relay->legacy.hubs[i]->endpoint = &relay->endpoints[i].base;
    }
    if (!relay_legacy_service_hubs(relay))
        return -1;

    /* lws' per-WebSocket receive buffer (rx_buffer_size) lives as long as the connection, idle
     * or not: with 4096 it was ~8 KiB of the relay's ~11 KiB per proxied client (client side and
     * backend link). It also caps each read, hence --ws-read-buffer. Writes are capped by
     * tx_packet_size, or by the rx size when that is 0: a 16 KiB message then left in 256-byte
     * pieces, a loop turn each, so the cap is set far above any message. */
    size_t rx = client_rx_bytes(cfg);
    relay->protocols[0] = (struct lws_protocols){ "http", server_callback, 0, rx, 0, NULL, RELAY_TX_PACKET_BYTES };
    relay->protocols[1] = backend_negotiate_protocol;
    relay->protocols[2] = backend_link_protocol;
    relay->protocols[2].rx_buffer_size = rx;
    relay->protocols[2].tx_packet_size = RELAY_TX_PACKET_BYTES;
    relay->protocols[3] = (struct lws_protocols){ NULL, NULL, 0, 0, 0, NULL, 0 };

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT | LWS_SERVER_OPTION_DISABLE_IPV6;
    info.port = cfg->listen_port;
    info.iface = cfg->listen_address;
    info.protocols = relay->protocols;
    info.vhost_name = "default";
    /* Room for --max-request-line and --max-request-headers, so that the relay sees a request
     * over either and answers 414 or 431 (http_limits.h); lws closes one that does not fit. */
    info.max_http_header_data = 0;
    info.max_http_header_data2 = (unsigned)http_limits_header_buffer(cfg);
    /* How long a connection may take to send a request's headers (whole seconds for lws). */
    info.timeout_secs_ah_idle = (cfg->header_timeout_ms + 999) / 1000;
    /* 0: one header table per descriptor if need be. A fixed pool deadlocks:
     * each negotiate holds its table while the relay asks the backend, and
     * that backend request needs a table from the same pool, so with the pool
     * full of waiting negotiates (256 at once did it) nothing moves again and
     * even /metrics waits forever. Tables are freed once a request is answered
     * or a WebSocket is upgraded, so idle connections hold none. */
    info.max_http_header_pool = 0;
    info.pt_serv_buf_size = SERVICE_SERVER_RX_BYTES; /* lws reads at most this much at once */
    info.timeout_secs = config_lws_timeout_secs(cfg);         /* behind the relay's own deadlines */
    info.connect_timeout_secs = config_lws_timeout_secs(cfg);
    tls_context_options(&relay->tls, cfg, &info);
    if (!loop_create_context(&relay->loop, &info, relay) ||
        (relay->loop.ev && !listener_open(&relay->listener, cfg->listen_address, cfg->listen_port))) {
        log_error("relay: cannot listen on %s:%d (address in use, or not an address of this machine?)",
                  cfg->listen_address, cfg->listen_port);
        return -1;
    }
    timer_entry_init(&relay->lws_wake_timer, lws_wake_tick);
    loop_timer_schedule(&relay->loop, &relay->lws_wake_timer, clock_now_ms() + LWS_WAKE_MS);
    if (!backends_start_resolver(&relay->backends) || !relay_start_admin(relay))
        return -1;
    const char *s = relay->tls.cert_path ? "s" : "";
    log_info("relay: listening on http%s://%s:%d%s", s, cfg->listen_address, cfg->listen_port, cfg->path_prefix);
    if (cfg->legacy_path[0])
        log_info("relay: legacy ASP.NET SignalR clients at http%s://%s:%d%s", s, cfg->listen_address,
                 cfg->listen_port, cfg->legacy_path);
    for (size_t i = 0; i < cfg->hub_count; i++)
        log_info("relay: hub %s at http%s://%s:%d%s/%s -> %s", cfg->hubs[i].name, s, cfg->listen_address,
                 cfg->listen_port, cfg->path_prefix, cfg->hubs[i].name, cfg->hubs[i].backend_url);
    if (relay->service.enabled)
        log_info("relay: service mode: apps connect at ws%s://%s:%d/server/ (%zu key%s), clients at /client/", s,
                 cfg->listen_address, cfg->listen_port, cfg->service_key_count, cfg->service_key_count == 1 ? "" : "s");
    return 0;
}

/* While draining, checks every DRAIN_CHECK_MS whether everything is closed or time is up. */
static void drain_tick(struct timer_entry *e)
{
    struct relay *relay = list_container_of(e, struct relay, drain_timer);
    bool drained = core_sessions_empty(&relay->sessions) && relay->loop.stats.legacy_sessions_active == 0 &&
                   relay->loop.stats.backend_links_active == 0 && service_servers_empty(&relay->service);
    if (drained || clock_now_ms() >= relay->drain_deadline) {
        relay->drained = true;
        loop_break(&relay->loop);
        return;
    }
    loop_timer_schedule(&relay->loop, e, clock_now_ms() + DRAIN_CHECK_MS);
}

/* On stop, connections get a proper goodbye before the context is destroyed:
 * Core clients a Close with allowReconnect, legacy clients a clean close
 * (both then reconnect, to another instance if there is one), backend links
 * a clean close (the backend runs OnDisconnectedAsync). At most DRAIN_MAX_MS. */
static void drain(struct relay *relay)
{
    core_sessions_shutdown(&relay->sessions); /* service mode: the apps hear CloseConnection */
    legacy_table_shutdown(&relay->legacy);
    service_servers_shutdown(&relay->service);
    relay->drain_deadline = clock_now_ms() + DRAIN_MAX_MS;
    timer_entry_init(&relay->drain_timer, drain_tick);
    loop_timer_schedule(&relay->loop, &relay->drain_timer, clock_now_ms());
    while (!relay->drained && loop_run_once(&relay->loop))
        ;
    timer_cancel(&relay->drain_timer);
}

void relay_run(struct relay *relay)
{
    while (!relay->stopping && loop_run_once(&relay->loop))
        ;
    drain(relay);
}

void relay_stop(struct relay *relay)
{
    relay->stopping = true;
    loop_wake(&relay->loop);
}

void relay_destroy(struct relay *relay)
{
    backends_stop_resolver(&relay->backends); /* lookups still waiting fail while the context is up */
    timer_cancel(&relay->lws_wake_timer); /* unarmed (zeroed) if relay_start failed early */
    legacy_table_free(&relay->legacy);
    legacy_identities_free(&relay->identities);
    listener_close(&relay->listener);
    if (relay->sessions.loop)
        core_sessions_free(&relay->sessions);
    loop_destroy(&relay->loop); /* closes every connection through the callbacks */
    listener_free(&relay->listener);
    next_heads_free(&relay->next_heads);
    tls_next_heads_free(&relay->tls_next_heads);
    request_bodies_free(&relay->bodies);
    lingers_free(&relay->lingers);
    tls_front_free(&relay->tls);
    if (relay->negotiations.loop)
        core_negotiations_clear(&relay->negotiations);
    backends_free(&relay->backends);
    free(relay->endpoints);
    relay->endpoints = NULL;
    relay_free_retired(relay);
    capture_free(relay->loop.capture); /* after every connection: each one's last lines are in */
    relay->loop.capture = NULL;
    if (relay->owned_cfg)
        config_free(relay->owned_cfg);
    free(relay->owned_cfg);
    relay->owned_cfg = NULL;
    for (size_t i = 0; relay->named && i < relay->named_count; i++)
        service_named_endpoint_free(&relay->named[i]);
    free(relay->named);
    relay->named = NULL;
    service_free(&relay->service);
}
