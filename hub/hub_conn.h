/* hub_conn.h - one client connection as the hub model sees it, and the
 * table of connections by public id.
 *
 * A hub_conn is plain state owned by the relay (embedded in its connection
 * object, which finds itself from it by container_of: no pointer back). It owns its public id
 * inline and, while attached to a user, a copy of the user id. The lists it
 * sits on are intrusive: its memberships (group.c) and its link in its user's
 * list (user.c), so disconnecting walks only what this connection joined.
 *
 * Tearing a connection down is the caller's sequence:
 * group_remove_connection(conn), user_detach(conn),
 * conn_table_remove(table, conn), then free the memory. */
#ifndef SR_HUB_CONN_H
#define SR_HUB_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include "hub/conn_list.h"
#include "containers/dict.h"
#include "hub/hub_status.h"
#include "containers/list.h"
#include "containers/span.h"

/* 128 random bits in unpadded base64url. */
#define HUB_CONN_ID_LEN 22

struct user;

struct hub_conn {
    struct dict_entry by_id;       /* in conn_table; key = id */
    char id[HUB_CONN_ID_LEN + 1];  /* owned, NUL-terminated for logs */

    /* Managed by user.c. */
    struct user *user;             /* NULL when not attached to a user; owns the user id */
    struct hub_conn_link user_link; /* in user->conns; .conn == this */

    /* Managed by group.c. */
    struct list_node memberships;  /* struct group_membership.conn_link */
    size_t group_count;
};

/* Initialises conn with its public id (exactly HUB_CONN_ID_LEN base64url
 * characters, else HUB_ERR_VALUE) and no user or groups. Allocates nothing. */
enum hub_status hub_conn_init(struct hub_conn *conn, struct span id);

static inline struct span hub_conn_id(const struct hub_conn *conn)
{
    return span_make(conn->id, HUB_CONN_ID_LEN);
}

/* The user id (the user's own bytes, valid while attached), or an absent
 * span (ptr NULL) for an anonymous connection. */
struct span hub_conn_user_id(const struct hub_conn *conn);

/* True once the connection is in no group and attached to no user. */
static inline bool hub_conn_is_detached(const struct hub_conn *conn)
{
    return list_is_empty(&conn->memberships) && conn->user == NULL;
}

/* Connections by public id (Ordinal, like ASP.NET Core's HubConnectionStore). */
struct conn_table {
    struct dict by_id;
};

void conn_table_init(struct conn_table *t, const uint8_t seed[DICT_SEED_LEN]);
/* Frees the index only; connections are the relay's and must be removed first. */
void conn_table_free(struct conn_table *t);
/* HUB_ALREADY if a connection with the same id is present; HUB_ERR_NOMEM. */
enum hub_status conn_table_add(struct conn_table *t, struct hub_conn *conn);
struct hub_conn *conn_table_find(struct conn_table *t, struct span id);
/* HUB_NOT_FOUND if conn is not in t. */
enum hub_status conn_table_remove(struct conn_table *t, struct hub_conn *conn);

static inline size_t conn_table_count(const struct conn_table *t)
{
    return dict_count(&t->by_id);
}

#endif
