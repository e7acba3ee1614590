/* legacy_start.c - /start waiting for the connection's hub links (see legacy_start.h). */
#include "relay/legacy_start.h"

#include <string.h>

#include "protocol/legacy_frame.h"
#include "relay/http.h"

#define JSON_UTF8 "application/json; charset=UTF-8"

void legacy_start_init(struct legacy_start_wait *w, const struct relay_config *cfg,
                       const struct legacy_start_ops *ops, void *owner)
{
    w->role = WSI_ROLE_LEGACY_START;
    w->wsi = NULL;
    w->cfg = cfg;
    w->ops = ops;
    w->owner = owner;
}

/* The answer is written before the owner hears of it: what the owner sends
 * once started (the hubs' OnConnected messages) follows the answer. */
static int answer(struct legacy_start_wait *w, struct lws *wsi, enum legacy_start_verdict v, const char *failure,
                  unsigned status)
{
    int rc;
    if (v == LEGACY_START_OK)
        rc = http_respond(w->cfg, wsi, 200, JSON_UTF8, LEGACY_START_RESPONSE, sizeof LEGACY_START_RESPONSE - 1);
    else
        rc = http_respond_text(w->cfg, wsi, status, failure ? failure : "The connection has ended.");
    w->ops->released(w->owner, v == LEGACY_START_OK);
    return rc;
}

int legacy_start_request(struct legacy_start_wait *w, struct lws *wsi)
{
    const char *failure = NULL;
    unsigned status = 500;
    enum legacy_start_verdict v = w->ops->verdict(w->owner, &failure, &status);
    if (v != LEGACY_START_WAIT)
        return answer(w, wsi, v, failure, status);
    if (w->wsi) /* a second /start while one waits: the newer one waits instead */
        lws_set_opaque_user_data(w->wsi, NULL);
    w->wsi = wsi;
    lws_set_opaque_user_data(wsi, w);
    http_answer_later(wsi);
    return 0;
}

void legacy_start_check(struct legacy_start_wait *w)
{
    const char *failure = NULL;
    unsigned status = 500;
    if (w->wsi && w->ops->verdict(w->owner, &failure, &status) != LEGACY_START_WAIT)
        http_answer_ready(w->wsi);
}

int legacy_start_writeable(struct legacy_start_wait *w, struct lws *wsi)
{
    const char *failure = NULL;
    unsigned status = 500;
    enum legacy_start_verdict v = w->ops->verdict(w->owner, &failure, &status);
    if (v == LEGACY_START_WAIT)
        return 0;
    w->wsi = NULL;
    lws_set_opaque_user_data(wsi, NULL);
    return answer(w, wsi, v, failure, status);
}

void legacy_start_abandoned(struct legacy_start_wait *w)
{
    w->wsi = NULL;
    w->ops->released(w->owner, false);
}

void legacy_start_detach(struct legacy_start_wait *w)
{
    if (w->wsi)
        lws_set_opaque_user_data(w->wsi, NULL);
    w->wsi = NULL;
}
