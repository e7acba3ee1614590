/* legacy_authorize.c - legacy negotiate's hub authorization through the backends (see legacy_authorize.h). */
#include "relay/legacy_authorize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers/buf.h"
#include "containers/timer_wheel.h"
#include "hub/conn_token.h"
#include "protocol/legacy_connection_data.h"
#include "relay/backend.h"
#include "relay/clock.h"
#include "relay/config.h"
#include "relay/http.h"
#include "relay/log.h"
#include "relay/loop.h"

struct authorize_hub {
    const struct hub_route *route;
    struct backend_negotiate *request; /* in flight, or NULL once answered */
    struct legacy_authorize *check;
};

struct legacy_authorize {
    struct loop *loop;
    struct legacy_request *request;    /* the client's negotiate, prepared with its 200 answer */
    struct timer_entry deadline;       /* --backend-timeout for every hub's answer */
    struct authorize_hub hubs[LEGACY_MAX_HUBS];
    size_t hub_count;
    size_t waiting;                    /* hubs whose backend has not answered */
};

/* Cancels what is still in flight and frees the check (the request is answered or gone). */
static void check_free(struct legacy_authorize *a)
{
    for (size_t i = 0; i < a->hub_count; i++) {
        if (a->hubs[i].request)
            backend_negotiate_cancel(a->hubs[i].request);
    }
    timer_cancel(&a->deadline);
    free(a);
}

/* The client's answer is settled: the prepared one (status 0) or this refusal. */
static void check_answer(struct legacy_authorize *a, unsigned status, const char *type, const char *text)
{
    struct legacy_request *r = a->request;
    a->request = NULL;
    if (status) {
        buf_free(&r->answer);
        buf_init(&r->answer);
        legacy_request_prepare(r, status, type, text, strlen(text));
    }
    legacy_request_release(r);
    check_free(a);
}

static void check_refuse(struct legacy_authorize *a, unsigned status, const char *fmt, const char *hub,
                         const char *detail)
{
    char text[512];
    snprintf(text, sizeof text, fmt, hub, detail);
    log_warn("legacy negotiate: %s", text);
    a->loop->stats.backend_failures++;
    check_answer(a, status, "text/plain", text);
}

static void hub_answered(void *owner, unsigned status, const char *body, size_t len, const char *error)
{
    (void)body;
    (void)len;
    struct authorize_hub *h = owner;
    struct legacy_authorize *a = h->check;
    h->request = NULL;
    a->waiting--;
    if (status == 401 || status == 403) {
        /* As the original answers a hub the user may not use: the status, nothing else. */
        log_info("legacy negotiate: hub %s refused the client (%u)", h->route->name, status);
        check_answer(a, status, NULL, "");
    } else if (status == 0) {
        check_refuse(a, 502, "The backend hub '%s' is unreachable: %s", h->route->name, error ? error : "");
    } else if (status < 200 || status >= 300) {
        char detail[32];
        snprintf(detail, sizeof detail, "%u", status);
        check_refuse(a, 502, "The backend hub '%s' answered negotiate with HTTP %s.", h->route->name, detail);
    } else if (a->waiting == 0) {
        check_answer(a, 0, NULL, NULL);
    }
}

static void deadline_passed(struct timer_entry *e)
{
    struct legacy_authorize *a = list_container_of(e, struct legacy_authorize, deadline);
    for (size_t i = 0; i < a->hub_count; i++) {
        struct authorize_hub *h = &a->hubs[i];
        if (!h->request)
            continue;
        backend_negotiate_timed_out(h->request); /* its instance backs off, as a slow Core negotiate's */
        h->request = NULL;
        char detail[32];
        snprintf(detail, sizeof detail, "%u s", a->loop->cfg->backend_timeout_ms / 1000);
        check_refuse(a, 504, "The backend hub '%s' did not answer the negotiate within %s.", h->route->name, detail);
        return;
    }
}

/* The client left before its answer: nothing more to ask. */
static void client_gone(void *owner, struct legacy_request *r)
{
    (void)r;
    check_free(owner);
}

