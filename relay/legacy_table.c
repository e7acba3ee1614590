/* legacy_table.c - every legacy connection of the relay: found by its connection id, ended
 * together at shutdown, and the hubs they may use (see legacy_session.h). */
#include "relay/legacy_session.h"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

static struct legacy_hub *hub_new(struct loop *loop)
{
    struct legacy_hub *hub = calloc(1, sizeof *hub);
    if (hub)
        hub->loop = loop;
    return hub;
}

bool legacy_table_init(struct legacy_table *t, struct loop *loop, size_t hub_count, const uint8_t seed[DICT_SEED_LEN])
{
    memset(t, 0, sizeof *t);
    t->loop = loop;
    dict_init(&t->by_id, seed);
    list_init_head(&t->all);
    t->hubs = calloc(hub_count ? hub_count : 1, sizeof *t->hubs);
    for (size_t i = 0; t->hubs && i < hub_count; i++) {
        if (!(t->hubs[i] = hub_new(loop)))
            return false;
        t->hub_count++;
    }
    bool keyed = loop->cfg->token_secret ? token_key_from_secret(&t->token_key, loop->cfg->token_secret)
                                         : token_key_generate(&t->token_key);
    return t->hubs && keyed && RAND_bytes((unsigned char *)&t->instance_id, sizeof t->instance_id) == 1;
}

/* The hub of that name, removed or not. */
static struct legacy_hub *hub_named(struct legacy_table *t, struct span name)
{
    for (size_t i = 0; i < t->hub_count; i++)
        if (span_eq_nocase(span_from_cstr(t->hubs[i]->endpoint->name), name))
            return t->hubs[i];
    return NULL;
}

struct legacy_hub *legacy_table_hub(struct legacy_table *t, struct span name)
{
    struct legacy_hub *hub = hub_named(t, name);
    return hub && !hub->removed ? hub : NULL;
}

static bool among(struct hub_endpoint *const *endpoints, size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (span_eq_nocase(span_from_cstr(endpoints[i]->name), span_from_cstr(name)))
            return true;
    return false;
}

bool legacy_table_apply(struct legacy_table *t, struct hub_endpoint *const *endpoints, size_t count)
{
    size_t added = 0;
    for (size_t i = 0; i < count; i++)
        added += hub_named(t, span_from_cstr(endpoints[i]->name)) == NULL;
    struct legacy_hub **grown = realloc(t->hubs, (t->hub_count + added + 1) * sizeof *grown);
    if (!grown)
        return false;
    t->hubs = grown;
    struct legacy_hub *fresh[added + 1];
    for (size_t i = 0; i < added; i++) {
        if (!(fresh[i] = hub_new(t->loop))) {
            while (i > 0)
                free(fresh[--i]);
            return false;
        }
    }
    for (size_t i = 0; i < t->hub_count; i++) /* before the new ones join: every name is set */
        t->hubs[i]->removed = !among(endpoints, count, t->hubs[i]->endpoint->name);
    size_t next = 0;
    for (size_t i = 0; i < count; i++) {
        struct legacy_hub *hub = hub_named(t, span_from_cstr(endpoints[i]->name));
        if (!hub) {
            hub = fresh[next++];
            t->hubs[t->hub_count++] = hub;
        }
        hub->endpoint = endpoints[i];
        hub->removed = false;
    }
    return true;
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

void legacy_table_free(struct legacy_table *t)
{
    if (!t->all.next)
        return; /* never initialised */
    while (!list_is_empty(&t->all)) {
        struct legacy_session *s = list_container_of(t->all.next, struct legacy_session, all);
        if (s->wsi)
            lws_set_opaque_user_data(s->wsi, NULL);
        s->wsi = NULL;
        legacy_session_free(s);
    }
    dict_free(&t->by_id);
    for (size_t i = 0; t->hubs && i < t->hub_count; i++) {
        legacy_hub_free(t->hubs[i]);
        free(t->hubs[i]);
    }
    free(t->hubs);
    t->hubs = NULL;
    buf_free(&t->frame);
    token_key_clear(&t->token_key);
}
