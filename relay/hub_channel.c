/* hub_channel.c - what every hub channel implementation shares: reporting up to the owner (see hub_channel.h). */
#include "relay/hub_channel.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void hub_channel_init(struct hub_channel *ch, const struct hub_channel_class *cls,
                      const struct hub_channel_ops *ops, void *owner)
{
    ch->cls = cls;
    ch->ops = ops;
    ch->owner = owner;
}

void hub_channel_deliver(struct hub_channel *ch, struct wsmsg *msg)
{
    if (ch->ops)
        ch->ops->message(ch->owner, msg);
    else
        wsmsg_free(msg);
}

void hub_channel_report_opened(struct hub_channel *ch, const char *connection_id)
{
    if (ch->ops && ch->ops->opened)
        ch->ops->opened(ch->owner, connection_id ? connection_id : "");
}

void hub_channel_report_drained(struct hub_channel *ch)
{
    if (ch->ops && ch->ops->drained)
        ch->ops->drained(ch->owner);
}

void hub_channel_report_end(struct hub_channel *ch, bool was_open, const char *why)
{
    const struct hub_channel_ops *ops = ch->ops;
    ch->ops = NULL; /* detached first: the owner may free itself in the callback */
    if (!ops)
        return;
    if (was_open)
        ops->closed(ch->owner, why);
    else
        ops->refused(ch->owner, why);
}

static char *copy_or_null(const char *text, bool *ok)
{
    char *copy = text ? strdup(text) : NULL;
    *ok = *ok && (!text || copy);
    return copy;
}

struct hub_client_copy *hub_client_copy_new(const struct hub_channel_client *src)
{
    struct hub_client_copy *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    bool ok = src->headers ? header_list_copy(&c->headers, src->headers) : (buf_init(&c->headers.pairs), true);
    c->connection_id = copy_or_null(src->connection_id, &ok);
    c->negotiated_token = copy_or_null(src->negotiated_token, &ok);
    c->query = copy_or_null(src->query ? src->query : "", &ok);
    c->forwarded_for = copy_or_null(src->forwarded_for, &ok);
    c->claims = src->claim_count ? calloc(src->claim_count, sizeof *c->claims) : NULL;
    ok = ok && (!src->claim_count || c->claims);
    for (size_t i = 0; c->claims && i < src->claim_count; i++, c->claim_count++) {
        c->claims[i].type = copy_or_null(src->claims[i].type, &ok);
        c->claims[i].value = copy_or_null(src->claims[i].value, &ok);
    }
    if (!ok) {
        hub_client_copy_free(c);
        return NULL;
    }
    return c;
}

void hub_client_copy_free(struct hub_client_copy *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->claim_count; i++) {
        free((char *)c->claims[i].type);
        free((char *)c->claims[i].value);
    }
    free(c->claims);
    free(c->connection_id);
    free(c->negotiated_token);
    header_list_free(&c->headers);
    free(c->query);
    free(c->forwarded_for);
    free(c);
}

struct hub_channel_client hub_client_copy_view(const struct hub_client_copy *c)
{
    return (struct hub_channel_client){
        .connection_id = c->connection_id,
        .negotiated_token = c->negotiated_token,
        .claims = c->claims,
        .claim_count = c->claim_count,
        .headers = &c->headers,
        .query = c->query,
        .forwarded_for = c->forwarded_for,
    };
}
