/* test_service_token.c - service-mode JWTs: the server token captured from
 * the 1.34.0 SDK (specs/service-protocol.md appendix C), tokens minted here
 * the way the SDK mints client tokens, and every way a token can be wrong. */
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "check.h"
#include "containers/buf.h"
#include "hub/service_token.h"

#define CHECK_SPAN(s, text) CHECK_BYTES((s).ptr, (s).len, text)

/* Appendix C: AccessKey "c2VjcmV0LWtleQ==" used as its literal UTF-8 bytes. */
static const char sdk_key[] = "c2VjcmV0LWtleQ==";
static const char sdk_token[] =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6IjExNzMwOTE4OTIifQ."
    "eyJuYW1laWQiOiJ2bV9iMmUzNDk1ZDdlYjM0ODAxYTkxMjc0MjA2NzdkODM0MiIsIm5iZiI6MTc5NjExNzI0NSwiZXhwIjox"
    "Nzk2MTIwODQ1LCJpYXQiOjE3OTYxMTcyNDUsImlzcyI6ImF6dXJlLXNpZ25hbHIiLCJhdWQiOiJodHRwOi8vMTI3LjAuMC4x"
    "L3NlcnZlci8_aHViPW9yY2hhcmQifQ."
    "mC_t5Zcvb4d6-SS2aujMXySINxHXCRfwCUk-NX99y70";
#define SDK_IAT 1796117245
#define SDK_EXP 1796120845

static struct svc_token_check server_check(const struct span *keys, size_t n, int64_t now)
{
    return (struct svc_token_check){ keys, n, now, SVC_TOKEN_DEFAULT_SKEW, SVC_TOKEN_SERVER,
                                     SPAN_LIT("orchard") };
}

static enum proto_status verify(const char *token, const struct svc_token_check *c,
                                struct proto_error *err)
{
    struct svc_token t;
    enum proto_status st = svc_token_verify(span_from_cstr(token), c, &t, err);
    if (st != PROTO_OK)
        CHECK(t.claims == NULL && t.storage == NULL && t.claim_count == 0);
    svc_token_free(&t);
    return st;
}

static void test_sdk_server_token(void)
{
    struct span keys[] = { SPAN_LIT("another-key"), span_from_cstr(sdk_key) };
    struct svc_token_check c = server_check(keys, 2, SDK_IAT + 10);
    struct svc_token t;
    struct proto_error err = { 0 };
    CHECK_EQ_INT(svc_token_verify(span_from_cstr(sdk_token), &c, &t, &err), PROTO_OK);
    CHECK_EQ_INT(t.key_index, 1); /* the second key: rotation */
    CHECK_EQ_INT(t.alg, SVC_ALG_HS256);
    CHECK_EQ_INT(t.exp, SDK_EXP);
    CHECK_EQ_INT(t.nbf, SDK_IAT);
    CHECK_SPAN(t.name_id, "vm_b2e3495d7eb34801a9127420677d8342");
    CHECK(!t.user_id.ptr);
    CHECK_EQ_INT(t.claim_count, 6); /* nameid nbf exp iat iss aud */
    CHECK_SPAN(t.claims[0].type, "nameid");
    CHECK_SPAN(t.claims[1].value, "1796117245");
    CHECK_SPAN(t.claims[5].value, "http://127.0.0.1/server/?hub=orchard");
    svc_token_free(&t);

    /* the hub is compared ASCII case-insensitively (the class is Orchard) */
    c.hub = SPAN_LIT("Orchard");
    CHECK_EQ_INT(verify(sdk_token, &c, NULL), PROTO_OK);
    /* not with the base64-decoded key ("secret-key") */
    struct span decoded[] = { SPAN_LIT("secret-key") };
    c = server_check(decoded, 1, SDK_IAT + 10);
    CHECK_EQ_INT(verify(sdk_token, &c, &err), PROTO_ERR_VALUE);
    /* another hub, a client audience */
    c = server_check(keys, 2, SDK_IAT + 10);
    c.hub = SPAN_LIT("orchard2");
    CHECK_EQ_INT(verify(sdk_token, &c, NULL), PROTO_ERR_VALUE);
    c.hub = SPAN_LIT("orchar");
    CHECK_EQ_INT(verify(sdk_token, &c, NULL), PROTO_ERR_VALUE);
    c = server_check(keys, 2, SDK_IAT + 10);
    c.kind = SVC_TOKEN_CLIENT;
    CHECK_EQ_INT(verify(sdk_token, &c, NULL), PROTO_ERR_VALUE);
    /* time: expired (beyond the skew), not yet valid (beyond the skew), and inside it */
    c = server_check(keys, 2, SDK_EXP + SVC_TOKEN_DEFAULT_SKEW);
    CHECK_EQ_INT(verify(sdk_token, &c, &err), PROTO_ERR_VALUE);
    CHECK(strcmp(err.detail, "token expired") == 0);
    c.now = SDK_EXP + SVC_TOKEN_DEFAULT_SKEW - 1;
    CHECK_EQ_INT(verify(sdk_token, &c, NULL), PROTO_OK);
    c.now = SDK_IAT - SVC_TOKEN_DEFAULT_SKEW - 1;
    CHECK_EQ_INT(verify(sdk_token, &c, &err), PROTO_ERR_VALUE);
    CHECK(strcmp(err.detail, "token not valid yet") == 0);
    c.now = SDK_IAT - SVC_TOKEN_DEFAULT_SKEW;
    CHECK_EQ_INT(verify(sdk_token, &c, NULL), PROTO_OK);
    /* no keys */
    c.key_count = 0;
    CHECK_EQ_INT(verify(sdk_token, &c, NULL), PROTO_ERR_VALUE);
}

