/* backend.c - negotiate requests and WebSocket links to ASP.NET Core hubs (see backend.h). */
#include "relay/backend.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers/buf.h"
#include "protocol/urlencoded.h"
#include "relay/clock.h"
#include "relay/log.h"
#include "relay/tls.h"
#include "relay/wsi_role.h"

#define NEGOTIATE_BODY_LIMIT (64u << 10)

bool backend_query_fits(const struct hub_route *route, size_t query_len, size_t id_len)
{
    /* "DELETE " + path + "/negotiate?negotiateVersion=1&" or "?id=<token>&" + query + " HTTP/1.1\r\n",
     * for the instance with the longest path */
    size_t longest_path = 0;
    for (size_t i = 0; i < route->target_count; i++) {
        size_t n = strlen(route->targets[i].path);
        longest_path = n > longest_path ? n : longest_path;
    }
    size_t fixed = sizeof "DELETE " + longest_path + sizeof "/negotiate?negotiateVersion=1&" + sizeof "?id=&" +
                   sizeof " HTTP/1.1\r\n";
    return fixed + 3 * id_len + query_len <= BACKEND_MAX_REQUEST_LINE;
}

/* ------------------------------------------------------------- negotiate */

struct backend_negotiate {
    struct backend_conn conn; /* WSI_ROLE_BACKEND_NEGOTIATE */
    backend_negotiate_cb cb;  /* NULL once delivered or cancelled */
    void *owner;
    struct buf body;
    unsigned status;
};

static void negotiate_deliver(struct backend_negotiate *r, const char *error)
{
    timer_cancel(&r->conn.deadline);
    backend_negotiate_cb cb = r->cb;
    r->cb = NULL;
    if (cb)
        cb(r->owner, error ? 0 : r->status, r->body.data ? r->body.data : "", r->body.len, error);
}

static void negotiate_free(struct backend_negotiate *r)
{
    backend_conn_release(&r->conn);
    buf_free(&r->body);
    free(r);
}

static const struct backend_conn_kind negotiate_kind;

struct backend_negotiate *backend_negotiate_start(struct backends *b, const struct backend_params *params,
                                                  backend_negotiate_cb cb, void *owner)
{
    struct backend_negotiate *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->conn.role = WSI_ROLE_BACKEND_NEGOTIATE;
    r->conn.kind = &negotiate_kind;
    buf_init(&r->body);
    enum conn_start st = backend_conn_start(&r->conn, b, params, "/negotiate", "negotiateVersion=1", "POST",
                                    backend_negotiate_protocol.name);
    if (st == CONN_FAILED_FREE_NOW)
        negotiate_free(r);
    if (st != CONN_STARTED)
        return NULL;
    r->cb = cb;
    r->owner = owner;
    return r;
}

void backend_negotiate_pin(const struct backend_negotiate *r, struct backend_pin *pin)
{
    *pin = r->conn.pin;
}

void backend_negotiate_timed_out(struct backend_negotiate *r)
{
    backend_conn_failed(&r->conn);
    backend_negotiate_cancel(r);
}

