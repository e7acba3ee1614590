/* tls.c - TLS of the relay: the listener's certificate, its reload, the backends' trust (see tls.h). */
#include "relay/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "relay/log.h"

/* A certificate as read from the files: the leaf, the chain after it, the key. Owned. */
struct tls_cert {
    X509 *leaf;
    STACK_OF(X509) *chain;
    EVP_PKEY *key;
};

static void cert_free(struct tls_cert *c)
{
    if (!c)
        return;
    X509_free(c->leaf);
    sk_X509_pop_free(c->chain, X509_free);
    EVP_PKEY_free(c->key);
    free(c);
}

/* OpenSSL's last error as text ("" if none), and the queue cleared. */
static const char *ssl_error_text(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();
    buf[0] = '\0';
    if (e)
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

/* An encrypted key would make OpenSSL prompt on the terminal: refuse it instead. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

/* Every certificate of a PEM file: the first is the leaf, the rest its chain. */
static bool read_certs(struct tls_cert *c, const char *path, char *why, size_t why_len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, why_len, "cannot open '%s': %s", path, strerror(errno));
        return false;
    }
    ERR_clear_error();
    c->leaf = PEM_read_X509(f, NULL, no_passphrase, NULL);
    c->chain = sk_X509_new_null();
    bool pushed = true;
    X509 *x;
    while (c->leaf && c->chain && pushed && (x = PEM_read_X509(f, NULL, no_passphrase, NULL)) != NULL) {
        pushed = sk_X509_push(c->chain, x) > 0;
        if (!pushed)
            X509_free(x);
    }
    fclose(f);
    char ssl_why[256];
    if (!c->leaf) {
        snprintf(why, why_len, "'%s' holds no PEM certificate (%s)", path, ssl_error_text(ssl_why, sizeof ssl_why));
        return false;
    }
    if (!c->chain || !pushed) {
        snprintf(why, why_len, "out of memory");
        return false;
    }
    /* The chain ends at the end of the file (no further PEM block: not an error) or at a block
     * that cannot be read (a file caught half-written): that must not pass as a shorter chain. */
    unsigned long e = ERR_peek_last_error();
    if (e && !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)) {
        snprintf(why, why_len, "'%s': chain certificate %d cannot be read (%s)", path, sk_X509_num(c->chain) + 1,
                 ssl_error_text(ssl_why, sizeof ssl_why));
        return false;
    }
    ERR_clear_error();
    return true;
}

static bool read_key(struct tls_cert *c, const char *path, char *why, size_t why_len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, why_len, "cannot open '%s': %s", path, strerror(errno));
        return false;
    }
    c->key = PEM_read_PrivateKey(f, NULL, no_passphrase, NULL);
    fclose(f);
    char ssl_why[256];
    if (!c->key) {
        snprintf(why, why_len, "'%s' holds no unencrypted PEM private key (%s)", path,
                 ssl_error_text(ssl_why, sizeof ssl_why));
        return false;
    }
    return true;
}

/* Reads and checks the certificate files: NULL (and why) if they cannot be served. */
static struct tls_cert *cert_load(const char *cert_path, const char *key_path, char *why, size_t why_len)
{
    struct tls_cert *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    if (!read_certs(c, cert_path, why, why_len) || !read_key(c, key_path, why, why_len)) {
        cert_free(c);
        return NULL;
    }
    if (X509_check_private_key(c->leaf, c->key) != 1) {
        ERR_clear_error();
        snprintf(why, why_len, "the key in '%s' does not belong to the certificate in '%s'", key_path, cert_path);
        cert_free(c);
        return NULL;
    }
    return c;
}

/* "AB:CD:...": the SHA-256 fingerprint, as `openssl x509 -fingerprint -sha256` prints it. */
static void fingerprint_of(X509 *x, char *out, size_t out_len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    out[0] = '\0';
    if (X509_digest(x, EVP_sha256(), md, &n) != 1)
        return;
    for (unsigned i = 0; i < n && (size_t)(i * 3 + 3) <= out_len; i++)
        snprintf(out + i * 3, out_len - i * 3, i + 1 < n ? "%02X:" : "%02X", md[i]);
}

