/* backend.c - negotiate requests and WebSocket links to ASP.NET Core hubs (see backend.h). */
#include "relay/backend.h"

#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers/buf.h"
#include "protocol/urlencoded.h"
#include "relay/log.h"
#include "relay/tls.h"
#include "relay/wsi_role.h"

#define NEGOTIATE_BODY_LIMIT (64u << 10)

/* ---------------------------------------------------------------- shared */

/* The headers a backend connection sends with its request, owned. */
struct forwarded {
    struct header_list headers;
    char *forwarded_for;
};

static bool forwarded_copy(struct forwarded *f, const struct backend_params *p)
{
    bool ok = true;
    if (p->headers)
        ok = header_list_copy(&f->headers, p->headers);
    else
        buf_init(&f->headers.pairs);
    f->forwarded_for = p->forwarded_for ? strdup(p->forwarded_for) : NULL;
    return ok && (!p->forwarded_for || f->forwarded_for);
}

/* Safe to call twice. */
static void forwarded_free(struct forwarded *f)
{
    header_list_free(&f->headers);
    free(f->forwarded_for);
    f->forwarded_for = NULL;
}

/* Adds the forwarded headers while lws builds the request. lws writes Origin
 * itself from the connect info, so it is skipped here. */
static int append_forwarded_headers(struct lws *wsi, const struct forwarded *f, void *in, size_t len)
{
    unsigned char **p = (unsigned char **)in, *end = (*p) + len;
    const char *name = f->headers.pairs.data, *stop = name + f->headers.pairs.len;
    while (name && name < stop) {
        const char *value = name + strlen(name) + 1;
        if (strcmp(name, "origin:") != 0 &&
            lws_add_http_header_by_name(wsi, (const unsigned char *)name, (const unsigned char *)value,
                                        (int)strlen(value), p, end))
            return -1;
        name = value + strlen(value) + 1;
    }
    if (f->forwarded_for &&
        lws_add_http_header_by_name(wsi, (const unsigned char *)"x-forwarded-for:",
                                    (const unsigned char *)f->forwarded_for, (int)strlen(f->forwarded_for), p, end))
        return -1;
    return 0;
}

bool backends_init(struct backends *b, struct loop *loop)
{
    memset(b, 0, sizeof *b);
    b->loop = loop;
    const char *list = loop->cfg->backend_source_addresses;
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0) {
            char **grown = realloc(b->sources, (b->source_count + 1) * sizeof *grown);
            if (!grown)
                return false;
            b->sources = grown;
            if (!(b->sources[b->source_count] = strndup(p, n)))
                return false;
            b->source_count++;
        }
        p += n + (p[n] == ',');
    }
    return true;
}

void backends_free(struct backends *b)
{
    for (unsigned i = 0; i < b->source_count; i++)
        free(b->sources[i]);
    free(b->sources);
    b->sources = NULL;
    b->source_count = 0;
}

/* The next local address to bind to, or NULL for the kernel's choice. */
static const char *next_source(struct backends *b, bool link)
{
    unsigned *next = link ? &b->source_next_link : &b->source_next_negotiate;
    return b->source_count ? b->sources[(*next)++ % b->source_count] : NULL;
}

/* Fills the lws connect info shared by both kinds of request. */
static void connect_info_init(struct lws_client_connect_info *info, struct backends *b,
                              const struct hub_route *route, const char *path, char *host_header,
                              size_t host_len, const struct forwarded *fwd, bool link)
{
    memset(info, 0, sizeof *info);
    info->context = b->loop->lws;
    info->vhost = b->loop->vhost;
    info->address = route->backend_host;
    info->port = route->backend_port;
    info->ssl_connection = route->backend_tls ? LCCSCF_USE_SSL : 0;
    info->path = path;
    snprintf(host_header, host_len, "%s:%d", route->backend_host, route->backend_port);
    info->host = host_header;
    const char *origin = header_list_get(&fwd->headers, "origin:");
    info->origin = origin ? origin : host_header;
    info->iface = next_source(b, link);
    info->retry_and_idle_policy = &loop_lws_retry_policy;
    info->ietf_version_or_minus_one = -1;
}

