/* fuzz_conn_token.c - properties of connection token verify and mint.
 *
 * Every input is used twice:
 *  1. as a token: verify must not crash, and if it accepts, minting the
 *     claims again must give back exactly the input (one spelling per token);
 *  2. as fields: [8 bytes issued_at, little-endian][1 byte hub count] then
 *     NUL-separated conn id, user and hub names. If mint accepts them, the
 *     token must be URL-safe and verify to the same fields, and every
 *     one-character change, truncation and extension of it must be refused.
 * The key is fixed so that seed tokens minted with it reach the accept path.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 20000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/conn_token.h"

#define FUZZ_SECRET "fuzz-conn-token"

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static const struct token_key *fuzz_key(void)
{
    static struct token_key key;
    static int ready;
    if (!ready) {
        if (!token_key_from_secret(&key, FUZZ_SECRET))
            abort();
        ready = 1;
    }
    return &key;
}

static void check_as_token(const struct token_key *key, const uint8_t *data, size_t size)
{
    struct conn_token_claims c;
    struct proto_error err = { PROTO_OK, NULL };
    enum proto_status st = conn_token_verify(key, span_make((const char *)data, size), &c, &err);
    if (st != PROTO_OK) {
        if (!proto_status_is_error(st) || !err.detail || c.storage)
            abort();
        return;
    }
    struct buf again;
    buf_init(&again);
    if (!conn_token_mint(key, c.conn_id, c.user, c.hubs, c.hub_count, c.issued_at_ms, &again))
        abort();
    if (again.len != size || memcmp(again.data, data, size) != 0)
        abort();
    buf_free(&again);
    conn_token_claims_free(&c);
}

static bool rejected(const struct token_key *key, const char *text, size_t len)
{
    struct conn_token_claims c;
    if (conn_token_verify(key, span_make(text, len), &c, NULL) == PROTO_OK) {
        conn_token_claims_free(&c);
        return false;
    }
    return true;
}

static void check_as_fields(const struct token_key *key, const uint8_t *data, size_t size)
{
    if (size < 9)
        return;
    uint64_t issued_at = 0;
    for (int i = 7; i >= 0; i--)
        issued_at = issued_at << 8 | data[i];
    size_t hub_count = data[8] % (CONN_TOKEN_MAX_HUBS + 2); /* sometimes one too many */
    struct span parts[2 + CONN_TOKEN_MAX_HUBS + 1];
    size_t nparts = 0, start = 9;
    for (size_t i = 9; i <= size && nparts < 2 + hub_count; i++) {
        if (i == size || data[i] == 0) {
            parts[nparts++] = span_make((const char *)data + start, i - start);
            start = i + 1;
        }
    }
    if (nparts < 2)
        return;
    hub_count = nparts - 2;

    struct buf token;
    buf_init(&token);
    if (!conn_token_mint(key, parts[0], parts[1], parts + 2, hub_count, issued_at, &token)) {
        if (token.len != 0)
            abort(); /* a refused mint leaves the buffer alone */
        buf_free(&token);
        return;
    }
    for (size_t i = 0; i < token.len; i++)
        if (!memchr(B64URL, token.data[i], sizeof B64URL - 1))
            abort();

    struct conn_token_claims c;
    if (conn_token_verify(key, buf_span(&token), &c, NULL) != PROTO_OK)
        abort();
    if (c.issued_at_ms != issued_at || !span_eq(c.conn_id, parts[0]) || !span_eq(c.user, parts[1]) ||
        c.hub_count != hub_count)
        abort();
    for (size_t i = 0; i < hub_count; i++)
        if (!span_eq(c.hubs[i], parts[2 + i]))
            abort();
    conn_token_claims_free(&c);

    /* Copies with one character changed (to its neighbour in the alphabet,
     * and to a character outside it), cut, or extended: all refused. Long
     * tokens are sampled to keep each input fast. */
    char *text = malloc(token.len + 2);
    if (!text)
        abort();
    memcpy(text, token.data, token.len);
    size_t step = token.len > 256 ? token.len / 64 : 1;
    for (size_t i = 0; i < token.len; i += step) {
        const char *at = memchr(B64URL, text[i], sizeof B64URL - 1);
        char original = text[i];
        text[i] = B64URL[(size_t)(at - B64URL + 1) % (sizeof B64URL - 1)];
        if (!rejected(key, text, token.len))
            abort();
        text[i] = '.';
        if (!rejected(key, text, token.len))
            abort();
        text[i] = original;
        if (!rejected(key, text, i))
            abort();
    }
    text[token.len] = 'A';
    if (!rejected(key, text, token.len + 1))
        abort();
    text[token.len + 1] = 'A';
    if (!rejected(key, text, token.len + 2))
        abort();
    free(text);
    buf_free(&token);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct token_key *key = fuzz_key();
    check_as_token(key, data, size);
    check_as_fields(key, data, size);
    return 0;
}
