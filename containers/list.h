/* list.h - intrusive circular doubly linked list.
 *
 * A struct list_node lives inside the object it links (a group membership, a
 * timer, a connection), so linking and unlinking never allocate and an object
 * can unlink itself in O(1) without knowing which list it is on. A list head is
 * a node whose next/prev point at itself when empty. Unlinked nodes point at
 * NULL so that list_is_linked() can tell. (Shape after h2o's linklist.h.) */
#ifndef SR_LIST_H
#define SR_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
    struct list_node *next;
    struct list_node *prev;
};

#define list_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline void list_init_head(struct list_node *head)
{
    head->next = head;
    head->prev = head;
}

static inline void list_init_node(struct list_node *node)
{
    node->next = NULL;
    node->prev = NULL;
}

static inline bool list_is_empty(const struct list_node *head) { return head->next == head; }
static inline bool list_is_linked(const struct list_node *node) { return node->next != NULL; }

/* Inserts node before pos; with pos == head this appends at the tail. */
static inline void list_insert_before(struct list_node *pos, struct list_node *node)
{
    node->prev = pos->prev;
    node->next = pos;
    pos->prev->next = node;
    pos->prev = node;
}

static inline void list_push_back(struct list_node *head, struct list_node *node)
{
    list_insert_before(head, node);
}

static inline void list_unlink(struct list_node *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    list_init_node(node);
}

/* Moves every node of src to the tail of dst, leaving src empty. */
static inline void list_splice_back(struct list_node *dst, struct list_node *src)
{
    if (list_is_empty(src))
        return;
    struct list_node *first = src->next, *last = src->prev;
    first->prev = dst->prev;
    dst->prev->next = first;
    last->next = dst;
    dst->prev = last;
    list_init_head(src);
}

#endif
