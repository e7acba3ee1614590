/* service_hub.c - server connections, clients and fan-out of one service-mode
 * hub (see service_hub.h). */
#include "hub/service_hub.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---- protocols ---- */

static const char *const protocol_names[SVC_PROTOCOL_COUNT] = { "json", "messagepack", "blazorpack" };

bool svc_protocol_from_name(struct span name, enum svc_protocol *out)
{
    for (int p = 0; p < SVC_PROTOCOL_COUNT; p++) {
        if (span_eq_nocase(name, span_from_cstr(protocol_names[p]))) {
            *out = (enum svc_protocol)p;
            return true;
        }
    }
    return false;
}

const char *svc_protocol_name(enum svc_protocol p)
{
    return p >= 0 && p < SVC_PROTOCOL_COUNT ? protocol_names[p] : "?";
}

/* ---- the hub ---- */

void svc_hub_init(struct svc_hub *hub, const uint8_t seed[DICT_SEED_LEN])
{
    memset(hub, 0, sizeof(*hub));
    conn_table_init(&hub->clients, seed);
    list_init_head(&hub->clients_list);
    group_table_init(&hub->groups, seed);
    user_table_init(&hub->users, seed);
    list_init_head(&hub->servers);
}

void svc_hub_free(struct svc_hub *hub)
{
    assert(conn_table_count(&hub->clients) == 0 && hub->server_count == 0);
    group_table_free(&hub->groups);
    user_table_free(&hub->users);
    conn_table_free(&hub->clients);
}

/* ---- server connections ---- */

static char *copy_string(struct span s)
{
    char *copy = malloc(s.len + 1);
    if (copy) {
        if (s.len)
            memcpy(copy, s.ptr, s.len);
        copy[s.len] = '\0';
    }
    return copy;
}

enum hub_status svc_hub_add_server(struct svc_hub *hub, struct svc_server_conn *s,
                                   struct span conn_id, struct span server_id, void *owner)
{
    memset(s, 0, sizeof(*s));
    s->conn_id = copy_string(conn_id);
    s->server_id = copy_string(server_id);
    if (!s->conn_id || !s->server_id) {
        free(s->conn_id);
        free(s->server_id);
        memset(s, 0, sizeof(*s));
        return HUB_ERR_NOMEM;
    }
    s->accepting = true;
    s->owner = owner;
    list_push_back(&hub->servers, &s->hub_link);
    hub->server_count++;
    return HUB_OK;
}

/* Fewer clients first; among equals the one picked least recently. */
static bool better(const struct svc_server_conn *a, const struct svc_server_conn *b)
{
    if (!b)
        return true;
    if (a->client_count != b->client_count)
        return a->client_count < b->client_count;
    return a->picked_at < b->picked_at;
}

static struct svc_server_conn *least_loaded(struct svc_hub *hub, struct span server_id)
{
    struct svc_server_conn *best = NULL;
    for (struct list_node *n = hub->servers.next; n != &hub->servers; n = n->next) {
        struct svc_server_conn *s = list_container_of(n, struct svc_server_conn, hub_link);
        if (!s->accepting)
            continue;
        if (server_id.ptr && !span_eq_cstr(server_id, s->server_id))
            continue;
        if (better(s, best))
            best = s;
    }
    return best;
}

struct svc_server_conn *svc_hub_pick_server(struct svc_hub *hub, struct span preferred_server_id,
                                            bool required)
{
    struct svc_server_conn *s = NULL;
    if (preferred_server_id.ptr && preferred_server_id.len > 0)
        s = least_loaded(hub, preferred_server_id);
    if (!s && !(required && preferred_server_id.ptr && preferred_server_id.len > 0))
        s = least_loaded(hub, SPAN_NONE);
    if (s)
        s->picked_at = ++hub->picks;
    return s;
}

size_t svc_hub_remove_server(struct svc_hub *hub, struct svc_server_conn *s, svc_client_fn fn, void *ctx)
{
    size_t removed = 0;
    s->accepting = false; /* so no client joins s during the walk */
    /* The hub's clients, those bound to s: a server connection goes rarely (an app stopping or
     * restarting), so its clients are found in the hub's list rather than each client
     * carrying a link in a list of its server's (16 bytes per client). fn may remove any
     * client: the iteration is safe against it. */
    struct conn_list_iter it;
    struct hub_conn *conn;
    conn_list_iter_begin(&it, &hub->clients_list);
    while (s->client_count > 0 && (conn = conn_list_iter_next(&it)) != NULL) {
        struct svc_client *c = svc_client_of(conn);
        if (c->server != s)
            continue;
        svc_hub_remove_client(hub, c);
        removed++;
        if (fn)
            fn(ctx, c);
    }
    conn_list_iter_end(&it);
    list_unlink(&s->hub_link);
    hub->server_count--;
    free(s->conn_id);
    free(s->server_id);
    s->conn_id = s->server_id = NULL;
    return removed;
}

