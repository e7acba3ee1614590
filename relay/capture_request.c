/* capture_request.c - a client's request as a capture file describes it (see capture_request.h). */
#include "relay/capture_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol/urlencoded.h"

static const struct {
    enum lws_token_indexes token;
    const char *name;
} method_tokens[] = {
    { WSI_TOKEN_GET_URI, "GET" }, { WSI_TOKEN_POST_URI, "POST" }, { WSI_TOKEN_OPTIONS_URI, "OPTIONS" },
    { WSI_TOKEN_DELETE_URI, "DELETE" }, { WSI_TOKEN_PUT_URI, "PUT" }, { WSI_TOKEN_PATCH_URI, "PATCH" },
    { WSI_TOKEN_HEAD_URI, "HEAD" },
};

/* The method and path of the request (path empty when absent or too long). */
const char *capture_request_line(struct lws *wsi, char *path, size_t len)
{
    path[0] = '\0';
    for (size_t i = 0; i < sizeof method_tokens / sizeof method_tokens[0]; i++) {
        int n = lws_hdr_total_length(wsi, method_tokens[i].token);
        if (n <= 0)
            continue;
        if ((size_t)n < len && lws_hdr_copy(wsi, path, (int)len, method_tokens[i].token) < 0)
            path[0] = '\0';
        return method_tokens[i].name;
    }
    return "";
}

/* Calls visit for each decoded query argument (lws split and decoded them), in the client's order. */
static void each_query_arg(struct lws *wsi, void (*visit)(void *ctx, const char *name, size_t name_len,
                                                         const char *value, size_t value_len), void *ctx)
{
    struct buf frag;
    buf_init(&frag);
    for (int i = 0;; i++) {
        int n = lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i);
        if (n <= 0 && lws_hdr_copy_fragment(wsi, (char[1]){ 0 }, 1, WSI_TOKEN_HTTP_URI_ARGS, i) < 0)
            break;
        buf_reset(&frag);
        if (!buf_reserve(&frag, (size_t)n + 1) ||
            (n = lws_hdr_copy_fragment(wsi, frag.data, n + 1, WSI_TOKEN_HTTP_URI_ARGS, i)) < 0)
            break;
        const char *eq = memchr(frag.data, '=', (size_t)n);
        size_t name_len = eq ? (size_t)(eq - frag.data) : (size_t)n;
        const char *value = eq ? eq + 1 : frag.data + n;
        visit(ctx, frag.data, name_len, value, (size_t)n - (size_t)(value - frag.data));
    }
    buf_free(&frag);
}

struct token_find {
    const char *name;
    struct buf *value;
};

static void find_arg(void *ctx, const char *name, size_t name_len, const char *value, size_t value_len)
{
    struct token_find *t = ctx;
    if (!t->value->len && strlen(t->name) == name_len && strncasecmp(t->name, name, name_len) == 0)
        buf_append(t->value, value, value_len);
}

/* The placeholder a parameter's value is written as (NULL: its masked text). */
static const char *masked_param(struct mask_table *names, const char *name, size_t name_len, const char *value,
                                size_t value_len)
{
    static const struct {
        const char *name;
        int family;       /* enum mask_family, or -1 for a fixed placeholder */
        enum mask_fixed fixed;
    } params[] = {
        { "id", MASK_CONNECTION_TOKEN, 0 }, { "connectionToken", MASK_CONNECTION_TOKEN, 0 },
        { "access_token", MASK_ACCESS_TOKEN, 0 }, { "messageId", MASK_CURSOR, 0 },
        { "groupsToken", MASK_GROUPS_TOKEN, 0 }, { "_", -1, MASK_TIMESTAMP }, { "tid", -1, MASK_TID },
        { "noCache", -1, MASK_NO_CACHE },
    };
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        if (strlen(params[i].name) != name_len || strncasecmp(params[i].name, name, name_len) != 0 || !value_len)
            continue;
        if (params[i].family < 0)
            return mask_fixed(names, params[i].fixed);
        bool secret = params[i].family != MASK_CURSOR && params[i].family != MASK_GROUPS_TOKEN;
        return mask_name_for(names, (enum mask_family)params[i].family, value, value_len, secret);
    }
    return NULL;
}

struct query_out {
    struct mask_table *names;
    struct buf raw;
    cJSON *pairs;
};

static void add_masked_arg(void *ctx, const char *name, size_t name_len, const char *value, size_t value_len)
{
    struct query_out *q = ctx;
    struct buf masked;
    buf_init(&masked);
    const char *placeholder = masked_param(q->names, name, name_len, value, value_len);
    bool ok = placeholder ? buf_append_cstr(&masked, placeholder) : mask_text(q->names, &masked, value, value_len);
    if (q->raw.len)
        ok = ok && buf_append_byte(&q->raw, '&');
    ok = ok && urlencoded_append(&q->raw, span_make(name, name_len), 0) && buf_append_byte(&q->raw, '=');
    /* A placeholder stands as it is (replay puts the encoded value in its place). */
    ok = ok && (placeholder ? buf_append_cstr(&q->raw, placeholder)
                            : urlencoded_append(&q->raw, span_make(masked.data, masked.len), 0));
    cJSON *pair = cJSON_CreateArray();
    char *n = strndup(name, name_len);
    if (ok && buf_append_byte(&masked, '\0') && n) {
        cJSON_AddItemToArray(pair, cJSON_CreateString(n));
        cJSON_AddItemToArray(pair, cJSON_CreateString(masked.data));
    }
    free(n);
    cJSON_AddItemToArray(q->pairs, pair);
    buf_free(&masked);
}