void backend_negotiate_cancel(struct backend_negotiate *r)
{
    r->cb = NULL;
    timer_cancel(&r->conn.deadline);
    if (resolver_request_pending(&r->conn.dns)) { /* no wsi yet */
        negotiate_free(r);
        return;
    }
    /* While the context is being destroyed lws closes every wsi itself; its timer list may
     * already be half torn down, so no lws call here. */
    if (r->conn.wsi && !r->conn.loop->destroying)
        lws_set_timeout(r->conn.wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static int negotiate_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                              size_t len)
{
    struct backend_negotiate *r = lws_get_opaque_user_data(wsi);
    switch (reason) {
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: {
        if (!r)
            return -1;
        unsigned char **p = (unsigned char **)in, *end = (*p) + len;
        if (lws_add_http_header_by_name(wsi, (const unsigned char *)"content-length:",
                                        (const unsigned char *)"0", (int)(sizeof "0" - 1), p, end))
            return -1;
        return backend_conn_append_headers(wsi, &r->conn, in, len);
    }
    case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
        if (r) {
            r->status = (unsigned)lws_http_client_http_response(wsi);
            backend_conn_worked(&r->conn);
        }
        return 0;
    case LWS_CALLBACK_RECEIVE_CLIENT_HTTP: {
        char chunk[LWS_PRE + 4096];
        char *px = chunk + LWS_PRE;
        int lenx = (int)(sizeof chunk - LWS_PRE);
        return lws_http_client_read(wsi, &px, &lenx) < 0 ? -1 : 0;
    }
    case LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ:
        if (!r || r->body.len + len > NEGOTIATE_BODY_LIMIT || !buf_append(&r->body, in, len)) {
            if (r)
                negotiate_deliver(r, "backend negotiate response too large");
            return -1;
        }
        return 0;
    case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
        if (r)
            negotiate_deliver(r, NULL);
        return -1; /* one request per connection: close it */
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        char tls_why[256];
        const char *why = tls_backend_failure(wsi, tls_why, sizeof tls_why) ? tls_why
                          : in                                             ? (const char *)in
                                                                           : "connection error";
        log_debug("backend: negotiate failed: %s", why);
        if (r && r->cb && !r->conn.connecting) {
            /* Refused: that instance backs off, and another one may take the request. */
            backend_conn_failed(&r->conn);
            if (backend_conn_ended(&r->conn, wsi) && backend_conn_retry(&r->conn))
                return 0;
            negotiate_deliver(r, why);
            negotiate_free(r);
            return 0;
        }
        if (r && backend_conn_ended(&r->conn, wsi)) {
            negotiate_deliver(r, why);
            negotiate_free(r);
        }
        return 0;
    }
    case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
        if (r && backend_conn_ended(&r->conn, wsi)) {
            negotiate_deliver(r, "backend closed the connection before answering");
            negotiate_free(r);
        }
        return 0;
    default:
        return 0;
    }
}

const struct lws_protocols backend_negotiate_protocol = {
    "sr-backend-negotiate", negotiate_callback, 0, 0, 0, NULL, 0
};

/* ------------------------------------------------------------------ link */

enum backend_link_state { BACKEND_LINK_CONNECTING, BACKEND_LINK_OPEN, BACKEND_LINK_CLOSING };

struct backend_link {
    struct backend_conn conn;           /* WSI_ROLE_BACKEND_LINK */
    const struct backend_link_ops *ops; /* NULL once the owner let go */
    void *owner;
    struct msg_queue out;
    struct wsmsg *rx_partial;
    enum backend_link_state state;
    bool above_high_water;
    /* The closing state's deadline (RELAY_CLOSE_TIMEOUT_MS): a backend that does not take the
     * last messages or never answers the Close frame is cut off. */
    struct timer_entry closing;
};

static void backend_link_free(struct backend_link *link)
{
    timer_cancel(&link->closing);
    msg_queue_clear(&link->out);
    wsmsg_free(link->rx_partial);
    backend_conn_release(&link->conn);
    link->conn.loop->stats.backend_links_active--;
    free(link);
}

/* Tells the owner the link is gone (once) and detaches it. */
static void link_report_closed(struct backend_link *link, const char *why)
{
    const struct backend_link_ops *ops = link->ops;
    link->ops = NULL;
    if (ops)
        ops->closed(link->owner, link->state != BACKEND_LINK_CONNECTING, why);
}

static const struct backend_conn_kind link_kind;

/* The closing deadline passed with the link's socket still open: it is closed now (its
 * CLIENT_CLOSED or WSI_DESTROY frees the link). */
