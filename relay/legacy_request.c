/* legacy_request.c - a legacy HTTP request read whole and answered later (see legacy_request.h). */
#include "relay/legacy_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/capture.h"
#include "relay/clock.h"
#include "relay/http.h"
#include "relay/loop.h"

struct legacy_request *legacy_request_new(const struct relay_config *cfg, struct lws *wsi, const char *suffix)
{
    struct legacy_request *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->role = WSI_ROLE_LEGACY_REQUEST;
    r->wsi = wsi;
    r->cfg = cfg;
    r->suffix = strdup(suffix);
    if (!r->suffix) {
        free(r);
        return NULL;
    }
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
    timer_cancel(&r->timer);
    if (r->wsi && lws_get_opaque_user_data(r->wsi) == r)
        lws_set_opaque_user_data(r->wsi, NULL);
    buf_free(&r->body);
    buf_free(&r->answer);
    free(r->suffix);
    free(r->legacy_id);
    free(r);
}

void legacy_request_wait(struct legacy_request *r, void *owner, legacy_request_gone_fn gone)
{
    r->owner = owner;
    r->gone = gone;
    /* Served by now: its command and its body were read. */
    free(r->suffix);
    r->suffix = NULL;
    buf_free(&r->body);
    buf_init(&r->body);
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
    timer_cancel(&r->timer);
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

static void keepalive_due(struct timer_entry *e)
{
    struct legacy_request *r = list_container_of(e, struct legacy_request, timer);
    if (r->answered || !r->wsi)
        return;
    r->space_due = true;
    http_answer_ready(r->wsi); /* lws writes nothing for a request whose reading is paused */
    loop_timer_schedule(r->loop, &r->timer, clock_now_ms() + r->keepalive_ms);
}

void legacy_request_keep_alive(struct legacy_request *r, struct loop *loop, unsigned interval_ms,
                               const char *content_type)
{
    r->loop = loop;
    r->keepalive_ms = interval_ms ? interval_ms : 1;
    r->stream_type = content_type;
    timer_entry_init(&r->timer, keepalive_due);
    loop_timer_schedule(loop, &r->timer, clock_now_ms() + r->keepalive_ms);
}

/* The head (the first time) and one space; then reading is paused again until the next. */
static int write_space(struct legacy_request *r, struct lws *wsi)
{
    if (!r->space_due)
        return 0;
    r->space_due = false;
    if (!r->streaming) {
        if (!http_begin_captured_stream(&r->reply, wsi, 200, r->stream_type))
            return -1;
        r->streaming = true;
    }
    unsigned char space[LWS_PRE + 1];
    space[LWS_PRE] = ' ';
    if (lws_write(wsi, space + LWS_PRE, 1, LWS_WRITE_HTTP) < 1)
        return -1;
    capture_http_chunk(wsi, " ", 1);
    http_answer_later(wsi);
    return 0;
}

int legacy_request_writeable(struct legacy_request *r, struct lws *wsi)
{
    if (wsi != r->wsi)
        return 0;
    if (!r->answered)
        return write_space(r, wsi);
    int rc = r->streaming ? http_end_stream(wsi, r->answer.data, r->answer.len)
             : r->detached ? http_respond_captured(&r->reply, wsi, r->status, r->content_type, r->answer.data,
                                                   r->answer.len)
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
