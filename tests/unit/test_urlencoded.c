/* test_urlencoded.c - query strings and form bodies: golden cases, every error, long values. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "protocol/urlencoded.h"

static const struct urlencoded_limits big = { 1u << 30, 1u << 30, 1u << 30, 1u << 20 };

/* urlencoded_find on a C string; returns the status, *value as decoded. */
static enum proto_status find(const char *s, const char *key, unsigned flags, struct buf *value)
{
    struct proto_error err = { PROTO_OK, NULL };
    enum proto_status st = urlencoded_find(s, strlen(s), key, flags, &big, value, &err);
    if (proto_status_is_error(st))
        CHECK(err.detail != NULL && err.status == st);
    if (st != PROTO_OK)
        CHECK_EQ_INT(value->len, 0);
    return st;
}

#define FINDS(s, key, flags, expected)                                 \
    do {                                                               \
        struct buf v_;                                                 \
        buf_init(&v_);                                                 \
        CHECK_EQ_INT(find((s), (key), (flags), &v_), PROTO_OK);        \
        CHECK_BYTES(v_.data, v_.len, (expected));                      \
        buf_free(&v_);                                                 \
    } while (0)

#define FAILS(s, key, flags, status)                                   \
    do {                                                               \
        struct buf v_;                                                 \
        buf_init(&v_);                                                 \
        CHECK_EQ_INT(find((s), (key), (flags), &v_), (status));        \
        buf_free(&v_);                                                 \
    } while (0)

static void test_golden(void)
{
    const unsigned P = URLENCODED_PLUS_IS_SPACE;
    FINDS("id=abc", "id", 0, "abc");
    FINDS("a=1&id=abc&b=2", "id", 0, "abc");
    FINDS("ID=abc", "id", 0, "abc");                 /* names ignore ASCII case */
    FINDS("%69%64=abc", "id", 0, "abc");             /* names are decoded first */
    FINDS("id=7a%2Fb%2fc", "id", 0, "7a/b/c");       /* either hex case */
    FINDS("q=a+b", "q", 0, "a+b");                   /* RFC 3986: '+' is '+' */
    FINDS("q=a+b", "q", P, "a b");                   /* forms and ASP.NET: a space */
    FINDS("q=a%2Bb", "q", P, "a+b");
    FINDS("q=a=b=c", "q", 0, "a=b=c");               /* split at the first '=' */
    FINDS("flag&x=1", "flag", 0, "");                /* a name alone */
    FINDS("x=1&flag=", "flag", 0, "");
    FINDS("&&x=1&&y=2&", "y", 0, "2");               /* empty pairs skipped */
    FINDS("x=%C3%A9t%C3%A9", "x", URLENCODED_UTF8, "\xc3\xa9t\xc3\xa9");
    FINDS("x=%FF", "x", 0, "\xff");                  /* bytes as they are without URLENCODED_UTF8 */
    FINDS("connectionData=%5B%7B%22name%22%3A%22chathub%22%7D%5D&tid=3", "connectionData", 0,
          "[{\"name\":\"chathub\"}]");
    FINDS("x=;y=2", "x", 0, ";y=2");                 /* ';' is no separator */
    FAILS("a=1&b=2", "id", 0, PROTO_ERR_MISSING);
    FAILS("", "id", 0, PROTO_ERR_MISSING);
    FAILS("idx=1&i=2", "id", 0, PROTO_ERR_MISSING);

    /* Iteration gives every pair in order. */
    const char *q = "a=1&&b&c=x+y%21&%41=";
    struct urlencoded_iter it;
    struct buf name, value;
    buf_init(&name);
    buf_init(&value);
    const char *names[] = { "a", "b", "c", "A" }, *values[] = { "1", "", "x y!", "" };
    size_t i = 0;
    enum proto_status st = urlencoded_iter_begin(&it, q, strlen(q), P, &big, NULL);
    CHECK_EQ_INT(st, PROTO_OK);
    while ((st = urlencoded_next(&it, &name, &value, NULL)) == PROTO_OK && i < 4) {
        CHECK_BYTES(name.data, name.len, names[i]);
        CHECK_BYTES(value.data, value.len, values[i]);
        i++;
    }
    CHECK_EQ_INT(st, PROTO_INCOMPLETE);
    CHECK_EQ_INT(i, 4);
    CHECK_EQ_INT(urlencoded_next(&it, &name, &value, NULL), PROTO_INCOMPLETE);

    /* Encode, then decode: every byte value but NUL, with and without '+'. */
    struct buf raw, enc;
    buf_init(&raw);
    buf_init(&enc);
    for (int c = 1; c < 256; c++)
        buf_append_byte(&raw, (char)c);
    for (unsigned flags = 0; flags <= P; flags += P) {
        buf_reset(&enc);
        CHECK(urlencoded_append(&enc, buf_span(&raw), flags));
        CHECK(memchr(enc.data, '&', enc.len) == NULL && memchr(enc.data, '=', enc.len) == NULL);
        CHECK_EQ_INT(urlencoded_decode(enc.data, enc.len, flags, SIZE_MAX, &value, NULL), PROTO_OK);
        CHECK(value.len == raw.len && memcmp(value.data, raw.data, raw.len) == 0);
    }
    buf_reset(&enc);
    CHECK(urlencoded_append(&enc, SPAN_LIT("a b/~"), P));
    CHECK_BYTES(enc.data, enc.len, "a+b%2F~");
    buf_reset(&enc);
    CHECK(urlencoded_append(&enc, SPAN_LIT("a b"), 0));
    CHECK_BYTES(enc.data, enc.len, "a%20b");
    buf_free(&raw);
    buf_free(&enc);
    buf_free(&name);
    buf_free(&value);
}

