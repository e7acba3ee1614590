/* core_session_extra.c - a Core session's optional part: what only some sessions use, allocated on first need (see core_session.h). */
#include "relay/core_session.h"

#include <stdlib.h>
#include <string.h>

struct core_session_extra *core_session_extra(struct core_session *s)
{
    _Static_assert(_Alignof(struct core_session_extra) <= 8, "a pool's records are 8-aligned");
    if (!s->extra && (s->extra = pool_alloc(&s->table->extras)) != NULL)
        s->extra->session = s;
    return s->extra;
}

const char *core_session_id(const struct core_session *s)
{
    if (s->channel && hub_channel_id(s->channel)[0])
        return hub_channel_id(s->channel);
    if (s->extra && s->extra->kept_id)
        return s->extra->kept_id;
    if (s->pending && s->pending->client && s->pending->client->connection_id)
        return s->pending->client->connection_id;
    return "-";
}

void core_session_keep_id(struct core_session *s, const char *id)
{
    struct core_session_extra *x = id && id[0] ? core_session_extra(s) : NULL;
    if (!x || x->kept_id)
        return;
    x->kept_id = strdup(id); /* out of memory: the logs say "-" from now on */
}

void core_session_capture_begin(struct core_session *s, struct lws *wsi)
{
    struct capture_file *file = NULL;
    capture_session_begin(wsi, &file);
    if (!file)
        return;
    struct core_session_extra *x = core_session_extra(s);
    if (x)
        x->capture = file; /* owned by the extra part from here */
    else
        capture_session_end(&file); /* out of memory: this connection is not recorded past its upgrade */
}

void core_session_extra_free(struct core_session *s)
{
    if (!s->extra)
        return;
    capture_session_end(&s->extra->capture);
    free(s->extra->kept_id);
    pool_free(&s->table->extras, s->extra);
    s->extra = NULL;
}