static void link_closing_expired(struct timer_entry *e)
{
    struct backend_link *link = list_container_of(e, struct backend_link, closing);
    log_info("backend: a link still closing after %d ms: its socket is closed", RELAY_CLOSE_TIMEOUT_MS);
    if (link->conn.wsi)
        lws_set_timeout(link->conn.wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

struct backend_link *backend_link_open(struct backends *b, const struct backend_params *params,
                                       const char *backend_token, const struct backend_link_ops *ops,
                                       void *owner)
{
    /* The backend's token whole, however long (lws_urlencode into a fixed buffer cut it). */
    struct buf id_arg;
    buf_init(&id_arg);
    if (!buf_append_cstr(&id_arg, "id=") || !urlencoded_append(&id_arg, span_from_cstr(backend_token), 0) ||
        !buf_append_byte(&id_arg, '\0')) {
        buf_free(&id_arg);
        return NULL;
    }
    struct backend_link *link = calloc(1, sizeof *link);
    if (!link) {
        buf_free(&id_arg);
        return NULL;
    }
    link->conn.role = WSI_ROLE_BACKEND_LINK;
    link->conn.kind = &link_kind;
    link->conn.loop = b->loop;
    timer_entry_init(&link->closing, link_closing_expired);
    msg_queue_init(&link->out);
    b->loop->stats.backend_links_active++;
    enum conn_start st = backend_conn_start(&link->conn, b, params, "", id_arg.data, NULL, backend_link_protocol.name);
    buf_free(&id_arg);
    if (st == CONN_FAILED_FREE_NOW)
        backend_link_free(link);
    if (st != CONN_STARTED)
        return NULL; /* CONN_FAILED_LWS_FREES: its WSI_DESTROY frees it */
    link->ops = ops;
    link->owner = owner;
    return link;
}

bool backend_link_send(struct backend_link *link, struct wsmsg *msg)
{
    if (link->state == BACKEND_LINK_CLOSING) {
        wsmsg_free(msg);
        return false;
    }
    link->conn.loop->stats.messages_to_backend++;
    link->conn.loop->stats.bytes_to_backend += msg->len;
    if (link->state != BACKEND_LINK_OPEN || !link->conn.wsi) {
        msg_queue_push(&link->out, msg); /* written once the WebSocket is open */
    } else if (!wsmsg_send(link->conn.wsi, &link->out, msg)) {
        return false;
    }
    if (link->out.bytes > link->conn.loop->cfg->max_buffered_bytes)
        link->above_high_water = true;
    return true;
}

size_t backend_link_queued(const struct backend_link *link)
{
    return link->out.bytes;
}

void backend_link_pause_reading(struct backend_link *link, bool paused)
{
    if (link->conn.wsi && link->state == BACKEND_LINK_OPEN)
        lws_rx_flow_control(link->conn.wsi, paused ? 0 : 1);
}

void backend_link_close(struct backend_link *link)
{
    link->ops = NULL;
    timer_cancel(&link->conn.deadline);
    if (resolver_request_pending(&link->conn.dns)) { /* no wsi yet */
        backend_link_free(link);
        return;
    }
    if (link->state == BACKEND_LINK_CLOSING)
        return;
    if (link->conn.loop->destroying) { /* lws is closing every wsi itself (see backend_negotiate_cancel) */
        link->state = BACKEND_LINK_CLOSING;
        return;
    }
    if (link->state == BACKEND_LINK_CONNECTING || !link->conn.wsi) {
        link->state = BACKEND_LINK_CLOSING;
        if (link->conn.wsi)
            lws_set_timeout(link->conn.wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        return;
    }
    link->state = BACKEND_LINK_CLOSING;
    lws_rx_flow_control(link->conn.wsi, 1);
    lws_callback_on_writable(link->conn.wsi);
    loop_timer_schedule(link->conn.loop, &link->closing, clock_now_ms() + RELAY_CLOSE_TIMEOUT_MS);
}

/* Whole messages from the backend go to the owner. */
static int link_receive(struct backend_link *link, struct lws *wsi, const void *in, size_t len)
{
    enum wsmsg_fault fault;
    struct wsmsg *whole = wsmsg_receive(&link->rx_partial, wsi, in, len, link->conn.loop,
                                        config_hub_message_limit(link->conn.loop->cfg), "backend link", &fault);
    if (!whole) {
        if (fault == WSMSG_MORE)
            return 0;
        link_report_closed(link, fault == WSMSG_TOO_LARGE ? "the backend sent a message larger than the relay's --max-message-size"
                                 : fault == WSMSG_BAD_UTF8 ? "the backend sent a text message that is not valid UTF-8"
                                                           : "the relay ran out of memory for a message from the backend");
        return -1;
    }
    link->conn.loop->stats.messages_to_clients++;
    link->conn.loop->stats.bytes_to_clients += whole->len;
    if (link->ops)
        link->ops->message(link->owner, whole);
    else
        wsmsg_free(whole);
    return 0;
}

static int link_writeable(struct backend_link *link, struct lws *wsi)
{
    if (!wsmsg_flush(wsi, &link->out))
        return -1;
    if (link->above_high_water && link->out.bytes <= link->conn.loop->cfg->max_buffered_bytes / 2) {
        link->above_high_water = false;
        if (link->ops && link->ops->drained)
            link->ops->drained(link->owner);
    }
    if (link->state == BACKEND_LINK_CLOSING && msg_queue_is_empty(&link->out) && !lws_partial_buffered(wsi)) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
        return -1;
    }
    return 0;
}

static int link_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    struct backend_link *link = lws_get_opaque_user_data(wsi);
    if (!link)
        return 0;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
        return backend_conn_append_headers(wsi, &link->conn, in, len);
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        /* The headers were for the upgrade request only: an open link holds none of them. */
        backend_conn_drop_headers(&link->conn);
        backend_conn_worked(&link->conn);
        if (link->state == BACKEND_LINK_CLOSING)
            return -1;
        link->state = BACKEND_LINK_OPEN;
        if (link->ops)
            link->ops->opened(link->owner);
        if (!msg_queue_is_empty(&link->out))
            lws_callback_on_writable(wsi);
        return 0;
    case LWS_CALLBACK_CLIENT_RECEIVE:
        return link_receive(link, wsi, in, len);
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        return link_writeable(link, wsi);
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        link->conn.loop->stats.backend_failures++;
        char tls_why[256];
        const char *why = tls_backend_failure(wsi, tls_why, sizeof tls_why) ? tls_why : (const char *)in;
        if (link->ops)
            backend_conn_failed(&link->conn);
        if (backend_conn_ended(&link->conn, wsi)) {
            log_info("backend: WebSocket connection failed: %s", why ? why : "unknown error");
            link_report_closed(link, why ? why : "the backend refused the WebSocket connection");
            backend_link_free(link);
        }
        return 0;
    }
    case LWS_CALLBACK_CLIENT_CLOSED:
        if (backend_conn_ended(&link->conn, wsi)) {
            link_report_closed(link, NULL);
            backend_link_free(link);
        }
        return 0;
    case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
        /* A link closed while its upgrade request was in flight (e.g.
         * backend_link_close because the client's handshake was refused
         * meanwhile) ends as an HTTP client: lws sends neither CLIENT_CLOSED
         * nor CONNECTION_ERROR, and without this the link leaked. */
        if (backend_conn_ended(&link->conn, wsi)) {
            link_report_closed(link, "the backend connection closed before the WebSocket was open");
            backend_link_free(link);
        }
        return 0;
    default:
        return 0;
    }
}

