/* fuzz_urlencoded.c - query strings and form bodies (protocol/urlencoded.h).
 *
 * Byte 0 picks the flags (bit 0: '+' is a space, bit 1: UTF-8 required),
 * bytes 1-4 small limits (total, name, value, pairs); the rest is used twice.
 *  1. As a query string, parsed pair by pair: every pair returned obeys
 *     the limits, and equals what a reference decoder written here gives
 *     for that pair's bytes; a pair refused is one the reference refuses or
 *     finds over a limit (a value over the limit is never accepted); an
 *     input over max_total is refused whole. urlencoded_find agrees with
 *     the iteration (the value of a key given once, PROTO_ERR_VALUE for a key
 *     given twice, PROTO_ERR_MISSING for one never given). ASan checks that
 *     nothing outside the input is read (libFuzzer hands over an exactly
 *     sized copy).
 *  2. As generated pairs: split at NUL bytes into name, value, name, ...;
 *     each is encoded with urlencoded_append and joined with '=' and '&';
 *     decoding that gives back exactly the pairs, in order
 *     (decode(encode(x)) == x), and find gives each name's value (or says
 *     it was given twice); with a limit one byte below the longest value,
 *     the longest value is refused, never cut.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 200000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers/buf.h"
#include "protocol/urlencoded.h"

#define MAX_GENERATED_PAIRS 64

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_urlencoded: property violated: %s\n", what);
    abort();
}

/* ---- a reference decoder, as plain as possible ---- */

static int ref_hex(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes (s, n) into out (malloc'd, *out_len); false if it has a NUL, raw
 * or %00, or a '%' without two hex digits after it. */
static bool ref_decode(const char *s, size_t n, unsigned flags, char **out, size_t *out_len)
{
    char *d = malloc(n + 1);
    if (!d)
        abort();
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n) {
                free(d);
                return false;
            }
            int hi = ref_hex((unsigned char)s[i + 1]), lo = ref_hex((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0) {
                free(d);
                return false;
            }
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && (flags & URLENCODED_PLUS_IS_SPACE)) {
            c = ' ';
        }
        if (c == 0) {
            free(d);
            return false;
        }
        d[k++] = (char)c;
    }
    *out = d;
    *out_len = k;
    return true;
}

static bool ascii_nocase_eq(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x >= 'A' && x <= 'Z') x = (unsigned char)(x + 32);
        if (y >= 'A' && y <= 'Z') y = (unsigned char)(y + 32);
        if (x != y)
            return false;
    }
    return true;
}

/* ---- 1: arbitrary bytes as a query ---- */

