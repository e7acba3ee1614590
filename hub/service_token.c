/* service_token.c - service-mode JWT verification, claims and signing (see
 * service_token.h). JSON comes from cJSON, HMAC from OpenSSL, base64url from
 * base64url.c; this file applies the SDK's rules. */
#include "hub/service_token.h"

#include "hub/base64url.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

/* ---- base64url ------------------------------------------------------------- */

/* The bytes of one canonical base64url part in a fresh malloc'd block (a NUL
 * follows them, for the JSON parser); NULL if the part is not the one
 * encoding of its bytes or memory runs out. */
static unsigned char *b64url_decode(struct span text, size_t *out_len)
{
    struct buf bytes;
    buf_init(&bytes);
    if (base64url_decode_append(&bytes, text) != PROTO_OK) {
        buf_free(&bytes);
        return NULL;
    }
    *out_len = bytes.len;
    return (unsigned char *)bytes.data; /* the block moves to the caller */
}

/* ---- small helpers ----------------------------------------------------------- */

static const EVP_MD *alg_md(enum svc_token_alg alg)
{
    return alg == SVC_ALG_HS512 ? EVP_sha512() : EVP_sha256();
}

static bool hmac(enum svc_token_alg alg, struct span key, const char *data, size_t len,
                 unsigned char *mac, unsigned *mac_len)
{
    static const unsigned char empty = 0;
    if (key.len > INT32_MAX)
        return false;
    return HMAC(alg_md(alg), key.len ? (const void *)key.ptr : &empty, (int)key.len,
                (const unsigned char *)data, len, mac, mac_len) != NULL;
}

/* cJSON turns "\u0000" into a NUL and then cuts the string there; refuse
 * such text (a backslash run of odd length before u0000), and raw NULs. */
static bool json_is_safe(const char *p, size_t len)
{
    if (memchr(p, '\0', len))
        return false;
    for (size_t i = 0; i < len;) {
        if (p[i] != '\\') {
            i++;
            continue;
        }
        size_t run = 0;
        while (i < len && p[i] == '\\') {
            run++;
            i++;
        }
        if (run % 2 == 1 && len - i >= 5 && memcmp(p + i, "u0000", 5) == 0)
            return false;
    }
    return true;
}

/* Parses a decoded JWT part: a JSON object with no repeated key. */
static cJSON *parse_object(const unsigned char *bytes, size_t len)
{
    if (!json_is_safe((const char *)bytes, len))
        return NULL;
    cJSON *root = cJSON_ParseWithLength((const char *)bytes, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return NULL;
    }
    for (const cJSON *a = root->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (strcmp(a->string, b->string) == 0) {
                cJSON_Delete(root);
                return NULL;
            }
    return root;
}

/* A NumericDate: an integral-ish number small enough to be a time. */
static bool json_time(const cJSON *item, int64_t *out)
{
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble) || fabs(item->valuedouble) > 9.0e15)
        return false;
    *out = (int64_t)floor(item->valuedouble);
    return true;
}

/* ---- audience ----------------------------------------------------------------- */

/* aud = scheme://authority/path?query: path ends in /server/ or /client/, and
 * the query has hub=<the hub> (ASCII case-insensitive). */
static bool audience_matches(struct span aud, enum svc_token_kind kind, struct span hub)
{
    const char *p = aud.ptr, *end = aud.ptr + aud.len;
    const char *scheme_end = memchr(p, ':', aud.len);
    if (!scheme_end || end - scheme_end < 3 || memcmp(scheme_end, "://", 3) != 0)
        return false;
    const char *path = memchr(scheme_end + 3, '/', (size_t)(end - scheme_end - 3));
    if (!path)
        return false;
    const char *query = memchr(path, '?', (size_t)(end - path));
    if (!query)
        return false;
    const char *suffix = kind == SVC_TOKEN_SERVER ? "/server/" : "/client/";
    size_t path_len = (size_t)(query - path);
    if (path_len < 8 || memcmp(query - 8, suffix, 8) != 0)
        return false;
    for (const char *q = query + 1; q < end;) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *param_end = amp ? amp : end;
        if (param_end - q >= 4 && memcmp(q, "hub=", 4) == 0)
            return span_eq_nocase(span_make(q + 4, (size_t)(param_end - q - 4)), hub);
        q = param_end + 1;
    }
    return false;
}

