/* lg_token.c - service-mode client tokens (see lg_token.h). */
#include "lg_token.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

/* base64url without padding of (p, n) appended at out; returns the length written or -1. */
static int b64url(const unsigned char *p, size_t n, char *out, size_t room)
{
    if (room < 4 * ((n + 2) / 3) + 1)
        return -1;
    int len = EVP_EncodeBlock((unsigned char *)out, p, (int)n);
    while (len > 0 && out[len - 1] == '=')
        len--;
    for (int i = 0; i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    out[len] = '\0';
    return len;
}

int lg_token_client(const char *key, const char *hub, const char *host, uint16_t port, int64_t now_s,
                    int64_t ttl_s, char *out, size_t out_size)
{
    static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    char aud[512];
    snprintf(aud, sizeof aud, "http://%s:%u/client/?hub=%s", host, port, hub);
    cJSON *claims = cJSON_CreateObject();
    char *payload = NULL;
    if (claims && cJSON_AddStringToObject(claims, "aud", aud) && cJSON_AddNumberToObject(claims, "iat", (double)now_s) &&
        cJSON_AddNumberToObject(claims, "nbf", (double)now_s) &&
        cJSON_AddNumberToObject(claims, "exp", (double)(now_s + ttl_s)))
        payload = cJSON_PrintUnformatted(claims);
    cJSON_Delete(claims);
    if (!payload)
        return -1;
    int a = b64url((const unsigned char *)header, strlen(header), out, out_size);
    int b = a < 0 || (size_t)a + 1 >= out_size ? -1
            : b64url((const unsigned char *)payload, strlen(payload), out + a + 1, out_size - (size_t)a - 1);
    cJSON_free(payload);
    if (b < 0)
        return -1;
    out[a] = '.';
    size_t signed_len = (size_t)a + 1 + (size_t)b;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (!HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)out, signed_len, mac, &mac_len))
        return -1;
    if (signed_len + 1 >= out_size)
        return -1;
    int c = b64url(mac, mac_len, out + signed_len + 1, out_size - signed_len - 1);
    if (c < 0)
        return -1;
    out[signed_len] = '.';
    return (int)(signed_len + 1 + (size_t)c);
}