bool backend_query_fits(const struct hub_route *route, size_t query_len, size_t id_len)
{
    /* "DELETE " + path + "/negotiate?negotiateVersion=1&" or "?id=<token>&" + query + " HTTP/1.1\r\n" */
    size_t fixed = sizeof "DELETE " + strlen(route->backend_path) + sizeof "/negotiate?negotiateVersion=1&" +
                   sizeof "?id=&" + sizeof " HTTP/1.1\r\n";
    return fixed + 3 * id_len + query_len <= BACKEND_MAX_REQUEST_LINE;
}

/* False when out of memory, or when the path is too long for lws to send whole. */
static bool build_path(struct buf *path, const struct hub_route *route, const char *suffix,
                       const char *first_arg, const char *query)
{
    bool more = query && *query;
    return buf_append_cstr(path, route->backend_path) && buf_append_cstr(path, suffix) &&
           buf_append_byte(path, '?') && buf_append_cstr(path, first_arg) &&
           (!more || (buf_append_byte(path, '&') && buf_append_cstr(path, query))) && buf_append_byte(path, '\0') &&
           path->len + sizeof "DELETE  HTTP/1.1\r\n" <= BACKEND_MAX_REQUEST_LINE;
}

/* The head of both kinds of backend connection: the tag lws' opaque user
 * data is recognised by, the wsi, the headers to send, and what happened
 * inside lws_client_connect_via_info. */
struct backend_conn {
    enum wsi_role role;               /* WSI_ROLE_BACKEND_NEGOTIATE or WSI_ROLE_BACKEND_LINK */
    struct loop *loop;
    struct lws *wsi;
    struct forwarded fwd;
    bool connecting;                  /* inside lws_client_connect_via_info */
    bool failed_while_connecting;     /* lws reported a connection error meanwhile */
    bool destroyed_while_connecting;  /* ... and destroyed the wsi too (e.g. at the descriptor limit) */
};

enum conn_start {
    CONN_STARTED,
    CONN_FAILED_FREE_NOW,  /* no wsi is left: the caller frees its object */
    CONN_FAILED_LWS_FREES, /* lws still holds the wsi: its WSI_DESTROY frees the object */
};

/* Starts the lws client connection for c. lws may fail inside the call and
 * even destroy the new wsi there (at the descriptor limit it does): the
 * callbacks it runs meanwhile only take note (connecting is set), so the
 * object stays the caller's until this returns. */
static enum conn_start conn_start(struct backend_conn *c, struct backends *b, const struct backend_params *params,
                                  const char *suffix, const char *first_arg, const char *method,
                                  const char *protocol_name)
{
    c->loop = b->loop;
    struct buf path;
    buf_init(&path);
    if (!forwarded_copy(&c->fwd, params) || !build_path(&path, params->route, suffix, first_arg, params->query)) {
        buf_free(&path);
        return CONN_FAILED_FREE_NOW;
    }
    struct lws_client_connect_info info;
    char host[300];
    connect_info_init(&info, b, params->route, path.data, host, sizeof host, &c->fwd, method == NULL);
    info.method = method;
    info.local_protocol_name = protocol_name;
    info.opaque_user_data = c;
    info.pwsi = &c->wsi;
    c->connecting = true;
    struct lws *wsi = lws_client_connect_via_info(&info);
    c->connecting = false;
    buf_free(&path);
    if (wsi && !c->failed_while_connecting && !c->destroyed_while_connecting)
        return CONN_STARTED;
    log_warn("backend: cannot start %s to %s", method ? "negotiate" : "WebSocket", params->route->backend_url);
    if (!wsi || c->destroyed_while_connecting) {
        c->wsi = NULL;
        return CONN_FAILED_FREE_NOW;
    }
    return CONN_FAILED_LWS_FREES;
}

/* lws reports the connection over (error or close). Inside conn_start it is
 * only noted (the object stays the caller's); otherwise the wsi is detached
 * and the caller reports and frees: true. */
static bool conn_ended(struct backend_conn *c, struct lws *wsi)
{
    c->wsi = NULL;
    if (c->connecting) {
        c->failed_while_connecting = true;
        return false;
    }
    lws_set_opaque_user_data(wsi, NULL);
    return true;
}

/* lws destroys the wsi: inside conn_start the object is the caller's. */
static bool conn_destroyed(struct backend_conn *c)
{
    c->wsi = NULL;
    if (!c->connecting)
        return true;
    c->destroyed_while_connecting = true;
    return false;
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
    backend_negotiate_cb cb = r->cb;
    r->cb = NULL;
    if (cb)
        cb(r->owner, error ? 0 : r->status, r->body.data ? r->body.data : "", r->body.len, error);
}