static bool any_audience_matches(const cJSON *aud, enum svc_token_kind kind, struct span hub)
{
    if (cJSON_IsString(aud))
        return audience_matches(span_from_cstr(aud->valuestring), kind, hub);
    if (!cJSON_IsArray(aud))
        return false;
    for (const cJSON *a = aud->child; a; a = a->next)
        if (cJSON_IsString(a) && audience_matches(span_from_cstr(a->valuestring), kind, hub))
            return true;
    return false;
}

/* ---- claims ------------------------------------------------------------------- */

/* Claims are gathered as offsets into one text buffer, then turned into
 * spans once the buffer no longer moves. */
struct claim_offsets {
    size_t type_off, type_len, value_off, value_len;
};

struct claim_builder {
    struct buf text;
    struct claim_offsets *items;
    size_t count, cap;
};

static bool add_claim(struct claim_builder *b, const char *type, const char *value, size_t value_len)
{
    if (b->count == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        struct claim_offsets *items = realloc(b->items, cap * sizeof(*items));
        if (!items)
            return false;
        b->items = items;
        b->cap = cap;
    }
    struct claim_offsets *c = &b->items[b->count];
    c->type_off = b->text.len;
    c->type_len = strlen(type);
    if (!buf_append(&b->text, type, c->type_len + 1))
        return false;
    c->value_off = b->text.len;
    c->value_len = value_len;
    if (!buf_append(&b->text, value, value_len) || !buf_append_byte(&b->text, '\0'))
        return false;
    b->count++;
    return true;
}

/* One JSON value as claim(s) of this type: strings as they are, arrays one
 * claim per element, null nothing, anything else its JSON text. */
static bool add_value(struct claim_builder *b, const char *type, const cJSON *v, bool in_array)
{
    if (cJSON_IsNull(v))
        return true;
    if (cJSON_IsString(v))
        return add_claim(b, type, v->valuestring, strlen(v->valuestring));
    if (cJSON_IsArray(v) && !in_array) {
        for (const cJSON *e = v->child; e; e = e->next)
            if (!add_value(b, type, e, true))
                return false;
        return true;
    }
    char *text = cJSON_PrintUnformatted(v);
    bool ok = text && add_claim(b, type, text, strlen(text));
    free(text);
    return ok;
}

static bool collect_claims(const cJSON *payload, struct svc_token *t)
{
    struct claim_builder b = { .items = NULL };
    buf_init(&b.text);
    bool ok = true;
    for (const cJSON *item = payload->child; item && ok; item = item->next)
        ok = add_value(&b, item->string, item, false);
    if (ok && b.count > 0)
        ok = (t->claims = calloc(b.count, sizeof(*t->claims))) != NULL;
    if (!ok) {
        buf_free(&b.text);
        free(b.items);
        return false;
    }
    t->storage = b.text.data; /* the token owns the text from here */
    t->claim_count = b.count;
    for (size_t i = 0; i < b.count; i++) {
        const struct claim_offsets *c = &b.items[i];
        t->claims[i].type = span_make(t->storage + c->type_off, c->type_len);
        t->claims[i].value = span_make(t->storage + c->value_off, c->value_len);
        if (!t->user_id.ptr && span_eq_cstr(t->claims[i].type, "asrs.s.uid"))
            t->user_id = t->claims[i].value;
        if (!t->name_id.ptr && span_eq_cstr(t->claims[i].type, "nameid"))
            t->name_id = t->claims[i].value;
    }
    free(b.items);
    return true;
}

/* ---- verification ------------------------------------------------------------- */

void svc_token_init(struct svc_token *t)
{
    memset(t, 0, sizeof(*t));
}

