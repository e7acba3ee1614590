/* negotiate.c - ASP.NET Core SignalR negotiate, server and client side (see negotiate.h). */
#include "protocol/negotiate.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/json_scan.h"
#include "protocol/json_strict.h"
#include "protocol/json_write.h"

/* ---- server side: query values ------------------------------------------ */

/* .NET's white space for number and bool parsing: U+0009-U+000D and U+0020. */
static bool dotnet_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* .NET also tolerates trailing NUL characters after trailing white space. */
static struct span trim_dotnet(struct span s)
{
    while (s.len > 0 && dotnet_space(s.ptr[0])) {
        s.ptr++;
        s.len--;
    }
    while (s.len > 0 && s.ptr[s.len - 1] == '\0')
        s.len--;
    while (s.len > 0 && dotnet_space(s.ptr[s.len - 1]))
        s.len--;
    return s;
}

/* int.TryParse with NumberStyles.Integer: [ws][+|-]digits[ws], Int32 range. */
static bool dotnet_parse_int(struct span s, int *out)
{
    s = trim_dotnet(s);
    size_t i = 0;
    bool negative = false;
    if (i < s.len && (s.ptr[i] == '+' || s.ptr[i] == '-')) {
        negative = s.ptr[i] == '-';
        i++;
    }
    if (i == s.len)
        return false;
    long long value = 0;
    for (; i < s.len; i++) {
        if (s.ptr[i] < '0' || s.ptr[i] > '9')
            return false;
        value = value * 10 + (s.ptr[i] - '0');
        if (value > (long long)INT_MAX + 1)
            return false;
    }
    if (negative)
        value = -value;
    if (value > INT_MAX || value < INT_MIN)
        return false;
    *out = (int)value;
    return true;
}

static enum proto_status version_error(struct buf *error_text, size_t start, bool ok,
                                       struct proto_error *err)
{
    if (!ok) {
        error_text->len = start;
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory writing the negotiate error");
    }
    return proto_fail(err, PROTO_ERR_VALUE, "negotiate version refused");
}

static enum proto_status version_too_low(int requested, struct buf *error_text,
                                         struct proto_error *err)
{
    size_t start = error_text->len;
    bool ok = buf_append_cstr(error_text, "The client requested version '") &&
              buf_append_i64(error_text, requested) &&
              buf_append_cstr(error_text, "', but the server does not support this version.");
    return version_error(error_text, start, ok, err);
}

enum proto_status negotiate_parse_version(struct span value, int min_version, int *version,
                                          struct buf *error_text, struct proto_error *err)
{
    if (!span_is_set(value)) {
        if (min_version > 0)
            return version_too_low(0, error_text, err);
        *version = 0;
        return PROTO_OK;
    }
    int requested;
    if (!dotnet_parse_int(value, &requested)) {
        size_t start = error_text->len;
        bool ok = buf_append_cstr(error_text, "The client requested a non-integer protocol version.");
        return version_error(error_text, start, ok, err);
    }
    if (requested < min_version)
        return version_too_low(requested, error_text, err);
    *version = requested > NEGOTIATE_MAX_VERSION ? NEGOTIATE_MAX_VERSION : requested;
    return PROTO_OK;
}

bool negotiate_query_bool(struct span value)
{
    if (!span_is_set(value))
        return false;
    return span_eq_nocase(trim_dotnet(value), SPAN_LIT("true"));
}

/* ---- server side: bodies ------------------------------------------------- */

static bool write_optional_string(struct buf *b, const char *key, struct span value)
{
    return span_is_empty(value) || (json_write_key(b, key, false) && json_write_string(b, value));
}

static bool write_transports(struct buf *b, unsigned transports)
{
    static const struct {
        unsigned bit;
        const char *json;
    } offers[] = {
        { NEGOTIATE_TRANSPORT_WEBSOCKETS,
          "{\"transport\":\"WebSockets\",\"transferFormats\":[\"Text\",\"Binary\"]}" },
        { NEGOTIATE_TRANSPORT_SSE, "{\"transport\":\"ServerSentEvents\",\"transferFormats\":[\"Text\"]}" },
        { NEGOTIATE_TRANSPORT_LONG_POLLING,
          "{\"transport\":\"LongPolling\",\"transferFormats\":[\"Text\",\"Binary\"]}" },
    };
    bool first = true;
    if (!json_write_key(b, "availableTransports", false) || !buf_append_byte(b, '['))
        return false;
    for (size_t i = 0; i < sizeof offers / sizeof offers[0]; i++) {
        if (!(transports & offers[i].bit))
            continue;
        if ((!first && !buf_append_byte(b, ',')) || !buf_append_cstr(b, offers[i].json))
            return false;
        first = false;
    }
    return buf_append_byte(b, ']');
}

