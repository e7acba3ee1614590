/* conn_token.c - connection ids, token keys, token mint and verify
 * (format in conn_token.h). Randomness, hashing and MAC come from OpenSSL,
 * base64url from base64url.c; this file only lays out bytes. */
#include "hub/conn_token.h"

#include "hub/base64url.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#define CONN_ID_RANDOM_BYTES 16
#define VARINT_MAX_BYTES 10 /* ceil(64 / 7) */
#define MAX_PAYLOAD                                                                                      \
    (1 + VARINT_MAX_BYTES + 1 + CONN_TOKEN_MAX_ID_LEN + 2 + CONN_TOKEN_MAX_USER_LEN + 1 +                \
     CONN_TOKEN_MAX_HUBS * (2 + CONN_TOKEN_MAX_HUB_LEN))

_Static_assert((MAX_PAYLOAD + CONN_TOKEN_TAG_LEN + 2) / 3 * 4 <= CONN_TOKEN_MAX_CHARS,
               "CONN_TOKEN_MAX_CHARS must admit every token we mint");
_Static_assert(CONN_TOKEN_TAG_LEN <= 32, "the tag is a prefix of an HMAC-SHA256");

/* Connection ids and keys --------------------------------------------------- */

bool conn_id_generate(char out[CONN_ID_LEN + 1])
{
    unsigned char random[CONN_ID_RANDOM_BYTES];
    out[0] = '\0';
    if (RAND_bytes(random, sizeof random) != 1)
        return false;
    struct buf text;
    buf_init(&text);
    bool ok = base64url_append(&text, random, sizeof random) && text.len == CONN_ID_LEN;
    if (ok)
        memcpy(out, text.data, CONN_ID_LEN + 1);
    buf_free(&text);
    return ok;
}

bool token_key_generate(struct token_key *key)
{
    return RAND_bytes(key->bytes, sizeof key->bytes) == 1;
}

bool token_key_from_secret(struct token_key *key, const char *secret)
{
    static const char salt[] = "signalr-relay token key";
    static const char info[] = "conn-token v1";
    if (!secret || !*secret || strlen(secret) > INT32_MAX)
        return false;
    size_t out_len = sizeof key->bytes;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    bool ok = ctx && EVP_PKEY_derive_init(ctx) > 0 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
              EVP_PKEY_CTX_set1_hkdf_salt(ctx, (const unsigned char *)salt, (int)(sizeof salt - 1)) > 0 &&
              EVP_PKEY_CTX_set1_hkdf_key(ctx, (const unsigned char *)secret, (int)strlen(secret)) > 0 &&
              EVP_PKEY_CTX_add1_hkdf_info(ctx, (const unsigned char *)info, (int)(sizeof info - 1)) > 0 &&
              EVP_PKEY_derive(ctx, key->bytes, &out_len) > 0 && out_len == sizeof key->bytes;
    EVP_PKEY_CTX_free(ctx);
    if (!ok)
        token_key_clear(key);
    return ok;
}

void token_key_clear(struct token_key *key)
{
    OPENSSL_cleanse(key->bytes, sizeof key->bytes);
}

/* Payload encoding ----------------------------------------------------------- */

static bool put_varint(struct buf *b, uint64_t v)
{
    while (v >= 0x80) {
        if (!buf_append_byte(b, (char)(0x80 | (v & 0x7f))))
            return false;
        v >>= 7;
    }
    return buf_append_byte(b, (char)v);
}

static bool put_field(struct buf *b, struct span s)
{
    return put_varint(b, s.len) && (s.len == 0 || buf_append(b, s.ptr, s.len));
}

static bool tag_of(const struct token_key *key, const unsigned char *payload, size_t len,
                   unsigned char tag[CONN_TOKEN_TAG_LEN])
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (!HMAC(EVP_sha256(), key->bytes, (int)sizeof key->bytes, payload, len, mac, &mac_len) || mac_len < CONN_TOKEN_TAG_LEN)
        return false;
    memcpy(tag, mac, CONN_TOKEN_TAG_LEN);
    OPENSSL_cleanse(mac, sizeof mac);
    return true;
}

static bool mint_fields_ok(struct span conn_id, struct span user, const struct span *hubs, size_t hub_count)
{
    if (!conn_id.ptr || conn_id.len == 0 || conn_id.len > CONN_TOKEN_MAX_ID_LEN)
        return false;
    if (user.len > CONN_TOKEN_MAX_USER_LEN || (user.len && !utf8_is_valid(user.ptr, user.len)))
        return false;
    if (hub_count > CONN_TOKEN_MAX_HUBS || (hub_count && !hubs))
        return false;
    for (size_t i = 0; i < hub_count; i++)
        if (!hubs[i].ptr || hubs[i].len == 0 || hubs[i].len > CONN_TOKEN_MAX_HUB_LEN ||
            !utf8_is_valid(hubs[i].ptr, hubs[i].len))
            return false;
    return true;
}

bool conn_token_mint(const struct token_key *key, struct span conn_id, struct span user,
                     const struct span *hubs, size_t hub_count, uint64_t issued_at_ms, struct buf *out)
{
    if (!mint_fields_ok(conn_id, user, hubs, hub_count))
        return false;
    struct buf payload;
    buf_init(&payload);
    bool ok = buf_append_byte(&payload, (char)CONN_TOKEN_VERSION) && put_varint(&payload, issued_at_ms) &&
              put_field(&payload, conn_id) && put_field(&payload, user) && put_varint(&payload, hub_count);
    for (size_t i = 0; ok && i < hub_count; i++)
        ok = put_field(&payload, hubs[i]);
    unsigned char tag[CONN_TOKEN_TAG_LEN];
    ok = ok && tag_of(key, (const unsigned char *)payload.data, payload.len, tag) &&
         buf_append(&payload, tag, sizeof tag);
    ok = ok && base64url_append(out, (const unsigned char *)payload.data, payload.len);
    buf_free(&payload);
    return ok;
}