static void log_served(const struct tls_front *t, const struct tls_cert *c, const char *what)
{
    char subject[256] = "";
    X509_NAME_oneline(X509_get_subject_name(c->leaf), subject, sizeof subject);
    log_info("tls: %s %s (%s, %d chain certificate%s), SHA-256 %s", what, t->cert_path, subject,
             sk_X509_num(c->chain), sk_X509_num(c->chain) == 1 ? "" : "s", t->fingerprint);
    if (X509_cmp_current_time(X509_get0_notAfter(c->leaf)) < 0)
        log_warn("tls: the certificate in %s has expired: clients will refuse it", t->cert_path);
    /* Each chain certificate should have issued the one before it (the order clients expect). */
    X509 *below = c->leaf;
    for (int i = 0; i < sk_X509_num(c->chain); i++) {
        X509 *issuer = sk_X509_value(c->chain, i);
        if (X509_check_issued(issuer, below) != X509_V_OK) {
            log_warn("tls: chain certificate %d in %s did not issue the one before it: clients may refuse the "
                     "chain (the file should hold the certificate, then its issuer, then that one's)",
                     i + 1, t->cert_path);
            break;
        }
        below = issuer;
    }
}

/* OpenSSL's certificate callback, early in each handshake: the connection gets the current
 * certificate (its own references to it) and nothing else. 1 goes on, 0 fails the handshake. */
static int select_cert(SSL *ssl, void *arg)
{
    const struct tls_front *t = arg;
    SSL_certs_clear(ssl);
    if (t->current && SSL_use_cert_and_key(ssl, t->current->leaf, t->current->key, t->current->chain, 1) == 1)
        return 1;
    char ssl_why[256];
    log_error("tls: cannot give a connection the certificate: %s", ssl_error_text(ssl_why, sizeof ssl_why));
    return 0;
}

/* Makes c the certificate of the handshakes from now on (taking it); frees the previous one,
 * which open connections hold their own references to. The context gets it too, for what lws
 * reads there (its daily look at the certificate's expiry). */
static bool cert_install(struct tls_front *t, struct tls_cert *c, char *why, size_t why_len)
{
    if (SSL_CTX_use_cert_and_key(t->ssl_ctx, c->leaf, c->key, c->chain, 1) != 1) {
        char ssl_why[256];
        snprintf(why, why_len, "OpenSSL refused it (%s)", ssl_error_text(ssl_why, sizeof ssl_why));
        return false;
    }
    cert_free(t->current);
    t->current = c;
    fingerprint_of(c->leaf, t->fingerprint, sizeof t->fingerprint);
    struct tm tm;
    t->not_after = ASN1_TIME_to_tm(X509_get0_notAfter(c->leaf), &tm) == 1 ? (long long)timegm(&tm) : 0;
    return true;
}

/* The --backend-ca file must hold at least one certificate: lws would only log and go on. */
static bool backend_ca_readable(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        log_error("tls: cannot read --backend-ca '%s': %s", path, strerror(errno));
        return false;
    }
    fclose(f);
    SSL_CTX *probe = SSL_CTX_new(TLS_client_method());
    bool ok = probe && SSL_CTX_load_verify_locations(probe, path, NULL) == 1;
    char ssl_why[256];
    if (!ok)
        log_error("tls: --backend-ca '%s' holds no PEM certificate (%s)", path, ssl_error_text(ssl_why, sizeof ssl_why));
    SSL_CTX_free(probe);
    ERR_clear_error();
    return ok;
}

bool tls_front_init(struct tls_front *t, const struct relay_config *cfg)
{
    memset(t, 0, sizeof *t);
    if (cfg->backend_ca && !backend_ca_readable(cfg->backend_ca))
        return false;
    if (!cfg->tls_cert && !cfg->tls_key)
        return true;
    if (!cfg->tls_cert) {
        log_error("tls: --tls-key needs --tls-cert (the certificate to serve)");
        return false;
    }
    t->cert_path = cfg->tls_cert;
    t->key_path = cfg->tls_key ? cfg->tls_key : cfg->tls_cert;
    char why[512];
    t->current = cert_load(t->cert_path, t->key_path, why, sizeof why);
    if (!t->current) {
        log_error("tls: cannot serve --tls-cert: %s", why);
        return false;
    }
    return true;
}

