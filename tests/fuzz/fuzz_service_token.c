/* fuzz_service_token.c - service-mode JWT verification and signing.
 *
 * Three properties per input:
 *   - the input verified as a token (client audience, key "k") never crashes
 *     or leaks, fails with a detail and an empty token, and when it passes
 *     its claims lie in the token's own storage and its times hold;
 *   - the input read as claims (type NUL value NUL ...) signed with
 *     svc_token_sign verifies and gives back exactly those claims, grouped by
 *     type in order of first appearance (as the SDK writes repeated types),
 *     followed by nbf, exp, iat, iss, aud;
 *   - the input as the payload JSON of a correctly signed HS256 token (so the
 *     fuzzer reaches the claims parser past the signature): verification
 *     never crashes or leaks, and what it accepts is unexpired with every
 *     claim present. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "containers/buf.h"
#include "hub/service_token.h"

#define NOW 1796117245
#define MAX_CLAIMS 32

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_service_token: property violated: %s\n", what);
    abort();
}

static void verify_input(const char *p, size_t size)
{
    struct span keys[] = { SPAN_LIT("k") };
    struct svc_token_check c = { keys, 1, NOW, 60, SVC_TOKEN_CLIENT, SPAN_LIT("chat") };
    struct svc_token t;
    struct proto_error err = { 0 };
    enum proto_status st = svc_token_verify(span_make(p, size), &c, &t, &err);
    if (st != PROTO_OK) {
        if (!err.detail || t.claims || t.storage || t.claim_count)
            fail("failure without detail or with claims");
        return;
    }
    if (t.exp <= NOW - 60)
        fail("expired token accepted");
    for (size_t i = 0; i < t.claim_count; i++)
        if (!t.claims[i].type.ptr || !t.claims[i].value.ptr)
            fail("claim without type or value");
    svc_token_map_inbound(&t);
    svc_token_free(&t);
}

static bool is_registered(struct span type)
{
    static const char *const names[] = { "nbf", "exp", "iat", "iss", "aud" };
    for (size_t i = 0; i < 5; i++)
        if (span_eq_cstr(type, names[i]))
            return true;
    return false;
}

static void sign_and_verify(const char *p, size_t size)
{
    struct svc_claim claims[MAX_CLAIMS];
    size_t n = 0, pos = 0;
    while (n < MAX_CLAIMS && pos < size) {
        const char *t_end = memchr(p + pos, '\0', size - pos);
        if (!t_end)
            break;
        const char *v = t_end + 1;
        const char *v_end = memchr(v, '\0', (size_t)(p + size - v));
        if (!v_end)
            break;
        struct span type = span_make(p + pos, (size_t)(t_end - p - pos));
        struct span value = span_make(v, (size_t)(v_end - v));
        pos = (size_t)(v_end - p) + 1;
        if (!type.len || is_registered(type) || !utf8_is_valid(type.ptr, type.len) ||
            !utf8_is_valid(value.ptr, value.len))
            return;
        claims[n].type = type;
        claims[n].value = value;
        n++;
    }
    struct buf token;
    buf_init(&token);
    struct span aud = SPAN_LIT("http://relay.example/client/?hub=chat");
    if (svc_token_sign(&token, SPAN_LIT("k"), size % 2 ? SVC_ALG_HS512 : SVC_ALG_HS256, claims, n,
                       NOW, 3600, aud, NULL) != PROTO_OK)
        fail("signing failed");
    struct span keys[] = { SPAN_LIT("other"), SPAN_LIT("k") };
    struct svc_token_check c = { keys, 2, NOW, 0, SVC_TOKEN_CLIENT, SPAN_LIT("CHAT") };
    struct svc_token t;
    struct proto_error err = { 0 };
    enum proto_status st = svc_token_verify(buf_span(&token), &c, &t, &err);
    if (token.len > SVC_TOKEN_MAX_CHARS) {
        if (st != PROTO_ERR_TOO_LARGE)
            fail("oversized token not refused");
        buf_free(&token);
        return;
    }
    if (st != PROTO_OK) {
        fprintf(stderr, "%s\n", err.detail);
        fail("a signed token does not verify");
    }
    /* expected order: each type at its first appearance, with all its values */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = span_eq(claims[j].type, claims[i].type);
        if (seen)
            continue;
        for (size_t j = i; j < n; j++) {
            if (!span_eq(claims[j].type, claims[i].type))
                continue;
            if (k >= t.claim_count || !span_eq(t.claims[k].type, claims[j].type) ||
                !span_eq(t.claims[k].value, claims[j].value))
                fail("claims differ after sign and verify");
            k++;
        }
    }
    if (t.claim_count != k + 5 || t.exp != NOW + 3600 || t.nbf != NOW || t.key_index != 1)
        fail("registered claims");
    svc_token_free(&t);
    buf_free(&token);
}

static void append_b64url(struct buf *out, const unsigned char *in, size_t n)
{
    char *text = malloc((n + 2) / 3 * 4 + 1);
    int len = EVP_EncodeBlock((unsigned char *)text, in, (int)n);
    for (int i = 0; i < len; i++)
        if (text[i] != '=')
            buf_append_byte(out, text[i] == '+' ? '-' : text[i] == '/' ? '_' : text[i]);
    free(text);
}

static void signed_payload(const char *p, size_t size)
{
    static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    struct buf token;
    buf_init(&token);
    append_b64url(&token, (const unsigned char *)header, sizeof header - 1);
    buf_append_byte(&token, '.');
    append_b64url(&token, (const unsigned char *)p, size);
    unsigned char mac[32];
    unsigned mac_len = 0;
    HMAC(EVP_sha256(), "k", 1, (const unsigned char *)token.data, token.len, mac, &mac_len);
    buf_append_byte(&token, '.');
    append_b64url(&token, mac, mac_len);
    verify_input(token.data, token.len);
    buf_free(&token);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    verify_input(p, size);
    sign_and_verify(p, size);
    if (size < 3000)
        signed_payload(p, size);
    return 0;
}