/* Verification --------------------------------------------------------------- */

/* A cursor over the authenticated payload. */
struct reader {
    const unsigned char *p, *end;
};

static bool get_varint(struct reader *r, uint64_t *v)
{
    uint64_t value = 0;
    for (unsigned shift = 0; r->p < r->end && shift < 64; shift += 7) {
        unsigned char byte = *r->p++;
        uint64_t bits = byte & 0x7f;
        if (shift == 63 && bits > 1)
            return false; /* more than 64 bits */
        value |= bits << shift;
        if (!(byte & 0x80)) {
            if (byte == 0 && shift > 0)
                return false; /* not the shortest encoding */
            *v = value;
            return true;
        }
    }
    return false;
}

static bool get_field(struct reader *r, size_t min, size_t max, struct span *out)
{
    uint64_t len;
    if (!get_varint(r, &len) || len < min || len > max || len > (uint64_t)(r->end - r->p))
        return false;
    *out = span_make((const char *)r->p, (size_t)len);
    r->p += len;
    return true;
}

/* Splits an authenticated version-1 payload into the claims. */
static bool parse_payload(const unsigned char *payload, size_t len, struct conn_token_claims *c)
{
    struct reader r = { payload + 1, payload + len }; /* after the version byte */
    uint64_t hub_count;
    if (!get_varint(&r, &c->issued_at_ms) || !get_field(&r, 1, CONN_TOKEN_MAX_ID_LEN, &c->conn_id) ||
        !get_field(&r, 0, CONN_TOKEN_MAX_USER_LEN, &c->user) || !get_varint(&r, &hub_count) ||
        hub_count > CONN_TOKEN_MAX_HUBS)
        return false;
    c->hub_count = (size_t)hub_count;
    for (size_t i = 0; i < c->hub_count; i++)
        if (!get_field(&r, 1, CONN_TOKEN_MAX_HUB_LEN, &c->hubs[i]))
            return false;
    return r.p == r.end;
}

void conn_token_claims_init(struct conn_token_claims *claims)
{
    memset(claims, 0, sizeof *claims);
}

void conn_token_claims_free(struct conn_token_claims *claims)
{
    free(claims->storage);
    conn_token_claims_init(claims);
}

static enum proto_status verify_fail(struct conn_token_claims *claims, struct proto_error *err,
                                     enum proto_status status, const char *detail)
{
    conn_token_claims_free(claims);
    return proto_fail(err, status, detail);
}

enum proto_status conn_token_verify(const struct token_key *key, struct span token,
                                    struct conn_token_claims *claims, struct proto_error *err)
{
    conn_token_claims_init(claims);
    if (!token.ptr || token.len == 0)
        return proto_fail(err, PROTO_ERR_MISSING, "connection token is empty");
    if (token.len > CONN_TOKEN_MAX_CHARS)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "connection token is too long");
    for (size_t i = 0; i < token.len; i++)
        if (!base64url_is_char((unsigned char)token.ptr[i]))
            return proto_fail(err, PROTO_ERR_SYNTAX, "connection token has a character outside [A-Za-z0-9_-]");

    /* The decoded bytes become the claims' storage (the buf's block moves to them). */
    struct buf bytes;
    buf_init(&bytes);
    enum proto_status decoded_status = base64url_decode_append(&bytes, token);
    if (decoded_status != PROTO_OK) {
        buf_free(&bytes);
        return decoded_status == PROTO_ERR_NOMEM
                   ? proto_fail(err, PROTO_ERR_NOMEM, "out of memory decoding connection token")
                   : proto_fail(err, PROTO_ERR_SYNTAX, "connection token is not canonical base64url");
    }
    claims->storage = (unsigned char *)bytes.data;
    unsigned char *payload = claims->storage;
    size_t decoded = bytes.len;
    if (decoded < 1 + CONN_TOKEN_TAG_LEN)
        return verify_fail(claims, err, PROTO_ERR_SYNTAX, "connection token is too short");
    if (payload[0] != CONN_TOKEN_VERSION)
        return verify_fail(claims, err, PROTO_ERR_VALUE, "connection token version is not supported");

    size_t payload_len = decoded - CONN_TOKEN_TAG_LEN;
    unsigned char expected[CONN_TOKEN_TAG_LEN];
    if (!tag_of(key, payload, payload_len, expected))
        return verify_fail(claims, err, PROTO_ERR_NOMEM, "could not compute connection token tag");
    if (CRYPTO_memcmp(expected, payload + payload_len, CONN_TOKEN_TAG_LEN) != 0)
        return verify_fail(claims, err, PROTO_ERR_VALUE, "connection token signature does not match");

    /* Authentic, so minted by us; a bad layout means a minting bug or a
     * leaked key, and is still refused rather than trusted. */
    claims->version = payload[0];
    if (!parse_payload(payload, payload_len, claims))
        return verify_fail(claims, err, PROTO_ERR_SYNTAX, "connection token payload is malformed");
    return PROTO_OK;
}
