/* hub_conn.c - connection state and the connection table (see hub_conn.h). */
#include "hub/hub_conn.h"

#include <string.h>

static bool is_base64url_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

static bool is_valid_conn_id(struct span id)
{
    if (!id.ptr || id.len != HUB_CONN_ID_LEN)
        return false;
    for (size_t i = 0; i < id.len; i++)
        if (!is_base64url_char(id.ptr[i]))
            return false;
    return true;
}

enum hub_status hub_conn_init(struct hub_conn *conn, struct span id)
{
    if (!is_valid_conn_id(id))
        return HUB_ERR_VALUE;
    memset(conn, 0, sizeof(*conn));
    memcpy(conn->id, id.ptr, HUB_CONN_ID_LEN);
    conn->id[HUB_CONN_ID_LEN] = '\0';
    list_init_node(&conn->user_link.node);
    conn->user_link.conn = conn;
    list_init_head(&conn->memberships);
    return HUB_OK;
}

void conn_table_init(struct conn_table *t, const uint8_t seed[DICT_SEED_LEN])
{
    dict_init(&t->by_id, seed);
}

void conn_table_free(struct conn_table *t)
{
    dict_free(&t->by_id);
}

enum hub_status conn_table_add(struct conn_table *t, struct hub_conn *conn)
{
    switch (dict_insert(&t->by_id, &conn->by_id, hub_conn_id(conn))) {
    case DICT_OK: return HUB_OK;
    case DICT_DUPLICATE: return HUB_ALREADY;
    case DICT_NOMEM: break;
    }
    return HUB_ERR_NOMEM;
}

struct hub_conn *conn_table_find(struct conn_table *t, struct span id)
{
    struct dict_entry *e = dict_find(&t->by_id, id);
    return e ? list_container_of(e, struct hub_conn, by_id) : NULL;
}

enum hub_status conn_table_remove(struct conn_table *t, struct hub_conn *conn)
{
    return dict_remove(&t->by_id, &conn->by_id) ? HUB_OK : HUB_NOT_FOUND;
}
