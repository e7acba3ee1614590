/* user.h - the users of one hub: user id -> the connections signed in as it.
 *
 * Sending to a user walks that user's own list: O(its connections). (ASP.NET
 * Core's SendUserAsync compares the UserIdentifier of every connection of
 * the server.) A struct user exists exactly while it has connections; it owns
 * its id, and hub_conn_user_id() of an attached connection reads that one
 * copy (a connection holds no id of its own: 16 bytes and an allocation less
 * per client).
 * User ids are case-sensitive byte strings (Ordinal); the empty id is rejected.
 * A connection is attached to at most one user of one table. */
#ifndef SR_USER_H
#define SR_USER_H

#include <stdbool.h>
#include <stddef.h>

#include "hub/conn_list.h"
#include "containers/dict.h"
#include "hub/hub_conn.h"
#include "hub/hub_status.h"
#include "containers/list.h"
#include "containers/span.h"

struct user_table {
    struct dict by_id; /* struct user.by_id; key = the user id */
};

struct user {
    struct dict_entry by_id;
    struct user_table *table;
    struct list_node conns; /* struct hub_conn.user_link, and iterator markers */
    size_t conn_count;
    unsigned iterators;     /* live user_iters: the user may not be freed yet */
    bool detached;          /* emptied and out of the table; the last iterator frees it */
    size_t id_len;
    char id[];              /* owned, NUL-terminated */
};

void user_table_init(struct user_table *t, const uint8_t seed[DICT_SEED_LEN]);
/* Detaches every connection and frees every user. Not during an iteration. */
void user_table_free(struct user_table *t);

/* Attaches conn to the user user_id (creating it). HUB_OK; HUB_ALREADY if it
 * is attached to that very user (no change); HUB_ERR_STATE if attached to
 * another one (detach first); HUB_ERR_VALUE for an empty id; HUB_ERR_NOMEM
 * (no change). O(1) expected. */
enum hub_status user_attach(struct user_table *t, struct hub_conn *conn, struct span user_id);

/* Detaches conn from its user (no-op if none), freeing the user if it was
 * its last connection. O(1) expected. */
void user_detach(struct hub_conn *conn);

/* The user, or NULL if no connection is attached as user_id. */
struct user *user_find(struct user_table *t, struct span user_id);

static inline size_t user_table_count(const struct user_table *t)
{
    return dict_count(&t->by_id);
}

static inline size_t user_conn_count(const struct user *u) { return u->conn_count; }
static inline struct span user_id_of(const struct user *u) { return span_make(u->id, u->id_len); }

/* Iteration over a user's connections, with the guarantees of conn_list.h
 * (see group_iter in group.h: same rules, the user is pinned likewise). */
struct user_iter {
    struct user *user;
    struct conn_list_iter list;
};

void user_iter_begin(struct user_iter *it, struct user *u);
struct hub_conn *user_iter_next(struct user_iter *it);
void user_iter_end(struct user_iter *it);

/* Calls fn for each connection of the user; returns the number of calls. */
size_t user_for_each(struct user_table *t, struct span user_id, hub_conn_visit_fn fn, void *ctx);

#endif
