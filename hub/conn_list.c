/* conn_list.c - the cursor-and-fence iterator of connection lists (see conn_list.h). */
#include "hub/conn_list.h"

void conn_list_iter_begin(struct conn_list_iter *it, struct list_node *head)
{
    it->cursor.conn = NULL;
    it->fence.conn = NULL;
    list_push_back(head, &it->fence.node);
    list_insert_before(head->next, &it->cursor.node);
}

struct hub_conn *conn_list_iter_next(struct conn_list_iter *it)
{
    struct list_node *node = it->cursor.node.next;
    while (node != &it->fence.node && hub_conn_link_is_marker(node))
        node = node->next;
    if (node == &it->fence.node)
        return NULL;
    /* Park the cursor right after the node we return: whatever the caller
     * then does to that node or its neighbours, the cursor stays put. */
    list_unlink(&it->cursor.node);
    list_insert_before(node->next, &it->cursor.node);
    /* A send visits thousands of connections, each in memory of its own: ask
     * for the next one's connection and the link after it now, so that they
     * arrive while the caller serves this one (a write() to its socket)
     * instead of stalling the next call. A marker's conn is NULL: harmless. */
    struct list_node *next = it->cursor.node.next;
    __builtin_prefetch(next->next);
    __builtin_prefetch(list_container_of(next, struct hub_conn_link, node)->conn);
    return list_container_of(node, struct hub_conn_link, node)->conn;
}

void conn_list_iter_end(struct conn_list_iter *it)
{
    list_unlink(&it->cursor.node);
    list_unlink(&it->fence.node);
}
