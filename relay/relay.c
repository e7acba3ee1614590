/* relay.c - the relay process: start, HTTP routing, shutdown (see relay.h). */
#include "relay/relay.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "relay/backend.h"
#include "relay/clock.h"
#include "relay/core_negotiate.h"
#include "relay/core_session.h"
#include "relay/http.h"
#include "relay/legacy.h"
#include "relay/legacy_session.h"
#include "relay/log.h"
#include "relay/service_client.h"
#include "relay/service_server.h"

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

static void relay_render_metrics(struct relay *relay, struct buf *out);

static int serve_metrics(struct relay *relay, struct lws *wsi)
{
    struct buf out;
    buf_init(&out);
    relay_render_metrics(relay, &out);
    int rc = http_respond(relay->loop.cfg, wsi, 200, "text/plain; version=0.0.4", out.data, out.len);
    buf_free(&out);
    return rc;
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

static int route_http(struct relay *relay, struct lws *wsi)
{
    char path[1024];
    enum http_method method = http_request_method(wsi);
    if (!http_request_path(wsi, path, sizeof path))
        return respond_text(relay, wsi, 414, "URI Too Long");
    if (strcmp(path, "/metrics") == 0 && method == HTTP_GET)
        return serve_metrics(relay, wsi);
    const char *client_suffix = service_route(relay, path, "/client");
    if (client_suffix)
        return service_client_http(&relay->service, wsi, client_suffix);
    if (service_route(relay, path, "/server"))
        return respond_text(relay, wsi, 400, "App server connections are WebSockets.");
    const char *legacy_suffix = legacy_route(relay->loop.cfg, path);
    if (legacy_suffix)
        return legacy_http(&relay->legacy, wsi, legacy_suffix);
    bool negotiate;
    const struct hub_route *hub = route_hub(relay, path, &negotiate);
    if (!hub)
        return respond_text(relay, wsi, 404, "Not Found");
    if (method == HTTP_OPTIONS)
        return http_respond_preflight(relay->loop.cfg, wsi);
    if (negotiate)
        return method == HTTP_POST ? core_negotiate_begin(&relay->negotiations, wsi, hub) : respond_text(relay, wsi, 405, "");
    return refuse_http_transport(relay, wsi, method);
}

/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: accept a WebSocket only for a known hub
 * and a live negotiate token (or none: skip negotiation). */
static int confirm_upgrade(struct relay *relay, struct lws *wsi)
{
    char path[1024], id[128];
    bool negotiate;
    if (!http_request_path(wsi, path, sizeof path))
        return -1;
    const char *service_suffix = service_route(relay, path, "/server");
    if (service_suffix)
        return strcmp(service_suffix, "") == 0 || strcmp(service_suffix, "/") == 0
                   ? service_server_confirm(&relay->service, wsi)
                   : http_refuse_upgrade(relay->loop.cfg, wsi, 404, "Not Found");
    service_suffix = service_route(relay, path, "/client");
    if (service_suffix)
        return strcmp(service_suffix, "") == 0 || strcmp(service_suffix, "/") == 0
                   ? service_client_confirm(&relay->service, &relay->sessions, wsi)
                   : http_refuse_upgrade(relay->loop.cfg, wsi, 404, "Not Found");
    const char *legacy_suffix = legacy_route(relay->loop.cfg, path);
    if (legacy_suffix)
        return legacy_confirm_upgrade(&relay->legacy, wsi, legacy_suffix);
    const struct hub_route *hub = route_hub(relay, path, &negotiate);
    if (!hub || negotiate || hub->app_negotiate) /* app-negotiate hubs: clients connect at /client/ */
        return http_refuse_upgrade(relay->loop.cfg, wsi, 404, "Not Found");
    struct negotiation *n = NULL;
    int id_len = http_query_arg(wsi, "id", id, sizeof id);
    if (id_len > 0) {
        n = core_negotiation_take(&relay->negotiations, id);
        if (n && n->hub != hub) {
            core_negotiation_free(n);
            n = NULL;
        }
        if (!n)
            return http_refuse_upgrade(relay->loop.cfg, wsi, 404, "No Connection with that ID");
    }
    struct core_session *s = core_session_create(&relay->sessions, wsi, &relay->endpoints[hub - relay->loop.cfg->hubs].base, n, NULL);
    if (!s)
        return -1;
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
    case WSI_ROLE_CORE_SESSION: core_session_destroy(owner); break;
    case WSI_ROLE_NEGOTIATION: core_negotiate_abandon(owner); break;
    case WSI_ROLE_LEGACY_SESSION: legacy_session_channel_closed(owner, wsi); break;
    case WSI_ROLE_LEGACY_START: legacy_start_abandoned(owner); break;
    case WSI_ROLE_LEGACY_REQUEST: legacy_request_closed(owner); break;
    case WSI_ROLE_BACKEND_NEGOTIATE:
    case WSI_ROLE_BACKEND_LINK: backend_wsi_destroyed(owner); break;
    case WSI_ROLE_SERVICE_SERVER: service_server_destroy(owner); break;
    case WSI_ROLE_NONE: break;
    }
}

