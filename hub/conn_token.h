/* conn_token.h - connection ids and the signed tokens handed to clients.
 *
 * A connection id is 16 random bytes in base64url without padding (22
 * characters), as ASP.NET Core's HttpConnectionManager makes them. It is
 * public: groups and Clients.Client(id) use it.
 *
 * A connection token is what a client presents on every request after
 * negotiate (legacy `connectionToken=`, Core `id=`). It is self-contained, so
 * the relay stores nothing at negotiate time and can check a token without a
 * table lookup:
 *
 *   token   = base64url-without-padding(payload || tag)      only [A-Za-z0-9_-]
 *   payload = version (1 byte, = 1)
 *             varint issued_at_ms
 *             varint len, conn id bytes
 *             varint len, user bytes (empty = anonymous)
 *             varint hub count, then per hub: varint len, name bytes
 *   tag     = the first 16 bytes of HMAC-SHA256(key, payload)
 *
 * varint is unsigned LEB128 (7 bits a byte, low bits first), minimal length.
 * The tag is truncated to 128 bits to keep tokens short (RFC 2104 section 5
 * allows truncation to half the hash; HMAC-SHA-256-128 is what RFC 4868 uses
 * for IPsec). A later version can carry the owning relay instance after the
 * version byte; version 1 verifiers reject every other version.
 *
 * Verify does not judge age: the caller compares issued_at_ms with its clock
 * and policy. */
#ifndef SR_CONN_TOKEN_H
#define SR_CONN_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/buf.h"
#include "protocol/proto_status.h"
#include "containers/span.h"

#define CONN_ID_LEN 22                /* characters, without the NUL */
#define TOKEN_KEY_LEN 32
#define CONN_TOKEN_VERSION 1
#define CONN_TOKEN_TAG_LEN 16
#define CONN_TOKEN_MAX_ID_LEN 64      /* bytes of a conn id inside a token */
#define CONN_TOKEN_MAX_USER_LEN 256   /* bytes of UTF-8 */
#define CONN_TOKEN_MAX_HUB_LEN 128
#define CONN_TOKEN_MAX_HUBS 32
/* No token we mint is longer; verify refuses longer input before decoding. */
#define CONN_TOKEN_MAX_CHARS 8192

/* The HMAC key. Plain bytes: copy it freely, wipe it with token_key_clear. */
struct token_key {
    unsigned char bytes[TOKEN_KEY_LEN];
};

/* Writes a fresh 22-character id and a NUL to out. False only if the OpenSSL
 * random generator fails (out is then an empty string). */
bool conn_id_generate(char out[CONN_ID_LEN + 1]);

/* A random key for this process (tokens die with it). False if RAND_bytes fails. */
bool token_key_generate(struct token_key *key);

/* A key derived with HKDF-SHA256 from a configured secret of any length, so
 * several relay processes sharing the secret accept each other's tokens.
 * HKDF does not slow down guessing: the secret must itself be random (e.g.
 * 32 random bytes in base64), not a memorable password. False if secret is
 * NULL or empty, or OpenSSL fails. */
bool token_key_from_secret(struct token_key *key, const char *secret);

/* Overwrites the key bytes in a way the compiler cannot drop. */
void token_key_clear(struct token_key *key);

/* Appends a token to `out`. conn_id: 1..CONN_TOKEN_MAX_ID_LEN bytes; user:
 * up to CONN_TOKEN_MAX_USER_LEN bytes of UTF-8, absent or empty for
 * anonymous; hubs: 0..CONN_TOKEN_MAX_HUBS names of 1..CONN_TOKEN_MAX_HUB_LEN
 * bytes of UTF-8. False (and `out` unchanged) if a field breaks those limits
 * or memory or OpenSSL fails. */
bool conn_token_mint(const struct token_key *key, struct span conn_id, struct span user,
                     const struct span *hubs, size_t hub_count, uint64_t issued_at_ms, struct buf *out);

/* What a verified token says. Every span points into `storage`, which the
 * claims own: they stay valid until conn_token_claims_free. */
struct conn_token_claims {
    unsigned version;
    uint64_t issued_at_ms;
    struct span conn_id;
    struct span user; /* present; empty for anonymous */
    size_t hub_count;
    struct span hubs[CONN_TOKEN_MAX_HUBS];
    unsigned char *storage; /* the decoded token, malloc'd; NULL when empty */
};

/* Makes claims safe to free (verify also does this first). */
void conn_token_claims_init(struct conn_token_claims *claims);
/* Frees the storage; the claims are empty (and reusable) afterwards. */
void conn_token_claims_free(struct conn_token_claims *claims);

/* Checks a token minted with `key`: canonical base64url, known version,
 * matching tag (compared in constant time), well-formed payload. On PROTO_OK
 * the claims own a copy of the payload (free with conn_token_claims_free); on
 * failure they are left empty, nothing needs freeing, and *err (if given)
 * says why. */
enum proto_status conn_token_verify(const struct token_key *key, struct span token,
                                    struct conn_token_claims *claims, struct proto_error *err);

/* A connection id that proves itself, for clients that negotiate without
 * negotiateVersion=1 (v0): they get no token and connect with the id, so in
 * service mode, which keeps no table of negotiations, the id carries its
 * proof. Still 22 base64url characters (16 bytes):
 *
 *   issued_at seconds mod 2^32 (4 bytes, big-endian) || 4 random bytes ||
 *   the first 8 bytes of HMAC-SHA256(key, "conn-id-v0" || those 8 bytes ||
 *                                     varint len, hub || varint len, user)
 *
 * A 64-bit tag is enough here: the id also needs a valid access token for the
 * same hub and user to be of any use, and it expires with the negotiate TTL. */
bool conn_id_mint_signed(const struct token_key *key, struct span hub, struct span user, uint64_t now_s,
                         char out[CONN_ID_LEN + 1]);
/* True when `id` was minted with `key` for this hub and user; *age_s is then
 * now_s minus its issue time (modulo 2^32 seconds). */
bool conn_id_verify_signed(const struct token_key *key, struct span id, struct span hub, struct span user,
                           uint64_t now_s, uint32_t *age_s);

#endif
