/* urlencoded.c - query strings and form bodies (see urlencoded.h). */
#include "protocol/urlencoded.h"

#include <stdint.h>
#include <string.h>

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Checks the escapes and NULs of (s, len) and counts the decoded bytes,
 * without writing anything: the limit is known before any allocation. */
static enum proto_status measure(const char *s, size_t len, size_t *decoded, struct proto_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < len; n++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\0')
            return proto_fail(err, PROTO_ERR_VALUE, "NUL byte in a query or form");
        if (c != '%') {
            i++;
            continue;
        }
        if (len - i < 3 || hex_value((unsigned char)s[i + 1]) < 0 || hex_value((unsigned char)s[i + 2]) < 0)
            return proto_fail(err, PROTO_ERR_SYNTAX, "'%' not followed by two hex digits");
        if (s[i + 1] == '0' && s[i + 2] == '0')
            return proto_fail(err, PROTO_ERR_VALUE, "%00 (a NUL byte) in a query or form");
        i += 3;
    }
    *decoded = n;
    return PROTO_OK;
}

enum proto_status urlencoded_decode(const char *s, size_t len, unsigned flags, size_t max,
                                    struct buf *out, struct proto_error *err)
{
    buf_reset(out);
    size_t n = 0;
    enum proto_status st = measure(s, len, &n, err);
    if (st != PROTO_OK)
        return st;
    if (n > max)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "query or form value longer than the limit");
    if (!buf_reserve(out, n + 1))
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory decoding a query or form");
    char *d = out->data;
    size_t k = 0;
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (c == '%') {
            d[k++] = (char)(hex_value((unsigned char)s[i + 1]) << 4 | hex_value((unsigned char)s[i + 2]));
            i += 3;
        } else {
            d[k++] = (c == '+' && (flags & URLENCODED_PLUS_IS_SPACE)) ? ' ' : c;
            i++;
        }
    }
    d[k] = '\0'; /* not counted: a convenience for callers that log the value */
    if ((flags & URLENCODED_UTF8) && !utf8_is_valid(d, k))
        return proto_fail(err, PROTO_ERR_UTF8, "query or form value is not valid UTF-8");
    out->len = k;
    return PROTO_OK;
}

bool urlencoded_append(struct buf *out, struct span s, unsigned flags)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t before = out->len;
    if (s.len > SIZE_MAX / 3 || !buf_reserve(out, s.len * 3))
        return false;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~';
        bool ok;
        if (plain)
            ok = buf_append_byte(out, (char)c);
        else if (c == ' ' && (flags & URLENCODED_PLUS_IS_SPACE))
            ok = buf_append_byte(out, '+');
        else
            ok = buf_append(out, (const char[]){ '%', hex[c >> 4], hex[c & 15] }, 3);
        if (!ok) {
            out->len = before;
            return false;
        }
    }
    return true;
}

enum proto_status urlencoded_iter_begin(struct urlencoded_iter *it, const char *s, size_t len,
                                        unsigned flags, const struct urlencoded_limits *limits,
                                        struct proto_error *err)
{
    it->pos = s;
    it->end = s + len;
    it->flags = flags;
    it->limits = *limits;
    it->pairs = 0;
    if (len > limits->max_total) {
        it->pos = it->end; /* nothing to iterate */
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "query or form longer than the limit");
    }
    return PROTO_OK;
}

enum proto_status urlencoded_next(struct urlencoded_iter *it, struct buf *name, struct buf *value,
                                  struct proto_error *err)
{
    buf_reset(name);
    buf_reset(value);
    for (;;) {
        if (it->pos >= it->end)
            return PROTO_INCOMPLETE;
        size_t rest = (size_t)(it->end - it->pos);
        const char *amp = memchr(it->pos, '&', rest);
        const char *seg_end = amp ? amp : it->end;
        const char *next = amp ? amp + 1 : it->end;
        if (seg_end == it->pos) { /* an empty pair: "a=1&&b=2" */
            it->pos = next;
            continue;
        }
        if (it->pairs >= it->limits.max_pairs)
            return proto_fail(err, PROTO_ERR_TOO_LARGE, "more query or form pairs than the limit");
        const char *eq = memchr(it->pos, '=', (size_t)(seg_end - it->pos));
        const char *name_end = eq ? eq : seg_end;
        const char *value_start = eq ? eq + 1 : seg_end;
        enum proto_status st = urlencoded_decode(it->pos, (size_t)(name_end - it->pos), it->flags,
                                                 it->limits.max_name, name, err);
        if (st == PROTO_OK)
            st = urlencoded_decode(value_start, (size_t)(seg_end - value_start), it->flags,
                                   it->limits.max_value, value, err);
        if (st != PROTO_OK) {
            buf_reset(name);
            buf_reset(value);
            return st;
        }
        it->pairs++;
        it->pos = next;
        return PROTO_OK;
    }
}

enum proto_status urlencoded_find(const char *s, size_t len, const char *key, unsigned flags,
                                  const struct urlencoded_limits *limits, struct buf *value,
                                  struct proto_error *err)
{
    buf_reset(value);
    struct span want = span_from_cstr(key);
    struct urlencoded_iter it;
    struct buf name, val;
    buf_init(&name);
    buf_init(&val);
    bool found = false;
    enum proto_status st = urlencoded_iter_begin(&it, s, len, flags, limits, err);
    while (st == PROTO_OK && (st = urlencoded_next(&it, &name, &val, err)) == PROTO_OK) {
        if (!span_eq_nocase(buf_span(&name), want))
            continue;
        if (found) {
            st = proto_fail(err, PROTO_ERR_VALUE, "query or form key given more than once");
            break;
        }
        found = true;
        /* swap the decoded value into *value: no copy */
        struct buf tmp = *value;
        *value = val;
        val = tmp;
    }
    buf_free(&name);
    buf_free(&val);
    if (st == PROTO_INCOMPLETE)
        return found ? PROTO_OK : proto_fail(err, PROTO_ERR_MISSING, "query or form key not present");
    buf_reset(value);
    return st;
}
