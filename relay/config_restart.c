/* config_restart.c - the settings a configuration reload cannot change (they were used once at
 * start: listening addresses, keys, the resolver, the TLS file locations): a reread
 * configuration keeps their running values, with a warning (see config.h). */
#include "relay/config.h"

#include <stdlib.h>
#include <string.h>

#include "relay/log.h"

static bool same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void keep_string(char **now, const char *before, const char *what, bool *kept)
{
    if (same_text(*now, before))
        return;
    log_warn("relay: reload: %s changes only with a restart; keeping the running value", what);
    free(*now);
    *now = before ? strdup(before) : NULL;
    *kept = true;
}

/* lws' backstop behind the relay's own deadlines (see config.h). */
#define LWS_TIMEOUT_FLOOR_S 20u
#define LWS_TIMEOUT_MARGIN_S 5u

static unsigned behind(unsigned ms)
{
    return (ms + 999) / 1000 + LWS_TIMEOUT_MARGIN_S;
}

unsigned config_lws_timeout_secs(const struct relay_config *cfg)
{
    unsigned s = LWS_TIMEOUT_FLOOR_S;
    if (behind(cfg->backend_timeout_ms) > s)
        s = behind(cfg->backend_timeout_ms);
    if (behind(cfg->header_timeout_ms) > s)
        s = behind(cfg->header_timeout_ms);
    return s;
}

/* A deadline of the relay that lws' fixed timeout would now come before: the running value stays. */
static void keep_behind_lws(unsigned *now_ms, unsigned before_ms, unsigned lws_s, const char *flag, bool *kept)
{
    if (behind(*now_ms) <= lws_s)
        return;
    log_warn("relay: reload: %s above %u s changes only with a restart (libwebsockets' own timeout is fixed at "
             "start); keeping the running value", flag, lws_s - LWS_TIMEOUT_MARGIN_S);
    *now_ms = before_ms;
    *kept = true;
}

bool config_keep_restart_only(const struct relay_config *old, struct relay_config *cfg)
{
    bool kept = false;
    unsigned lws_s = config_lws_timeout_secs(old);
    keep_behind_lws(&cfg->backend_timeout_ms, old->backend_timeout_ms, lws_s, "--backend-timeout", &kept);
    keep_behind_lws(&cfg->header_timeout_ms, old->header_timeout_ms, lws_s, "--header-timeout", &kept);
    /* libwebsockets' header buffer is sized for both limits at start (http_limits_header_buffer): a
     * head within larger ones would not fit it, and lws would close it without an answer. */
    if (cfg->max_request_line_bytes + cfg->max_request_headers_bytes >
        old->max_request_line_bytes + old->max_request_headers_bytes) {
        log_warn("relay: reload: raising --max-request-line or --max-request-headers takes a restart "
                 "(libwebsockets' header buffer is sized at start); keeping the running values");
        cfg->max_request_line_bytes = old->max_request_line_bytes;
        cfg->max_request_headers_bytes = old->max_request_headers_bytes;
        kept = true;
    }
    if (!same_text(old->listen_address, cfg->listen_address) || old->listen_port != cfg->listen_port)
        keep_string(&cfg->listen_address, old->listen_address, "--listen", &kept);
    cfg->listen_port = old->listen_port;
    if (!same_text(old->admin_address, cfg->admin_address) || old->admin_port != cfg->admin_port)
        keep_string(&cfg->admin_address, old->admin_address, "--admin-listen", &kept);
    cfg->admin_port = old->admin_port;
    keep_string(&cfg->token_secret, old->token_secret, "--token-secret", &kept);
    keep_string(&cfg->backend_source_addresses, old->backend_source_addresses, "--backend-source-addresses", &kept);
    keep_string(&cfg->dns_servers, old->dns_servers, "--dns-servers", &kept);
    keep_string(&cfg->resolv_conf, old->resolv_conf, "--resolv-conf", &kept);
    keep_string(&cfg->capture_dir, old->capture_dir, "--capture", &kept); /* the other --capture-* settings apply at once */
    /* The certificate files are reread (tls_reload); where they are is fixed at start. */
    keep_string(&cfg->tls_cert, old->tls_cert, "--tls-cert", &kept);
    keep_string(&cfg->tls_key, old->tls_key, "--tls-key", &kept);
    keep_string(&cfg->backend_ca, old->backend_ca, "--backend-ca", &kept);
    keep_string(&cfg->log_file, old->log_file, "--log-file", &kept); /* reopened, not moved (log_reopen) */
    cfg->ws_read_buffer_bytes = old->ws_read_buffer_bytes;
    bool keys_same = old->service_key_count == cfg->service_key_count;
    for (size_t i = 0; keys_same && i < old->service_key_count; i++)
        keys_same = strcmp(old->service_keys[i], cfg->service_keys[i]) == 0;
    if (!keys_same) {
        log_warn("relay: reload: --service-key changes only with a restart; keeping the running keys");
        for (size_t i = 0; i < cfg->service_key_count; i++)
            free(cfg->service_keys[i]);
        free(cfg->service_keys);
        cfg->service_keys = calloc(old->service_key_count ? old->service_key_count : 1, sizeof *cfg->service_keys);
        cfg->service_key_count = 0;
        for (size_t i = 0; cfg->service_keys && i < old->service_key_count; i++)
            if ((cfg->service_keys[cfg->service_key_count] = strdup(old->service_keys[i])))
                cfg->service_key_count++;
        kept = true;
    }
    return kept;
}