void tls_front_free(struct tls_front *t)
{
    cert_free(t->current);
    t->current = NULL;
    t->ssl_ctx = NULL;
}

void tls_context_options(const struct tls_front *t, const struct relay_config *cfg,
                         struct lws_context_creation_info *info)
{
    /* HTTP/1.1 only, both ways: the relay's request handling and its backend links are
     * HTTP/1.1 (lws would otherwise offer h2 to clients and to https backends). */
    info->alpn = "http/1.1";
    if (cfg->backend_ca) {
        info->client_ssl_ca_filepath = cfg->backend_ca;
        info->options |= LWS_SERVER_OPTION_DISABLE_OS_CA_CERTS;
    }
    /* No file paths for lws: the certificate is installed at LOAD_EXTRA_SERVER_VERIFY_CERTS. */
    if (t->current)
        info->options |= LWS_SERVER_OPTION_CREATE_VHOST_SSL_CTX;
}

int tls_front_ctx_created(struct tls_front *t, void *ssl_ctx)
{
    if (!t->current || !ssl_ctx)
        return 0;
    t->ssl_ctx = ssl_ctx;
    if (SSL_CTX_set_min_proto_version(ssl_ctx, TLS1_2_VERSION) != 1) {
        log_error("tls: cannot require TLS 1.2 or later");
        return -1;
    }
    SSL_CTX_set_cert_cb(ssl_ctx, select_cert, t);
    struct tls_cert *first = t->current;
    t->current = NULL;
    char why[512];
    if (!cert_install(t, first, why, sizeof why)) {
        log_error("tls: cannot serve %s: %s", t->cert_path, why);
        t->current = first; /* freed with t */
        return -1;
    }
    log_served(t, t->current, "serving");
    return 0;
}

bool tls_reload(struct tls_front *t)
{
    if (!t->ssl_ctx) {
        log_info("tls: reload: no TLS listener (--tls-cert), nothing to reload");
        return false;
    }
    char why[512];
    struct tls_cert *c = cert_load(t->cert_path, t->key_path, why, sizeof why);
    if (!c || !cert_install(t, c, why, sizeof why)) {
        t->reload_failures++;
        log_error("tls: reload refused, still serving the certificate with SHA-256 %s: %s", t->fingerprint, why);
        cert_free(c);
        return false;
    }
    t->reloads++;
    log_served(t, t->current, "reloaded: new connections get");
    return true;
}

void tls_render_metrics(const struct tls_front *t, struct buf *out)
{
    if (!t->ssl_ctx)
        return;
    char text[256];
    int n = snprintf(text, sizeof text,
                     "signalr_relay_tls_certificate_not_after_seconds %lld\n"
                     "signalr_relay_tls_reloads_total %u\n"
                     "signalr_relay_tls_reload_failures_total %u\n",
                     t->not_after, t->reloads, t->reload_failures);
    buf_append(out, text, n > 0 ? (size_t)n : 0);
}

bool tls_backend_failure(struct lws *wsi, char *out, size_t out_len)
{
    SSL *ssl = wsi ? lws_get_ssl(wsi) : NULL;
    if (!ssl)
        return false;
    long result = SSL_get_verify_result(ssl);
    if (result == X509_V_OK)
        return false;
    snprintf(out, out_len, TLS_BACKEND_REFUSED "%s%s", X509_verify_cert_error_string(result),
             result == X509_V_ERR_HOSTNAME_MISMATCH || result == X509_V_ERR_IP_ADDRESS_MISMATCH
                 ? " (the certificate does not name the host of the hub URL)"
                 : " (the relay trusts the CAs of --backend-ca, or the system store without it)");
    return true;
}
