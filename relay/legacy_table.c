/* legacy_table.c - every legacy connection of the relay: found by its connection id, ended
 * together at shutdown, and the hubs they may use (see legacy_session.h). */
#include "relay/legacy_session.h"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

bool legacy_table_init(struct legacy_table *t, struct loop *loop, size_t hub_count, const uint8_t seed[DICT_SEED_LEN])
{
    memset(t, 0, sizeof *t);
    t->loop = loop;
    dict_init(&t->by_id, seed);
    list_init_head(&t->all);
    t->hubs = calloc(hub_count ? hub_count : 1, sizeof *t->hubs);
    t->hub_count = hub_count;
    for (size_t i = 0; t->hubs && i < hub_count; i++)
        t->hubs[i].loop = loop;
    bool keyed = loop->cfg->token_secret ? token_key_from_secret(&t->token_key, loop->cfg->token_secret)
                                         : token_key_generate(&t->token_key);
    return t->hubs && keyed && RAND_bytes((unsigned char *)&t->instance_id, sizeof t->instance_id) == 1;
}

struct legacy_hub *legacy_table_hub(struct legacy_table *t, struct span name)
{
    for (size_t i = 0; i < t->hub_count; i++)
        if (span_eq_nocase(span_from_cstr(t->hubs[i].endpoint->name), name))
            return &t->hubs[i];
    return NULL;
}

void legacy_table_shutdown(struct legacy_table *t)
{
    for (struct list_node *n = t->all.next; n != &t->all; n = n->next)
        legacy_session_end(list_container_of(n, struct legacy_session, all), NULL);
}

struct legacy_session *legacy_session_find(struct legacy_table *t, const char *connection_id)
{
    struct dict_entry *e = dict_find(&t->by_id, span_from_cstr(connection_id));
    return e ? list_container_of(e, struct legacy_session, entry) : NULL;
}