void svc_token_free(struct svc_token *t)
{
    free(t->claims);
    free(t->storage);
    svc_token_init(t);
}

/* The header: alg HS256 or HS512 (no "none", no RSA: those keys are not ours). */
static enum proto_status check_header(struct span part, enum svc_token_alg *alg, struct proto_error *err)
{
    size_t len;
    unsigned char *bytes = b64url_decode(part, &len);
    if (!bytes)
        return proto_fail(err, PROTO_ERR_SYNTAX, "token header is not base64url");
    cJSON *header = parse_object(bytes, len);
    free(bytes);
    if (!header)
        return proto_fail(err, PROTO_ERR_SYNTAX, "token header is not a JSON object");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(header, "alg");
    enum proto_status st = PROTO_OK;
    if (!cJSON_IsString(a))
        st = proto_fail(err, PROTO_ERR_SYNTAX, "token header has no alg");
    else if (strcmp(a->valuestring, "HS256") == 0)
        *alg = SVC_ALG_HS256;
    else if (strcmp(a->valuestring, "HS512") == 0)
        *alg = SVC_ALG_HS512;
    else
        st = proto_fail(err, PROTO_ERR_VALUE, "token alg is not HS256 or HS512");
    cJSON_Delete(header);
    return st;
}

/* Tries every key; constant time per key. */
static enum proto_status check_signature(struct span signed_part, struct span sig_text,
                                         enum svc_token_alg alg, const struct svc_token_check *check,
                                         size_t *key_index, struct proto_error *err)
{
    size_t sig_len;
    unsigned char *sig = b64url_decode(sig_text, &sig_len);
    if (!sig)
        return proto_fail(err, PROTO_ERR_SYNTAX, "token signature is not base64url");
    unsigned expect_len = alg == SVC_ALG_HS512 ? 64 : 32;
    bool ok = false;
    for (size_t i = 0; i < check->key_count && sig_len == expect_len; i++) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned mac_len = 0;
        if (hmac(alg, check->keys[i], signed_part.ptr, signed_part.len, mac, &mac_len) &&
            mac_len == expect_len && CRYPTO_memcmp(mac, sig, expect_len) == 0) {
            *key_index = i;
            ok = true;
            break;
        }
    }
    free(sig);
    return ok ? PROTO_OK : proto_fail(err, PROTO_ERR_VALUE, "token signature does not verify");
}

static enum proto_status check_payload(const cJSON *payload, const struct svc_token_check *check,
                                       struct svc_token *t, struct proto_error *err)
{
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(payload, "exp");
    const cJSON *nbf = cJSON_GetObjectItemCaseSensitive(payload, "nbf");
    if (!json_time(exp, &t->exp))
        return proto_fail(err, PROTO_ERR_SYNTAX, "token has no numeric exp");
    if (nbf && !json_time(nbf, &t->nbf))
        return proto_fail(err, PROTO_ERR_SYNTAX, "token nbf is not a number");
    if (t->exp <= check->now - check->skew)
        return proto_fail(err, PROTO_ERR_VALUE, "token expired");
    if (nbf && t->nbf > check->now + check->skew)
        return proto_fail(err, PROTO_ERR_VALUE, "token not valid yet");
    if (!any_audience_matches(cJSON_GetObjectItemCaseSensitive(payload, "aud"), check->kind, check->hub))
        return proto_fail(err, PROTO_ERR_VALUE, "token audience is not this hub's");
    if (!collect_claims(payload, t))
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory reading token claims");
    return PROTO_OK;
}