/* The hubs that have a backend to ask (proxy mode; not an --app-negotiate hub). */
static size_t collect_hubs(struct legacy_authorize *a, const struct relay_config *cfg, const struct span *hubs,
                           size_t hub_count)
{
    for (size_t i = 0; i < hub_count && a->hub_count < LEGACY_MAX_HUBS; i++) {
        const struct hub_route *route = config_find_hub(cfg, hubs[i].ptr, hubs[i].len);
        if (!route || route->app_negotiate || route->target_count == 0)
            continue;
        bool seen = false; /* a hub listed twice is asked once */
        for (size_t j = 0; j < a->hub_count; j++)
            seen = seen || a->hubs[j].route == route;
        if (!seen)
            a->hubs[a->hub_count++] = (struct authorize_hub){ route, NULL, a };
    }
    return a->hub_count;
}

static enum legacy_authorize_result fail(struct legacy_authorize *a, struct legacy_request *r, unsigned status,
                                         const char *text)
{
    free(a);
    buf_free(&r->answer);
    buf_init(&r->answer);
    legacy_request_answer(r, status, "text/plain", text, strlen(text));
    return LEGACY_AUTHORIZE_FAILED;
}

enum legacy_authorize_result legacy_authorize_start(struct loop *loop, struct backends *backends,
                                                    struct legacy_request *r, const struct span *hubs,
                                                    size_t hub_count)
{
    const struct relay_config *cfg = loop->cfg;
    if (!backends || hub_count == 0)
        return LEGACY_AUTHORIZE_NOTHING;
    struct legacy_authorize *a = calloc(1, sizeof *a);
    if (!a)
        return fail(a, r, 500, "The relay ran out of memory.");
    a->loop = loop;
    timer_entry_init(&a->deadline, deadline_passed);
    if (collect_hubs(a, cfg, hubs, hub_count) == 0) {
        free(a);
        return LEGACY_AUTHORIZE_NOTHING;
    }
    /* What the hub links will forward later, the legacy transport's own arguments left out. */
    static const char *const not_forwarded[] = { "transport", "clientProtocol", "connectionToken", "connectionData",
                                                 "messageId", "groupsToken", "tid", "_", "noCache", "frameId" };
    struct buf query;
    buf_init(&query);
    if (!http_query_forward(r->wsi, &query, not_forwarded, sizeof not_forwarded / sizeof not_forwarded[0]) ||
        !buf_append_byte(&query, '\0')) {
        buf_free(&query);
        return fail(a, r, 500, "The relay ran out of memory.");
    }
    for (size_t i = 0; i < a->hub_count; i++) {
        if (!backend_query_fits(a->hubs[i].route, query.len, 64)) {
            buf_free(&query);
            return fail(a, r, 414, "The query is too long for the relay to pass on to the backend hub.");
        }
    }
    char forwarded_for[512];
    struct header_list headers;
    header_list_capture(&headers, r->wsi);
    http_forwarded_for(r->wsi, forwarded_for, sizeof forwarded_for);
    a->request = r;
    a->waiting = a->hub_count;
    bool started = true;
    for (size_t i = 0; started && i < a->hub_count; i++) {
        struct backend_params params = { a->hubs[i].route, query.data, &headers, forwarded_for, 0, NULL };
        a->hubs[i].request = backend_negotiate_start(backends, &params, hub_answered, &a->hubs[i]);
        started = a->hubs[i].request != NULL;
    }
    header_list_free(&headers);
    buf_free(&query);
    if (!started) {
        a->request = NULL;
        for (size_t i = 0; i < a->hub_count; i++) {
            if (a->hubs[i].request)
                backend_negotiate_cancel(a->hubs[i].request);
            a->hubs[i].request = NULL;
        }
        return fail(a, r, 502, "The backend hub is unreachable: its negotiate could not be started.");
    }
    legacy_request_wait(r, a, client_gone);
    loop_timer_schedule(loop, &a->deadline, clock_now_ms() + cfg->backend_timeout_ms);
    return LEGACY_AUTHORIZE_STARTED;
}