enum proto_status negotiate_encode_response(const struct negotiate_reply *r, struct buf *out,
                                            struct proto_error *err)
{
    size_t start = out->len;
    bool ok = buf_append_byte(out, '{');
    if (ok && r->use_stateful_reconnect)
        ok = buf_append_cstr(out, "\"useStatefulReconnect\":true,");
    ok = ok && json_write_key(out, "negotiateVersion", true) && buf_append_i64(out, r->version) &&
         write_optional_string(out, "url", r->url) &&
         write_optional_string(out, "accessToken", r->access_token) &&
         write_optional_string(out, "connectionId", r->connection_id) &&
         (r->version <= 0 || write_optional_string(out, "connectionToken", r->connection_token)) &&
         write_transports(out, r->transports) && buf_append_byte(out, '}');
    if (ok)
        return PROTO_OK;
    out->len = start;
    return proto_fail(err, PROTO_ERR_NOMEM, "out of memory encoding a negotiate response");
}

enum proto_status negotiate_encode_error(struct span text, struct buf *out,
                                         struct proto_error *err)
{
    size_t start = out->len;
    if (buf_append_byte(out, '{') && json_write_key(out, "error", true) &&
        json_write_string(out, text) && buf_append_byte(out, '}'))
        return PROTO_OK;
    out->len = start;
    return proto_fail(err, PROTO_ERR_NOMEM, "out of memory encoding a negotiate error");
}

/* ---- client side --------------------------------------------------------- */

/* Copies a decoded string into the response's string store. The store is
 * sized to the body once: an unescaped string plus its NUL is always shorter
 * than its quoted form, and the strings of a body never overlap, so it can
 * never run out and spans into it stay valid. */
static enum proto_status store_string(struct negotiate_response *r, struct span s, size_t body_len,
                                      struct span *out, struct proto_error *err)
{
    if (!utf8_is_valid(s.ptr, s.len))
        return proto_fail(err, PROTO_ERR_UTF8, "string is not valid UTF-8");
    if (!r->strings) {
        r->strings = malloc(body_len + 1);
        if (!r->strings)
            return proto_fail(err, PROTO_ERR_NOMEM, "out of memory copying negotiate strings");
        r->strings_cap = body_len + 1;
    }
    if (s.len + 1 > r->strings_cap - r->strings_used)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "negotiate strings exceed the body size");
    char *dst = r->strings + r->strings_used;
    memcpy(dst, s.ptr, s.len);
    dst[s.len] = '\0';
    r->strings_used += s.len + 1;
    *out = span_make(dst, s.len);
    return PROTO_OK;
}

struct response_walk {
    struct negotiate_response *resp;
    size_t body_len;
};

static unsigned transport_bit(struct span name)
{
    if (span_eq_cstr(name, "WebSockets"))
        return NEGOTIATE_TRANSPORT_WEBSOCKETS;
    if (span_eq_cstr(name, "ServerSentEvents"))
        return NEGOTIATE_TRANSPORT_SSE;
    if (span_eq_cstr(name, "LongPolling"))
        return NEGOTIATE_TRANSPORT_LONG_POLLING;
    return 0;
}

static enum proto_status read_formats(const cJSON *formats, unsigned *bits, struct proto_error *err)
{
    if (!cJSON_IsArray(formats))
        return proto_fail(err, PROTO_ERR_TYPE, "Expected 'transferFormats' to be of type Array.");
    *bits = 0;
    for (const cJSON *f = formats->child; f; f = f->next) {
        if (!cJSON_IsString(f))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected every transfer format to be a String.");
        if (strcmp(f->valuestring, "Text") == 0)
            *bits |= NEGOTIATE_FORMAT_TEXT;
        else if (strcmp(f->valuestring, "Binary") == 0)
            *bits |= NEGOTIATE_FORMAT_BINARY;
    }
    return PROTO_OK;
}

static enum proto_status read_offer(struct response_walk *w, const cJSON *obj,
                                    struct negotiate_offer *offer, struct proto_error *err)
{
    const cJSON *name = NULL;
    bool has_formats = false;
    /* Every occurrence is checked; a repeated property wins with its last one. */
    for (const cJSON *m = obj->child; m; m = m->next) {
        if (strcmp(m->string, "transport") == 0) {
            if (!cJSON_IsString(m))
                return proto_fail(err, PROTO_ERR_TYPE, "Expected 'transport' to be of type String.");
            name = m;
        } else if (strcmp(m->string, "transferFormats") == 0) {
            enum proto_status st = read_formats(m, &offer->formats, err);
            if (st != PROTO_OK)
                return st;
            has_formats = true;
        }
    }
    if (!name)
        return proto_fail(err, PROTO_ERR_MISSING, "Missing required property 'transport'.");
    if (!has_formats)
        return proto_fail(err, PROTO_ERR_MISSING, "Missing required property 'transferFormats'.");
    /* Nested below the top level: only cJSON's C string is at hand here, so
     * (unlike the top-level strings) a \u0000 in it is not seen, only cut at. */
    enum proto_status st = store_string(w->resp, span_from_cstr(name->valuestring), w->body_len,
                                        &offer->name, err);
    if (st == PROTO_OK)
        offer->transport = transport_bit(offer->name);
    return st;
}