static void negotiate_free(struct backend_negotiate *r)
{
    forwarded_free(&r->conn.fwd);
    buf_free(&r->body);
    free(r);
}

struct backend_negotiate *backend_negotiate_start(struct backends *b, const struct backend_params *params,
                                                  backend_negotiate_cb cb, void *owner)
{
    struct backend_negotiate *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->conn.role = WSI_ROLE_BACKEND_NEGOTIATE;
    buf_init(&r->body);
    enum conn_start st = conn_start(&r->conn, b, params, "/negotiate", "negotiateVersion=1", "POST",
                                    backend_negotiate_protocol.name);
    if (st == CONN_FAILED_FREE_NOW)
        negotiate_free(r);
    if (st != CONN_STARTED)
        return NULL;
    r->cb = cb;
    r->owner = owner;
    return r;
}

void backend_negotiate_cancel(struct backend_negotiate *r)
{
    r->cb = NULL;
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
        return append_forwarded_headers(wsi, &r->conn.fwd, in, len);
    }
    case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
        if (r)
            r->status = (unsigned)lws_http_client_http_response(wsi);
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
        if (r && conn_ended(&r->conn, wsi)) {
            negotiate_deliver(r, why);
            negotiate_free(r);
        }
        return 0;
    }
    case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
        if (r && conn_ended(&r->conn, wsi)) {
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
};

static void backend_link_free(struct backend_link *link)
{
    msg_queue_clear(&link->out);
    wsmsg_free(link->rx_partial);
    forwarded_free(&link->conn.fwd);
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
    link->conn.loop = b->loop;
    msg_queue_init(&link->out);
    b->loop->stats.backend_links_active++;
    enum conn_start st = conn_start(&link->conn, b, params, "", id_arg.data, NULL, backend_link_protocol.name);
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
}

/* Whole messages from the backend go to the owner. */
static int link_receive(struct backend_link *link, struct lws *wsi, const void *in, size_t len)
{
    enum wsmsg_fault fault;
    struct wsmsg *whole = wsmsg_receive(&link->rx_partial, wsi, in, len, link->conn.loop, "backend link", &fault);
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
        return append_forwarded_headers(wsi, &link->conn.fwd, in, len);
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        /* The headers were for the upgrade request only: an open link holds none of them. */
        forwarded_free(&link->conn.fwd);
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
        if (conn_ended(&link->conn, wsi)) {
            log_info("backend: WebSocket connection failed: %s", why ? why : "unknown error");
            link_report_closed(link, why ? why : "the backend refused the WebSocket connection");
            backend_link_free(link);
        }
        return 0;
    }
    case LWS_CALLBACK_CLIENT_CLOSED:
        if (conn_ended(&link->conn, wsi)) {
            link_report_closed(link, NULL);
            backend_link_free(link);
        }
        return 0;
    case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
        /* A link closed while its upgrade request was in flight (e.g.
         * backend_link_close because the client's handshake was refused
         * meanwhile) ends as an HTTP client: lws sends neither CLIENT_CLOSED
         * nor CONNECTION_ERROR, and without this the link leaked. */
        if (conn_ended(&link->conn, wsi)) {
            link_report_closed(link, "the backend connection closed before the WebSocket was open");
            backend_link_free(link);
        }
        return 0;
    default:
        return 0;
    }
}

void backend_wsi_destroyed(void *handle)
{
    struct backend_conn *c = handle;
    if (!conn_destroyed(c))
        return; /* inside conn_start: the caller frees it */
    if (c->role == WSI_ROLE_BACKEND_LINK) {
        struct backend_link *link = handle;
        link_report_closed(link, "the relay is shutting down");
        backend_link_free(link);
    } else if (c->role == WSI_ROLE_BACKEND_NEGOTIATE) {
        struct backend_negotiate *r = handle;
        negotiate_deliver(r, "the relay is shutting down");
        negotiate_free(r);
    }
}

const struct lws_protocols backend_link_protocol = {
    "sr-backend-link", link_callback, 0, 512, 0, NULL, 0 /* sizes set per relay: relay_start */
};