static int server_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    struct relay *relay = lws_context_user(lws_get_context(wsi));
    void *owner = lws_get_opaque_user_data(wsi);
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return route_http(relay, wsi);
    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (negotiation_of(owner))
            return core_negotiate_write_reply(owner, wsi);
        if (role_of(owner) == WSI_ROLE_LEGACY_START)
            return legacy_start_writeable(owner, wsi);
        if (role_of(owner) == WSI_ROLE_LEGACY_REQUEST)
            return legacy_request_writeable(owner, wsi);
        if (role_of(owner) == WSI_ROLE_LEGACY_SESSION) /* a Server-Sent Events stream */
            return legacy_session_writeable(owner, wsi);
        return 0;
    case LWS_CALLBACK_HTTP_BODY:
        if (role_of(owner) == WSI_ROLE_LEGACY_REQUEST)
            legacy_request_body(owner, in, len);
        return 0;
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        if (role_of(owner) == WSI_ROLE_LEGACY_REQUEST)
            return legacy_http_body_complete(&relay->legacy, owner);
        return 0;
    case LWS_CALLBACK_CLOSED_HTTP:
        if (role_of(owner) == WSI_ROLE_NEGOTIATION || role_of(owner) == WSI_ROLE_LEGACY_START ||
            role_of(owner) == WSI_ROLE_LEGACY_REQUEST || role_of(owner) == WSI_ROLE_LEGACY_SESSION)
            detach_and_destroy(wsi, owner);
        return 0;
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return confirm_upgrade(relay, wsi);
    case LWS_CALLBACK_ESTABLISHED:
        if (session_of(owner))
            core_session_established(owner);
        else if (role_of(owner) == WSI_ROLE_LEGACY_SESSION)
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
    case LWS_CALLBACK_WSI_DESTROY:
        if (owner)
            detach_and_destroy(wsi, owner);
        return 0;
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        /* relay_stop() woke the loop (lws_cancel_service): with libev, lws_service() runs
         * ev_run() until someone breaks it, so stopping means breaking it here. */
        if (relay->stopping)
            loop_break(&relay->loop);
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