static enum proto_status read_transports(struct response_walk *w, const cJSON *list,
                                         struct proto_error *err)
{
    struct negotiate_response *r = w->resp;
    if (!cJSON_IsArray(list))
        return proto_fail(err, PROTO_ERR_TYPE, "Expected 'availableTransports' to be of type Array.");
    r->has_transports = true;
    r->transport_count = 0; /* a repeated property replaces the list */
    for (const cJSON *e = list->child; e; e = e->next) {
        /* The .NET parser skips scalars between the entries; a nested array
         * derails it into an error. */
        if (cJSON_IsArray(e))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected available transports to be Objects.");
        if (!cJSON_IsObject(e))
            continue;
        if (r->transport_count == NEGOTIATE_MAX_TRANSPORTS)
            return proto_fail(err, PROTO_ERR_TOO_LARGE, "more available transports than we accept");
        enum proto_status st = read_offer(w, e, &r->transports[r->transport_count], err);
        if (st != PROTO_OK)
            return st;
        r->transport_count++;
    }
    return PROTO_OK;
}

static enum proto_status read_string_member(struct response_walk *w, const struct json_member *m,
                                            struct span *out, const char *type_detail,
                                            struct proto_error *err)
{
    if (!cJSON_IsString(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, type_detail);
    struct span s;
    enum proto_status st = json_member_string_view(m, &s, err);
    if (st != PROTO_OK)
        return st;
    return store_string(w->resp, s, w->body_len, out, err);
}

static enum proto_status read_version(struct negotiate_response *r, const struct json_member *m,
                                      struct proto_error *err)
{
    if (cJSON_IsNull(m->value)) { /* ReadAsInt32(...).GetValueOrDefault() */
        r->version = 0;
        return PROTO_OK;
    }
    if (!cJSON_IsNumber(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, "Expected 'negotiateVersion' to be of type Number.");
    long long v;
    enum proto_status st = json_strict_integer(m->raw, INT32_MIN, INT32_MAX, &v, err);
    if (st != PROTO_OK)
        return proto_fail(err, st, "'negotiateVersion' must be a 32-bit integer literal");
    r->version = (int)v;
    return PROTO_OK;
}

static enum proto_status read_response_member(void *ctx, const struct json_member *m,
                                              struct proto_error *err)
{
    struct response_walk *w = ctx;
    struct negotiate_response *r = w->resp;
    const char *k = m->key;
    if (strcmp(k, "url") == 0)
        return read_string_member(w, m, &r->url, "Expected 'url' to be of type String.", err);
    if (strcmp(k, "accessToken") == 0)
        return read_string_member(w, m, &r->access_token,
                                  "Expected 'accessToken' to be of type String.", err);
    if (strcmp(k, "connectionId") == 0)
        return read_string_member(w, m, &r->connection_id,
                                  "Expected 'connectionId' to be of type String.", err);
    if (strcmp(k, "connectionToken") == 0)
        return read_string_member(w, m, &r->connection_token,
                                  "Expected 'connectionToken' to be of type String.", err);
    if (strcmp(k, "error") == 0)
        return read_string_member(w, m, &r->error, "Expected 'error' to be of type String.", err);
    if (strcmp(k, "negotiateVersion") == 0)
        return read_version(r, m, err);
    if (strcmp(k, "availableTransports") == 0)
        return read_transports(w, m->value, err);
    if (strcmp(k, "ProtocolVersion") == 0)
        return proto_fail(err, PROTO_ERR_VALUE, NEGOTIATE_TEXT_LEGACY_SERVER);
    if (strcmp(k, "useStatefulReconnect") == 0) {
        if (!cJSON_IsBool(m->value))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected 'useStatefulReconnect' to be true or false.");
        r->use_stateful_reconnect = cJSON_IsTrue(m->value);
    }
    return PROTO_OK; /* unknown properties are skipped */
}

/* Without `url` or `error`, the connection fields are required. */
static enum proto_status check_required(const struct negotiate_response *r, struct proto_error *err)
{
    if (span_is_set(r->url) || span_is_set(r->error))
        return PROTO_OK;
    if (!span_is_set(r->connection_id))
        return proto_fail(err, PROTO_ERR_MISSING, "Missing required property 'connectionId'.");
    if (r->version > 0 && !span_is_set(r->connection_token))
        return proto_fail(err, PROTO_ERR_MISSING, "Missing required property 'connectionToken'.");
    if (!r->has_transports)
        return proto_fail(err, PROTO_ERR_MISSING, "Missing required property 'availableTransports'.");
    return PROTO_OK;
}

enum proto_status negotiate_decode_response(const char *body, size_t len,
                                            struct negotiate_response *out,
                                            struct proto_error *err)
{
    memset(out, 0, sizeof *out);
    struct response_walk w = { out, len };
    enum proto_status st = json_object_walk(body, len, JSON_STRICT_MAX_DEPTH, read_response_member, &w, err);
    if (st == PROTO_OK)
        st = check_required(out, err);
    if (st != PROTO_OK)
        negotiate_response_release(out);
    return st;
}

void negotiate_response_release(struct negotiate_response *resp)
{
    free(resp->strings);
    memset(resp, 0, sizeof *resp);
}