static void check_as_query(const char *q, size_t len, unsigned flags, const struct urlencoded_limits *lim)
{
    struct urlencoded_iter it;
    struct buf name, value;
    buf_init(&name);
    buf_init(&value);
    struct proto_error err = { PROTO_OK, NULL };
    enum proto_status st = urlencoded_iter_begin(&it, q, len, flags, lim, &err);
    if (len > lim->max_total) {
        if (st != PROTO_ERR_TOO_LARGE || urlencoded_next(&it, &name, &value, NULL) != PROTO_INCOMPLETE)
            fail("an input over max_total was not refused whole");
        buf_free(&name);
        buf_free(&value);
        return;
    }
    if (st != PROTO_OK)
        fail("begin refused an input within max_total");

    /* walk the pairs by hand alongside the iterator */
    size_t pos = 0, pairs = 0;
    for (;;) {
        while (pos < len && q[pos] == '&')
            pos++;
        err.detail = NULL;
        st = urlencoded_next(&it, &name, &value, &err);
        if (pos >= len) {
            if (st != PROTO_INCOMPLETE)
                fail("a pair after the end");
            break;
        }
        const char *amp = memchr(q + pos, '&', len - pos);
        size_t seg_end = amp ? (size_t)(amp - q) : len;
        const char *eq = memchr(q + pos, '=', seg_end - pos);
        size_t name_end = eq ? (size_t)(eq - q) : seg_end;
        size_t value_start = eq ? name_end + 1 : seg_end;
        char *rn = NULL, *rv = NULL;
        size_t rn_len = 0, rv_len = 0;
        bool ok = ref_decode(q + pos, name_end - pos, flags, &rn, &rn_len) &&
                  ref_decode(q + value_start, seg_end - value_start, flags, &rv, &rv_len);
        bool within = ok && pairs < lim->max_pairs && rn_len <= lim->max_name && rv_len <= lim->max_value;
        bool utf8 = ok && utf8_is_valid(rn, rn_len) && utf8_is_valid(rv, rv_len);
        if (st == PROTO_OK) {
            if (!ok || !within)
                fail("a pair the reference refuses, or over a limit, was accepted");
            if ((flags & URLENCODED_UTF8) && !utf8)
                fail("invalid UTF-8 accepted with URLENCODED_UTF8");
            if (name.len != rn_len || memcmp(name.data, rn, rn_len) || value.len != rv_len ||
                memcmp(value.data, rv, rv_len))
                fail("a pair decoded differently from the reference");
        } else {
            if (!proto_status_is_error(st) || !err.detail || name.len || value.len)
                fail("a refusal without detail, or with leftovers");
            if (ok && within && (!(flags & URLENCODED_UTF8) || utf8))
                fail("a pair the reference accepts was refused");
            if (urlencoded_next(&it, &name, &value, NULL) != st)
                fail("the iterator moved past a bad pair");
        }
        free(rn);
        free(rv);
        if (st != PROTO_OK)
            break;
        pairs++;
        pos = seg_end;
    }
    bool clean = st == PROTO_INCOMPLETE;

    /* find agrees: for the first pair's name (or "id"), and for "id" */
    const char *keys[2] = { "id", NULL };
    char first[64];
    if (clean && len > 0) {
        struct urlencoded_iter again;
        urlencoded_iter_begin(&again, q, len, flags, lim, NULL);
        if (urlencoded_next(&again, &name, &value, NULL) == PROTO_OK && name.len < sizeof first &&
            !memchr(name.data, '\0', name.len)) {
            memcpy(first, name.data, name.len);
            first[name.len] = '\0';
            keys[1] = first;
        }
    }
    for (int k = 0; k < 2 && keys[k]; k++) {
        struct buf found;
        buf_init(&found);
        enum proto_status fs = urlencoded_find(q, len, keys[k], flags, lim, &found, NULL);
        if (!clean) {
            /* the iteration's error, or a key given twice before it */
            if (fs != st && fs != PROTO_ERR_VALUE)
                fail("find did not report the error the iteration met");
        } else {
            size_t matches = 0;
            struct buf match;
            buf_init(&match);
            struct urlencoded_iter again;
            urlencoded_iter_begin(&again, q, len, flags, lim, NULL);
            while (urlencoded_next(&again, &name, &value, NULL) == PROTO_OK)
                if (ascii_nocase_eq(name.data, name.len, keys[k], strlen(keys[k])) && matches++ == 0)
                    buf_append(&match, value.data, value.len);
            if ((matches == 0 && fs != PROTO_ERR_MISSING) || (matches > 1 && fs != PROTO_ERR_VALUE) ||
                (matches == 1 && (fs != PROTO_OK || !span_eq(buf_span(&found), buf_span(&match)))))
                fail("find disagrees with the iteration");
            buf_free(&match);
        }
        if (fs != PROTO_OK && found.len != 0)
            fail("find left a value behind after failing");
        buf_free(&found);
    }
    buf_free(&name);
    buf_free(&value);
}

/* ---- 2: generated pairs, encoded and decoded ---- */

