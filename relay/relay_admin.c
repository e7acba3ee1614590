/* relay_admin.c - the operator's endpoints: /healthz, /readyz (per hub) and /metrics, on the
 * public port or on their own --admin-listen vhost (see relay.h). */
#include "relay/relay.h"

#include <stdio.h>
#include <string.h>

#include "relay/backend.h"
#include "relay/clock.h"
#include "relay/core_negotiate.h"
#include "relay/http.h"
#include "relay/listener.h"
#include "relay/lws_memory.h"
#include "relay/service.h"
#include "relay/tls.h"

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

/* GET /readyz: 200 when every proxied hub has a backend instance that is reachable as far as
 * the relay knows (its last connection worked, or none was tried yet) and every hub an app
 * connected in service mode still has a server connection, else 503; one line per hub. */
static int serve_readyz(struct relay *relay, struct lws *wsi)
{
    struct buf out;
    buf_init(&out);
    bool ready = true;
    uint64_t now = clock_now_ms();
    const struct backend_pools *pools = &relay->backends.pools;
    for (const struct list_node *node = pools->hubs.next; node != &pools->hubs; node = node->next) {
        const struct backend_pool *p = list_container_of(node, const struct backend_pool, link);
        if (p->removed)
            continue;
        size_t reachable = backend_pool_reachable(p);
        ready = ready && reachable > 0;
        char line[512];
        int n = snprintf(line, sizeof line, "hub %s: %s (%zu of %zu backend instance%s reachable)\n", p->name,
                         reachable ? "ready" : "not ready", reachable, p->count, p->count == 1 ? "" : "s");
        buf_append(&out, line, n > 0 ? (size_t)n : 0);
        backend_pool_render_readyz(pools, p, now, &out);
    }
    /* Service mode: each hub an app has connected, ready while it has a server connection. */
    for (const struct list_node *node = relay->service.hubs.next; relay->service.enabled && node != &relay->service.hubs;
         node = node->next) {
        const struct service_hub *hub = list_container_of(node, const struct service_hub, link);
        size_t servers = hub->model.server_count;
        ready = ready && servers > 0;
        char line[512];
        int n = snprintf(line, sizeof line, "app hub %s: %s (%zu server connection%s)\n", hub->key,
                         servers ? "ready" : "not ready", servers, servers == 1 ? "" : "s");
        buf_append(&out, line, n > 0 ? (size_t)n : 0);
    }
    struct buf body;
    buf_init(&body);
    buf_append_cstr(&body, ready ? "ready\n" : "not ready\n");
    buf_append(&body, out.data ? out.data : "", out.len);
    int rc = http_respond(relay->loop.cfg, wsi, ready ? 200 : 503, "text/plain; charset=utf-8", body.data, body.len);
    buf_free(&out);
    buf_free(&body);
    return rc;
}

/* /healthz (the process answers), /readyz, /metrics; *served false when path is none of them. */
int relay_route_admin(struct relay *relay, struct lws *wsi, const char *path, enum http_method method, bool *served)
{
    *served = true;
    if (strcmp(path, "/metrics") == 0 && method == HTTP_GET)
        return serve_metrics(relay, wsi);
    if (strcmp(path, "/healthz") == 0 && method == HTTP_GET)
        return http_respond_text(relay->loop.cfg, wsi, 200, "ok");
    if (strcmp(path, "/readyz") == 0 && method == HTTP_GET)
        return serve_readyz(relay, wsi);
    *served = false;
    return 0;
}

/* The --admin-listen address: the admin paths only. */
static int admin_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    if (reason != LWS_CALLBACK_HTTP)
        return reason == LWS_CALLBACK_HTTP_CONFIRM_UPGRADE ? -1 : lws_callback_http_dummy(wsi, reason, user, in, len);
    struct relay *relay = lws_context_user(lws_get_context(wsi));
    char path[1024];
    bool served;
    if (!http_request_path(wsi, path, sizeof path))
        return http_respond_text(relay->loop.cfg, wsi, 414, "URI Too Long");
    int rc = relay_route_admin(relay, wsi, path, http_request_method(wsi), &served);
    return served ? rc : http_respond_text(relay->loop.cfg, wsi, 404, "Not Found");
}

