/* json_oracle.h - an independent, strict JSON reader for the fuzz targets' oracles.
 *
 * The properties must not be judged by the code under test, nor by cJSON,
 * which accepts trailing bytes (cJSON_ParseWithLength), raw control
 * characters and invalid UTF-8 in strings, numbers such as "01" or "1.",
 * and whose cJSON_Compare calls two infinities or two objects with a
 * duplicate key different. This reader is RFC 8259 exactly:
 *   - one value, white space (space, tab, LF, CR) only around tokens, nothing after;
 *   - numbers -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, kept as their raw text;
 *   - strings: no raw byte < 0x20, valid UTF-8, the eight escapes and \uXXXX
 *     (a surrogate pair is combined; a lone surrogate is refused, as
 *     System.Text.Json refuses to read it as a string), decoded to UTF-8;
 *   - objects keep their members in order, duplicates included;
 *   - at most max_depth containers open at once (JO_MAX_DEPTH for the
 *     plain checks: deeper text counts as refused, so the recursion stays
 *     far from the stack's end under ASan).
 * It builds a tree (every node also keeps its raw bytes) and compares trees:
 * exactly (numbers by their text) or by value (numbers as the doubles they
 * read as, so "1", "1.0" and "1e0" are equal; a number that overflows a
 * double is an infinity and equal to another infinity of the same sign).
 * Header only (static inline functions). */
#ifndef SR_FUZZ_JSON_ORACLE_H
#define SR_FUZZ_JSON_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "containers/span.h"

#define JO_MAX_DEPTH 512

enum jo_type { JO_NULL, JO_FALSE, JO_TRUE, JO_NUMBER, JO_STRING, JO_ARRAY, JO_OBJECT };

struct jo_value {
    enum jo_type type;
    struct span raw;          /* the value's bytes in the text parsed */
    char *str;                /* JO_STRING: decoded bytes (malloc'd, NUL-terminated, may hold NUL) */
    size_t str_len;
    struct jo_value *items;   /* JO_ARRAY: elements; JO_OBJECT: member values */
    struct jo_value *keys;    /* JO_OBJECT: member names (JO_STRING nodes), same count */
    size_t count;
};

struct jo_parser {
    const char *p;
    const char *end;
    int depth;
    int max_depth;
};