/* ---- clients ---- */

enum hub_status svc_hub_add_client(struct svc_hub *hub, struct svc_client *c, struct span id,
                                   enum svc_protocol protocol, struct span user_id,
                                   struct svc_server_conn *server)
{
    memset(c, 0, sizeof(*c));
    if (protocol < 0 || protocol >= SVC_PROTOCOL_COUNT || !server)
        return HUB_ERR_VALUE;
    enum hub_status st = hub_conn_init(&c->conn, id);
    if (st != HUB_OK)
        return st;
    if ((st = conn_table_add(&hub->clients, &c->conn)) != HUB_OK)
        return st;
    if (user_id.ptr && user_id.len > 0 && (st = user_attach(&hub->users, &c->conn, user_id)) != HUB_OK) {
        conn_table_remove(&hub->clients, &c->conn);
        return st;
    }
    c->protocol = protocol;
    c->server = server;
    c->all_link.conn = &c->conn;
    list_push_back(&hub->clients_list, &c->all_link.node);
    server->client_count++;
    return HUB_OK;
}

void svc_hub_remove_client(struct svc_hub *hub, struct svc_client *c)
{
    group_remove_connection(&c->conn);
    user_detach(&c->conn);
    conn_table_remove(&hub->clients, &c->conn);
    list_unlink(&c->all_link.node);
    c->server->client_count--;
    c->server = NULL;
}

struct svc_client *svc_hub_find_client(struct svc_hub *hub, struct span id)
{
    struct hub_conn *conn = conn_table_find(&hub->clients, id);
    return conn ? svc_client_of(conn) : NULL;
}

/* ---- groups ---- */

int32_t svc_hub_join(struct svc_hub *hub, struct span conn_id, struct span group)
{
    struct svc_client *c = svc_hub_find_client(hub, conn_id);
    if (!c)
        return SVC_ACK_NOT_FOUND;
    switch (group_add(&hub->groups, &c->conn, group)) {
    case HUB_OK:
    case HUB_ALREADY:
        return SVC_ACK_OK;
    default:
        return SVC_ACK_INTERNAL_ERROR;
    }
}

int32_t svc_hub_leave(struct svc_hub *hub, struct span conn_id, struct span group)
{
    struct svc_client *c = svc_hub_find_client(hub, conn_id);
    if (!c)
        return SVC_ACK_NOT_FOUND;
    if (!group.ptr)
        group_remove_connection(&c->conn);
    else
        (void)group_remove(&hub->groups, &c->conn, group); /* not a member: still OK */
    return SVC_ACK_OK;
}

/* ---- fan-out ---- */

struct send {
    uint32_t stamp;
    bool once;                               /* deliver once per connection */
    bool has[SVC_PROTOCOL_COUNT];
    struct span payload[SVC_PROTOCOL_COUNT]; /* resolved once per send */
    svc_deliver_fn fn;
    void *ctx;
    struct svc_fanout_result result;
};

static void deliver(struct send *s, struct svc_client *c)
{
    if (c->exclude_stamp == s->stamp)
        return;
    if (s->once) {
        if (c->visit_stamp == s->stamp)
            return;
        c->visit_stamp = s->stamp;
    }
    if (!s->has[c->protocol]) {
        s->result.no_payload++;
        return;
    }
    s->result.delivered++;
    s->fn(s->ctx, c, s->payload[c->protocol]);
}

static void send_to_group(struct svc_hub *hub, struct send *s, struct span name)
{
    struct group *g = group_find(&hub->groups, name);
    if (!g)
        return;
    struct group_iter it;
    struct hub_conn *conn;
    group_iter_begin(&it, g);
    while ((conn = group_iter_next(&it)) != NULL)
        deliver(s, svc_client_of(conn));
    group_iter_end(&it);
}

static void send_to_user(struct svc_hub *hub, struct send *s, struct span id)
{
    struct user *u = id.ptr ? user_find(&hub->users, id) : NULL;
    if (!u)
        return;
    struct user_iter it;
    struct hub_conn *conn;
    user_iter_begin(&it, u);
    while ((conn = user_iter_next(&it)) != NULL)
        deliver(s, svc_client_of(conn));
    user_iter_end(&it);
}

