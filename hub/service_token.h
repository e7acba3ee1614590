/* service_token.h - the JWTs of service mode (specs/service-protocol.md
 * sections 1.3, 1.4, 3.6 and appendix A.6, A.11, C).
 *
 * The app's SDK mints two kinds, both compact JWS signed with HMAC (HS256 by
 * default, HS512 if configured) keyed with the literal UTF-8 bytes of the
 * connection string's AccessKey (not base64-decoded):
 *   - server tokens, on the /server/ WebSocket upgrade: claim nameid = the
 *     server id, aud = scheme://host/server/?hub=<hub key>;
 *   - client tokens, returned by the app's negotiate: asrs.s.uid = the user
 *     id, asrs.s.* options and the user's own claims, aud =
 *     scheme://host/client/?hub=<hub key>.
 * The audience has no port (and the relay may sit behind a proxy), so it is
 * not compared with the request URL: its path must end in /server/ or
 * /client/ and its hub= must equal the requested hub (ASCII
 * case-insensitive). kid is a per-process .NET string hash: ignored; every
 * configured key is tried (rotation). exp is required, nbf optional, both
 * with a skew either way; iss and iat are not judged.
 *
 * Verification checks the signature (CRYPTO_memcmp, on the canonical
 * base64url decoding only, so no two spellings of one signature) before it
 * parses the payload. Malformed or ambiguous payloads are refused, notably a
 * repeated top-level key (two exp, two aud: parsers disagree on which wins).
 *
 * The verified claims are an owned list of (type, value) in token order:
 * a JSON array value gives one claim per element (that is how the SDK writes
 * a repeated claim type), numbers and booleans their JSON text, objects their
 * JSON text, null nothing. svc_token_map_inbound rewrites user claim types
 * with the standard inbound JWT map (nameid/sub -> ClaimTypes.NameIdentifier,
 * role -> ClaimTypes.Role, ...) for OpenConnection: the SDK maps nothing
 * itself (appendix A.11). */
#ifndef SR_SERVICE_TOKEN_H
#define SR_SERVICE_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/span.h"
#include "protocol/proto_status.h"
#include "protocol/service_msg.h"

/* The SDK refuses to hand out longer tokens (negotiate answers 413). */
#define SVC_TOKEN_MAX_CHARS 4096
/* Default clock skew, seconds, either side of exp and nbf. */
#define SVC_TOKEN_DEFAULT_SKEW 300
/* The SDK's default AccessTokenLifetime, seconds. */
#define SVC_TOKEN_DEFAULT_LIFETIME 3600

enum svc_token_kind { SVC_TOKEN_SERVER, SVC_TOKEN_CLIENT };
enum svc_token_alg { SVC_ALG_HS256, SVC_ALG_HS512 };

/* What a token must satisfy. keys are the configured AccessKeys' bytes (the
 * caller owns them); now is Unix seconds. */
struct svc_token_check {
    const struct span *keys;
    size_t key_count;
    int64_t now;
    int64_t skew;
    enum svc_token_kind kind;
    struct span hub;
};

/* A verified token. OWNERSHIP: claims and every span in them (and user_id,
 * name_id) point into memory the token owns until svc_token_free, except
 * claim types rewritten by svc_token_map_inbound, which point at static
 * strings. */
struct svc_token {
    struct svc_claim *claims;
    size_t claim_count;
    struct span user_id;   /* asrs.s.uid; absent for an anonymous client */
    struct span name_id;   /* nameid (the server id on server tokens); absent if none */
    int64_t exp;
    int64_t nbf;           /* 0 if absent */
    enum svc_token_alg alg;
    size_t key_index;      /* which configured key verified it */
    char *storage;         /* the claims' bytes */
};

void svc_token_init(struct svc_token *t);
void svc_token_free(struct svc_token *t);

/* Verifies token (the bare JWT, without "Bearer "). On PROTO_OK *out owns
 * the claims (free with svc_token_free); on failure *out is empty and *err
 * says why (PROTO_ERR_TOO_LARGE over SVC_TOKEN_MAX_CHARS, PROTO_ERR_SYNTAX
 * for malformed base64url/JSON/shape, PROTO_ERR_VALUE for a bad signature,
 * alg, time or audience, PROTO_ERR_NOMEM). Every failure means 401. */
enum proto_status svc_token_verify(struct span token, const struct svc_token_check *check,
                                   struct svc_token *out, struct proto_error *err);

/* The long claim type for a short JWT one ("role" ->
 * "http://schemas.microsoft.com/ws/2008/06/identity/claims/role"), or NULL. */
const char *svc_claim_type_inbound(struct span short_type);

/* Rewrites every claim type that has an inbound mapping. asrs.* claims and
 * the JWT registered ones (aud, exp, iat, iss, nbf) are left alone: the SDK
 * reads asrs.s.* and asrs.u.* by those names and strips the rest. */
void svc_token_map_inbound(struct svc_token *t);

/* Mints a token as the SDK does: header {"alg":..,"typ":"JWT"}, payload =
 * the claims (a type given several times becomes a JSON array, in order of
 * first appearance), then nbf = iat = now, exp = now + lifetime, iss
 * "azure-signalr", aud. Appends it to out (unchanged on failure). */
enum proto_status svc_token_sign(struct buf *out, struct span key, enum svc_token_alg alg,
                                 const struct svc_claim *claims, size_t claim_count, int64_t now,
                                 int64_t lifetime, struct span audience, struct proto_error *err);

/* Appends the audience the SDK uses: "<scheme>://<host>/server/?hub=<hub>"
 * (or /client/). scheme_host is e.g. "http://127.0.0.1" (no port, no slash). */
bool svc_token_audience(struct buf *out, struct span scheme_host, enum svc_token_kind kind,
                        struct span hub);

#endif
