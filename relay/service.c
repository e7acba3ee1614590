/* service.c - service mode's keys, hub registry and metrics (see service.h). */
#include "relay/service.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "hub/service_token.h"
#include "relay/http.h"


bool service_init(struct service *svc, struct loop *loop, const uint8_t seed[DICT_SEED_LEN])
{
    memset(svc, 0, sizeof *svc);
    svc->loop = loop;
    list_init_head(&svc->hubs);
    list_init_head(&svc->servers);
    list_init_head(&svc->behind);
    timer_entry_init(&svc->turn_timer, service_servers_turn);
    memcpy(svc->seed, seed, DICT_SEED_LEN);
    service_channel_pool_init(&svc->channels);
    spent_ids_init(&svc->spent, seed);
    spent_ids_init(&svc->stateful, seed);
    early_sends_init(&svc->early, seed);
    const struct relay_config *cfg = loop->cfg;
    if (cfg->service_key_count == 0)
        return true;
    svc->keys = calloc(cfg->service_key_count, sizeof *svc->keys);
    if (!svc->keys)
        return false;
    for (size_t i = 0; i < cfg->service_key_count; i++)
        svc->keys[i] = span_from_cstr(cfg->service_keys[i]);
    svc->key_count = cfg->service_key_count;
    /* The connection tokens of /client/ are the relay's own: keyed from --token-secret (with a
     * label of their own, so a legacy token is never one of these) or random per process. */
    bool keyed;
    if (cfg->token_secret) {
        struct buf secret;
        buf_init(&secret);
        keyed = buf_append_cstr(&secret, "service-mode client tokens:") && buf_append_cstr(&secret, cfg->token_secret) &&
                buf_append_byte(&secret, '\0') && token_key_from_secret(&svc->token_key, secret.data);
        buf_free(&secret);
    } else {
        keyed = token_key_generate(&svc->token_key);
    }
    svc->enabled = keyed;
    return keyed;
}

void service_free(struct service *svc)
{
    while (!list_is_empty(&svc->hubs)) {
        struct service_hub *hub = list_container_of(svc->hubs.next, struct service_hub, link);
        list_unlink(&hub->link);
        while (!list_is_empty(&hub->invocations)) {
            struct list_node *n = hub->invocations.next;
            list_unlink(n);
            free(list_container_of(n, struct service_invocation, link));
        }
        timer_cancel(&hub->deferred_timer); /* every channel is gone: nothing is deferred */
        svc_hub_free(&hub->model);
        free(hub);
    }
    timer_cancel(&svc->turn_timer); /* every server connection is gone: none is behind */
    pool_close(&svc->channels);     /* every channel is gone: its pages go */
    spent_ids_free(&svc->spent);
    spent_ids_free(&svc->stateful);
    early_sends_free(&svc->early);
    free(svc->keys);
    svc->keys = NULL;
    token_key_clear(&svc->token_key);
}

struct service_hub *service_hub_find(struct service *svc, struct span key)
{
    for (struct list_node *n = svc->hubs.next; n != &svc->hubs; n = n->next) {
        struct service_hub *hub = list_container_of(n, struct service_hub, link);
        if (span_eq_nocase(span_from_cstr(hub->key), key))
            return hub;
    }
    return NULL;
}

static bool hub_key_is_valid(struct span key)
{
    if (key.len == 0 || key.len > 128)
        return false;
    for (size_t i = 0; i < key.len; i++) {
        unsigned char c = (unsigned char)key.ptr[i];
        if (!isalnum(c) && c != '-' && c != '_' && c != '.')
            return false;
    }
    return true;
}

struct service_hub *service_hub_get(struct service *svc, struct span key, service_channel_open_fn open)
{
    struct service_hub *hub = service_hub_find(svc, key);
    if (hub || !hub_key_is_valid(key))
        return hub;
    hub = calloc(1, sizeof *hub + key.len + 1);
    if (!hub)
        return NULL;
    for (size_t i = 0; i < key.len; i++)
        hub->key[i] = (char)tolower((unsigned char)key.ptr[i]);
    hub->endpoint.name = hub->key;
    hub->endpoint.open = open;
    hub->service = svc;
    svc_hub_init(&hub->model, svc->seed);
    list_init_head(&hub->invocations);
    list_init_head(&hub->deferred);
    timer_entry_init(&hub->deferred_timer, service_channels_deferred);
    list_push_back(&svc->hubs, &hub->link);
    svc->hub_count++;
    return hub;
}

struct svc_server_conn *service_hub_server(struct service_hub *hub, struct span server_id)
{
    struct svc_server_conn *found = NULL;
    for (struct list_node *n = hub->model.servers.next; n != &hub->model.servers; n = n->next) {
        struct svc_server_conn *sc = list_container_of(n, struct svc_server_conn, hub_link);
        if (span_eq_cstr(server_id, sc->server_id) && (!found || sc->accepting))
            found = sc;
    }
    return found;
}

static char *put(char **w, struct span s)
{
    char *start = *w;
    if (s.len)
        memcpy(start, s.ptr, s.len);
    start[s.len] = '\0';
    *w += s.len + 1;
    return start;
}

bool service_invocation_add(struct service_hub *hub, struct span invocation_id, struct span conn_id,
                            struct span caller_server_id)
{
    struct service_invocation *inv =
        malloc(sizeof *inv + invocation_id.len + conn_id.len + caller_server_id.len + 3);
    if (!inv)
        return false;
    char *w = inv->bytes;
    inv->invocation_id = put(&w, invocation_id);
    inv->conn_id = put(&w, conn_id);
    inv->caller_server_id = put(&w, caller_server_id);
    list_push_back(&hub->invocations, &inv->link);
    return true;
}