enum proto_status svc_token_verify(struct span token, const struct svc_token_check *check,
                                   struct svc_token *out, struct proto_error *err)
{
    svc_token_init(out);
    if (!token.ptr || token.len == 0)
        return proto_fail(err, PROTO_ERR_SYNTAX, "no token");
    if (token.len > SVC_TOKEN_MAX_CHARS)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "token too long");
    if (check->key_count == 0)
        return proto_fail(err, PROTO_ERR_VALUE, "no access key configured");
    const char *dot1 = memchr(token.ptr, '.', token.len);
    const char *end = token.ptr + token.len;
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', (size_t)(end - dot1 - 1)) : NULL;
    if (!dot2 || memchr(dot2 + 1, '.', (size_t)(end - dot2 - 1)))
        return proto_fail(err, PROTO_ERR_SYNTAX, "token is not header.payload.signature");

    enum svc_token_alg alg = SVC_ALG_HS256;
    enum proto_status st = check_header(span_make(token.ptr, (size_t)(dot1 - token.ptr)), &alg, err);
    if (st != PROTO_OK)
        return st;
    size_t key_index = 0;
    st = check_signature(span_make(token.ptr, (size_t)(dot2 - token.ptr)),
                         span_make(dot2 + 1, (size_t)(end - dot2 - 1)), alg, check, &key_index, err);
    if (st != PROTO_OK)
        return st;

    size_t len;
    unsigned char *bytes = b64url_decode(span_make(dot1 + 1, (size_t)(dot2 - dot1 - 1)), &len);
    if (!bytes)
        return proto_fail(err, PROTO_ERR_SYNTAX, "token payload is not base64url");
    cJSON *payload = parse_object(bytes, len);
    free(bytes);
    if (!payload)
        return proto_fail(err, PROTO_ERR_SYNTAX, "token payload is not a JSON object without repeated keys");
    st = check_payload(payload, check, out, err);
    cJSON_Delete(payload);
    if (st != PROTO_OK) {
        svc_token_free(out);
        return st;
    }
    out->alg = alg;
    out->key_index = key_index;
    return PROTO_OK;
}

/* ---- claim types ------------------------------------------------------------------ */

/* The standard inbound map of JwtSecurityTokenHandler (ClaimTypeMapping),
 * short JWT claim type -> .NET ClaimTypes URI. */
