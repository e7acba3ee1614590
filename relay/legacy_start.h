/* legacy_start.h - a legacy /start request waiting until the connection's hubs are ready.
 *
 * The original answers /start only when the connection is up; the relay's
 * equivalent is every hub link named in connectionData having its handshake
 * answered. A /start that comes earlier waits here (its reading paused, see
 * http_answer_later) and is answered when the owner says something changed:
 * {"Response":"started"}, or 502/504 with the reason a link failed (text naming the hub). A second
 * /start while one waits takes its place. */
#ifndef SR_LEGACY_START_H
#define SR_LEGACY_START_H

#include <libwebsockets.h>
#include <stdbool.h>

#include "relay/config.h"
#include "relay/wsi_role.h"

enum legacy_start_verdict {
    LEGACY_START_WAIT,
    LEGACY_START_OK,
    LEGACY_START_FAILED,
};

struct legacy_start_ops {
    /* Whether /start can be answered now; with FAILED, *failure is the text (or NULL) and
     * *status the HTTP status (left 500 when the connection ended for another reason than a
     * hub link: 502 a link was refused, 504 its backend did not answer in time). */
    enum legacy_start_verdict (*verdict)(void *owner, const char **failure, unsigned *status);
    /* The waiting request was answered (started: with "started") or went away. */
    void (*released)(void *owner, bool started);
};

/* Embedded in its owner; the waiting request's opaque user data points here. */
struct legacy_start_wait {
    enum wsi_role role;                   /* WSI_ROLE_LEGACY_START */
    struct lws *wsi;                      /* the waiting request, or NULL */
    const struct relay_config *cfg;
    const struct legacy_start_ops *ops;
    void *owner;
};

void legacy_start_init(struct legacy_start_wait *w, const struct relay_config *cfg,
                       const struct legacy_start_ops *ops, void *owner);
/* /start arrived on wsi: answers at once or waits. Returns the lws callback result. */
int legacy_start_request(struct legacy_start_wait *w, struct lws *wsi);
/* Something the verdict depends on changed: a waiting request is answered soon. */
void legacy_start_check(struct legacy_start_wait *w);
/* LWS_CALLBACK_HTTP_WRITEABLE of the waiting request. */
int legacy_start_writeable(struct legacy_start_wait *w, struct lws *wsi);
/* The waiting request's connection closed. */
void legacy_start_abandoned(struct legacy_start_wait *w);
/* The owner goes away: the waiting request (if any) is forgotten. */
void legacy_start_detach(struct legacy_start_wait *w);

#endif