void service_invocation_done(struct service_hub *hub, struct span invocation_id)
{
    for (struct list_node *n = hub->invocations.next; n != &hub->invocations; n = n->next) {
        struct service_invocation *inv = list_container_of(n, struct service_invocation, link);
        if (span_eq_cstr(invocation_id, inv->invocation_id)) {
            list_unlink(n);
            free(inv);
            return;
        }
    }
}

void service_invocations_client_gone(struct service_hub *hub, struct span conn_id)
{
    struct list_node *n = hub->invocations.next;
    while (n != &hub->invocations) {
        struct service_invocation *inv = list_container_of(n, struct service_invocation, link);
        n = n->next;
        if (!span_eq_cstr(conn_id, inv->conn_id))
            continue;
        struct svc_server_conn *to = service_hub_server(hub, span_from_cstr(inv->caller_server_id));
        if (to && !hub->service->loop->destroying) {
            char error[200];
            snprintf(error, sizeof error, "Connection '%s' is disconnected.", inv->conn_id);
            struct svc_msg m;
            memset(&m, 0, sizeof m);
            m.type = SVC_ERROR_COMPLETION;
            m.invocation_id = span_from_cstr(inv->invocation_id);
            m.connection_id = span_from_cstr(inv->conn_id);
            m.caller_server_id = span_from_cstr(inv->caller_server_id);
            m.error = span_from_cstr(error);
            struct buf out;
            buf_init(&out);
            struct service_uplink *up = to->owner;
            if (svc_msg_encode(&m, &out, NULL) == PROTO_OK)
                up->write(up, &out);
            buf_free(&out);
        }
        list_unlink(&inv->link);
        free(inv);
    }
}

bool service_hub_accepting(const struct service_hub *hub)
{
    for (const struct list_node *n = hub->model.servers.next; n != &hub->model.servers; n = n->next)
        if (list_container_of(n, struct svc_server_conn, hub_link)->accepting)
            return true;
    return false;
}

int service_request_token(struct lws *wsi, char *out, size_t out_len)
{
    char auth[SVC_TOKEN_MAX_CHARS + 64];
    int n = http_header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION, auth, sizeof auth);
    if (n > 7 && strncasecmp(auth, "Bearer ", 7) == 0) {
        size_t len = (size_t)n - 7;
        if (len >= out_len)
            return -1;
        memcpy(out, auth + 7, len + 1);
        return (int)len;
    }
    return http_query_arg(wsi, "access_token", out, out_len);
}

int64_t service_unix_now(void)
{
    return (int64_t)time(NULL);
}

static void metric_line(struct buf *out, const char *name, const char *hub, unsigned long long value)
{
    char line[512];
    int n = hub ? snprintf(line, sizeof line, "%s{hub=\"%s\"} %llu\n", name, hub, value)
                : snprintf(line, sizeof line, "%s %llu\n", name, value);
    if (n > 0 && (size_t)n < sizeof line)
        buf_append(out, line, (size_t)n);
}

void service_render_metrics(struct service *svc, struct buf *out)
{
    if (!svc->enabled)
        return;
    const struct service_stats *st = &svc->stats;
    metric_line(out, "signalr_relay_service_hubs", NULL, svc->hub_count);
    metric_line(out, "signalr_relay_service_server_sockets", NULL, svc->server_count);
    metric_line(out, "signalr_relay_service_servers_accepted_total", NULL, st->servers_accepted);
    metric_line(out, "signalr_relay_service_servers_refused_total", NULL, st->servers_refused);
    metric_line(out, "signalr_relay_service_server_protocol_errors_total", NULL, st->server_protocol_errors);
    metric_line(out, "signalr_relay_service_clients_opened_total", NULL, st->clients_opened);
    metric_line(out, "signalr_relay_service_fanout_messages_total", NULL, st->fanout_messages);
    metric_line(out, "signalr_relay_service_fanout_deliveries_total", NULL, st->fanout_deliveries);
    metric_line(out, "signalr_relay_service_acks_total", NULL, st->acks_sent);
    metric_line(out, "signalr_relay_service_slow_client_closes_total", NULL, st->slow_client_closes);
    metric_line(out, "signalr_relay_service_dropped_unknown_total", NULL, st->dropped_unknown);
    metric_line(out, "signalr_relay_service_fanout_turns_deferred_total", NULL, st->fanout_turns_deferred);
    for (struct list_node *n = svc->hubs.next; n != &svc->hubs; n = n->next) {
        struct service_hub *hub = list_container_of(n, struct service_hub, link);
        metric_line(out, "signalr_relay_service_server_connections", hub->key, hub->model.server_count);
        metric_line(out, "signalr_relay_service_clients", hub->key, svc_hub_client_count(&hub->model));
        for (int p = 0; p < SVC_PROTOCOL_COUNT; p++) {
            char label[200];
            snprintf(label, sizeof label, "%s\",protocol=\"%s", hub->key, svc_protocol_name((enum svc_protocol)p));
            metric_line(out, "signalr_relay_service_clients_by_protocol", label, hub->clients_by_protocol[p]);
        }
        metric_line(out, "signalr_relay_service_groups", hub->key, group_table_count(&hub->model.groups));
        metric_line(out, "signalr_relay_service_memberships", hub->key, dict_count(&hub->model.groups.memberships));
        metric_line(out, "signalr_relay_service_users", hub->key, user_table_count(&hub->model.users));
    }
}