static void check_generated(const char *p, size_t len, unsigned flags)
{
    struct span fields[2 * MAX_GENERATED_PAIRS];
    size_t nf = 0, start = 0;
    for (size_t i = 0; i <= len && nf < 2 * MAX_GENERATED_PAIRS; i++)
        if (i == len || p[i] == '\0') {
            fields[nf++] = span_make(p + start, i - start);
            start = i + 1;
        }
    if (nf % 2)
        fields[nf++] = span_make(p, 0); /* the last name gets an empty value */
    size_t npairs = nf / 2;

    struct buf q;
    buf_init(&q);
    size_t longest_name = 0, longest_value = 0;
    bool all_utf8 = true;
    for (size_t i = 0; i < npairs; i++) {
        if (i && !buf_append_byte(&q, '&'))
            abort();
        if (!urlencoded_append(&q, fields[2 * i], flags) || !buf_append_byte(&q, '=') ||
            !urlencoded_append(&q, fields[2 * i + 1], flags))
            abort();
        if (fields[2 * i].len > longest_name)
            longest_name = fields[2 * i].len;
        if (fields[2 * i + 1].len > longest_value)
            longest_value = fields[2 * i + 1].len;
        all_utf8 = all_utf8 && utf8_is_valid(fields[2 * i].ptr, fields[2 * i].len) &&
                   utf8_is_valid(fields[2 * i + 1].ptr, fields[2 * i + 1].len);
    }
    struct urlencoded_limits exact = { q.len, longest_name, longest_value, npairs };

    struct urlencoded_iter it;
    struct buf name, value;
    buf_init(&name);
    buf_init(&value);
    if (urlencoded_iter_begin(&it, q.data, q.len, flags, &exact, NULL) != PROTO_OK)
        fail("begin refused an encoding at its exact limits");
    size_t i = 0;
    enum proto_status st;
    while ((st = urlencoded_next(&it, &name, &value, NULL)) == PROTO_OK) {
        if (i >= npairs || !span_eq(buf_span(&name), fields[2 * i]) ||
            !span_eq(buf_span(&value), fields[2 * i + 1]))
            fail("decode(encode(pairs)) != pairs");
        i++;
    }
    if ((flags & URLENCODED_UTF8) && !all_utf8) {
        if (st != PROTO_ERR_UTF8)
            fail("invalid UTF-8 not refused with URLENCODED_UTF8");
    } else if (st != PROTO_INCOMPLETE || i != npairs) {
        fail("decode(encode(pairs)) lost or refused pairs");
    }

    if (!(flags & URLENCODED_UTF8) || all_utf8) {
        /* find each name that is a C string */
        for (size_t k = 0; k < npairs; k++) {
            struct span key = fields[2 * k];
            if (key.len > 63)
                continue;
            char ckey[64];
            memcpy(ckey, key.ptr, key.len);
            ckey[key.len] = '\0';
            size_t matches = 0;
            for (size_t j = 0; j < npairs; j++)
                matches += ascii_nocase_eq(fields[2 * j].ptr, fields[2 * j].len, key.ptr, key.len);
            enum proto_status fs = urlencoded_find(q.data, q.len, ckey, flags, &exact, &value, NULL);
            if (matches == 1 ? fs != PROTO_OK || !span_eq(buf_span(&value), fields[2 * k + 1])
                             : fs != PROTO_ERR_VALUE)
                fail("find(encode(pairs)) does not give the pair's value");
        }
        /* one byte less room for values: the longest is refused, never cut */
        if (longest_value > 0) {
            struct urlencoded_limits tight = exact;
            tight.max_value = longest_value - 1;
            urlencoded_iter_begin(&it, q.data, q.len, flags, &tight, NULL);
            while ((st = urlencoded_next(&it, &name, &value, NULL)) == PROTO_OK)
                if (value.len > tight.max_value)
                    fail("a value over max_value was accepted");
            if (st != PROTO_ERR_TOO_LARGE || value.len != 0)
                fail("a value over max_value was not refused");
        }
    }
    buf_free(&name);
    buf_free(&value);
    buf_free(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    unsigned flags = data[0] & 3u;
    struct urlencoded_limits lim = { data[1] * 16u, data[2], data[3] * 4u, data[4] % 32u };
    const char *rest = (const char *)data + 5;
    size_t n = size - 5;
    check_as_query(rest, n, flags, &lim);
    check_generated(rest, n, flags);
    return 0;
}
