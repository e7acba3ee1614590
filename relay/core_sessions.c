/* core_sessions.c - the table of Core sessions: every one in a list (shutdown walks it), and
 * those an SSE, long-polling or negotiated WebSocket request finds by its token in a dict (see
 * core_session.h). */
#include "relay/core_session.h"

#include <stdlib.h>
#include <string.h>

void core_sessions_init(struct core_sessions *table, struct loop *loop, const uint8_t seed[DICT_SEED_LEN])
{
    list_init_head(&table->all);
    dict_init(&table->by_token, seed);
    table->loop = loop;
    pool_init(&table->records, sizeof(struct core_session));
    pool_init(&table->extras, sizeof(struct core_session_extra));
}

/* Before the lws context goes: the sessions no WebSocket holds (SSE, long
 * polling) are freed here; the WebSocket ones go with their wsi. */
void core_sessions_free(struct core_sessions *table)
{
    struct list_node *n = table->all.next;
    while (n != &table->all) {
        struct core_session *s = list_container_of(n, struct core_session, link);
        n = n->next;
        if (s->transport->kind != CORE_TRANSPORT_WEBSOCKETS || !s->wsi) { /* no socket: SSE, LP, a stateful client away */
            core_session_client_gone(s);
        } else { /* it goes later, with its wsi */
            core_session_unregister(s);
        }
    }
    dict_free(&table->by_token);
    pool_close(&table->records); /* the WebSocket sessions still go later, with their wsi */
    pool_close(&table->extras);
}

struct core_session *core_sessions_find(struct core_sessions *table, const char *token)
{
    struct dict_entry *e = dict_find(&table->by_token, span_from_cstr(token));
    return e ? list_container_of(e, struct core_session_extra, by_token)->session : NULL;
}


void core_session_unregister(struct core_session *s)
{
    if (!s->in_table)
        return;
    dict_remove(&s->table->by_token, &s->extra->by_token);
    free((char *)s->extra->by_token.key.ptr);
    s->in_table = false;
}

bool core_session_register(struct core_session *s, const char *token)
{
    struct core_session_extra *x = core_session_extra(s);
    char *copy = x ? strdup(token) : NULL;
    if (!copy)
        return false;
    if (dict_insert(&s->table->by_token, &x->by_token, span_from_cstr(copy)) != DICT_OK) {
        free(copy);
        return false;
    }
    s->in_table = true;
    return true;
}
