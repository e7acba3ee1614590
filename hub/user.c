/* user.c - users and their connection lists (see user.h). */
#include "hub/user.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void user_table_init(struct user_table *t, const uint8_t seed[DICT_SEED_LEN])
{
    dict_init(&t->by_id, seed);
}

struct user *user_find(struct user_table *t, struct span id)
{
    struct dict_entry *e = dict_find(&t->by_id, id);
    return e ? list_container_of(e, struct user, by_id) : NULL;
}

static struct user *user_create(struct user_table *t, struct span id)
{
    struct user *u = malloc(sizeof(*u) + id.len + 1);
    if (!u)
        return NULL;
    memset(u, 0, sizeof(*u));
    u->table = t;
    list_init_head(&u->conns);
    u->id_len = id.len;
    memcpy(u->id, id.ptr, id.len);
    u->id[id.len] = '\0';
    if (dict_insert(&t->by_id, &u->by_id, user_id_of(u)) != DICT_OK) {
        free(u);
        return NULL;
    }
    return u;
}

/* Called when the last connection left: out of the table now, memory as soon
 * as no iterator stands in its list. */
static void user_release(struct user *u)
{
    dict_remove(&u->table->by_id, &u->by_id);
    if (u->iterators > 0)
        u->detached = true;
    else
        free(u);
}

enum hub_status user_attach(struct user_table *t, struct hub_conn *conn, struct span id)
{
    if (!id.ptr || id.len == 0)
        return HUB_ERR_VALUE;
    if (conn->user)
        return conn->user->table == t && span_eq(user_id_of(conn->user), id) ? HUB_ALREADY
                                                                           : HUB_ERR_STATE;
    struct user *u = user_find(t, id);
    if (!u && !(u = user_create(t, id)))
        return HUB_ERR_NOMEM;
    conn->user = u;
    list_push_back(&u->conns, &conn->user_link.node);
    u->conn_count++;
    return HUB_OK;
}

void user_detach(struct hub_conn *conn)
{
    struct user *u = conn->user;
    if (!u)
        return;
    list_unlink(&conn->user_link.node);
    conn->user = NULL;
    if (--u->conn_count == 0)
        user_release(u);
}

void user_table_free(struct user_table *t)
{
    struct dict_iter it;
    struct dict_entry *e;
    dict_iter_begin(&it, &t->by_id);
    while ((e = dict_iter_next(&it)) != NULL) {
        struct user *u = list_container_of(e, struct user, by_id);
        assert(u->iterators == 0);
        while (!list_is_empty(&u->conns)) {
            struct hub_conn *conn =
                list_container_of(u->conns.next, struct hub_conn, user_link.node);
            list_unlink(&conn->user_link.node);
            conn->user = NULL;
        }
        dict_remove(&t->by_id, e);
        free(u);
    }
    dict_iter_end(&it);
    dict_free(&t->by_id);
}

void user_iter_begin(struct user_iter *it, struct user *u)
{
    it->user = u;
    u->iterators++;
    conn_list_iter_begin(&it->list, &u->conns);
}

struct hub_conn *user_iter_next(struct user_iter *it)
{
    return conn_list_iter_next(&it->list);
}

void user_iter_end(struct user_iter *it)
{
    struct user *u = it->user;
    conn_list_iter_end(&it->list);
    if (--u->iterators == 0 && u->detached)
        free(u);
    it->user = NULL;
}

size_t user_for_each(struct user_table *t, struct span id, hub_conn_visit_fn fn, void *ctx)
{
    struct user *u = user_find(t, id);
    if (!u)
        return 0;
    size_t calls = 0;
    struct user_iter it;
    struct hub_conn *conn;
    user_iter_begin(&it, u);
    while ((conn = user_iter_next(&it)) != NULL) {
        calls++;
        if (!fn(conn, ctx))
            break;
    }
    user_iter_end(&it);
    return calls;
}

struct span hub_conn_user_id(const struct hub_conn *conn)
{
    return conn->user ? user_id_of(conn->user) : SPAN_NONE;
}