/* Changing any one character breaks the token (signature bytes and their
 * last, partly unused character included: only canonical base64url counts). */
static void test_tampering(void)
{
    struct span keys[] = { span_from_cstr(sdk_key) };
    struct svc_token_check c = server_check(keys, 1, SDK_IAT + 10);
    size_t n = strlen(sdk_token);
    char *copy = malloc(n + 1);
    static const char alphabet[] = "AQgw-_z9.";
    int accepted = 0;
    for (size_t i = 0; i < n; i++) {
        for (const char *a = alphabet; *a; a++) {
            if (sdk_token[i] == *a)
                continue;
            memcpy(copy, sdk_token, n + 1);
            copy[i] = *a;
            struct proto_error err = { 0 };
            if (verify(copy, &c, &err) == PROTO_OK) {
                accepted++;
                fprintf(stderr, "tampered token accepted: position %zu -> %c\n", i, *a);
            } else {
                CHECK(err.detail != NULL);
            }
        }
    }
    CHECK_EQ_INT(accepted, 0);
    /* truncated at every length */
    for (size_t cut = 0; cut < n; cut++) {
        memcpy(copy, sdk_token, cut);
        copy[cut] = '\0';
        CHECK(verify(copy, &c, NULL) != PROTO_OK);
    }
    free(copy);
}

/* Mints a token over raw header and payload JSON with the given key. */
static char *mint_raw(const char *header, const char *payload, const char *key, const char *alg_md)
{
    struct buf out;
    buf_init(&out);
    /* reuse the signer's encoding through a token and swap parts: simpler to
     * encode here with OpenSSL as well */
    unsigned char mac[64];
    unsigned mac_len = 0;
    char tmp[8192];
    int n;
    n = EVP_EncodeBlock((unsigned char *)tmp, (const unsigned char *)header, (int)strlen(header));
    for (int i = 0; i < n; i++)
        if (tmp[i] != '=')
            buf_append_byte(&out, tmp[i] == '+' ? '-' : tmp[i] == '/' ? '_' : tmp[i]);
    buf_append_byte(&out, '.');
    n = EVP_EncodeBlock((unsigned char *)tmp, (const unsigned char *)payload, (int)strlen(payload));
    for (int i = 0; i < n; i++)
        if (tmp[i] != '=')
            buf_append_byte(&out, tmp[i] == '+' ? '-' : tmp[i] == '/' ? '_' : tmp[i]);
    HMAC(strcmp(alg_md, "sha512") == 0 ? EVP_sha512() : EVP_sha256(), key, (int)strlen(key),
         (const unsigned char *)out.data, out.len, mac, &mac_len);
    buf_append_byte(&out, '.');
    n = EVP_EncodeBlock((unsigned char *)tmp, mac, (int)mac_len);
    for (int i = 0; i < n; i++)
        if (tmp[i] != '=')
            buf_append_byte(&out, tmp[i] == '+' ? '-' : tmp[i] == '/' ? '_' : tmp[i]);
    buf_append_byte(&out, '\0');
    return out.data;
}