int relay_start(struct relay *relay, const struct relay_config *cfg)
{
    memset(relay, 0, sizeof *relay);
    loop_init(&relay->loop, cfg);
    core_sessions_init(&relay->sessions, &relay->loop);
    if (RAND_bytes(relay->dict_seed, sizeof relay->dict_seed) != 1) {
        log_error("relay: no randomness from OpenSSL");
        return -1;
    }
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
    for (size_t i = 0; i < cfg->hub_count; i++) {
        proxy_endpoint_init(&relay->endpoints[i], &relay->backends, &cfg->hubs[i]);
        relay->legacy.hubs[i].endpoint = &relay->endpoints[i].base;
    }

    /* lws' per-WebSocket receive buffer (rx_buffer_size) lives as long as the connection, idle
     * or not: with 4096 it was ~8 KiB of the relay's ~11 KiB per proxied client (client side and
     * backend link). It also caps each read, hence --ws-read-buffer. Writes are capped by
     * tx_packet_size, or by the rx size when that is 0: a 16 KiB message then left in 256-byte
     * pieces, a loop turn each, so the cap is set far above any message. */
    size_t rx = cfg->ws_read_buffer_bytes ? cfg->ws_read_buffer_bytes : 256;
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
    info.max_http_header_data = 16384;
    /* 0: one header table per descriptor if need be. A fixed pool deadlocks:
     * each negotiate holds its table while the relay asks the backend, and
     * that backend request needs a table from the same pool, so with the pool
     * full of waiting negotiates (256 at once did it) nothing moves again and
     * even /metrics waits forever. Tables are freed once a request is answered
     * or a WebSocket is upgraded, so idle connections hold none. */
    info.max_http_header_pool = 0;
    info.pt_serv_buf_size = 16384;
    info.timeout_secs = 20;
    if (!loop_create_context(&relay->loop, &info, relay)) {
        log_error("relay: cannot listen on %s:%d (address in use, or not an address of this machine?)",
                  cfg->listen_address, cfg->listen_port);
        return -1;
    }
    log_info("relay: listening on http://%s:%d%s", cfg->listen_address, cfg->listen_port, cfg->path_prefix);
    if (cfg->legacy_path[0])
        log_info("relay: legacy ASP.NET SignalR clients at http://%s:%d%s", cfg->listen_address, cfg->listen_port,
                 cfg->legacy_path);
    for (size_t i = 0; i < cfg->hub_count; i++)
        log_info("relay: hub %s at http://%s:%d%s/%s -> %s", cfg->hubs[i].name, cfg->listen_address,
                 cfg->listen_port, cfg->path_prefix, cfg->hubs[i].name, cfg->hubs[i].backend_url);
    if (relay->service.enabled)
        log_info("relay: service mode: apps connect at ws://%s:%d/server/ (%zu key%s), clients at /client/",
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
    legacy_table_free(&relay->legacy);
    loop_destroy(&relay->loop); /* closes every connection through the callbacks */
    if (relay->negotiations.loop)
        core_negotiations_clear(&relay->negotiations);
    backends_free(&relay->backends);
    free(relay->endpoints);
    relay->endpoints = NULL;
    service_free(&relay->service);
}

/* Renders /metrics (Prometheus text format) into out. */
static void relay_render_metrics(struct relay *relay, struct buf *out)
{
    const struct relay_stats *s = &relay->loop.stats;
    char text[2048];
    int n = snprintf(text, sizeof text,
        "# signalr-relay metrics\n"
        "signalr_relay_sessions_active %llu\n"
        "signalr_relay_sessions_opened_total %llu\n"
        "signalr_relay_sessions_closed_total %llu\n"
        "signalr_relay_negotiations_total %llu\n"
        "signalr_relay_negotiations_pending %zu\n"
        "signalr_relay_backend_links_active %llu\n"
        "signalr_relay_backend_failures_total %llu\n"
        "signalr_relay_messages_to_backend_total %llu\n"
        "signalr_relay_messages_to_clients_total %llu\n"
        "signalr_relay_bytes_to_backend_total %llu\n"
        "signalr_relay_bytes_to_clients_total %llu\n"
        "signalr_relay_protocol_errors_total %llu\n"
        "signalr_relay_flow_control_pauses_total %llu\n"
        "signalr_relay_out_of_memory_closes_total %llu\n"
        "signalr_relay_legacy_sessions_active %llu\n"
        "signalr_relay_legacy_negotiations_total %llu\n"
        "signalr_relay_legacy_polls_held %llu\n"
        "signalr_relay_timers_armed %zu\n"
        "signalr_relay_os_timers 1\n",
        (unsigned long long)s->sessions_active, (unsigned long long)s->sessions_opened,
        (unsigned long long)s->sessions_closed, (unsigned long long)s->negotiations,
        core_negotiations_pending(&relay->negotiations), (unsigned long long)s->backend_links_active,
        (unsigned long long)s->backend_failures, (unsigned long long)s->messages_to_backend,
        (unsigned long long)s->messages_to_clients, (unsigned long long)s->bytes_to_backend,
        (unsigned long long)s->bytes_to_clients, (unsigned long long)s->protocol_errors,
        (unsigned long long)s->flow_control_pauses, (unsigned long long)s->out_of_memory_closes,
        (unsigned long long)s->legacy_sessions_active,
        (unsigned long long)s->legacy_negotiations, (unsigned long long)s->legacy_polls_held,
        timer_wheel_armed(&relay->loop.wheel));
    buf_append(out, text, n > 0 ? (size_t)n : 0);
    service_render_metrics(&relay->service, out);
}
