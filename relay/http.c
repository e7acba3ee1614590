/* http.c - request reading and short responses on the relay's HTTP side (see http.h). */
#include "relay/http.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol/urlencoded.h"
#include "relay/capture.h"
#include "relay/config.h"
#include "relay/loop.h"

/* A literal header value and its length, counted by the compiler. */
#define HEADER_VALUE(text) (const unsigned char *)(text), (int)(sizeof(text) - 1)

static const struct {
    enum lws_token_indexes token;
    enum http_method method;
} method_tokens[] = {
    { WSI_TOKEN_GET_URI, HTTP_GET },
    { WSI_TOKEN_POST_URI, HTTP_POST },
    { WSI_TOKEN_OPTIONS_URI, HTTP_OPTIONS },
    { WSI_TOKEN_DELETE_URI, HTTP_DELETE },
    { WSI_TOKEN_PUT_URI, HTTP_PUT },
    { WSI_TOKEN_PATCH_URI, HTTP_PATCH },
    { WSI_TOKEN_HEAD_URI, HTTP_HEAD },
};

enum http_method http_request_method(struct lws *wsi)
{
    for (size_t i = 0; i < sizeof method_tokens / sizeof method_tokens[0]; i++)
        if (lws_hdr_total_length(wsi, method_tokens[i].token) > 0)
            return method_tokens[i].method;
    return HTTP_OTHER;
}

bool http_request_path(struct lws *wsi, char *out, size_t len)
{
    for (size_t i = 0; i < sizeof method_tokens / sizeof method_tokens[0]; i++) {
        int n = lws_hdr_total_length(wsi, method_tokens[i].token);
        if (n <= 0)
            continue;
        if ((size_t)n >= len)
            return false;
        return lws_hdr_copy(wsi, out, (int)len, method_tokens[i].token) >= 0;
    }
    return false;
}

int http_header(struct lws *wsi, enum lws_token_indexes token, char *out, size_t len)
{
    int n = lws_hdr_total_length(wsi, token);
    if (n <= 0 || (size_t)n >= len)
        return -1;
    return lws_hdr_copy(wsi, out, (int)len, token);
}

/* lws has already split the query at '&' (and ';') and percent-decoded each
 * "name=value" fragment; the raw query is not kept, so protocol/urlencoded.c's
 * parser cannot run on it (decoding again would turn "%2541" into "A"). Each
 * fragment is read whole, at its own length: nothing is cut to a buffer size.
 * Visits each fragment; stops early when visit returns false. False when out
 * of memory. */
