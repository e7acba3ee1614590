/* http_limits.c - strict request framing and request size limits (see http_limits.h). */
#include "relay/http_limits.h"

#include <string.h>
#include <strings.h>

#include "relay/clock.h"
#include "relay/config.h"
#include "relay/http.h"
#include "relay/log.h"

/* Room in lws' header buffer beyond both limits: the method, "HTTP/1.1",
 * the names of headers lws does not know, and lws' own bookkeeping. */
#define HEADER_BUFFER_SLACK 2048

size_t http_limits_head_max(const struct relay_config *cfg)
{
    return cfg->max_request_line_bytes + cfg->max_request_headers_bytes + HEADER_BUFFER_SLACK;
}

/* lws keeps a head in about its own size (decoded, a NUL per field): the head the relay reads
 * fits with room, so lws never fails a head the relay handed it for its size. On a TLS listener
 * lws reads the head itself, a record at a time, and the relay stops it after the record that
 * takes the head past the limit (relay/tls_head.h): that record must fit too. */
size_t http_limits_header_buffer(const struct relay_config *cfg)
{
    return http_limits_head_max(cfg) + HEADER_BUFFER_SLACK + (cfg->tls_cert ? HTTP_LIMITS_TLS_RECORD_ROOM : 0);
}

static bool is_request_line_token(enum lws_token_indexes t)
{
    return t == WSI_TOKEN_GET_URI || t == WSI_TOKEN_POST_URI || t == WSI_TOKEN_OPTIONS_URI ||
           t == WSI_TOKEN_PUT_URI || t == WSI_TOKEN_PATCH_URI || t == WSI_TOKEN_DELETE_URI ||
           t == WSI_TOKEN_CONNECT || t == WSI_TOKEN_HEAD_URI || t == WSI_TOKEN_HTTP_URI_ARGS ||
           t == WSI_TOKEN_HTTP;
}

/* Path, '?' and query, as lws decoded them (a percent-encoded target is
 * longer on the wire: the limit is on what the relay reads). */
size_t http_limits_target_length(struct lws *wsi)
{
    size_t n = 0;
    for (int t = 0; t < WSI_TOKEN_COUNT; t++)
        if (is_request_line_token((enum lws_token_indexes)t) && t != WSI_TOKEN_HTTP)
            n += (size_t)lws_hdr_total_length(wsi, (enum lws_token_indexes)t);
    return n + (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS) > 0 ? 1 : 0);
}

/* "Name: value\r\n" for every header lws knows the name of. */
static size_t known_headers_length(struct lws *wsi)
{
    size_t n = 0;
    for (int t = 0; t < WSI_TOKEN_COUNT; t++) {
        enum lws_token_indexes token = (enum lws_token_indexes)t;
        int len = is_request_line_token(token) ? 0 : lws_hdr_total_length(wsi, token);
        if (len <= 0)
            continue;
        const unsigned char *name = lws_token_to_string(token);
        n += (name ? strlen((const char *)name) : 0) + 1 + (size_t)len + 2;
    }
    return n;
}

/* Whether header token occurs more than once (lws keeps each occurrence as
 * a fragment; an empty one copies fine into one byte). */
static bool header_repeated(struct lws *wsi, enum lws_token_indexes token)
{
    return lws_hdr_fragment_length(wsi, token, 1) > 0 ||
           lws_hdr_copy_fragment(wsi, (char[1]){ 0 }, 1, token, 1) >= 0;
}

/* Whether header token is there at all, empty ("Content-Length:") included. */
static bool header_present(struct lws *wsi, enum lws_token_indexes token)
{
    return lws_hdr_total_length(wsi, token) > 0 || lws_hdr_copy_fragment(wsi, (char[1]){ 0 }, 1, token, 0) >= 0;
}

/* The header's value without the spaces and tabs around it (HTTP's OWS), in
 * out; false when longer than out. */
static bool header_value_trimmed(struct lws *wsi, enum lws_token_indexes token, char *out, size_t len)
{
    int n = lws_hdr_total_length(wsi, token);
    if (n == 0) {
        out[0] = '\0';
        return true;
    }
    if (http_header(wsi, token, out, len) < 0)
        return false;
    size_t start = strspn(out, " \t"), end = strlen(out);
    while (end > start && (out[end - 1] == ' ' || out[end - 1] == '\t'))
        end--;
    memmove(out, out + start, end - start);
    out[end - start] = '\0';
    return true;
}

/* Digits only (no sign, no white space inside), at most 18 of them: what
 * fits in 63 bits. Kestrel also takes a leading '+'; the relay does not. */
static bool valid_content_length(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 18)
        return false;
    return strspn(s, "0123456789") == n;
}

static const char *check_framing(struct lws *wsi)
{
    bool cl = header_present(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH);
    bool te = header_present(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING);
    char value[32];
    if (cl && te)
        return "Bad request: Transfer-Encoding and Content-Length together.";
    if (cl) {
        if (header_repeated(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH))
            return "Bad request: Content-Length given more than once.";
        if (!header_value_trimmed(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, value, sizeof value) || !valid_content_length(value))
            return "Bad request: Content-Length is not a valid length.";
    }
    if (te) {
        if (header_repeated(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) ||
            !header_value_trimmed(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING, value, sizeof value) ||
            strcasecmp(value, "chunked") != 0)
            return "Bad request: the only Transfer-Encoding served is chunked.";
    }
    return NULL;
}

unsigned http_check_request(const struct relay_config *cfg, struct lws *wsi, const char **reason)
{
    if (http_limits_target_length(wsi) > cfg->max_request_line_bytes) {
        *reason = "URI Too Long: the request target is longer than the relay's --max-request-line.";
        return 414;
    }
    if (known_headers_length(wsi) > cfg->max_request_headers_bytes) {
        *reason = "Request Header Fields Too Large: more than the relay's --max-request-headers.";
        return 431;
    }
    if (http_forwarded_header_too_long(wsi)) {
        /* passed on without it, the request would mean something else (no cookie: no user) */
        *reason = "Request Header Fields Too Large: a header the relay passes on to the backend "
                  "(Authorization, Cookie, User-Agent, ...) is longer than 8191 bytes.";
        return 431;
    }
    *reason = check_framing(wsi);
    return *reason ? 400 : 0;
}

void http_refusal_note(struct http_refusals *r, const char *peer, unsigned status, const char *reason)
{
    r->total++;
    uint64_t now = clock_now_ms();
    if (now - r->window_start_ms >= HTTP_REFUSAL_LOG_WINDOW_MS) {
        if (r->suppressed > 0)
            log_warn("http: %u more requests refused in the last %u s, not logged one by one", r->suppressed,
                     HTTP_REFUSAL_LOG_WINDOW_MS / 1000);
        r->window_start_ms = now;
        r->logged = 0;
        r->suppressed = 0;
    }
    if (r->logged >= HTTP_REFUSAL_LOG_BURST) {
        r->suppressed++;
        return;
    }
    r->logged++;
    if (status)
        log_warn("http: refused a request from %s with %u and closed its connection: %s", peer, status, reason);
    else
        log_warn("http: closed a connection from %s without an answer: %s", peer, reason);
}

int http_refuse_request(const struct relay_config *cfg, struct http_refusals *refusals, struct lws *wsi,
                        unsigned status, const char *reason)
{
    char peer[64] = "";
    lws_get_peer_simple(wsi, peer, sizeof peer);
    http_refusal_note(refusals, peer, status, reason);
    return http_respond_and_close(cfg, wsi, status, reason);
}
