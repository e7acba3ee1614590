/* service_server.h - one server connection of service mode: an app's multiplexed WebSocket at /server/.
 *
 * The Azure SignalR SDK (Microsoft.Azure.SignalR 1.34.0) in an ASP.NET Core
 * app opens a few of these per hub (`/server/?hub=KEY&cid=GUID`, a server
 * JWT signed with the AccessKey). The relay:
 *   - checks the JWT before the upgrade (401 otherwise);
 *   - reads the stream as the service protocol frames it (varint + one
 *     MessagePack array), across WebSocket fragments and with several
 *     messages per WebSocket message, and handles each message strictly in
 *     order: the handshake (answered within the SDK's 15 s; only then does
 *     the connection take clients), pings (`fin:N` answered with `finack`,
 *     the connection then takes no new clients but its traffic goes on until
 *     the socket closes), per-client traffic (5, 6, 34) for the connection id
 *     wherever it is bound, sends (7, 8, 9, 10, 13, 14) through the hub
 *     model, group joins and leaves (11, 12, 18, 19, the latter acked on
 *     this connection); traffic for ids the relay does not hold is dropped;
 *   - bounds the work one connection's messages do per loop turn
 *     (--service-fanout-budget deliveries): past it, the rest of what was
 *     read waits, in order, for the next turn, and nothing more is read from
 *     that connection until it was handled (bounded memory, the app's order
 *     kept, an Ack still behind the sends before it). Connections behind take
 *     turns round robin, and everything else the loop serves runs between;
 *   - pings `[3]` every 5 s on the relay's timer wheel and closes a
 *     connection that sent nothing for 30 s;
 *   - when the connection goes, closes every client bound to it.
 * What the relay writes is batched: service messages are appended to one
 * pending WebSocket message, written on the next WRITEABLE callback.
 *
 * Lifetime: created when the upgrade is accepted, destroyed exactly once
 * when lws destroys the wsi, or, when messages it brought still waited for
 * their turn then, once they were handled (or when the relay stops). */
#ifndef SR_SERVICE_SERVER_H
#define SR_SERVICE_SERVER_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"
#include "containers/list.h"
#include "containers/timer_wheel.h"
#include "hub/service_hub.h"
#include "protocol/service_msg.h"
#include "relay/service.h"
#include "relay/wsi_role.h"
#include "relay/wsmsg.h"

struct service_server {
    enum wsi_role role;             /* WSI_ROLE_SERVICE_SERVER */
    struct list_node link;          /* in service.servers */
    struct lws *wsi;                /* NULL once lws destroyed it */
    struct service *service;
    struct service_hub *hub;
    struct svc_server_conn conn;    /* in hub->model once the handshake is done */
    bool in_model;
    bool closing;                   /* the relay ends it: nothing more is read or written */
    bool fin;                       /* the app said shutdown fin:N */
    struct svc_framer framer;
    /* The per-turn budget (see service_server.c, "turns"). */
    unsigned turn;                  /* the loop turn turn_work was counted in */
    size_t turn_work;               /* deliveries (at least one per message) made in that turn */
    bool behind;                    /* messages wait for the next turn; reading is paused */
    bool ended;                     /* the socket went while behind: freed once they were handled */
    struct list_node behind_link;   /* in service.behind while behind */
    struct buf unread;              /* what was read and not handled yet: the framer's chunk while behind */
    struct wsmsg *batch;            /* service messages not yet handed to lws */
    struct msg_queue out;           /* whole WebSocket messages waiting for the socket */
    struct service_uplink uplink;   /* what the channels bound to it write through */
    struct timer_entry tick;        /* pings and the silence check */
    uint64_t last_received_ms;
    uint64_t last_ping_ms;
    char *conn_id;                  /* the cid */
    char *server_id;                /* nameid of its token, else X-ASRS-Server-Id */
};

/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE for /server/: checks the JWT and the
 * query, then attaches a new server connection to wsi. Returns what the
 * callback returns. */
int service_server_confirm(struct service *svc, struct lws *wsi);
void service_server_established(struct service_server *s);
int service_server_receive(struct service_server *s, const void *in, size_t len);
int service_server_writeable(struct service_server *s);
void service_server_destroy(struct service_server *s);

/* Relay shutdown, after the clients were closed: closes every server
 * connection once what is queued for it went out. */
void service_servers_shutdown(struct service *svc);
static inline bool service_servers_empty(const struct service *svc)
{
    return list_is_empty(&svc->servers);
}

#endif