static bool for_each_query_arg(struct lws *wsi, bool (*visit)(void *ctx, const char *name, size_t name_len,
                                                             const char *value, size_t value_len), void *ctx)
{
    struct buf frag;
    buf_init(&frag);
    bool ok = true;
    for (int i = 0;; i++) {
        int n = lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (n <= 0 && lws_hdr_copy_fragment(wsi, (char[1]){ 0 }, 1, WSI_TOKEN_HTTP_URI_ARGS, i) < 0)
            break; /* no fragment i (an empty one copies fine into one byte) */
        buf_reset(&frag);
        if (!buf_reserve(&frag, (size_t)n + 1)) {
            ok = false;
            break;
        }
        n = lws_hdr_copy_fragment(wsi, frag.data, n + 1, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (n < 0)
            break;
        const char *eq = memchr(frag.data, '=', (size_t)n);
        size_t name_len = eq ? (size_t)(eq - frag.data) : (size_t)n;
        const char *value = eq ? eq + 1 : frag.data + n;
        if (!visit(ctx, frag.data, name_len, value, (size_t)n - (size_t)(value - frag.data)))
            break;
    }
    buf_free(&frag);
    return ok;
}

struct arg_lookup {
    const char *name;
    struct buf *value;
    enum http_arg status;
};

/* A name given more than once has its values joined with ',', as ASP.NET
 * Core's StringValues reads them ("id=a&id=b" is the id "a,b", which no
 * negotiate gave out): never only the first or the last, which a proxy in
 * front could have read the other way. */
static bool match_arg(void *ctx, const char *name, size_t name_len, const char *value, size_t value_len)
{
    struct arg_lookup *l = ctx;
    if (strlen(l->name) != name_len || strncasecmp(l->name, name, name_len) != 0)
        return true;
    bool again = l->status == HTTP_ARG_FOUND;
    if (!buf_reserve(l->value, value_len + 2) || (again && !buf_append_byte(l->value, ','))) {
        l->status = HTTP_ARG_NOMEM;
        return false;
    }
    memcpy(l->value->data + l->value->len, value, value_len);
    l->value->len += value_len;
    l->value->data[l->value->len] = '\0';
    l->status = HTTP_ARG_FOUND;
    return true;
}

enum http_arg http_query_value(struct lws *wsi, const char *name, struct buf *value)
{
    struct arg_lookup l = { name, value, HTTP_ARG_ABSENT };
    buf_reset(value);
    if (!for_each_query_arg(wsi, match_arg, &l))
        return HTTP_ARG_NOMEM;
    return l.status;
}

int http_query_arg(struct lws *wsi, const char *name, char *out, size_t len)
{
    struct buf value;
    buf_init(&value);
    enum http_arg st = http_query_value(wsi, name, &value);
    int n = HTTP_ARG_ABSENT_LEN;
    if (st == HTTP_ARG_FOUND && value.len < len && value.len <= (size_t)INT_MAX) {
        memcpy(out, value.data, value.len + 1);
        n = (int)value.len;
    } else if (st != HTTP_ARG_ABSENT) {
        n = HTTP_ARG_UNUSABLE_LEN;
    }
    buf_free(&value);
    return n;
}

struct arg_forward {
    struct buf *out;
    const char *const *skip;
    size_t skip_count;
    size_t start; /* out->len before the first argument */
    bool ok;
};

static bool forward_arg(void *ctx, const char *name, size_t name_len, const char *value, size_t value_len)
{
    struct arg_forward *f = ctx;
    for (size_t i = 0; i < f->skip_count; i++)
        if (strlen(f->skip[i]) == name_len && strncasecmp(f->skip[i], name, name_len) == 0)
            return true;
    f->ok = (f->out->len == f->start || buf_append_byte(f->out, '&')) &&
            urlencoded_append(f->out, span_make(name, name_len), 0) && buf_append_byte(f->out, '=') &&
            urlencoded_append(f->out, span_make(value, value_len), 0);
    return f->ok;
}

bool http_query_forward(struct lws *wsi, struct buf *out, const char *const *skip, size_t skip_count)
{
    struct arg_forward f = { out, skip, skip_count, out->len, true };
    return for_each_query_arg(wsi, forward_arg, &f) && f.ok;
}

static const struct {
    const char *name;              /* as lws wants it for writing, with the colon */
    enum lws_token_indexes token;  /* or WSI_TOKEN_COUNT for a custom header */
} forwarded_headers[] = {
    { "authorization:", WSI_TOKEN_HTTP_AUTHORIZATION },
    { "cookie:", WSI_TOKEN_HTTP_COOKIE },
    { "user-agent:", WSI_TOKEN_HTTP_USER_AGENT },
    { "accept-language:", WSI_TOKEN_HTTP_ACCEPT_LANGUAGE },
    { "origin:", WSI_TOKEN_ORIGIN },
    { "x-signalr-user-agent:", WSI_TOKEN_COUNT },
    { "x-requested-with:", WSI_TOKEN_COUNT },
};

static int copy_custom_header(struct lws *wsi, const char *name, char *out, size_t len)
{
    int nlen = (int)strlen(name);
    int n = lws_hdr_custom_length(wsi, name, nlen);
    if (n <= 0 || (size_t)n >= len)
        return -1;
    return lws_hdr_custom_copy(wsi, out, (int)len, name, nlen);
}

static int forwarded_header_length(struct lws *wsi, size_t i)
{
    const char *name = forwarded_headers[i].name;
    return forwarded_headers[i].token == WSI_TOKEN_COUNT ? lws_hdr_custom_length(wsi, name, (int)strlen(name))
                                                         : lws_hdr_total_length(wsi, forwarded_headers[i].token);
}

const char *http_forwarded_header_too_long(struct lws *wsi)
{
    for (size_t i = 0; i < sizeof forwarded_headers / sizeof forwarded_headers[0]; i++)
        if (forwarded_header_length(wsi, i) >= HTTP_FORWARDED_HEADER_MAX)
            return forwarded_headers[i].name;
    return NULL;
}

void header_list_capture(struct header_list *list, struct lws *wsi)
{
    buf_init(&list->pairs);
    char value[HTTP_FORWARDED_HEADER_MAX];
    for (size_t i = 0; i < sizeof forwarded_headers / sizeof forwarded_headers[0]; i++) {
        const char *name = forwarded_headers[i].name;
        int n = forwarded_headers[i].token == WSI_TOKEN_COUNT
                    ? copy_custom_header(wsi, name, value, sizeof value)
                    : http_header(wsi, forwarded_headers[i].token, value, sizeof value);
        if (n <= 0)
            continue;
        if (!buf_append(&list->pairs, name, strlen(name) + 1) || !buf_append(&list->pairs, value, (size_t)n + 1))
            return; /* out of memory: forward what fitted */
    }
}

bool header_list_copy(struct header_list *dst, const struct header_list *src)
{
    buf_init(&dst->pairs);
    return buf_append(&dst->pairs, src->pairs.data, src->pairs.len);
}

void header_list_free(struct header_list *list)
{
    buf_free(&list->pairs);
}

const char *header_list_get(const struct header_list *list, const char *name)
{
    const char *p = list->pairs.data, *end = p + list->pairs.len;
    while (p && p < end) {
        const char *value = p + strlen(p) + 1;
        if (strcmp(p, name) == 0)
            return value;
        p = value + strlen(value) + 1;
    }
    return NULL;
}

void http_forwarded_for(struct lws *wsi, char *out, size_t len)
{
    char peer[64] = "";
    lws_get_peer_simple(wsi, peer, sizeof peer);
    char earlier[256];
    /* The chain only when it fits whole: a cut one would end in a wrong address. */
    int n = http_header(wsi, WSI_TOKEN_X_FORWARDED_FOR, earlier, sizeof earlier);
    if (n > 0 && (size_t)n + sizeof ", " + strlen(peer) <= len)
        snprintf(out, len, "%s, %s", earlier, peer);
    else
        snprintf(out, len, "%s", peer);
}

static bool http_allowed_origin(const struct relay_config *cfg, struct lws *wsi, char *out, size_t len)
{
    if (cfg->cors_origin_count == 0 || http_header(wsi, WSI_TOKEN_ORIGIN, out, len) <= 0)
        return false;
    for (size_t i = 0; i < cfg->cors_origin_count; i++)
        if (strcmp(cfg->cors_origins[i], out) == 0)
            return true;
    return false;
}

static bool add_cors_origin(struct lws *wsi, const char *origin, unsigned char **p, unsigned char *end)
{
    return !lws_add_http_header_by_name(wsi, (const unsigned char *)"access-control-allow-origin:",
                                        (const unsigned char *)origin, (int)strlen(origin), p, end) &&
           !lws_add_http_header_by_name(wsi, (const unsigned char *)"access-control-allow-credentials:",
                                        HEADER_VALUE("true"), p, end) &&
           !lws_add_http_header_by_name(wsi, (const unsigned char *)"vary:",
                                        HEADER_VALUE("Origin"), p, end);
}

static bool http_add_cors_headers(const struct relay_config *cfg, struct lws *wsi, unsigned char **p, unsigned char *end)
{
    char origin[256];
    if (!http_allowed_origin(cfg, wsi, origin, sizeof origin))
        return true;
    return add_cors_origin(wsi, origin, p, end);
}

void http_answer_later(struct lws *wsi)
{
    lws_rx_flow_control(wsi, 0);
    /* lws gives a request timeout_secs (20 s) to be answered and then drops it without an
     * answer; the relay's own deadline (--backend-timeout, ...) decides instead. */
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
}

void http_answer_ready(struct lws *wsi)
{
    lws_rx_flow_control(wsi, 1);
    lws_callback_on_writable(wsi);
}


/* Whether the connection closes once this response is written: the client
 * asked for it (Connection: close), or lws cannot find where the request's
 * body ends. lws 4.1.6 takes a POST, PUT or PATCH with neither
 * Content-Length nor Transfer-Encoding to have a body of unknown length
 * (where HTTP/1.1 says it has none, and Kestrel reads it so), and it cannot
 * read a chunked request body at all: it would wait for the rest of such a
 * "body" until the client gave up. The relay reads no request bodies, so it
 * answers such a request and then closes the connection. The response must
 * say so, as Kestrel's do, or a keep-alive client sends its next request
 * into a socket that is closing ("socket hang up" every other time). */
static bool response_closes_connection(struct lws *wsi)
{
    char connection[64] = "";
    if (lws_hdr_copy(wsi, connection, sizeof connection, WSI_TOKEN_CONNECTION) > 0 && strcasestr(connection, "close"))
        return true;
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0)
        return true;
    enum http_method method = http_request_method(wsi);
    return (method == HTTP_POST || method == HTTP_PUT || method == HTTP_PATCH) &&
           lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) == 0;
}

