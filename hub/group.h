/* group.h - the groups of one hub: name -> members, and each connection's
 * memberships, kept as mirror images of each other.
 *
 * A struct group_membership is one (connection, group) pair and sits in two
 * intrusive lists at once: its group's member list and its connection's
 * membership list, and knows both ends. So
 *   - sending to a group walks that group's list: O(members);
 *   - leaving unlinks one node from both lists: O(1);
 *   - disconnecting walks only the connection's own list: O(groups of that
 *     connection), however many groups and members exist elsewhere (ASP.NET
 *     Core up to 8 scanned every group of the process on each disconnect).
 *
 * Joining must be idempotent without scanning either list (a group can have
 * 100k members, a backend can put one connection in many groups), so each
 * table also indexes its memberships in a dict keyed by the pair of
 * pointers (conn, group): one O(1) expected probe answers "already a member?".
 * We chose that over a per-connection set of group names (ASP.NET Core 9's
 * HashSet per connection) because it costs nothing for the many connections
 * in no group, needs no per-connection table to grow, and reuses the
 * membership node as its own index entry.
 *
 * OWNERSHIP: the table owns its groups and memberships. A group owns its name
 * and is freed as soon as its last member leaves (if a send to it is in
 * progress, it is taken out of the table at once and freed when the send's
 * iterator ends). Names are case-sensitive byte strings (Ordinal, as in
 * ASP.NET Core); the empty name is rejected.
 *
 * A connection may hold memberships in several tables (a legacy connection
 * using several hubs); group_remove_connection clears them all. */
#ifndef SR_GROUP_H
#define SR_GROUP_H

#include <stdbool.h>
#include <stddef.h>

#include "hub/conn_list.h"
#include "containers/dict.h"
#include "hub/hub_conn.h"
#include "hub/hub_status.h"
#include "containers/list.h"
#include "containers/span.h"

struct group_table {
    struct dict by_name;     /* struct group.by_name; key = the group's name */
    struct dict memberships; /* struct group_membership.by_pair; key = (conn, group) */
};

struct group {
    struct dict_entry by_name;
    struct group_table *table;
    struct list_node members; /* struct group_membership.group_link, and iterator markers */
    size_t member_count;
    unsigned iterators;       /* live group_iters: the group may not be freed yet */
    bool detached;            /* emptied and out of the table; the last iterator frees it */
    size_t name_len;
    char name[];              /* owned, NUL-terminated */
};

struct group_membership {
    struct hub_conn_link group_link; /* in group->members; .conn is the member */
    struct group *group;             /* follows group_link.conn: together the 16-byte key */
    struct list_node conn_link;      /* in conn->memberships */
    struct dict_entry by_pair;       /* in table->memberships */
};

void group_table_init(struct group_table *t, const uint8_t seed[DICT_SEED_LEN]);
/* Frees every group and membership, unlinking them from their connections.
 * Not allowed while a group of t is being iterated. */
void group_table_free(struct group_table *t);

/* Adds conn to the group (creating it). HUB_OK if it joined, HUB_ALREADY if it
 * was a member (nothing changes), HUB_ERR_VALUE for an empty name,
 * HUB_ERR_NOMEM (nothing changes). O(1) expected. */
enum hub_status group_add(struct group_table *t, struct hub_conn *conn, struct span name);

/* Removes conn from the group; HUB_NOT_FOUND if it was not a member. Frees
 * the group if it became empty. O(1) expected. */
enum hub_status group_remove(struct group_table *t, struct hub_conn *conn, struct span name);

/* Removes conn from every group it joined (in any table); returns how many
 * memberships it had. O(that number). */
size_t group_remove_connection(struct hub_conn *conn);

/* The group, or NULL: a group exists exactly while it has members. */
struct group *group_find(struct group_table *t, struct span name);

/* True if conn is a member of g. O(1) expected. */
bool group_has_member(struct group_table *t, struct group *g, struct hub_conn *conn);

static inline size_t group_table_count(const struct group_table *t)
{
    return dict_count(&t->by_name);
}

static inline size_t group_member_count(const struct group *g) { return g->member_count; }
static inline struct span group_name(const struct group *g)
{
    return span_make(g->name, g->name_len);
}

/* The membership of a node of conn->memberships. */
static inline struct group_membership *group_membership_of(struct list_node *conn_link)
{
    return list_container_of(conn_link, struct group_membership, conn_link);
}

/* Iteration over a group's members, safe against anything the caller does
 * meanwhile (see conn_list.h): each connection that was a member at begin
 * and still is when its turn comes is returned exactly once, in join order;
 * connections that join meanwhile are not returned. The group stays
 * allocated until group_iter_end even if it is emptied (it then leaves the
 * table at once; a later join of the same name makes a new group). Every
 * begin needs its end. */
struct group_iter {
    struct group *group;
    struct conn_list_iter list;
};

void group_iter_begin(struct group_iter *it, struct group *g);
struct hub_conn *group_iter_next(struct group_iter *it);
void group_iter_end(struct group_iter *it);

/* Calls fn for each member of the named group (none if there is no such
 * group) under the rules above; returns the number of calls. */
size_t group_for_each(struct group_table *t, struct span name, hub_conn_visit_fn fn, void *ctx);

#endif
