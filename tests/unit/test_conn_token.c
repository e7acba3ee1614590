/* test_conn_token.c - connection ids and signed connection tokens.
 *
 * Expected bytes are built here from the format documented in conn_token.h
 * (RFC 4648 base64url, unsigned LEB128, HMAC-SHA256 from OpenSSL), not copied
 * from the minter's output. */
#include <stdint.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "check.h"
#include "hub/conn_token.h"

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static bool all_b64url(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!p[i] || !strchr(B64URL, p[i]))
            return false;
    return true;
}

/* The test's own base64url (RFC 4648 section 5, no padding) over OpenSSL's
 * standard base64, to build and take apart tokens independently. */
static size_t test_b64url_encode(const unsigned char *in, size_t n, char *out)
{
    int len = EVP_EncodeBlock((unsigned char *)out, in, (int)n);
    while (len > 0 && out[len - 1] == '=')
        len--;
    for (int i = 0; i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    out[len] = '\0';
    return (size_t)len;
}

static long test_b64url_decode(const char *in, size_t n, unsigned char *out)
{
    char padded[CONN_TOKEN_MAX_CHARS + 4];
    size_t pad = (4 - n % 4) % 4;
    for (size_t i = 0; i < n; i++)
        padded[i] = in[i] == '-' ? '+' : in[i] == '_' ? '/' : in[i];
    memset(padded + n, '=', pad);
    int got = EVP_DecodeBlock(out, (unsigned char *)padded, (int)(n + pad));
    return got < 0 ? -1 : got - (long)pad;
}

/* A token made by the test from raw payload bytes: payload || HMAC[:16]. */
static size_t forge(const struct token_key *key, const unsigned char *payload, size_t len, char *out)
{
    unsigned char buf[1024], mac[32];
    unsigned int mac_len = 0;
    memcpy(buf, payload, len);
    HMAC(EVP_sha256(), key->bytes, TOKEN_KEY_LEN, payload, len, mac, &mac_len);
    memcpy(buf + len, mac, 16);
    return test_b64url_encode(buf, len + 16, out);
}

static enum proto_status verify_text(const struct token_key *key, const char *text, size_t len)
{
    struct conn_token_claims c;
    enum proto_status st = conn_token_verify(key, span_make(text, len), &c, NULL);
    if (st == PROTO_OK)
        conn_token_claims_free(&c);
    else
        CHECK(c.storage == NULL);
    return st;
}

static int compare_ids(const void *a, const void *b) { return memcmp(a, b, CONN_ID_LEN + 1); }

static void test_conn_id(void)
{
    enum { N = 2000 };
    static char ids[N][CONN_ID_LEN + 1];
    for (int i = 0; i < N; i++) {
        CHECK(conn_id_generate(ids[i]));
        CHECK_EQ_INT(strlen(ids[i]), 22);
        CHECK(all_b64url(ids[i], 22));
        /* 16 bytes = 128 bits in 22 characters: the last carries 2 data bits
         * and 4 zero bits, so it can only be A, Q, g or w (RFC 4648 table). */
        CHECK(strchr("AQgw", ids[i][21]) != NULL);
        unsigned char raw[24];
        CHECK_EQ_INT(test_b64url_decode(ids[i], 22, raw), 16);
    }
    qsort(ids, N, sizeof ids[0], compare_ids);
    for (int i = 1; i < N; i++)
        CHECK(strcmp(ids[i - 1], ids[i]) != 0);
}

static void test_keys(void)
{
    struct token_key a, b, c, zero;
    memset(&zero, 0, sizeof zero);
    CHECK(token_key_generate(&a));
    CHECK(token_key_generate(&b));
    CHECK(memcmp(&a, &b, sizeof a) != 0);
    CHECK(token_key_from_secret(&a, "correct horse battery staple"));
    CHECK(token_key_from_secret(&b, "correct horse battery staple"));
    CHECK(token_key_from_secret(&c, "correct horse battery staplf"));
    CHECK(memcmp(&a, &b, sizeof a) == 0); /* processes sharing a secret agree */
    CHECK(memcmp(&a, &c, sizeof a) != 0);
    CHECK(memcmp(&a, &zero, sizeof a) != 0);
    CHECK(token_key_from_secret(&c, "x"));
    char long_secret[5000];
    memset(long_secret, 's', sizeof long_secret - 1);
    long_secret[sizeof long_secret - 1] = '\0';
    CHECK(token_key_from_secret(&c, long_secret));
    CHECK(!token_key_from_secret(&c, ""));
    CHECK(!token_key_from_secret(&c, NULL));
    token_key_clear(&a);
    CHECK(memcmp(&a, &zero, sizeof a) == 0);
}

static const char UNICODE_USER[] = "Zo\xc3\xab \xe7\x94\xa8\xe6\x88\xb7 \xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb";

static void test_round_trip(void)
{
    struct token_key key;
    CHECK(token_key_generate(&key));
    char id[CONN_ID_LEN + 1];
    CHECK(conn_id_generate(id));
    struct span hubs[] = { SPAN_LIT("ChatHub"), SPAN_LIT("notifications"), SPAN_LIT("\xc3\x9cnic\xc3\xb8" "deHub") };
    struct buf token;
    buf_init(&token);
    CHECK(buf_append_cstr(&token, "prefix:")); /* mint appends */
    CHECK(conn_token_mint(&key, span_from_cstr(id), SPAN_LIT(UNICODE_USER), hubs, 3, 1718000000123ull, &token));
    struct span t = span_make(token.data + 7, token.len - 7);
    CHECK(all_b64url(t.ptr, t.len));
    printf("token with 3 hubs and a unicode user: %zu chars\n", t.len);

    struct conn_token_claims c;
    struct proto_error err = { 0 };
    CHECK_EQ_INT(conn_token_verify(&key, t, &c, &err), PROTO_OK);
    CHECK_EQ_INT(c.version, 1);
    CHECK_EQ_INT(c.issued_at_ms, 1718000000123ull);
    CHECK_BYTES(c.conn_id.ptr, c.conn_id.len, id);
    CHECK_BYTES(c.user.ptr, c.user.len, UNICODE_USER);
    CHECK_EQ_INT(c.hub_count, 3);
    for (size_t i = 0; i < 3 && i < c.hub_count; i++)
        CHECK(span_eq(c.hubs[i], hubs[i]));
    /* The claims own their bytes: the token text can go away. */
    memset(token.data, 'A', token.len);
    buf_free(&token);
    CHECK_BYTES(c.user.ptr, c.user.len, UNICODE_USER);
    conn_token_claims_free(&c);
    CHECK(c.storage == NULL && c.hub_count == 0);
    conn_token_claims_free(&c); /* twice is harmless */

    /* Anonymous, no hubs, time 0 and the largest time. */
    uint64_t times[] = { 0, 127, 128, UINT64_MAX };
    for (size_t i = 0; i < 4; i++) {
        buf_init(&token);
        CHECK(conn_token_mint(&key, SPAN_LIT("c"), SPAN_NONE, NULL, 0, times[i], &token));
        CHECK_EQ_INT(conn_token_verify(&key, buf_span(&token), &c, NULL), PROTO_OK);
        CHECK_EQ_INT(c.issued_at_ms, times[i]);
        CHECK(span_is_set(c.user) && c.user.len == 0);
        CHECK_EQ_INT(c.hub_count, 0);
        conn_token_claims_free(&c);
        buf_free(&token);
    }

    /* Every field at its limit. */
    static char big_user[CONN_TOKEN_MAX_USER_LEN], big_id[CONN_TOKEN_MAX_ID_LEN];
    static char names[CONN_TOKEN_MAX_HUBS][CONN_TOKEN_MAX_HUB_LEN];
    struct span many[CONN_TOKEN_MAX_HUBS + 1];
    memset(big_user, 'u', sizeof big_user);
    memset(big_id, 'i', sizeof big_id);
    for (int i = 0; i < CONN_TOKEN_MAX_HUBS; i++) {
        memset(names[i], 'a' + i % 26, sizeof names[i]);
        many[i] = span_make(names[i], sizeof names[i]);
    }
    many[CONN_TOKEN_MAX_HUBS] = SPAN_LIT("extra");
    buf_init(&token);
    CHECK(conn_token_mint(&key, span_make(big_id, sizeof big_id), span_make(big_user, sizeof big_user), many,
                          CONN_TOKEN_MAX_HUBS, 1, &token));
    CHECK(token.len <= CONN_TOKEN_MAX_CHARS);
    CHECK_EQ_INT(conn_token_verify(&key, buf_span(&token), &c, NULL), PROTO_OK);
    CHECK_EQ_INT(c.hub_count, CONN_TOKEN_MAX_HUBS);
    CHECK(span_eq(c.hubs[CONN_TOKEN_MAX_HUBS - 1], many[CONN_TOKEN_MAX_HUBS - 1]));
    conn_token_claims_free(&c);

    /* Over the limits, or not UTF-8: refused, and `out` is left alone. */
    size_t before = token.len;
    CHECK(!conn_token_mint(&key, span_make(big_id, sizeof big_id), SPAN_NONE, many, CONN_TOKEN_MAX_HUBS + 1, 1, &token));
    CHECK(!conn_token_mint(&key, SPAN_NONE, SPAN_NONE, NULL, 0, 1, &token));
    CHECK(!conn_token_mint(&key, SPAN_LIT(""), SPAN_NONE, NULL, 0, 1, &token));
    CHECK(!conn_token_mint(&key, SPAN_LIT("c"), SPAN_NONE, (struct span[]){ SPAN_LIT("") }, 1, 1, &token));
    CHECK(!conn_token_mint(&key, span_make(big_user, CONN_TOKEN_MAX_ID_LEN + 1), SPAN_NONE, NULL, 0, 1, &token));
    CHECK(!conn_token_mint(&key, SPAN_LIT("c"), SPAN_LIT("bad \xc3"), NULL, 0, 1, &token));
    CHECK(!conn_token_mint(&key, SPAN_LIT("c"), SPAN_NONE, (struct span[]){ SPAN_LIT("\xff") }, 1, 1, &token));
    char over[CONN_TOKEN_MAX_USER_LEN + 1];
    memset(over, 'u', sizeof over);
    CHECK(!conn_token_mint(&key, SPAN_LIT("c"), span_make(over, sizeof over), NULL, 0, 1, &token));
    CHECK_EQ_INT(token.len, before);
    buf_free(&token);
}

/* The layout documented in conn_token.h, spelled out byte by byte. */
static void test_documented_layout(void)
{
    struct token_key key;
    CHECK(token_key_from_secret(&key, "layout"));
    static const unsigned char payload[] = {
        0x01,                   /* version */
        0xac, 0x02,             /* issued_at 300 = 0b10_0101100 in LEB128 */
        0x03, 'a', 'b', 'c',    /* conn id */
        0x01, 'u',              /* user */
        0x02, 0x01, 'H', 0x02, 'h', '2', /* two hubs */
    };
    char expected[128];
    forge(&key, payload, sizeof payload, expected);

    struct span hubs[] = { SPAN_LIT("H"), SPAN_LIT("h2") };
    struct buf token;
    buf_init(&token);
    CHECK(conn_token_mint(&key, SPAN_LIT("abc"), SPAN_LIT("u"), hubs, 2, 300, &token));
    CHECK_BYTES(token.data, token.len, expected);
    buf_free(&token);

    /* And a token built by hand from the layout verifies. */
    struct conn_token_claims c;
    CHECK_EQ_INT(conn_token_verify(&key, span_from_cstr(expected), &c, NULL), PROTO_OK);
    CHECK_EQ_INT(c.issued_at_ms, 300);
    CHECK_BYTES(c.conn_id.ptr, c.conn_id.len, "abc");
    CHECK_EQ_INT(c.hub_count, 2);
    conn_token_claims_free(&c);
}

static void test_tampering(void)
{
    struct token_key key, other;
    CHECK(token_key_generate(&key));
    CHECK(token_key_generate(&other));
    struct span hubs[] = { SPAN_LIT("ChatHub"), SPAN_LIT("Admin") };
    struct buf token;
    buf_init(&token);
    CHECK(conn_token_mint(&key, SPAN_LIT("lO-PZ9Xs7AYT3Y2vG0zLhw"), SPAN_LIT(UNICODE_USER), hubs, 2, 1718000000123ull,
                          &token));
    const size_t n = token.len;
    char text[CONN_TOKEN_MAX_CHARS + 16];
    memcpy(text, token.data, n);
    CHECK_EQ_INT(verify_text(&key, text, n), PROTO_OK);

    /* Wrong key. */
    struct proto_error err = { 0 };
    struct conn_token_claims c;
    CHECK_EQ_INT(conn_token_verify(&other, buf_span(&token), &c, &err), PROTO_ERR_VALUE);
    CHECK(err.detail && strstr(err.detail, "signature"));

    /* Every single character replaced by every other character: rejected. */
    size_t accepted = 0;
    static const char junk[] = "+/=.~ %\n\x00\x80\xff";
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof B64URL - 1 + sizeof junk - 1; k++) {
            char r = k < sizeof B64URL - 1 ? B64URL[k] : junk[k - (sizeof B64URL - 1)];
            if (r == token.data[i])
                continue;
            text[i] = r;
            accepted += verify_text(&key, text, n) == PROTO_OK;
        }
        text[i] = token.data[i];
    }
    CHECK_EQ_INT(accepted, 0);

    /* Every bit of the decoded bytes flipped and re-encoded canonically, so
     * only the tag can catch it (the version byte has its own check). */
    unsigned char raw[CONN_TOKEN_MAX_CHARS];
    long raw_len = test_b64url_decode(token.data, n, raw);
    CHECK(raw_len > 16);
    accepted = 0;
    size_t wrong_status = 0;
    for (long i = 0; i < raw_len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            raw[i] ^= (unsigned char)(1u << bit);
            size_t len = test_b64url_encode(raw, (size_t)raw_len, text);
            enum proto_status st = conn_token_verify(&key, span_make(text, len), &c, &err);
            accepted += st == PROTO_OK;
            if (st == PROTO_OK)
                conn_token_claims_free(&c);
            else if (i > 0 && !(st == PROTO_ERR_VALUE && strstr(err.detail, "signature")))
                wrong_status++;
            raw[i] ^= (unsigned char)(1u << bit);
        }
    }
    CHECK_EQ_INT(accepted, 0);
    CHECK_EQ_INT(wrong_status, 0);

    /* Truncated to every shorter length; extended by every character, and
     * by a whole valid-looking block. */
    for (size_t len = 0; len < n; len++)
        CHECK(verify_text(&key, token.data, len) != PROTO_OK);
    memcpy(text, token.data, n);
    for (size_t k = 0; k < sizeof B64URL - 1; k++) {
        text[n] = B64URL[k];
        CHECK(verify_text(&key, text, n + 1) != PROTO_OK);
        text[n + 1] = 'A';
        CHECK(verify_text(&key, text, n + 2) != PROTO_OK);
    }
    memcpy(text + n, "AAAA", 4);
    CHECK(verify_text(&key, text, n + 4) != PROTO_OK);
    /* Decoded bytes cut or extended, re-encoded canonically. */
    for (long len = 0; len < raw_len; len++) {
        size_t tl = test_b64url_encode(raw, (size_t)len, text);
        CHECK(verify_text(&key, text, tl) != PROTO_OK);
    }
    raw[raw_len] = 0;
    size_t tl = test_b64url_encode(raw, (size_t)raw_len + 1, text);
    CHECK(verify_text(&key, text, tl) != PROTO_OK);
    buf_free(&token);
}