static bool add_connection_close_if_closing(struct lws *wsi, bool closing, unsigned char **p, unsigned char *end)
{
    return !closing ||
           !lws_add_http_header_by_name(wsi, (const unsigned char *)"connection:", HEADER_VALUE("close"), p, end);
}

/* The response is whole: -1 when lws closes the connection, else 0, and the relay reads the
 * next request's head before lws does (loop.h, next_request). */
static int transaction_completed(struct lws *wsi)
{
    struct loop *loop = loop_of_wsi(wsi);
    if (loop->drain_body && loop->drain_body(loop->drain_body_ctx, wsi))
        return 0; /* completed once the body is whole (relay/request_body.h) */
    if (lws_http_transaction_completed(wsi))
        return -1;
    if (loop->next_request)
        loop->next_request(loop->next_request_ctx, wsi);
    return 0;
}

/* After a whole response: -1 (close, once the response is out) when the
 * connection cannot carry another request, else whatever lws says. */
static int finish_transaction(struct lws *wsi)
{
    if (!response_closes_connection(wsi))
        return transaction_completed(wsi);
    /* A body of known length still arriving is read first: closing with unread input would
     * reset the connection, and the client could lose the answer (lws closes once it is whole). */
    struct loop *loop = loop_of_wsi(wsi);
    return loop->drain_body && loop->drain_body(loop->drain_body_ctx, wsi) ? 0 : -1;
}

