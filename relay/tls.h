/* tls.h - TLS of the relay: the certificate clients see, its reload, and the trust in backends.
 *
 * With --tls-cert and --tls-key the one listener speaks TLS only (https://, wss://): TLS 1.2
 * at least, HTTP/1.1 over ALPN. lws owns the listening vhost's SSL_CTX; when lws makes it (the
 * LOAD_EXTRA_SERVER_VERIFY_CERTS callback) struct tls_front sets it up and installs a
 * certificate callback that gives every handshake the current certificate, and only it.
 * tls_reload() reads and checks the files (chain, key matching the certificate) into a new
 * current certificate, so a bad file changes nothing. A connection takes its own reference to
 * the certificate it was made with: connections already open keep it, new ones get the new
 * one. (Installing into the context instead would keep one certificate per key type there: an
 * ECDSA certificate replaced by an RSA one would still be served to clients preferring ECDSA.)
 *
 * Backends (https://, wss:// hub URLs) are verified by lws: the certificate must chain to a
 * trusted CA and name the URL's host (or address). --backend-ca FILE trusts the CAs in FILE
 * instead of the system store. tls_backend_failure() turns a refused backend certificate into
 * one sentence. */
#ifndef SR_TLS_H
#define SR_TLS_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"
#include "relay/config.h"

/* Starts every sentence tls_backend_failure() writes: callers that answer clients use it to
 * tell a refused backend certificate (502) from an unreachable backend (503). */
#define TLS_BACKEND_REFUSED "TLS verification of the backend's certificate failed: "

struct tls_cert; /* a certificate, its chain and its key, read and checked (tls.c) */

struct tls_front {
    const char *cert_path;      /* --tls-cert (PEM: certificate, then its chain); borrowed; NULL: plain */
    const char *key_path;       /* --tls-key (PEM); borrowed */
    struct tls_cert *current;   /* what every handshake from now on gets; owned */
    void *ssl_ctx;              /* the listening vhost's SSL_CTX (lws owns it); NULL until made */
    char fingerprint[96 + 1];   /* SHA-256 of the certificate served now, "AB:CD:..." */
    long long not_after;        /* its expiry, seconds since 1970 (0 if unknown) */
    unsigned reloads;           /* certificates installed by tls_reload */
    unsigned reload_failures;   /* reloads refused (the old certificate stayed) */
};

/* Reads and checks the certificate and key of cfg (if any) and the --backend-ca file. False
 * after logging one clear sentence (the relay does not start). */
bool tls_front_init(struct tls_front *t, const struct relay_config *cfg);
void tls_front_free(struct tls_front *t);
/* Sets what the lws context needs: the listener's TLS, TLS 1.2 at least, ALPN http/1.1, and
 * the CA file the backends are verified with. */
void tls_context_options(const struct tls_front *t, const struct relay_config *cfg,
                         struct lws_context_creation_info *info);
/* LWS_CALLBACK_OPENSSL_LOAD_EXTRA_SERVER_VERIFY_CERTS: lws made the listener's SSL_CTX.
 * Returns 0, or -1 (lws then fails the context) after logging. */
int tls_front_ctx_created(struct tls_front *t, void *ssl_ctx);
/* Reads the certificate and key files again and serves them to new connections. A file that
 * cannot be read, or a key that does not match, is refused with a log line and the current
 * certificate stays. True when the new one is served. */
bool tls_reload(struct tls_front *t);

/* With a TLS listener, its lines of /metrics: the served certificate's expiry and the reloads
 * done and refused (nothing without one). */
void tls_render_metrics(const struct tls_front *t, struct buf *out);

/* The connection error of a backend connection (wsi, in CLIENT_CONNECTION_ERROR): when its
 * TLS handshake failed because the backend's certificate was refused, writes a sentence
 * starting with TLS_BACKEND_REFUSED to out and returns true. */
bool tls_backend_failure(struct lws *wsi, char *out, size_t out_len);

#endif
