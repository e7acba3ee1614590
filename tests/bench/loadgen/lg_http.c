/* lg_http.c - target URL parsing, percent-encoding, HTTP/1.1 response heads and bodies. */
#include "lg_http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int lg_url_parse(const char *text, struct lg_url *out, const char **detail)
{
    memset(out, 0, sizeof *out);
    const char *p;
    if (strncmp(text, "http://", 7) == 0)
        p = text + 7;
    else if (strncmp(text, "ws://", 5) == 0)
        p = text + 5;
    else {
        *detail = "URL must start with http:// (TLS is not supported)";
        return -1;
    }
    size_t hostlen = strcspn(p, ":/");
    if (hostlen == 0 || hostlen >= sizeof out->host) {
        *detail = "bad host in URL";
        return -1;
    }
    memcpy(out->host, p, hostlen);
    p += hostlen;
    struct in_addr addr;
    if (strcmp(out->host, "localhost") == 0)
        out->ip = 0x7F000001u;
    else if (inet_pton(AF_INET, out->host, &addr) == 1)
        out->ip = ntohl(addr.s_addr);
    else {
        *detail = "host must be an IPv4 address or localhost";
        return -1;
    }
    if ((out->ip >> 24) != 127) {
        *detail = "only loopback targets (127.0.0.0/8) are allowed";
        return -1;
    }
    out->port = 80;
    if (*p == ':') {
        char *end;
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port <= 0 || port > 65535) {
            *detail = "bad port in URL";
            return -1;
        }
        out->port = (uint16_t)port;
        p = end;
    }
    if (*p && *p != '/') {
        *detail = "unexpected text after the port";
        return -1;
    }
    size_t plen = strlen(p);
    while (plen > 0 && p[plen - 1] == '/')
        plen--;
    if (plen >= sizeof out->path) {
        *detail = "path too long";
        return -1;
    }
    memcpy(out->path, p, plen);
    out->path[plen] = '\0';
    return 0;
}

size_t lg_url_encode(char *dst, const char *src, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)src[i];
        if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            dst[o++] = (char)ch;
        } else {
            dst[o++] = '%';
            dst[o++] = hex[ch >> 4];
            dst[o++] = hex[ch & 15];
        }
    }
    dst[o] = '\0';
    return o;
}

/* Finds "\r\n\r\n" in (p, n); returns the offset just past it, or 0. */
static size_t head_end(const char *p, size_t n)
{
    for (size_t i = 3; i < n; i++)
        if (p[i] == '\n' && p[i - 1] == '\r' && p[i - 2] == '\n' && p[i - 3] == '\r')
            return i + 1;
    return 0;
}

static int header_is(const char *line, size_t len, const char *name, const char **value,
                     size_t *value_len)
{
    size_t nlen = strlen(name);
    if (len <= nlen || line[nlen] != ':' || strncasecmp(line, name, nlen) != 0)
        return 0;
    const char *v = line + nlen + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *value = v;
    *value_len = (size_t)(end - v);
    return 1;
}

/* The header line after the one that ends at *cursor (the status line's '\n' first) in
 * p[0..end): its start, and its length without the CR in *len; NULL after the last. *cursor moves
 * to the line's end. The empty line closing the head comes too (it matches no header name). */
static const char *next_header_line(const char *p, size_t end, const char **cursor, size_t *len)
{
    const char *line = *cursor;
    if (!line || (size_t)(line + 1 - p) >= end)
        return NULL;
    line++;
    const char *eol = memchr(line, '\n', end - (size_t)(line - p));
    if (!eol)
        return NULL;
    *len = (size_t)(eol - line);
    if (*len > 0 && line[*len - 1] == '\r')
        (*len)--;
    *cursor = eol;
    return line;
}

