/* service_hub.h - one hub in service mode: the app's server connections,
 * the clients the relay holds for it, and who receives each send.
 *
 * In service mode (specs/service-protocol.md) ASP.NET Core apps connect their
 * hubs to the relay over a few multiplexed server connections, and the relay
 * owns the clients, groups and users. This is the pure part of that:
 *   - server connections, each with its ids and its client count; a new
 *     client goes to the accepting connection with the fewest clients, ties
 *     to the one picked least recently (so equal connections take turns),
 *     and among never-picked ones to the one added first;
 *   - clients: connection id -> protocol, user, server connection and the
 *     relay's object; groups and users are hub/group.c and hub/user.c;
 *   - fan-out of the send messages (7, 8, 9, 10, 13, 14): the recipients and
 *     the payload of each one's protocol, handed to a callback, in
 *     O(recipients + exclusions). Excluded connection and user ids are
 *     marked on the clients before the walk (a per-send stamp), so checking
 *     one recipient costs one compare, not a scan of the exclude list; the
 *     same stamp makes 9 and 14 deliver once per connection;
 *   - join and leave with the Ack status the SDK expects (appendix A.10).
 * No sockets and no clock; the relay calls in from its event loop.
 *
 * Routing is global within the hub (spec 2.7): a send arriving on any server
 * connection reaches clients bound to any other. Ids of clients the hub does
 * not know are skipped silently (appendix A.4).
 *
 * OWNERSHIP: the relay owns the memory of every struct svc_server_conn and
 * struct svc_client (embedded in its own objects); the hub links them and
 * owns the copies of ids it keeps. A client must be removed before its
 * memory goes; removing a server connection removes its clients and hands
 * each one to a callback for the relay to close and free. Callbacks may
 * remove any client (the walks are conn_list iterations, safe against it)
 * but must not start another fan-out on the same hub from inside one. */
#ifndef SR_SERVICE_HUB_H
#define SR_SERVICE_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/list.h"
#include "containers/span.h"
#include "hub/conn_list.h"
#include "hub/group.h"
#include "hub/hub_conn.h"
#include "hub/hub_status.h"
#include "hub/user.h"
#include "protocol/service_msg.h"

/* The hub protocols the SDK serialises payloads for (spec 4.4). */
enum svc_protocol {
    SVC_PROTOCOL_JSON = 0,
    SVC_PROTOCOL_MESSAGEPACK,
    SVC_PROTOCOL_BLAZORPACK,
    SVC_PROTOCOL_COUNT,
};

/* The protocol for a client's handshake name (ASCII case-insensitive);
 * false for anything else (the relay refuses such a handshake itself). */
bool svc_protocol_from_name(struct span name, enum svc_protocol *out);
const char *svc_protocol_name(enum svc_protocol p);

/* One server connection of one app server. */
struct svc_server_conn {
    struct list_node hub_link;  /* in hub->servers */
    size_t client_count;        /* its clients (svc_client.server == this), found in the hub's list */
    uint64_t picked_at;         /* hub pick counter when last given a client; 0 = never */
    bool accepting;             /* takes new clients (false after shutdown fin:N) */
    char *conn_id;              /* the cid of its URL; owned */
    char *server_id;            /* the app server's id (nameid / X-ASRS-Server-Id); owned */
    void *owner;                /* the relay's object; never touched here */
};

/* One client connection, embedded in the relay's object (found from it by container_of). */
struct svc_client {
    struct hub_conn conn;            /* id, user, groups */
    struct hub_conn_link all_link;   /* in hub->clients_list: broadcasts walk it */
    struct svc_server_conn *server;
    enum svc_protocol protocol;
    /* 32 bits are enough: the stamps are only compared for equality with the
     * current send's, and when the hub's counter wraps every client's stamps
     * are reset (svc_hub_fanout), so an old stamp never matches a new send. */
    uint32_t visit_stamp;            /* the send that last delivered to it; 0: none */
    uint32_t exclude_stamp;          /* the send that excluded it; 0: none */
};

struct svc_hub {
    struct conn_table clients;       /* struct svc_client.conn, by id */
    struct list_node clients_list;   /* struct svc_client.all_link (and iterator markers) */
    struct group_table groups;
    struct user_table users;
    struct list_node servers;        /* struct svc_server_conn.hub_link */
    size_t server_count;
    uint64_t picks;                  /* svc_hub_pick_server calls that found one */
    uint32_t stamp;                  /* the last fan-out send's stamp (1..UINT32_MAX; 0: none yet) */
    bool in_fanout;
};