/* --admin-listen: a second vhost on the same context, serving only the admin paths. */
bool relay_start_admin(struct relay *relay)
{
    const struct relay_config *cfg = relay->loop.cfg;
    if (!cfg->admin_address)
        return true;
    relay->admin_protocols[0] = (struct lws_protocols){ "http-admin", admin_callback, 0, 0, 0, NULL, 0 };
    relay->admin_protocols[1] = (struct lws_protocols){ NULL, NULL, 0, 0, 0, NULL, 0 };
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = cfg->admin_port;
    info.iface = cfg->admin_address;
    info.protocols = relay->admin_protocols;
    info.vhost_name = "admin";
    info.retry_and_idle_policy = &loop_lws_retry_policy;
    if (!lws_create_vhost(relay->loop.lws, &info)) {
        log_error("relay: cannot listen on %s:%d for --admin-listen", cfg->admin_address, cfg->admin_port);
        return false;
    }
    log_info("relay: /healthz, /readyz and /metrics at http://%s:%d", cfg->admin_address, cfg->admin_port);
    return true;
}

/* Timers armed for connections, negotiations and sessions: the wheel's count
 * without the relay's own always-armed lws wake-up. */
static size_t connection_timers(const struct relay *relay)
{
    return timer_wheel_armed(&relay->loop.wheel) - (timer_is_armed(&relay->lws_wake_timer) ? 1 : 0);
}

/* Renders /metrics (Prometheus text format) into out. */
static void relay_render_metrics(struct relay *relay, struct buf *out)
{
    const struct relay_stats *s = &relay->loop.stats;
    char text[3072];
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
        "signalr_relay_client_connections_active %zu\n"
        "signalr_relay_client_connections_accepted_total %llu\n"
        "signalr_relay_client_connections_refused_total %llu\n"
        "signalr_relay_accept_pauses_total %llu\n"
        "signalr_relay_unidentified_closed_total %llu\n"
        "signalr_relay_timers_armed %zu\n"
        "signalr_relay_requests_refused_total %llu\n"
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
        listener_active(&relay->listener),
        (unsigned long long)relay->listener.stats.accepted, (unsigned long long)relay->listener.stats.refused,
        (unsigned long long)relay->listener.stats.accept_pauses,
        (unsigned long long)relay->listener.stats.unidentified_closed, connection_timers(relay),
        (unsigned long long)relay->refusals.total);
    buf_append(out, text, n > 0 ? (size_t)n : 0);
    n = snprintf(text, sizeof text, "signalr_relay_core_polls_waiting %llu\nsignalr_relay_core_streams_open %llu\n"
                 "signalr_relay_legacy_shared_translations_total %llu\n",
                 (unsigned long long)s->core_polls_waiting, (unsigned long long)s->core_streams_open,
                 (unsigned long long)s->legacy_shared_translations);
    buf_append(out, text, n > 0 ? (size_t)n : 0);
    n = snprintf(text, sizeof text, "signalr_relay_core_stateful_away %llu\nsignalr_relay_core_stateful_resumes_total %llu\n",
                 (unsigned long long)s->core_stateful_away, (unsigned long long)s->core_stateful_resumes);
    buf_append(out, text, n > 0 ? (size_t)n : 0);
    n = snprintf(text, sizeof text, "signalr_relay_capture_files_total %llu\nsignalr_relay_capture_skipped_total{reason=\"dir_full\"} %llu\n"
                 "signalr_relay_capture_dropped_total{reason=\"queue_full\"} %llu\nsignalr_relay_capture_truncated_total %llu\n",
                 (unsigned long long)s->capture_files, (unsigned long long)s->capture_skipped,
                 (unsigned long long)s->capture_dropped, (unsigned long long)s->capture_truncated);
    buf_append(out, text, n > 0 ? (size_t)n : 0);
    n = snprintf(text, sizeof text, "signalr_relay_lws_pooled_chunks %zu\nsignalr_relay_lws_pool_pages %zu\n",
                 lws_memory_pooled(), lws_memory_pages());
    buf_append(out, text, n > 0 ? (size_t)n : 0);
    backend_pools_render_metrics(&relay->backends.pools, clock_now_ms(), out);
    service_render_metrics(&relay->service, out);
    tls_render_metrics(&relay->tls, out);
}