long lg_http_parse_head(const char *p, size_t n, struct lg_http_resp *out, const char **detail)
{
    size_t end = head_end(p, n);
    if (end == 0) {
        if (n > 16384) {
            *detail = "response head larger than 16 KiB";
            return -1;
        }
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->content_length = -1;
    if (end < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' || !isdigit((unsigned char)p[9]) ||
        !isdigit((unsigned char)p[10]) || !isdigit((unsigned char)p[11])) {
        *detail = "not an HTTP/1.x status line";
        return -1;
    }
    out->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');

    const char *cursor = memchr(p, '\n', end), *line;
    size_t len;
    while ((line = next_header_line(p, end, &cursor, &len))) {
        const char *v;
        size_t vlen;
        if (header_is(line, len, "Content-Length", &v, &vlen)) {
            char num[24];
            if (vlen == 0 || vlen >= sizeof num) {
                *detail = "bad Content-Length";
                return -1;
            }
            memcpy(num, v, vlen);
            num[vlen] = '\0';
            char *e;
            long long cl = strtoll(num, &e, 10);
            if (*e || cl < 0) {
                *detail = "bad Content-Length";
                return -1;
            }
            out->content_length = cl;
        } else if (header_is(line, len, "Transfer-Encoding", &v, &vlen)) {
            if (vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0)
                out->chunked = 1;
        } else if (header_is(line, len, "Sec-WebSocket-Accept", &v, &vlen)) {
            if (vlen < sizeof out->ws_accept) {
                memcpy(out->ws_accept, v, vlen);
                out->ws_accept[vlen] = '\0';
            }
        } else if (header_is(line, len, "Upgrade", &v, &vlen)) {
            out->upgrade_websocket = vlen == 9 && strncasecmp(v, "websocket", 9) == 0;
        }
    }
    return (long)end;
}

/* Walks a chunked body. With `decode`, moves the chunk data to the front of p (safe: the write
 * position never passes the read position). Returns 1 complete, 0 need more, -1 bad. */
static int chunked_walk(char *p, size_t n, int decode, size_t *out_len, const char **detail)
{
    size_t r = 0, w = 0;
    for (;;) {
        const char *eol = memchr(p + r, '\n', n - r);
        if (!eol)
            return 0;
        char *e;
        unsigned long long size = strtoull(p + r, &e, 16);
        if (e == p + r) {
            *detail = "bad chunk size";
            return -1;
        }
        r = (size_t)(eol - p) + 1;
        if (size == 0) {
            /* Trailer section: lines until an empty one. */
            for (;;) {
                const char *tl = memchr(p + r, '\n', n - r);
                if (!tl)
                    return 0;
                size_t tlen = (size_t)(tl - (p + r));
                r = (size_t)(tl - p) + 1;
                if (tlen == 0 || (tlen == 1 && p[r - 2] == '\r')) {
                    *out_len = w;
                    return 1;
                }
            }
        }
        if (size > n || n - r < size + 2)
            return 0;
        if (decode)
            memmove(p + w, p + r, size);
        w += size;
        r += size;
        if (p[r] == '\r')
            r++;
        if (r >= n)
            return 0;
        if (p[r] != '\n') {
            *detail = "chunk not followed by CRLF";
            return -1;
        }
        r++;
    }
}

int lg_http_body(const struct lg_http_resp *resp, char *p, size_t n, int eof, char **body,
                 size_t *body_len, const char **detail)
{
    *body = p;
    if (resp->status == 101 || resp->status == 204 || resp->status == 304) {
        *body_len = 0;
        return 1;
    }
    if (resp->chunked) {
        size_t len;
        int rc = chunked_walk(p, n, 0, &len, detail);
        if (rc <= 0) {
            if (rc == 0 && eof) {
                *detail = "connection closed inside a chunked body";
                return -1;
            }
            return rc;
        }
        chunked_walk(p, n, 1, &len, detail);
        *body_len = len;
        return 1;
    }
    if (resp->content_length >= 0) {
        if ((uint64_t)resp->content_length > n) {
            if (eof) {
                *detail = "connection closed before Content-Length bytes arrived";
                return -1;
            }
            return 0;
        }
        *body_len = (size_t)resp->content_length;
        return 1;
    }
    if (!eof)
        return 0;
    *body_len = n;
    return 1;
}

int lg_http_header(const char *p, size_t head_len, const char *name, char *out, size_t cap)
{
    const char *cursor = memchr(p, '\n', head_len), *line;
    size_t len;
    while ((line = next_header_line(p, head_len, &cursor, &len))) {
        const char *v;
        size_t vlen;
        if (header_is(line, len, name, &v, &vlen)) {
            if (cap == 0)
                return 1;
            if (vlen >= cap)
                vlen = cap - 1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return 1;
        }
    }
    return 0;
}

enum { DC_SIZE, DC_EXT, DC_SIZE_LF, DC_DATA, DC_DATA_CR, DC_DATA_LF, DC_TRAILER, DC_TRAILER_LINE, DC_DONE };

void lg_dechunk_init(struct lg_dechunk *d)
{
    d->state = DC_SIZE;
    d->left = 0;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int lg_http_dechunk(struct lg_dechunk *d, const char *in, size_t n, char *out, size_t *out_len)
{
    size_t w = 0;
    for (size_t i = 0; i < n && d->state != DC_DONE; i++) {
        char c = in[i];
        switch (d->state) {
        case DC_SIZE:
            if (hex_value(c) >= 0) {
                if (d->left > (UINT64_MAX >> 4))
                    return -1;
                d->left = d->left * 16 + (uint64_t)hex_value(c);
            } else if (c == ';' || c == ' ' || c == '\t') {
                d->state = DC_EXT;
            } else if (c == '\r') {
                d->state = DC_SIZE_LF;
            } else if (c == '\n') {
                d->state = d->left ? DC_DATA : DC_TRAILER;
            } else {
                return -1;
            }
            break;
        case DC_EXT:
            if (c == '\r')
                d->state = DC_SIZE_LF;
            else if (c == '\n')
                d->state = d->left ? DC_DATA : DC_TRAILER;
            break;
        case DC_SIZE_LF:
            if (c != '\n')
                return -1;
            d->state = d->left ? DC_DATA : DC_TRAILER;
            break;
        case DC_DATA: {
            size_t take = n - i;
            if (take > d->left)
                take = (size_t)d->left;
            memcpy(out + w, in + i, take);
            w += take;
            d->left -= take;
            i += take - 1;
            if (d->left == 0)
                d->state = DC_DATA_CR;
            break;
        }
        case DC_DATA_CR:
            if (c == '\r') {
                d->state = DC_DATA_LF;
                break;
            }
            if (c != '\n') /* a bare LF is accepted */
                return -1;
            d->state = DC_SIZE;
            break;
        case DC_DATA_LF:
            if (c != '\n')
                return -1;
            d->state = DC_SIZE;
            break;
        case DC_TRAILER: /* at the start of a trailer line: an empty one ends the body */
            if (c == '\n')
                d->state = DC_DONE;
            else if (c != '\r')
                d->state = DC_TRAILER_LINE;
            break;
        case DC_TRAILER_LINE:
            if (c == '\n')
                d->state = DC_TRAILER;
            break;
        }
    }
    *out_len = w;
    return d->state == DC_DONE ? 1 : 0;
}