static inline void jo_free(struct jo_value *v)
{
    if (!v)
        return;
    free(v->str);
    for (size_t i = 0; i < v->count; i++) {
        if (v->items)
            jo_free(&v->items[i]);
        if (v->keys)
            jo_free(&v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

static inline void jo_ws(struct jo_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static inline bool jo_append(struct jo_value *v, size_t *cap, const char *bytes, size_t n)
{
    if (v->str_len + n + 1 > *cap) {
        size_t want = (*cap ? *cap * 2 : 16);
        while (want < v->str_len + n + 1)
            want *= 2;
        char *grown = realloc(v->str, want);
        if (!grown)
            abort();
        v->str = grown;
        *cap = want;
    }
    memcpy(v->str + v->str_len, bytes, n);
    v->str_len += n;
    v->str[v->str_len] = '\0';
    return true;
}

static inline int jo_hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v << 4 | d;
    }
    return v;
}

/* Length of the well-formed UTF-8 sequence at p (1-4), or 0. */
static inline size_t jo_utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
    else return 0;
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static inline void jo_put_cp(struct jo_value *v, size_t *cap, uint32_t cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) { b[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { b[0] = (char)(0xC0 | cp >> 6); b[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12); b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        b[0] = (char)(0xF0 | cp >> 18); b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    jo_append(v, cap, b, n);
}

static inline bool jo_string(struct jo_parser *ps, struct jo_value *v)
{
    const char *start = ps->p;
    size_t cap = 0;
    v->type = JO_STRING;
    jo_append(v, &cap, "", 0);
    ps->p++; /* the opening quote */
    while (ps->p < ps->end) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            v->raw = span_make(start, (size_t)(ps->p - start));
            return true;
        }
        if (c < 0x20)
            return false;
        if (c != '\\') {
            size_t n = jo_utf8_seq((const unsigned char *)ps->p, (const unsigned char *)ps->end);
            if (n == 0)
                return false;
            jo_append(v, &cap, ps->p, n);
            ps->p += n;
            continue;
        }
        if (ps->end - ps->p < 2)
            return false;
        char e = ps->p[1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e != '\0' && e != 'u' && simple) {
            static const char out[] = "\"\\/\b\f\n\r\t";
            jo_append(v, &cap, &out[simple - "\"\\/bfnrt"], 1);
            ps->p += 2;
            continue;
        }
        if (e != 'u' || ps->end - ps->p < 6)
            return false;
        int hi = jo_hex4(ps->p + 2);
        if (hi < 0)
            return false;
        ps->p += 6;
        uint32_t cp = (uint32_t)hi;
        if (hi >= 0xDC00 && hi <= 0xDFFF)
            return false; /* lone low surrogate */
        if (hi >= 0xD800 && hi <= 0xDBFF) {
            if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u')
                return false;
            int lo = jo_hex4(ps->p + 2);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return false;
            ps->p += 6;
            cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
        }
        jo_put_cp(v, &cap, cp);
    }
    return false;
}

static inline bool jo_digits(struct jo_parser *ps)
{
    const char *s = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
        ps->p++;
    return ps->p > s;
}

static inline bool jo_number(struct jo_parser *ps, struct jo_value *v)
{
    const char *start = ps->p;
    v->type = JO_NUMBER;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p < ps->end && *ps->p == '0')
        ps->p++;
    else if (!(ps->p < ps->end && *ps->p >= '1' && *ps->p <= '9') || !jo_digits(ps))
        return false;
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (!jo_digits(ps))
            return false;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (!jo_digits(ps))
            return false;
    }
    v->raw = span_make(start, (size_t)(ps->p - start));
    return true;
}

static inline bool jo_value_at(struct jo_parser *ps, struct jo_value *v);

static inline void jo_grow(struct jo_value *v, size_t *cap, bool keys)
{
    if (v->count < *cap)
        return;
    size_t want = *cap ? *cap * 2 : 4;
    struct jo_value *items = realloc(v->items, want * sizeof *items);
    if (!items)
        abort();
    v->items = items;
    if (keys) {
        struct jo_value *k = realloc(v->keys, want * sizeof *k);
        if (!k)
            abort();
        v->keys = k;
    }
    *cap = want;
}

static inline bool jo_container(struct jo_parser *ps, struct jo_value *v, bool object)
{
    const char *start = ps->p;
    size_t cap = 0;
    v->type = object ? JO_OBJECT : JO_ARRAY;
    if (++ps->depth > ps->max_depth)
        return false;
    ps->p++;
    jo_ws(ps);
    char close = object ? '}' : ']';
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
    } else {
        for (;;) {
            jo_grow(v, &cap, object);
            memset(&v->items[v->count], 0, sizeof v->items[0]);
            if (object) {
                memset(&v->keys[v->count], 0, sizeof v->keys[0]);
                v->count++;
                if (ps->p >= ps->end || *ps->p != '"' || !jo_string(ps, &v->keys[v->count - 1]))
                    return false;
                jo_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':')
                    return false;
                ps->p++;
                jo_ws(ps);
            } else {
                v->count++;
            }
            if (!jo_value_at(ps, &v->items[v->count - 1]))
                return false;
            jo_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                jo_ws(ps);
                continue;
            }
            if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                break;
            }
            return false;
        }
    }
    ps->depth--;
    v->raw = span_make(start, (size_t)(ps->p - start));
    return true;
}

static inline bool jo_literal(struct jo_parser *ps, struct jo_value *v, const char *word, enum jo_type t)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return false;
    v->type = t;
    v->raw = span_make(ps->p, n);
    ps->p += n;
    return true;
}

