/* conn_list.h - lists of connections that may change while being iterated.
 *
 * A group's members and a user's connections are intrusive lists of
 * struct hub_conn_link. Sending to them calls out to the relay for each
 * connection, and the relay may do anything from there: disconnect the
 * connection being visited (removing it from every group), disconnect the
 * next one, make other connections join or leave, start another send to the
 * same list. A saved "next" pointer would dangle after most of those.
 *
 * So an iterator threads two nodes of its own into the list: a cursor, kept
 * just after the last node returned, and a fence, appended at the tail when
 * the iteration begins. Real nodes are only ever unlinked or appended at the
 * tail, so the cursor only moves forward over nodes that were there at the
 * start, each once; nodes appended during the iteration land behind the fence
 * and are not visited. The guarantee is therefore: every connection that was
 * on the list when the iteration began and is still on it (by the same link)
 * when its turn comes is returned exactly once, in list order; nothing else is
 * returned. A link whose conn is NULL is a cursor or fence; iterators skip
 * those of other (nested) iterations.
 *
 * The caller must keep the list head alive until conn_list_iter_end (groups
 * and users pin themselves for that; see group.c and user.c). */
#ifndef SR_CONN_LIST_H
#define SR_CONN_LIST_H

#include <stdbool.h>

#include "containers/list.h"

struct hub_conn;

struct hub_conn_link {
    struct list_node node;
    struct hub_conn *conn; /* NULL: an iterator's cursor or fence */
};

static inline bool hub_conn_link_is_marker(const struct list_node *node)
{
    return list_container_of(node, const struct hub_conn_link, node)->conn == NULL;
}

/* Callback for the for_each helpers: return false to stop early. */
typedef bool (*hub_conn_visit_fn)(struct hub_conn *conn, void *ctx);

struct conn_list_iter {
    struct hub_conn_link cursor;
    struct hub_conn_link fence;
};

void conn_list_iter_begin(struct conn_list_iter *it, struct list_node *head);
/* The next connection, or NULL when the iteration is over. */
struct hub_conn *conn_list_iter_next(struct conn_list_iter *it);
/* Unthreads the cursor and fence; required, even after next returned NULL. */
void conn_list_iter_end(struct conn_list_iter *it);

#endif