static void test_errors(void)
{
    /* malformed escapes, in the pair looked for or any other */
    FAILS("id=%", "id", 0, PROTO_ERR_SYNTAX);
    FAILS("id=%4", "id", 0, PROTO_ERR_SYNTAX);
    FAILS("id=%4g", "id", 0, PROTO_ERR_SYNTAX);
    FAILS("id=%%41", "id", 0, PROTO_ERR_SYNTAX);
    FAILS("id=ok&x=%zz", "id", 0, PROTO_ERR_SYNTAX);
    FAILS("%x=1&id=ok", "id", 0, PROTO_ERR_SYNTAX);
    /* NUL, raw or escaped */
    FAILS("id=%00", "id", 0, PROTO_ERR_VALUE);
    FAILS("i%00d=1", "id", 0, PROTO_ERR_VALUE);
    {
        struct buf v;
        buf_init(&v);
        CHECK_EQ_INT(urlencoded_find("id=a\0b", 6, "id", 0, &big, &v, NULL), PROTO_ERR_VALUE);
        CHECK_EQ_INT(urlencoded_find("x=\0&id=1", 8, "id", 0, &big, &v, NULL), PROTO_ERR_VALUE);
        /* the length is respected: the NUL after it is never read */
        CHECK_EQ_INT(urlencoded_find("id=ab\0", 5, "id", 0, &big, &v, NULL), PROTO_OK);
        CHECK_BYTES(v.data, v.len, "ab");
        buf_free(&v);
    }
    /* a key given twice, in any case or spelling */
    FAILS("id=1&id=2", "id", 0, PROTO_ERR_VALUE);
    FAILS("id=1&ID=1", "id", 0, PROTO_ERR_VALUE);
    FAILS("id=1&%69d=1", "id", 0, PROTO_ERR_VALUE);
    /* UTF-8 when asked for */
    FAILS("id=%FF", "id", URLENCODED_UTF8, PROTO_ERR_UTF8);
    FAILS("id=%C3", "id", URLENCODED_UTF8, PROTO_ERR_UTF8);
    FAILS("id=%ED%A0%80", "id", URLENCODED_UTF8, PROTO_ERR_UTF8); /* a surrogate */
    FAILS("%FF=1&id=2", "id", URLENCODED_UTF8, PROTO_ERR_UTF8);

    /* limits: total, name, value, pairs; each exactly at and one over */
    struct buf v;
    buf_init(&v);
    struct urlencoded_limits lim = { 10, 2, 3, 2 };
    CHECK_EQ_INT(urlencoded_find("id=abc&x=1", 10, "id", 0, &lim, &v, NULL), PROTO_OK);
    CHECK_EQ_INT(urlencoded_find("id=abc&x=12", 11, "id", 0, &lim, &v, NULL), PROTO_ERR_TOO_LARGE);
    CHECK_EQ_INT(urlencoded_find("id=abcd", 7, "id", 0, &lim, &v, NULL), PROTO_ERR_TOO_LARGE);
    CHECK_EQ_INT(v.len, 0);
    CHECK_EQ_INT(urlencoded_find("id=%41%42%43", 12, "id", 0, &(struct urlencoded_limits){ 12, 2, 3, 2 }, &v, NULL),
                 PROTO_OK); /* the limit is on the decoded value */
    CHECK_BYTES(v.data, v.len, "ABC");
    CHECK_EQ_INT(urlencoded_find("idx=1", 5, "id", 0, &lim, &v, NULL), PROTO_ERR_TOO_LARGE);
    CHECK_EQ_INT(urlencoded_find("a&b&id", 6, "id", 0, &lim, &v, NULL), PROTO_ERR_TOO_LARGE);
    CHECK_EQ_INT(urlencoded_find("a&&&id", 6, "id", 0, &lim, &v, NULL), PROTO_OK); /* empty pairs are free */
    /* an oversized value anywhere hides nothing: it is an error, not a skip */
    CHECK_EQ_INT(urlencoded_find("x=abcd&id=1", 11, "id", 0, &(struct urlencoded_limits){ 100, 2, 3, 9 }, &v, NULL),
                 PROTO_ERR_TOO_LARGE);
    struct proto_error err = { PROTO_OK, NULL };
    CHECK_EQ_INT(urlencoded_decode("abcd", 4, 0, 3, &v, &err), PROTO_ERR_TOO_LARGE);
    CHECK(err.detail != NULL);
    CHECK_EQ_INT(urlencoded_decode("abc", 3, 0, 3, &v, NULL), PROTO_OK);

    /* the iterator stays at a bad pair */
    struct urlencoded_iter it;
    struct buf name;
    buf_init(&name);
    CHECK_EQ_INT(urlencoded_iter_begin(&it, "a=1&b=%", 7, 0, &big, NULL), PROTO_OK);
    CHECK_EQ_INT(urlencoded_next(&it, &name, &v, NULL), PROTO_OK);
    CHECK_EQ_INT(urlencoded_next(&it, &name, &v, NULL), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(urlencoded_next(&it, &name, &v, NULL), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(name.len + v.len, 0);
    CHECK_EQ_INT(urlencoded_iter_begin(&it, "a=1", 3, 0, &lim, NULL) , PROTO_OK);
    CHECK_EQ_INT(urlencoded_iter_begin(&it, "a=1&b=2&c=3", 11, 0, &lim, NULL), PROTO_ERR_TOO_LARGE);
    CHECK_EQ_INT(urlencoded_next(&it, &name, &v, NULL), PROTO_INCOMPLETE);
    buf_free(&name);
    buf_free(&v);
}

/* Values of 128, 4096 and 100,000 bytes (the sizes issue 10 saw cut:
 * an id over 127, connectionData over ~4 KB) come back whole, escaped or
 * not, after a long pair before them; one byte over the limit is refused. */
static void test_long_values(void)
{
    const size_t sizes[] = { 127, 128, 4095, 4096, 4097, 100000 };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        struct buf raw, q, v;
        buf_init(&raw);
        buf_init(&q);
        buf_init(&v);
        for (size_t i = 0; i < n; i++)
            buf_append_byte(&raw, "a/ \xc3\xa9\"[{}]:,x"[i % 13]);
        /* a long pair first, then the one looked for */
        buf_append_cstr(&q, "pad=");
        for (size_t i = 0; i < n; i++)
            buf_append_byte(&q, 'p');
        buf_append_cstr(&q, "&connectionData=");
        CHECK(urlencoded_append(&q, buf_span(&raw), URLENCODED_PLUS_IS_SPACE));
        buf_append_cstr(&q, "&tid=1");

        struct urlencoded_limits lim = { q.len, 64, n, 16 };
        CHECK_EQ_INT(urlencoded_find(q.data, q.len, "connectionData", URLENCODED_PLUS_IS_SPACE, &lim, &v, NULL),
                     PROTO_OK);
        CHECK(v.len == n && memcmp(v.data, raw.data, n) == 0);
        CHECK_EQ_INT(urlencoded_find(q.data, q.len, "tid", URLENCODED_PLUS_IS_SPACE, &lim, &v, NULL), PROTO_OK);
        CHECK_BYTES(v.data, v.len, "1");

        lim.max_value = n - 1; /* connectionData and pad are now one byte too long */
        CHECK_EQ_INT(urlencoded_find(q.data, q.len, "connectionData", URLENCODED_PLUS_IS_SPACE, &lim, &v, NULL),
                     PROTO_ERR_TOO_LARGE);
        CHECK_EQ_INT(urlencoded_find(q.data, q.len, "tid", URLENCODED_PLUS_IS_SPACE, &lim, &v, NULL),
                     PROTO_ERR_TOO_LARGE);
        lim.max_value = n;
        lim.max_total = q.len - 1;
        CHECK_EQ_INT(urlencoded_find(q.data, q.len, "tid", URLENCODED_PLUS_IS_SPACE, &lim, &v, NULL),
                     PROTO_ERR_TOO_LARGE);

        /* an id of n characters, unescaped */
        buf_reset(&q);
        buf_append_cstr(&q, "id=");
        for (size_t i = 0; i < n; i++)
            buf_append_byte(&q, (char)('a' + i % 26));
        lim = (struct urlencoded_limits){ q.len, 2, n, 1 };
        CHECK_EQ_INT(urlencoded_find(q.data, q.len, "id", 0, &lim, &v, NULL), PROTO_OK);
        CHECK_EQ_INT(v.len, n);
        CHECK(v.data[n - 1] == (char)('a' + (n - 1) % 26));
        buf_free(&raw);
        buf_free(&q);
        buf_free(&v);
    }
}

int main(void)
{
    test_golden();
    test_errors();
    test_long_values();
    return test_main_result("test_urlencoded");
}