/* The body of a response whose headers are out, as its last write (none when empty). */
static int write_final_body(struct lws *wsi, const char *body, size_t body_len)
{
    if (body_len == 0)
        return 0;
    /* lws_write needs LWS_PRE bytes of headroom before the payload. */
    struct buf copy;
    buf_init(&copy);
    if (!buf_reserve(&copy, LWS_PRE + body_len)) {
        buf_free(&copy);
        return -1;
    }
    memcpy(copy.data + LWS_PRE, body, body_len);
    int written = lws_write(wsi, (unsigned char *)copy.data + LWS_PRE, body_len, LWS_WRITE_HTTP_FINAL);
    buf_free(&copy);
    return written < (int)body_len ? -1 : 0;
}

static int http_write_response(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *content_type,
                               const char *body, size_t body_len, bool closing)
{
    capture_http_response(wsi, status, content_type, body, body_len);
    unsigned char headers[LWS_PRE + 2048];
    unsigned char *start = headers + LWS_PRE, *p = start, *end = headers + sizeof headers - 1;
    if (lws_add_http_common_headers(wsi, status, content_type, (lws_filepos_t)body_len, &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:",
                                    HEADER_VALUE("no-cache"), &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"x-content-type-options:",
                                    HEADER_VALUE("nosniff"), &p, end) ||
        !http_add_cors_headers(cfg, wsi, &p, end) || !add_connection_close_if_closing(wsi, closing, &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    return write_final_body(wsi, body, body_len);
}

int http_respond(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *content_type,
                 const char *body, size_t body_len)
{
    if (http_write_response(cfg, wsi, status, content_type, body, body_len, response_closes_connection(wsi)) != 0)
        return -1;
    return finish_transaction(wsi);
}

int http_respond_text(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *text)
{
    return http_respond(cfg, wsi, status, "text/plain", text, strlen(text));
}

int http_refuse_upgrade(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *text)
{
    return http_write_response(cfg, wsi, status, "text/plain", text, strlen(text), response_closes_connection(wsi))
               ? -1 : 1;
}

int http_respond_and_close(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *text)
{
    http_write_response(cfg, wsi, status, "text/plain", text, strlen(text), true);
    return -1;
}

bool http_begin_stream(const struct relay_config *cfg, struct lws *wsi, unsigned status, const char *content_type)
{
    capture_http_stream(wsi, status, content_type);
    unsigned char headers[LWS_PRE + 2048];
    unsigned char *start = headers + LWS_PRE, *p = start, *end = headers + sizeof headers - 1;
    return !lws_add_http_common_headers(wsi, status, content_type, LWS_ILLEGAL_HTTP_CONTENT_LEN, &p, end) &&
           !lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:", HEADER_VALUE("no-cache"), &p,
                                        end) &&
           !lws_add_http_header_by_name(wsi, (const unsigned char *)"x-accel-buffering:", HEADER_VALUE("no"), &p,
                                        end) &&
           !lws_add_http_header_by_name(wsi, (const unsigned char *)"x-content-type-options:",
                                        HEADER_VALUE("nosniff"), &p, end) &&
           http_add_cors_headers(cfg, wsi, &p, end) && !lws_finalize_write_http_header(wsi, start, &p, end);
}

int http_respond_preflight(const struct relay_config *cfg, struct lws *wsi)
{
    char origin[256];
    if (!http_allowed_origin(cfg, wsi, origin, sizeof origin))
        return http_respond_text(cfg, wsi, 403, "Origin not allowed");
    capture_http_response(wsi, 204, "text/plain", "", 0);
    char requested[512] = "";
    http_header(wsi, WSI_TOKEN_HTTP_AC_REQUEST_HEADERS, requested, sizeof requested);
    unsigned char headers[LWS_PRE + 2048];
    unsigned char *start = headers + LWS_PRE, *p = start, *end = headers + sizeof headers - 1;
    if (lws_add_http_common_headers(wsi, 204, "text/plain", 0, &p, end) ||
        !http_add_cors_headers(cfg, wsi, &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"access-control-allow-methods:",
                                    HEADER_VALUE("GET, POST, DELETE, OPTIONS"), &p, end) ||
        (requested[0] && lws_add_http_header_by_name(wsi, (const unsigned char *)"access-control-allow-headers:",
                                                     (const unsigned char *)requested, (int)strlen(requested), &p, end)) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"access-control-max-age:",
                                    HEADER_VALUE("600"), &p, end) ||
        !add_connection_close_if_closing(wsi, response_closes_connection(wsi), &p, end) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    return finish_transaction(wsi);
}

int http_respond_stream_headers(const struct relay_config *cfg, struct lws *wsi, const char *content_type)
{
    capture_http_stream(wsi, 200, content_type);
    unsigned char headers[LWS_PRE + 2048];
    unsigned char *start = headers + LWS_PRE, *p = start, *end = headers + sizeof headers - 1;
    if (lws_add_http_common_headers(wsi, 200, content_type, LWS_ILLEGAL_HTTP_CONTENT_LEN, &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:",
                                    HEADER_VALUE("no-cache,no-store"), &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"pragma:", HEADER_VALUE("no-cache"), &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"content-encoding:", HEADER_VALUE("identity"), &p,
                                    end) ||
        !http_add_cors_headers(cfg, wsi, &p, end) || lws_finalize_write_http_header(wsi, start, &p, end))
        return -1;
    return 0;
}

void http_answer_capture(const struct relay_config *cfg, struct lws *wsi, struct http_answer_ctx *ctx)
{
    char origin[256];
    ctx->origin = NULL;
    if (http_allowed_origin(cfg, wsi, origin, sizeof origin))
        for (size_t i = 0; i < cfg->cors_origin_count && !ctx->origin; i++)
            if (strcmp(cfg->cors_origins[i], origin) == 0)
                ctx->origin = cfg->cors_origins[i];
    ctx->closes = response_closes_connection(wsi);
}

/* The headers of an answer to a captured request; length LWS_ILLEGAL_HTTP_CONTENT_LEN: none, the
 * body ends with the connection (lws then says Connection: close itself). */
static bool write_captured_headers(const struct http_answer_ctx *ctx, struct lws *wsi, unsigned status,
                                   const char *content_type, lws_filepos_t length)
{
    unsigned char headers[LWS_PRE + 2048];
    unsigned char *start = headers + LWS_PRE, *p = start, *end = headers + sizeof headers - 1;
    bool closes = ctx->closes && length != LWS_ILLEGAL_HTTP_CONTENT_LEN;
    if (lws_add_http_common_headers(wsi, status, content_type, length, &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:",
                                    HEADER_VALUE("no-cache"), &p, end) ||
        lws_add_http_header_by_name(wsi, (const unsigned char *)"x-content-type-options:",
                                    HEADER_VALUE("nosniff"), &p, end) ||
        (ctx->origin &&
         (lws_add_http_header_by_name(wsi, (const unsigned char *)"access-control-allow-origin:",
                                      (const unsigned char *)ctx->origin, (int)strlen(ctx->origin), &p, end) ||
          lws_add_http_header_by_name(wsi, (const unsigned char *)"access-control-allow-credentials:",
                                      HEADER_VALUE("true"), &p, end) ||
          lws_add_http_header_by_name(wsi, (const unsigned char *)"vary:", HEADER_VALUE("Origin"), &p, end))) ||
        (closes &&
         lws_add_http_header_by_name(wsi, (const unsigned char *)"connection:", HEADER_VALUE("close"), &p, end)) ||
        lws_finalize_write_http_header(wsi, start, &p, end))
        return false;
    return true;
}

int http_respond_captured(const struct http_answer_ctx *ctx, struct lws *wsi, unsigned status,
                          const char *content_type, const char *body, size_t body_len)
{
    capture_http_response(wsi, status, content_type, body, body_len);
    if (!write_captured_headers(ctx, wsi, status, content_type, (lws_filepos_t)body_len))
        return -1;
    if (write_final_body(wsi, body, body_len) != 0)
        return -1;
    return finish_transaction(wsi);
}

bool http_begin_captured_stream(const struct http_answer_ctx *ctx, struct lws *wsi, unsigned status,
                                const char *content_type)
{
    capture_http_stream(wsi, status, content_type);
    return write_captured_headers(ctx, wsi, status, content_type, LWS_ILLEGAL_HTTP_CONTENT_LEN);
}

int http_end_stream(struct lws *wsi, const char *body, size_t body_len)
{
    static const char nothing[1] = { 0 };
    capture_http_chunk(wsi, body, body_len);
    capture_http_stream_end(wsi);
    /* The last write says FINAL even when empty, so that lws ends the transaction. */
    struct buf copy;
    buf_init(&copy);
    if (!buf_reserve(&copy, LWS_PRE + body_len + 1)) {
        buf_free(&copy);
        return -1;
    }
    memcpy(copy.data + LWS_PRE, body_len ? body : nothing, body_len);
    int written = lws_write(wsi, (unsigned char *)copy.data + LWS_PRE, body_len, LWS_WRITE_HTTP_FINAL);
    buf_free(&copy);
    if (written < (int)body_len)
        return -1;
    return transaction_completed(wsi);
}
