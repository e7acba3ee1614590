/* hub_msg.c - lifetime helpers for the common hub message. */
#include "protocol/hub_msg.h"

#include <stdlib.h>
#include <string.h>

void hub_msg_init(struct hub_msg *msg)
{
    memset(msg, 0, sizeof *msg);
}

void hub_msg_release(struct hub_msg *msg)
{
    for (unsigned i = 0; i < msg->owned_count; i++)
        free(msg->owned[i]);
    hub_msg_init(msg);
}

bool hub_msg_own_copy(struct hub_msg *msg, const char *p, size_t len, struct span *out)
{
    if (msg->owned_count >= HUB_MSG_MAX_OWNED)
        return false;
    char *copy = malloc(len + 1);
    if (!copy)
        return false;
    if (len)
        memcpy(copy, p, len);
    copy[len] = '\0';
    msg->owned[msg->owned_count++] = copy;
    *out = span_make(copy, len);
    return true;
}
