/* lg_token.h - the client access token a service-mode client presents to the relay: an HS256
 * JWT for /client/?hub=HUB signed with the service access key, as the Azure SignalR SDK mints
 * in the app's negotiate. The generator mints one per run and gives it to every connection
 * (they are anonymous clients of the same hub), so the app's negotiate endpoint is not part of
 * what is measured. cJSON writes the claims, OpenSSL does HMAC-SHA256 and base64. */
#ifndef LG_TOKEN_H
#define LG_TOKEN_H

#include <stddef.h>
#include <stdint.h>

/* Writes the token for `hub` (valid for `ttl_s` seconds from `now_s`) to out (NUL-terminated).
 * Returns its length, or -1 when it does not fit or a library call fails. */
int lg_token_client(const char *key, const char *hub, const char *host, uint16_t port, int64_t now_s,
                    int64_t ttl_s, char *out, size_t out_size);

#endif