static const struct {
    const char *short_type;
    const char *long_type;
} inbound_map[] = {
#define XMLSOAP "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/"
#define MS2008 "http://schemas.microsoft.com/ws/2008/06/identity/claims/"
#define CERT "http://schemas.microsoft.com/2012/12/certificatecontext/"
#define REQCTX "http://schemas.microsoft.com/2012/01/requestcontext/claims/"
#define DEVCTX "http://schemas.microsoft.com/2012/01/devicecontext/claims/"
    { "actort", "http://schemas.xmlsoap.org/ws/2009/09/identity/claims/actor" },
    { "birthdate", XMLSOAP "dateofbirth" },
    { "email", XMLSOAP "emailaddress" },
    { "family_name", XMLSOAP "surname" },
    { "gender", XMLSOAP "gender" },
    { "given_name", XMLSOAP "givenname" },
    { "nameid", XMLSOAP "nameidentifier" },
    { "sub", XMLSOAP "nameidentifier" },
    { "website", XMLSOAP "webpage" },
    { "unique_name", XMLSOAP "name" },
    { "oid", "http://schemas.microsoft.com/identity/claims/objectidentifier" },
    { "scp", "http://schemas.microsoft.com/identity/claims/scope" },
    { "tid", "http://schemas.microsoft.com/identity/claims/tenantid" },
    { "acr", "http://schemas.microsoft.com/claims/authnclassreference" },
    { "adfs1email", "http://schemas.xmlsoap.org/claims/EmailAddress" },
    { "adfs1upn", "http://schemas.xmlsoap.org/claims/UPN" },
    { "amr", "http://schemas.microsoft.com/claims/authnmethodsreferences" },
    { "authmethod", MS2008 "authenticationmethod" },
    { "certapppolicy", CERT "extension/applicationpolicy" },
    { "certauthoritykeyidentifier", CERT "extension/authoritykeyidentifier" },
    { "certbasicconstraints", CERT "extension/basicconstraints" },
    { "certeku", CERT "extension/eku" },
    { "certissuer", CERT "field/issuer" },
    { "certissuername", CERT "field/issuername" },
    { "certkeyusage", CERT "extension/keyusage" },
    { "certnotafter", CERT "field/notafter" },
    { "certnotbefore", CERT "field/notbefore" },
    { "certpolicy", CERT "extension/certificatepolicy" },
    { "certpublickey", XMLSOAP "rsa" },
    { "certrawdata", CERT "field/rawdata" },
    { "certserialnumber", MS2008 "serialnumber" },
    { "certsignaturealgorithm", CERT "field/signaturealgorithm" },
    { "certsubject", CERT "field/subject" },
    { "certsubjectaltname", CERT "extension/san" },
    { "certsubjectkeyidentifier", CERT "extension/subjectkeyidentifier" },
    { "certsubjectname", CERT "field/subjectname" },
    { "certtemplateinformation", CERT "extension/certificatetemplateinformation" },
    { "certtemplatename", CERT "extension/certificatetemplatename" },
    { "certthumbprint", XMLSOAP "thumbprint" },
    { "certx509version", CERT "field/x509version" },
    { "clientapplication", REQCTX "x-ms-client-application" },
    { "clientip", REQCTX "x-ms-client-ip" },
    { "clientuseragent", REQCTX "x-ms-client-user-agent" },
    { "commonname", "http://schemas.xmlsoap.org/claims/CommonName" },
    { "denyonlyprimarygroupsid", MS2008 "denyonlyprimarygroupsid" },
    { "denyonlyprimarysid", MS2008 "denyonlyprimarysid" },
    { "denyonlysid", XMLSOAP "denyonlysid" },
    { "devicedispname", DEVCTX "displayname" },
    { "deviceid", DEVCTX "identifier" },
    { "deviceismanaged", DEVCTX "ismanaged" },
    { "deviceostype", DEVCTX "ostype" },
    { "deviceosver", DEVCTX "osversion" },
    { "deviceowner", DEVCTX "userowner" },
    { "deviceregid", DEVCTX "registrationid" },
    { "endpointpath", REQCTX "x-ms-endpoint-absolute-path" },
    { "forwardedclientip", REQCTX "x-ms-forwarded-client-ip" },
    { "group", "http://schemas.xmlsoap.org/claims/Group" },
    { "groupsid", MS2008 "groupsid" },
    { "idp", "http://schemas.microsoft.com/identity/claims/identityprovider" },
    { "insidecorporatenetwork", "http://schemas.microsoft.com/ws/2012/01/insidecorporatenetwork" },
    { "isregistereduser", DEVCTX "isregistereduser" },
    { "ppid", XMLSOAP "privatepersonalidentifier" },
    { "primarygroupsid", MS2008 "primarygroupsid" },
    { "primarysid", MS2008 "primarysid" },
    { "proxy", REQCTX "x-ms-proxy" },
    { "pwdchgurl", "http://schemas.microsoft.com/ws/2012/01/passwordchangeurl" },
    { "pwdexpdays", "http://schemas.microsoft.com/ws/2012/01/passwordexpirationdays" },
    { "pwdexptime", "http://schemas.microsoft.com/ws/2012/01/passwordexpirationtime" },
    { "relyingpartytrustid", REQCTX "relyingpartytrustid" },
    { "role", MS2008 "role" },
    { "roles", MS2008 "role" },
    { "upn", XMLSOAP "upn" },
    { "winaccountname", MS2008 "windowsaccountname" },
#undef XMLSOAP
#undef MS2008
#undef CERT
#undef REQCTX
#undef DEVCTX
};

const char *svc_claim_type_inbound(struct span short_type)
{
    for (size_t i = 0; i < sizeof inbound_map / sizeof inbound_map[0]; i++)
        if (span_eq_cstr(short_type, inbound_map[i].short_type))
            return inbound_map[i].long_type;
    return NULL;
}

void svc_token_map_inbound(struct svc_token *t)
{
    for (size_t i = 0; i < t->claim_count; i++) {
        const char *long_type = svc_claim_type_inbound(t->claims[i].type);
        if (long_type)
            t->claims[i].type = span_from_cstr(long_type);
    }
}