static void send_to_all(struct svc_hub *hub, struct send *s)
{
    struct conn_list_iter it;
    struct hub_conn *conn;
    conn_list_iter_begin(&it, &hub->clients_list);
    while ((conn = conn_list_iter_next(&it)) != NULL)
        deliver(s, svc_client_of(conn));
    conn_list_iter_end(&it);
}

static void exclude_connections(struct svc_hub *hub, struct send *s, const struct svc_list *ids)
{
    struct svc_list_iter it;
    struct span id;
    svc_list_iter_begin(&it, ids);
    while (svc_list_iter_next(&it, &id, NULL)) {
        struct svc_client *c = id.ptr ? svc_hub_find_client(hub, id) : NULL;
        if (c)
            c->exclude_stamp = s->stamp;
    }
}

static void exclude_users(struct svc_hub *hub, struct send *s, const struct svc_list *ids)
{
    struct svc_list_iter it;
    struct span id;
    svc_list_iter_begin(&it, ids);
    while (svc_list_iter_next(&it, &id, NULL)) {
        struct user *u = id.ptr ? user_find(&hub->users, id) : NULL;
        if (!u)
            continue;
        for (struct list_node *n = u->conns.next; n != &u->conns; n = n->next)
            if (!hub_conn_link_is_marker(n))
                svc_client_of(list_container_of(n, struct hub_conn_link, node)->conn)->exclude_stamp = s->stamp;
    }
}

/* The stamp of a new send. Stamps are 32-bit and compared for equality
 * only; 0 is never a send's, so a client never stamped matches none. When
 * the counter wraps (once per 2^32 - 1 sends), every client's stamps go back
 * to 0 first: a stamp left from before the wrap could otherwise equal a
 * later send's and skip or exclude that client. */
static uint32_t next_stamp(struct svc_hub *hub)
{
    if (hub->stamp == UINT32_MAX) {
        for (struct list_node *n = hub->clients_list.next; n != &hub->clients_list; n = n->next) {
            if (hub_conn_link_is_marker(n))
                continue;
            struct svc_client *c = list_container_of(n, struct svc_client, all_link.node);
            c->visit_stamp = c->exclude_stamp = 0;
        }
        hub->stamp = 0;
    }
    return ++hub->stamp;
}

struct svc_fanout_result svc_hub_fanout(struct svc_hub *hub, const struct svc_msg *msg,
                                        svc_deliver_fn fn, void *ctx)
{
    assert(!hub->in_fanout); /* callbacks must not start another send on this hub */
    struct send s = { .stamp = next_stamp(hub), .fn = fn, .ctx = ctx };
    for (int p = 0; p < SVC_PROTOCOL_COUNT; p++)
        s.has[p] = svc_payloads_find(&msg->payloads, span_from_cstr(protocol_names[p]), &s.payload[p]);
    hub->in_fanout = true;

    struct svc_list_iter it;
    struct span name;
    switch (msg->type) {
    case SVC_MULTI_CONNECTION_DATA:
        svc_list_iter_begin(&it, &msg->ids);
        while (svc_list_iter_next(&it, &name, NULL)) {
            struct svc_client *c = name.ptr ? svc_hub_find_client(hub, name) : NULL;
            if (c)
                deliver(&s, c);
        }
        break;
    case SVC_USER_DATA:
        send_to_user(hub, &s, msg->user_id);
        break;
    case SVC_MULTI_USER_DATA:
        s.once = true;
        svc_list_iter_begin(&it, &msg->ids);
        while (svc_list_iter_next(&it, &name, NULL))
            send_to_user(hub, &s, name);
        break;
    case SVC_BROADCAST_DATA:
        exclude_connections(hub, &s, &msg->ids);
        send_to_all(hub, &s);
        break;
    case SVC_GROUP_BROADCAST_DATA:
        exclude_connections(hub, &s, &msg->ids);
        exclude_users(hub, &s, &msg->excluded_users);
        send_to_group(hub, &s, msg->group);
        break;
    case SVC_MULTI_GROUP_BROADCAST_DATA:
        s.once = true;
        svc_list_iter_begin(&it, &msg->ids);
        while (svc_list_iter_next(&it, &name, NULL))
            if (name.ptr)
                send_to_group(hub, &s, name);
        break;
    default:
        break;
    }
    hub->in_fanout = false;
    return s.result;
}
