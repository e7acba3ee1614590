/* hub_channel.c - what every hub channel implementation shares: reporting up to the owner (see hub_channel.h). */
#include "relay/hub_channel.h"

#include <stddef.h>

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