static inline bool jo_value_at(struct jo_parser *ps, struct jo_value *v)
{
    memset(v, 0, sizeof *v);
    if (ps->p >= ps->end)
        return false;
    switch (*ps->p) {
    case '{': return jo_container(ps, v, true);
    case '[': return jo_container(ps, v, false);
    case '"': return jo_string(ps, v);
    case 't': return jo_literal(ps, v, "true", JO_TRUE);
    case 'f': return jo_literal(ps, v, "false", JO_FALSE);
    case 'n': return jo_literal(ps, v, "null", JO_NULL);
    default: return jo_number(ps, v);
    }
}

/* Parses exactly one JSON text. True and a tree in *v (jo_free it), or false
 * and nothing to free. */
static inline bool jo_parse(const char *p, size_t len, int max_depth, struct jo_value *v)
{
    struct jo_parser ps = { p, p + len, 0, max_depth };
    jo_ws(&ps);
    bool ok = jo_value_at(&ps, v);
    jo_ws(&ps);
    if (ok && ps.p == ps.end)
        return true;
    jo_free(v);
    return false;
}

static inline bool jo_is_json(const char *p, size_t len)
{
    struct jo_value v;
    if (!jo_parse(p, len, JO_MAX_DEPTH, &v))
        return false;
    jo_free(&v);
    return true;
}

/* The value of the member named key (first one), or NULL. */
static inline const struct jo_value *jo_member(const struct jo_value *obj, const char *key)
{
    if (!obj || obj->type != JO_OBJECT)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < obj->count; i++)
        if (obj->keys[i].str_len == n && memcmp(obj->keys[i].str, key, n) == 0)
            return &obj->items[i];
    return NULL;
}

static inline size_t jo_member_count(const struct jo_value *obj, const char *key)
{
    size_t n = strlen(key), found = 0;
    for (size_t i = 0; obj && obj->type == JO_OBJECT && i < obj->count; i++)
        found += obj->keys[i].str_len == n && memcmp(obj->keys[i].str, key, n) == 0;
    return found;
}

static inline bool jo_string_is(const struct jo_value *v, struct span expected)
{
    return v && v->type == JO_STRING && v->str_len == expected.len &&
           (expected.len == 0 || memcmp(v->str, expected.ptr, expected.len) == 0);
}

static inline double jo_number_value(const struct jo_value *v)
{
    char small[64];
    char *text = v->raw.len < sizeof small ? small : malloc(v->raw.len + 1);
    if (!text)
        abort();
    memcpy(text, v->raw.ptr, v->raw.len);
    text[v->raw.len] = '\0';
    double d = strtod(text, NULL); /* glibc: correctly rounded, +-HUGE_VAL on overflow */
    if (text != small)
        free(text);
    return d;
}

enum jo_numbers { JO_NUMBERS_EXACT, JO_NUMBERS_AS_DOUBLES };

/* Same tree: same types, same strings (decoded bytes), members in the same
 * order with the same names, numbers by text or by double value. */
static inline bool jo_equal(const struct jo_value *a, const struct jo_value *b, enum jo_numbers numbers)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case JO_NULL: case JO_FALSE: case JO_TRUE:
        return true;
    case JO_NUMBER:
        if (numbers == JO_NUMBERS_EXACT)
            return span_eq(a->raw, b->raw);
        return jo_number_value(a) == jo_number_value(b);
    case JO_STRING:
        return a->str_len == b->str_len && memcmp(a->str, b->str, a->str_len) == 0;
    case JO_ARRAY: case JO_OBJECT:
        if (a->count != b->count)
            return false;
        for (size_t i = 0; i < a->count; i++) {
            if (a->type == JO_OBJECT && !jo_equal(&a->keys[i], &b->keys[i], numbers))
                return false;
            if (!jo_equal(&a->items[i], &b->items[i], numbers))
                return false;
        }
        return true;
    }
    return false;
}

#endif