static void test_rejections_with_details(void)
{
    struct token_key key;
    CHECK(token_key_generate(&key));
    struct conn_token_claims c;
    struct proto_error err;
    char text[CONN_TOKEN_MAX_CHARS + 2];

    err.detail = NULL;
    CHECK_EQ_INT(conn_token_verify(&key, SPAN_NONE, &c, &err), PROTO_ERR_MISSING);
    CHECK(err.detail != NULL);
    CHECK_EQ_INT(conn_token_verify(&key, SPAN_LIT(""), &c, &err), PROTO_ERR_MISSING);
    memset(text, 'A', sizeof text);
    CHECK_EQ_INT(conn_token_verify(&key, span_make(text, CONN_TOKEN_MAX_CHARS + 1), &c, &err), PROTO_ERR_TOO_LARGE);
    CHECK_EQ_INT(conn_token_verify(&key, SPAN_LIT("abc+def"), &c, &err), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(conn_token_verify(&key, SPAN_LIT("abcdef=="), &c, &err), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(conn_token_verify(&key, SPAN_LIT("abcde"), &c, &err), PROTO_ERR_SYNTAX); /* 5 chars: no byte count */
    CHECK_EQ_INT(conn_token_verify(&key, SPAN_LIT("AQ"), &c, &err), PROTO_ERR_SYNTAX);    /* 1 byte: too short */
    /* "AR" decodes to the same byte as "AQ" (unused low bits set): not canonical. */
    CHECK_EQ_INT(conn_token_verify(&key, SPAN_LIT("AR"), &c, &err), PROTO_ERR_SYNTAX);
    CHECK(strstr(err.detail, "canonical") != NULL);

    /* Correctly tagged but a version this build does not know. */
    unsigned char v2[] = { 0x02, 0x00, 0x01, 'c', 0x00, 0x00 };
    size_t len = forge(&key, v2, sizeof v2, text);
    CHECK_EQ_INT(conn_token_verify(&key, span_make(text, len), &c, &err), PROTO_ERR_VALUE);
    CHECK(strstr(err.detail, "version") != NULL);

    /* Correctly tagged version 1 payloads that break the layout. */
    static const struct {
        unsigned char bytes[8];
        size_t len;
    } bad[] = {
        { { 0x01, 0x00, 0x01, 'c', 0x00, 0x00, 0x00 }, 7 }, /* trailing byte */
        { { 0x01, 0x00, 0x01, 'c', 0x00 }, 5 },             /* hub count missing */
        { { 0x01, 0x80, 0x00, 0x01, 'c', 0x00, 0x00 }, 7 }, /* overlong varint */
        { { 0x01, 0x00, 0x00, 0x00, 0x00 }, 5 },            /* empty conn id */
        { { 0x01, 0x00, 0x01, 'c', 0x00, 0x21 }, 6 },       /* 33 hubs */
        { { 0x01, 0x00, 0x01, 'c', 0x00, 0x01, 0x05, 'h' }, 8 }, /* hub runs past the end */
        { { 0x01 }, 1 },                                    /* nothing but the version */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        len = forge(&key, bad[i].bytes, bad[i].len, text);
        CHECK_EQ_INT(conn_token_verify(&key, span_make(text, len), &c, &err), PROTO_ERR_SYNTAX);
        CHECK(c.storage == NULL);
    }
    /* The same layout without the defects is accepted (so the above fail for
     * the reason given, not for some other one). */
    unsigned char good[] = { 0x01, 0x00, 0x01, 'c', 0x00, 0x00 };
    len = forge(&key, good, sizeof good, text);
    CHECK_EQ_INT(verify_text(&key, text, len), PROTO_OK);
}

/* Tokens of random content use only the URL-safe alphabet, and really do
 * use the two characters that differ from standard base64. */
static void test_alphabet(void)
{
    struct token_key key;
    CHECK(token_key_generate(&key));
    bool saw_dash = false, saw_underscore = false, clean = true;
    uint64_t state = 42;
    for (int i = 0; i < 500; i++) {
        char user[40];
        for (size_t j = 0; j < sizeof user; j++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            user[j] = (char)(0x20 + (state >> 33) % 0x5f);
        }
        char id[CONN_ID_LEN + 1];
        CHECK(conn_id_generate(id));
        struct buf token;
        buf_init(&token);
        CHECK(conn_token_mint(&key, span_from_cstr(id), span_make(user, sizeof user), NULL, 0, state, &token));
        clean = clean && all_b64url(token.data, token.len);
        saw_dash = saw_dash || memchr(token.data, '-', token.len);
        saw_underscore = saw_underscore || memchr(token.data, '_', token.len);
        buf_free(&token);
    }
    CHECK(clean);
    CHECK(saw_dash && saw_underscore);
}

/* Signed ids for negotiate v0: the layout of conn_token.h, built here. */
static void test_signed_ids(void)
{
    struct token_key key, other;
    memset(key.bytes, 7, sizeof key.bytes);
    memset(other.bytes, 8, sizeof other.bytes);
    struct span hub = span_from_cstr("chat"), user = span_from_cstr("alice");
    char id[CONN_ID_LEN + 1];
    CHECK(conn_id_mint_signed(&key, hub, user, 0x1234567890ull, id));
    CHECK(strlen(id) == CONN_ID_LEN && all_b64url(id, CONN_ID_LEN));
    uint32_t age = 99;
    CHECK(conn_id_verify_signed(&key, span_from_cstr(id), hub, user, 0x1234567890ull + 5, &age));
    CHECK(age == 5);
    /* Expected bytes: seconds mod 2^32 big-endian, 4 random, HMAC("conn-id-v0" || head || 4 "chat" || 5 "alice")[:8]. */
    unsigned char raw[16], msg[64], mac[32];
    unsigned int mac_len = 0;
    CHECK(test_b64url_decode(id, CONN_ID_LEN, raw) == 16);
    CHECK(raw[0] == 0x34 && raw[1] == 0x56 && raw[2] == 0x78 && raw[3] == 0x90);
    size_t n = 0;
    memcpy(msg, "conn-id-v0", 10);
    n = 10;
    memcpy(msg + n, raw, 8);
    n += 8;
    msg[n++] = 4;
    memcpy(msg + n, "chat", 4);
    n += 4;
    msg[n++] = 5;
    memcpy(msg + n, "alice", 5);
    n += 5;
    HMAC(EVP_sha256(), key.bytes, TOKEN_KEY_LEN, msg, n, mac, &mac_len);
    CHECK(memcmp(raw + 8, mac, 8) == 0);
    /* Another key, hub or user, a changed byte, a plain random id: refused. */
    CHECK(!conn_id_verify_signed(&other, span_from_cstr(id), hub, user, 0x1234567890ull, &age));
    CHECK(!conn_id_verify_signed(&key, span_from_cstr(id), span_from_cstr("chat2"), user, 0x1234567890ull, &age));
    CHECK(!conn_id_verify_signed(&key, span_from_cstr(id), hub, span_from_cstr(""), 0x1234567890ull, &age));
    char bad[CONN_ID_LEN + 1];
    memcpy(bad, id, sizeof bad);
    bad[5] = bad[5] == 'A' ? 'B' : 'A';
    CHECK(!conn_id_verify_signed(&key, span_from_cstr(bad), hub, user, 0x1234567890ull, &age));
    char plain[CONN_ID_LEN + 1];
    CHECK(conn_id_generate(plain));
    CHECK(!conn_id_verify_signed(&key, span_from_cstr(plain), hub, user, 0x1234567890ull, &age));
    CHECK(!conn_id_verify_signed(&key, span_make(id, CONN_ID_LEN - 1), hub, user, 0x1234567890ull, &age));
    /* Age across the 2^32-second wrap. */
    CHECK(conn_id_mint_signed(&key, hub, user, 0xFFFFFFFFull, id));
    CHECK(conn_id_verify_signed(&key, span_from_cstr(id), hub, user, 0x100000002ull, &age) && age == 3);
}

int main(void)
{
    test_conn_id();
    test_keys();
    test_round_trip();
    test_documented_layout();
    test_tampering();
    test_rejections_with_details();
    test_alphabet();
    test_signed_ids();
    return test_main_result("test_conn_token");
}