static const struct {
    const char *name;             /* as written, lower case */
    enum lws_token_indexes token; /* WSI_TOKEN_COUNT: a custom header, looked up by "name:" */
    int fixed;                    /* enum mask_fixed: always written as its placeholder */
} request_headers[] = {
    { "content-type", WSI_TOKEN_HTTP_CONTENT_TYPE, 0 }, { "accept", WSI_TOKEN_HTTP_ACCEPT, 0 },
    { "user-agent", WSI_TOKEN_HTTP_USER_AGENT, 0 }, { "x-requested-with", WSI_TOKEN_COUNT, 0 },
    { "x-signalr-user-agent", WSI_TOKEN_COUNT, 0 }, { "origin", WSI_TOKEN_ORIGIN, MASK_ORIGIN },
    { "authorization", WSI_TOKEN_HTTP_AUTHORIZATION, MASK_AUTHORIZATION },
    { "cookie", WSI_TOKEN_HTTP_COOKIE, MASK_COOKIE }, { "upgrade", WSI_TOKEN_UPGRADE, 0 },
    { "sec-websocket-protocol", WSI_TOKEN_PROTOCOL, 0 }, { "sec-websocket-version", WSI_TOKEN_VERSION, 0 },
    { "transfer-encoding", WSI_TOKEN_HTTP_TRANSFER_ENCODING, 0 },
};

static void add_headers(cJSON *o, struct lws *wsi, struct mask_table *names)
{
    cJSON *h = cJSON_AddObjectToObject(o, "headers");
    char value[8192]; /* the longest header the relay passes on (HTTP_FORWARDED_HEADER_MAX) */
    for (size_t i = 0; i < sizeof request_headers / sizeof request_headers[0]; i++) {
        char custom[64];
        int n;
        if (request_headers[i].token == WSI_TOKEN_COUNT) {
            snprintf(custom, sizeof custom, "%s:", request_headers[i].name);
            n = lws_hdr_custom_length(wsi, custom, (int)strlen(custom));
            if (n <= 0)
                continue;
            n = (size_t)n < sizeof value ? lws_hdr_custom_copy(wsi, value, sizeof value, custom, (int)strlen(custom)) : -1;
        } else {
            n = lws_hdr_total_length(wsi, request_headers[i].token);
            if (n <= 0)
                continue;
            n = (size_t)n < sizeof value ? lws_hdr_copy(wsi, value, sizeof value, request_headers[i].token) : -1;
        }
        if (request_headers[i].fixed && n > 0 && request_headers[i].fixed != MASK_ORIGIN)
            mask_learn_credential(names, (enum mask_fixed)request_headers[i].fixed, value, (size_t)n);
        if (request_headers[i].fixed)
            cJSON_AddStringToObject(h, request_headers[i].name, mask_fixed(names, (enum mask_fixed)request_headers[i].fixed));
        else if (n >= 0)
            cJSON_AddStringToObject(h, request_headers[i].name, value);
    }
}

void capture_describe_request(cJSON *o, struct lws *wsi, struct mask_table *names, const char *path)
{
    cJSON_AddStringToObject(o, "path", path);
    struct query_out q = { names, { 0 }, cJSON_CreateArray() };
    buf_init(&q.raw);
    each_query_arg(wsi, add_masked_arg, &q);
    cJSON_AddStringToObject(o, "rawQuery", buf_append_byte(&q.raw, '\0') ? q.raw.data : "");
    cJSON_AddItemToObject(o, "query", q.pairs);
    buf_free(&q.raw);
    add_headers(o, wsi, names);
}

bool capture_request_has_body(struct lws *wsi, const char *method)
{
    if (strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0 && strcmp(method, "PATCH") != 0)
        return false;
    char length[32] = "";
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0)
        return true;
    return lws_hdr_copy(wsi, length, sizeof length, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0 && strcmp(length, "0") != 0;
}

bool capture_form(cJSON *o, struct mask_table *names, bool legacy, const char *body, size_t len, struct buf *masked)
{
    cJSON *type = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "headers"), "content-type");
    if (type ? !cJSON_IsString(type) || !strstr(type->valuestring, "application/x-www-form-urlencoded") : !legacy || !len)
        return false;
    struct urlencoded_iter it;
    struct proto_error err;
    struct urlencoded_limits limits = { len + 1, len + 1, len + 1, 1024 };
    struct buf name, value;
    buf_init(&name);
    buf_init(&value);
    struct query_out q = { names, { 0 }, cJSON_CreateArray() };
    buf_init(&q.raw);
    enum proto_status st = urlencoded_iter_begin(&it, body ? body : "", len, URLENCODED_PLUS_IS_SPACE, &limits, &err);
    while (st == PROTO_OK && (st = urlencoded_next(&it, &name, &value, &err)) == PROTO_OK)
        add_masked_arg(&q, name.data ? name.data : "", name.len, value.data ? value.data : "", value.len);
    bool ok = st == PROTO_INCOMPLETE;
    if (ok) {
        cJSON_AddItemToObject(o, "form", q.pairs);
        ok = buf_append(masked, q.raw.data, q.raw.len);
    } else {
        cJSON_Delete(q.pairs);
    }
    buf_free(&q.raw);
    buf_free(&name);
    buf_free(&value);
    return ok;
}

void capture_query_value(struct lws *wsi, const char *name, struct buf *value)
{
    struct token_find find = { name, value };
    buf_reset(value);
    each_query_arg(wsi, find_arg, &find);
}