#define HS256 "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"
#define AUD_CLIENT "\"aud\":\"http://relay.example/client/?hub=chat\""

static struct svc_token_check client_check(const struct span *keys, size_t n)
{
    return (struct svc_token_check){ keys, n, 1000, 60, SVC_TOKEN_CLIENT, SPAN_LIT("chat") };
}

static void test_hostile_tokens(void)
{
    struct span keys[] = { SPAN_LIT("k") };
    struct svc_token_check c = client_check(keys, 1);
    struct proto_error err;
    struct {
        const char *header, *payload;
        enum proto_status expect;
    } cases[] = {
        { HS256, "{\"exp\":2000," AUD_CLIENT "}", PROTO_OK },
        { "{\"alg\":\"none\",\"typ\":\"JWT\"}", "{\"exp\":2000," AUD_CLIENT "}", PROTO_ERR_VALUE },
        { "{\"alg\":\"RS256\"}", "{\"exp\":2000," AUD_CLIENT "}", PROTO_ERR_VALUE },
        { "{\"typ\":\"JWT\"}", "{\"exp\":2000," AUD_CLIENT "}", PROTO_ERR_SYNTAX },
        { "[1]", "{\"exp\":2000," AUD_CLIENT "}", PROTO_ERR_SYNTAX },
        { "{\"alg\":\"HS256\",\"alg\":\"none\"}", "{\"exp\":2000," AUD_CLIENT "}", PROTO_ERR_SYNTAX },
        { HS256, "{\"exp\":2000," AUD_CLIENT, PROTO_ERR_SYNTAX },             /* malformed JSON */
        { HS256, "[\"exp\",2000]", PROTO_ERR_SYNTAX },
        { HS256, "{" AUD_CLIENT "}", PROTO_ERR_SYNTAX },                        /* no exp */
        { HS256, "{\"exp\":\"2000\"," AUD_CLIENT "}", PROTO_ERR_SYNTAX },       /* exp a string */
        { HS256, "{\"exp\":2000,\"exp\":3000," AUD_CLIENT "}", PROTO_ERR_SYNTAX }, /* duplicate claims */
        { HS256, "{\"exp\":2000,\"nbf\":\"x\"," AUD_CLIENT "}", PROTO_ERR_SYNTAX },
        { HS256, "{\"exp\":940," AUD_CLIENT "}", PROTO_ERR_VALUE },             /* expired */
        { HS256, "{\"exp\":941," AUD_CLIENT "}", PROTO_OK },                   /* inside the skew */
        { HS256, "{\"exp\":2000,\"nbf\":1061," AUD_CLIENT "}", PROTO_ERR_VALUE },
        { HS256, "{\"exp\":2000,\"nbf\":1060," AUD_CLIENT "}", PROTO_OK },
        { HS256, "{\"exp\":2000}", PROTO_ERR_VALUE },                          /* no aud */
        { HS256, "{\"exp\":2000,\"aud\":\"http://relay.example/server/?hub=chat\"}", PROTO_ERR_VALUE },
        { HS256, "{\"exp\":2000,\"aud\":\"http://relay.example/client/?hub=chats\"}", PROTO_ERR_VALUE },
        { HS256, "{\"exp\":2000,\"aud\":\"http://relay.example/client/\"}", PROTO_ERR_VALUE },
        { HS256, "{\"exp\":2000,\"aud\":\"relay.example/client/?hub=chat\"}", PROTO_ERR_VALUE },
        { HS256, "{\"exp\":2000,\"aud\":\"http://h:8080/pfx/client/?x=1&hub=CHAT&y\"}", PROTO_OK },
        { HS256, "{\"exp\":2000,\"aud\":[\"x\",\"http://h/client/?hub=chat\"]}", PROTO_OK },
        { HS256, "{\"exp\":2000,\"aud\":7}", PROTO_ERR_VALUE },
        { HS256, "{\"exp\":2000,\"asrs.s.uid\":\"a\\u0000b\"," AUD_CLIENT "}", PROTO_ERR_SYNTAX },
        { HS256, "{\"exp\":1e300," AUD_CLIENT "}", PROTO_ERR_SYNTAX },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *token = mint_raw(cases[i].header, cases[i].payload, "k", "sha256");
        err = (struct proto_error){ 0 };
        enum proto_status st = verify(token, &c, &err);
        check_count++;
        if (st != cases[i].expect) {
            check_failures++;
            fprintf(stderr, "case %zu (%s): got %s (%s)\n", i, cases[i].payload, proto_status_name(st),
                    err.detail ? err.detail : "");
        }
        /* the wrong key never verifies */
        struct span wrong[] = { SPAN_LIT("K") };
        struct svc_token_check cw = client_check(wrong, 1);
        if (cases[i].expect == PROTO_OK)
            CHECK_EQ_INT(verify(token, &cw, NULL), PROTO_ERR_VALUE);
        free(token);
    }

    /* HS512 verifies; an HS512 header over an HS256 MAC does not */
    char *t512 = mint_raw("{\"alg\":\"HS512\"}", "{\"exp\":2000," AUD_CLIENT "}", "k", "sha512");
    CHECK_EQ_INT(verify(t512, &c, NULL), PROTO_OK);
    free(t512);
    char *mixed = mint_raw("{\"alg\":\"HS512\"}", "{\"exp\":2000," AUD_CLIENT "}", "k", "sha256");
    CHECK_EQ_INT(verify(mixed, &c, NULL), PROTO_ERR_VALUE);
    free(mixed);

    /* shape */
    CHECK_EQ_INT(verify("", &c, NULL), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(verify("a.b", &c, NULL), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(verify("a.b.c.d", &c, NULL), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(verify("eyJhbGciOiJIUzI1NiJ9.e30.", &c, NULL), PROTO_ERR_VALUE); /* empty signature */
    CHECK_EQ_INT(verify("eyJhbGciOiJIUzI1NiJ9=.e30.AAAA", &c, NULL), PROTO_ERR_SYNTAX);
    /* oversized: refused before any decoding */
    char *big = malloc(SVC_TOKEN_MAX_CHARS + 2);
    memset(big, 'A', SVC_TOKEN_MAX_CHARS + 1);
    big[SVC_TOKEN_MAX_CHARS + 1] = '\0';
    CHECK_EQ_INT(verify(big, &c, NULL), PROTO_ERR_TOO_LARGE);
    free(big);
}

/* A client token as the SDK mints it (appendix C negotiate): signed here,
 * verified, claims flattened, mapped for OpenConnection. */
static void test_client_token_round_trip(void)
{
    struct svc_claim claims[] = {
        { SPAN_LIT("asrs.s.uid"), SPAN_LIT("alice") },
        { SPAN_LIT("nameid"), SPAN_LIT("alice") },
        { SPAN_LIT("role"), SPAN_LIT("admin") },
        { SPAN_LIT("orchard.user"), SPAN_LIT("alice") },
        { SPAN_LIT("role"), SPAN_LIT("user") },
        { SPAN_LIT("asrs.u.sub"), SPAN_LIT("x") },
    };
    struct buf aud, token;
    buf_init(&aud);
    buf_init(&token);
    CHECK(svc_token_audience(&aud, SPAN_LIT("http://127.0.0.1"), SVC_TOKEN_CLIENT, SPAN_LIT("orchard")));
    CHECK_BYTES(aud.data, aud.len, "http://127.0.0.1/client/?hub=orchard");
    CHECK_EQ_INT(svc_token_sign(&token, SPAN_LIT("secret"), SVC_ALG_HS256, claims, 6, 5000,
                                SVC_TOKEN_DEFAULT_LIFETIME, buf_span(&aud), NULL),
                 PROTO_OK);
    CHECK(memchr(token.data, '=', token.len) == NULL);

    struct span keys[] = { SPAN_LIT("secret") };
    struct svc_token_check c = { keys, 1, 5001, 0, SVC_TOKEN_CLIENT, SPAN_LIT("orchard") };
    struct svc_token t;
    CHECK_EQ_INT(svc_token_verify(buf_span(&token), &c, &t, NULL), PROTO_OK);
    CHECK_SPAN(t.user_id, "alice");
    CHECK_EQ_INT(t.exp, 5000 + 3600);
    /* claims: grouped by type (repeated role -> array -> two claims), then the registered ones */
    static const char *const expect[][2] = {
        { "asrs.s.uid", "alice" }, { "nameid", "alice" }, { "role", "admin" }, { "role", "user" },
        { "orchard.user", "alice" }, { "asrs.u.sub", "x" }, { "nbf", "5000" }, { "exp", "8600" },
        { "iat", "5000" }, { "iss", "azure-signalr" }, { "aud", "http://127.0.0.1/client/?hub=orchard" },
    };
    CHECK_EQ_INT(t.claim_count, 11);
    for (size_t i = 0; i < t.claim_count && i < 11; i++) {
        CHECK(span_eq_cstr(t.claims[i].type, expect[i][0]));
        CHECK(span_eq_cstr(t.claims[i].value, expect[i][1]));
    }
    svc_token_map_inbound(&t);
    CHECK_SPAN(t.claims[0].type, "asrs.s.uid");
    CHECK_SPAN(t.claims[1].type, "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier");
    CHECK_SPAN(t.claims[2].type, "http://schemas.microsoft.com/ws/2008/06/identity/claims/role");
    CHECK_SPAN(t.claims[4].type, "orchard.user");
    CHECK_SPAN(t.claims[5].type, "asrs.u.sub");
    CHECK_SPAN(t.claims[10].type, "aud");
    CHECK_SPAN(t.user_id, "alice"); /* still valid: values never move */
    svc_token_free(&t);

    CHECK(svc_claim_type_inbound(SPAN_LIT("unique_name")) != NULL);
    CHECK(svc_claim_type_inbound(SPAN_LIT("sub")) != NULL);
    CHECK(svc_claim_type_inbound(SPAN_LIT("Role")) == NULL);
    buf_free(&aud);
    buf_free(&token);
}

/* Non-string claim values: numbers and booleans as JSON text, arrays
 * flattened, nested objects as JSON, null dropped. */
static void test_claim_values(void)
{
    struct span keys[] = { SPAN_LIT("k") };
    struct svc_token_check c = client_check(keys, 1);
    char *token = mint_raw(HS256,
                           "{\"n\":42,\"b\":true,\"a\":[\"x\",2,false],\"o\":{\"k\":1},\"z\":null,"
                           "\"exp\":2000," AUD_CLIENT "}",
                           "k", "sha256");
    struct svc_token t;
    CHECK_EQ_INT(svc_token_verify(span_from_cstr(token), &c, &t, NULL), PROTO_OK);
    static const char *const expect[][2] = {
        { "n", "42" }, { "b", "true" }, { "a", "x" }, { "a", "2" }, { "a", "false" },
        { "o", "{\"k\":1}" }, { "exp", "2000" }, { "aud", "http://relay.example/client/?hub=chat" },
    };
    CHECK_EQ_INT(t.claim_count, 8);
    for (size_t i = 0; i < t.claim_count && i < 8; i++)
        CHECK(span_eq_cstr(t.claims[i].type, expect[i][0]) && span_eq_cstr(t.claims[i].value, expect[i][1]));
    svc_token_free(&t);
    free(token);
}

int main(void)
{
    test_sdk_server_token();
    test_tampering();
    test_hostile_tokens();
    test_client_token_round_trip();
    test_claim_values();
    return test_main_result("test_service_token");
}