static void negotiate_kind_report(struct backend_conn *c, const char *why)
{
    negotiate_deliver((struct backend_negotiate *)c, why);
}

static void negotiate_kind_free(struct backend_conn *c)
{
    negotiate_free((struct backend_negotiate *)c);
}

static const struct backend_conn_kind negotiate_kind = { negotiate_kind_report, negotiate_kind_free, NULL };

static void link_kind_report(struct backend_conn *c, const char *why)
{
    struct backend_link *link = (struct backend_link *)c;
    link_report_closed(link, why);
    link->state = BACKEND_LINK_CLOSING;
}

static void link_kind_free(struct backend_conn *c)
{
    backend_link_free((struct backend_link *)c);
}

static void link_kind_drain(struct backend_conn *c, const char *why)
{
    struct backend_link *link = (struct backend_link *)c;
    link_report_closed(link, why);
    backend_link_close(link); /* the backend hears a normal close once the queue is written */
}

static const struct backend_conn_kind link_kind = { link_kind_report, link_kind_free, link_kind_drain };

void backend_wsi_destroyed(void *handle)
{
    struct backend_conn *c = handle;
    if (!backend_conn_destroyed(c))
        return; /* inside conn_start: the caller frees it */
    if (c->role == WSI_ROLE_BACKEND_LINK) {
        struct backend_link *link = handle;
        link_report_closed(link, c->destroy_text);
        backend_link_free(link);
    } else if (c->role == WSI_ROLE_BACKEND_NEGOTIATE) {
        struct backend_negotiate *r = handle;
        negotiate_deliver(r, c->destroy_text);
        negotiate_free(r);
    }
}

const struct lws_protocols backend_link_protocol = {
    "sr-backend-link", link_callback, 0, 512, 0, NULL, 0 /* sizes set per relay: relay_start */
};
