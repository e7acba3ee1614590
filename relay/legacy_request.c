/* legacy_request.c - a legacy HTTP request read whole and answered later (see legacy_request.h). */
#include "relay/legacy_request.h"

#include <stdio.h>
#include <stdlib.h>

#include "relay/http.h"

struct legacy_request *legacy_request_new(const struct relay_config *cfg, struct lws *wsi, const char *suffix)
{
    struct legacy_request *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->role = WSI_ROLE_LEGACY_REQUEST;
    r->wsi = wsi;
    r->cfg = cfg;
    snprintf(r->suffix, sizeof r->suffix, "%s", suffix);
    buf_init(&r->body);
    buf_init(&r->answer);
    list_init_node(&r->link);
    lws_set_opaque_user_data(wsi, r);
    return r;
}

void legacy_request_body(struct legacy_request *r, const void *in, size_t len)
{
    if (r->body_too_large)
        return;
    if (r->body.len + len > r->cfg->max_message_bytes || !buf_append(&r->body, in, len)) {
        r->body_too_large = true;
        buf_free(&r->body);
        buf_init(&r->body);
    }
}

void legacy_request_free(struct legacy_request *r)
{
    if (r->wsi && lws_get_opaque_user_data(r->wsi) == r)
        lws_set_opaque_user_data(r->wsi, NULL);
    buf_free(&r->body);
    buf_free(&r->answer);
    free(r);
}

void legacy_request_wait(struct legacy_request *r, void *owner, legacy_request_gone_fn gone)
{
    r->owner = owner;
    r->gone = gone;
    http_answer_capture(r->cfg, r->wsi, &r->reply);
    /* Nothing more is read from the request's headers: lws may reuse their storage meanwhile. */
    r->detached = lws_http_headers_detach(r->wsi) == 0;
    http_answer_later(r->wsi);
}

bool legacy_request_prepare(struct legacy_request *r, unsigned status, const char *content_type, const char *data,
                            size_t len)
{
    r->status = status;
    r->content_type = content_type;
    bool ok = buf_append(&r->answer, data, len);
    if (!ok) {
        r->status = 500;
        r->content_type = "text/plain";
    }
    return ok;
}

void legacy_request_release(struct legacy_request *r)
{
    r->owner = NULL;
    r->gone = NULL;
    r->answered = true;
    r->held = false;
    http_answer_ready(r->wsi);
}

bool legacy_request_answer(struct legacy_request *r, unsigned status, const char *content_type, const char *data,
                           size_t len)
{
    bool ok = legacy_request_prepare(r, status, content_type, data, len);
    legacy_request_release(r);
    return ok;
}

int legacy_request_writeable(struct legacy_request *r, struct lws *wsi)
{
    if (!r->answered || wsi != r->wsi)
        return 0;
    int rc = r->detached ? http_respond_captured(&r->reply, wsi, r->status, r->content_type, r->answer.data, r->answer.len)
                         : http_respond(r->cfg, wsi, r->status, r->content_type, r->answer.data, r->answer.len);
    legacy_request_free(r);
    return rc;
}

void legacy_request_closed(struct legacy_request *r)
{
    if (r->owner && r->gone)
        r->gone(r->owner, r);
    r->wsi = NULL;
    legacy_request_free(r);
}
