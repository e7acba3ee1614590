/* rp_text.c - heap strings and byte buffers for signalr-replay (see rp_text.h). */
#include "rp_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

void *rp_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "signalr-replay: out of memory\n");
        abort();
    }
    return p;
}

void *rp_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "signalr-replay: out of memory\n");
        abort();
    }
    return q;
}

char *rp_fmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = rp_xmalloc((size_t)(n < 0 ? 0 : n) + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap);
    va_end(ap);
    return s;
}

char *rp_strndup(const char *s, size_t n)
{
    char *d = rp_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *rp_strdup(const char *s)
{
    return rp_strndup(s, strlen(s));
}

char *rp_quote(const char *s, size_t max)
{
    size_t len = strlen(s);
    char *cut = rp_strndup(s, len > max ? max : len);
    cJSON *str = cJSON_CreateString(cut);
    char *printed = str ? cJSON_PrintUnformatted(str) : NULL;
    cJSON_Delete(str);
    free(cut);
    if (!printed)
        return rp_strdup("\"?\"");
    char *out = rp_fmt("%s%s", printed, len > max ? "..." : "");
    free(printed);
    return out;
}

void rp_buf_add(struct rp_buf *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = rp_xrealloc(b->p, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void rp_buf_adds(struct rp_buf *b, const char *s)
{
    rp_buf_add(b, s, strlen(s));
}

void rp_buf_consume(struct rp_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        if (b->p)
            b->p[0] = '\0';
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    b->p[b->len] = '\0';
}

void rp_buf_free(struct rp_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

char *rp_decode_base64(const char *b64, size_t *len)
{
    size_t n = strlen(b64);
    unsigned char *out = rp_xmalloc(n / 4 * 3 + 4);
    int got = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n);
    if (got < 0) {
        free(out);
        return NULL;
    }
    for (size_t i = n; got > 0 && i > 0 && b64[i - 1] == '='; i--)
        got--;
    out[got] = '\0';
    *len = (size_t)got;
    return (char *)out;
}