static inline struct svc_client *svc_client_of(struct hub_conn *conn)
{
    return list_container_of(conn, struct svc_client, conn);
}

void svc_hub_init(struct svc_hub *hub, const uint8_t seed[DICT_SEED_LEN]);
/* Frees the hub's indexes. Every client and server must have been removed. */
void svc_hub_free(struct svc_hub *hub);

static inline size_t svc_hub_client_count(const struct svc_hub *hub)
{
    return conn_table_count(&hub->clients);
}

/* ---- server connections ---- */

/* Links s (caller's memory) as an accepting server connection with copies of
 * its ids (conn_id: the cid; server_id may be absent). HUB_ERR_NOMEM. */
enum hub_status svc_hub_add_server(struct svc_hub *hub, struct svc_server_conn *s,
                                   struct span conn_id, struct span server_id, void *owner);

/* The server connection for a new client: among the accepting ones, the one
 * with the fewest clients, ties to the one picked least recently. With a
 * preferred server id (the client token's asrs.s.sn), only that server's
 * connections are considered first; if it has none, NULL when required,
 * else any. NULL if no connection accepts. O(server connections of the hub),
 * which are a handful per app server. */
struct svc_server_conn *svc_hub_pick_server(struct svc_hub *hub, struct span preferred_server_id,
                                            bool required);

/* Stops giving s new clients (shutdown fin:N); its clients stay. */
static inline void svc_server_stop_accepting(struct svc_server_conn *s) { s->accepting = false; }

/* Called for each client of a server connection that goes away, after the
 * client has left the hub (groups, user, table): the relay closes and frees it. */
typedef void (*svc_client_fn)(void *ctx, struct svc_client *client);

/* Unlinks s, removes every client bound to it (each handed to fn, which may
 * be NULL), frees the id copies. Returns the number of clients removed.
 * O(the hub's clients up to the last of s's): a client keeps no link to its
 * server connection's other clients. */
size_t svc_hub_remove_server(struct svc_hub *hub, struct svc_server_conn *s, svc_client_fn fn, void *ctx);

/* ---- clients ---- */

/* Adds a client (caller's memory) bound to server, attached to user_id
 * unless that is absent or empty. id: HUB_CONN_ID_LEN base64url characters
 * (HUB_ERR_VALUE otherwise); HUB_ALREADY if the id is taken; HUB_ERR_NOMEM.
 * Nothing is changed on failure. */
enum hub_status svc_hub_add_client(struct svc_hub *hub, struct svc_client *c, struct span id,
                                   enum svc_protocol protocol, struct span user_id,
                                   struct svc_server_conn *server);

/* Takes the client out of its groups, user, server connection and the hub. */
void svc_hub_remove_client(struct svc_hub *hub, struct svc_client *c);

struct svc_client *svc_hub_find_client(struct svc_hub *hub, struct span id);

/* ---- groups (messages 11, 12, 18, 19) ---- */

/* Ack status for JoinGroup: SVC_ACK_OK (also when already a member),
 * SVC_ACK_NOT_FOUND for an unknown connection, SVC_ACK_INTERNAL_ERROR for
 * an empty group name or out of memory. */
int32_t svc_hub_join(struct svc_hub *hub, struct span conn_id, struct span group);

/* Ack status for LeaveGroup: SVC_ACK_OK (also when not a member),
 * SVC_ACK_NOT_FOUND for an unknown connection. An absent group (nil on the
 * wire) leaves every group. */
int32_t svc_hub_leave(struct svc_hub *hub, struct span conn_id, struct span group);

/* ---- fan-out (messages 7, 8, 9, 10, 13, 14) ---- */

/* One delivery: the payload is the bytes for client's protocol, borrowed
 * from the decoded message. */
typedef void (*svc_deliver_fn)(void *ctx, struct svc_client *client, struct span payload);

struct svc_fanout_result {
    size_t delivered;
    size_t no_payload;  /* recipients skipped: no payload for their protocol */
};

/* Delivers a decoded send message to its recipients:
 *   7  each listed connection id (as often as it is listed, like ASP.NET
 *      Core's Clients.Clients), unknown ids skipped;
 *   8  the user's connections;
 *   9  the listed users' connections, once per connection;
 *   10 every client but the excluded connection ids;
 *   13 the group's members but the excluded connection ids and the
 *      connections of the excluded user ids;
 *   14 the members of the listed groups, once per connection.
 * Other message types deliver nothing. */
struct svc_fanout_result svc_hub_fanout(struct svc_hub *hub, const struct svc_msg *msg,
                                        svc_deliver_fn fn, void *ctx);

#endif
