/* buf.c - growable owned byte buffer. */
#include "containers/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void buf_free(struct buf *b)
{
    free(b->data);
    buf_init(b);
}

bool buf_reserve(struct buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len)
        return false;
    size_t need = b->len + extra;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return false;
    b->data = p;
    b->cap = cap;
    return true;
}

bool buf_append(struct buf *b, const void *p, size_t n)
{
    if (n == 0)
        return true;
    if (!buf_reserve(b, n))
        return false;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return true;
}

bool buf_append_byte(struct buf *b, char c)
{
    return buf_append(b, &c, 1);
}

bool buf_append_cstr(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

bool buf_append_i64(struct buf *b, long long v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", v);
    return buf_append(b, tmp, (size_t)n);
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}
