/* group.c - groups, memberships and their two mirrored lists (see group.h). */
#include "hub/group.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The membership index key is the 16 bytes (conn pointer, group pointer)
 * stored in the membership itself, group_link.conn immediately followed by
 * group. A lookup builds the same bytes in a struct pair_key. */
struct pair_key {
    struct hub_conn *conn;
    struct group *group;
};

_Static_assert(offsetof(struct group_membership, group) ==
                   offsetof(struct group_membership, group_link) +
                       offsetof(struct hub_conn_link, conn) + sizeof(struct hub_conn *),
               "group_link.conn and group must be adjacent: they form the pair key");
_Static_assert(sizeof(struct pair_key) == 2 * sizeof(void *), "pair_key has no padding");

static struct span membership_key(const struct group_membership *m)
{
    return span_make((const char *)&m->group_link.conn, sizeof(struct pair_key));
}

void group_table_init(struct group_table *t, const uint8_t seed[DICT_SEED_LEN])
{
    dict_init(&t->by_name, seed);
    dict_init(&t->memberships, seed);
}

struct group *group_find(struct group_table *t, struct span name)
{
    struct dict_entry *e = dict_find(&t->by_name, name);
    return e ? list_container_of(e, struct group, by_name) : NULL;
}

static struct group_membership *find_membership(struct group_table *t, struct group *g,
                                                struct hub_conn *conn)
{
    struct pair_key key = { conn, g };
    struct dict_entry *e = dict_find(&t->memberships, span_make((const char *)&key, sizeof(key)));
    return e ? list_container_of(e, struct group_membership, by_pair) : NULL;
}

bool group_has_member(struct group_table *t, struct group *g, struct hub_conn *conn)
{
    return find_membership(t, g, conn) != NULL;
}

static struct group *group_create(struct group_table *t, struct span name)
{
    struct group *g = malloc(sizeof(*g) + name.len + 1);
    if (!g)
        return NULL;
    memset(g, 0, sizeof(*g));
    g->table = t;
    list_init_head(&g->members);
    g->name_len = name.len;
    memcpy(g->name, name.ptr, name.len);
    g->name[name.len] = '\0';
    if (dict_insert(&t->by_name, &g->by_name, group_name(g)) != DICT_OK) {
        free(g);
        return NULL;
    }
    return g;
}

/* Called when the last member left: out of the table now, memory as soon as
 * no iterator stands in its list. */
static void group_release(struct group *g)
{
    dict_remove(&g->table->by_name, &g->by_name);
    if (g->iterators > 0)
        g->detached = true;
    else
        free(g);
}

enum hub_status group_add(struct group_table *t, struct hub_conn *conn, struct span name)
{
    if (!name.ptr || name.len == 0)
        return HUB_ERR_VALUE;
    bool created = false;
    struct group *g = group_find(t, name);
    if (g) {
        if (find_membership(t, g, conn))
            return HUB_ALREADY;
    } else {
        if (!(g = group_create(t, name)))
            return HUB_ERR_NOMEM;
        created = true;
    }

    struct group_membership *m = malloc(sizeof(*m));
    if (m) {
        m->group_link.conn = conn;
        m->group = g;
        if (dict_insert(&t->memberships, &m->by_pair, membership_key(m)) != DICT_OK) {
            free(m);
            m = NULL;
        }
    }
    if (!m) {
        if (created)
            group_release(g);
        return HUB_ERR_NOMEM;
    }
    list_push_back(&g->members, &m->group_link.node);
    g->member_count++;
    list_push_back(&conn->memberships, &m->conn_link);
    conn->group_count++;
    return HUB_OK;
}

static void membership_destroy(struct group_membership *m)
{
    struct group *g = m->group;
    struct hub_conn *conn = m->group_link.conn;
    dict_remove(&g->table->memberships, &m->by_pair);
    list_unlink(&m->group_link.node);
    list_unlink(&m->conn_link);
    g->member_count--;
    conn->group_count--;
    free(m);
    if (g->member_count == 0)
        group_release(g);
}

enum hub_status group_remove(struct group_table *t, struct hub_conn *conn, struct span name)
{
    struct group *g = group_find(t, name);
    struct group_membership *m = g ? find_membership(t, g, conn) : NULL;
    if (!m)
        return HUB_NOT_FOUND;
    membership_destroy(m);
    return HUB_OK;
}

size_t group_remove_connection(struct hub_conn *conn)
{
    size_t removed = 0;
    while (!list_is_empty(&conn->memberships)) {
        membership_destroy(group_membership_of(conn->memberships.next));
        removed++;
    }
    return removed;
}

void group_table_free(struct group_table *t)
{
    struct dict_iter it;
    struct dict_entry *e;
    dict_iter_begin(&it, &t->by_name);
    while ((e = dict_iter_next(&it)) != NULL) {
        struct group *g = list_container_of(e, struct group, by_name);
        assert(g->iterators == 0);
        while (!list_is_empty(&g->members)) {
            struct group_membership *m =
                list_container_of(g->members.next, struct group_membership, group_link.node);
            list_unlink(&m->group_link.node);
            list_unlink(&m->conn_link);
            m->group_link.conn->group_count--;
            free(m);
        }
        dict_remove(&t->by_name, e);
        free(g);
    }
    dict_iter_end(&it);
    dict_free(&t->by_name);
    dict_free(&t->memberships);
}

void group_iter_begin(struct group_iter *it, struct group *g)
{
    it->group = g;
    g->iterators++;
    conn_list_iter_begin(&it->list, &g->members);
}

struct hub_conn *group_iter_next(struct group_iter *it)
{
    return conn_list_iter_next(&it->list);
}

void group_iter_end(struct group_iter *it)
{
    struct group *g = it->group;
    conn_list_iter_end(&it->list);
    if (--g->iterators == 0 && g->detached)
        free(g);
    it->group = NULL;
}

size_t group_for_each(struct group_table *t, struct span name, hub_conn_visit_fn fn, void *ctx)
{
    struct group *g = group_find(t, name);
    if (!g)
        return 0;
    size_t calls = 0;
    struct group_iter it;
    struct hub_conn *conn;
    group_iter_begin(&it, g);
    while ((conn = group_iter_next(&it)) != NULL) {
        calls++;
        if (!fn(conn, ctx))
            break;
    }
    group_iter_end(&it);
    return calls;
}