/* ---- signing ------------------------------------------------------------------------ */

static cJSON *string_of(struct span s)
{
    char *copy = malloc(s.len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s.ptr ? s.ptr : "", s.len);
    copy[s.len] = '\0';
    cJSON *item = cJSON_CreateString(copy);
    free(copy);
    return item;
}

/* The payload object: claims grouped by type in order of first appearance. */
static cJSON *build_payload(const struct svc_claim *claims, size_t n, int64_t now, int64_t lifetime,
                            struct span audience)
{
    cJSON *root = cJSON_CreateObject();
    bool ok = root != NULL;
    for (size_t i = 0; i < n && ok; i++) {
        bool seen = false, repeated = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = span_eq(claims[j].type, claims[i].type);
        for (size_t j = i + 1; j < n && !repeated && !seen; j++)
            repeated = span_eq(claims[j].type, claims[i].type);
        if (seen)
            continue;
        char *type = malloc(claims[i].type.len + 1);
        cJSON *value = repeated ? cJSON_CreateArray() : string_of(claims[i].value);
        ok = type && value;
        for (size_t j = i; j < n && ok && repeated; j++) {
            if (!span_eq(claims[j].type, claims[i].type))
                continue;
            cJSON *e = string_of(claims[j].value);
            ok = e && cJSON_AddItemToArray(value, e);
        }
        if (ok) {
            memcpy(type, claims[i].type.ptr, claims[i].type.len);
            type[claims[i].type.len] = '\0';
            ok = cJSON_AddItemToObject(root, type, value);
        } else {
            cJSON_Delete(value);
        }
        free(type);
    }
    cJSON *aud = ok ? string_of(audience) : NULL;
    ok = ok && cJSON_AddNumberToObject(root, "nbf", (double)now) &&
         cJSON_AddNumberToObject(root, "exp", (double)(now + lifetime)) &&
         cJSON_AddNumberToObject(root, "iat", (double)now) &&
         cJSON_AddStringToObject(root, "iss", "azure-signalr") && aud &&
         cJSON_AddItemToObject(root, "aud", aud);
    if (!ok) {
        if (aud && !cJSON_GetObjectItemCaseSensitive(root, "aud"))
            cJSON_Delete(aud);
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

enum proto_status svc_token_sign(struct buf *out, struct span key, enum svc_token_alg alg,
                                 const struct svc_claim *claims, size_t claim_count, int64_t now,
                                 int64_t lifetime, struct span audience, struct proto_error *err)
{
    static const char hs256[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    static const char hs512[] = "{\"alg\":\"HS512\",\"typ\":\"JWT\"}";
    const char *header = alg == SVC_ALG_HS512 ? hs512 : hs256;
    cJSON *payload = build_payload(claims, claim_count, now, lifetime, audience);
    char *text = payload ? cJSON_PrintUnformatted(payload) : NULL;
    cJSON_Delete(payload);
    size_t start = out->len;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned mac_len = 0;
    bool ok = text && base64url_append(out, (const unsigned char *)header, strlen(header)) &&
              buf_append_byte(out, '.') &&
              base64url_append(out, (const unsigned char *)text, strlen(text)) &&
              hmac(alg, key, out->data + start, out->len - start, mac, &mac_len) &&
              buf_append_byte(out, '.') && base64url_append(out, mac, mac_len);
    free(text);
    if (!ok) {
        out->len = start;
        return proto_fail(err, PROTO_ERR_NOMEM, "could not sign a token");
    }
    return PROTO_OK;
}

bool svc_token_audience(struct buf *out, struct span scheme_host, enum svc_token_kind kind,
                        struct span hub)
{
    size_t start = out->len;
    bool ok = buf_append_span(out, scheme_host) &&
              buf_append_cstr(out, kind == SVC_TOKEN_SERVER ? "/server/?hub=" : "/client/?hub=") &&
              buf_append_span(out, hub);
    if (!ok)
        out->len = start;
    return ok;
}
