/* config.c - flags and defaults of the relay; the config file is read in config_file.c (see config.h). */
#include "relay/config.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "containers/buf.h"
#include "relay/log.h"

#define RELAY_VERSION "0.1.0"

/* text starts with the string literal, ASCII case-insensitively; its length counted by the compiler. */
#define STARTS_WITH_NOCASE(text, literal) (strncasecmp((text), literal, sizeof(literal) - 1) == 0)

enum config_result config_fail(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return CONFIG_ERROR;
}

static char *dup_or_die(const char *s)
{
    char *copy = strdup(s);
    if (!copy) {
        fprintf(stderr, "signalr-relay: out of memory\n");
        exit(1);
    }
    return copy;
}

static void replace_string(char **slot, const char *value)
{
    free(*slot);
    *slot = dup_or_die(value);
}

void config_init(struct relay_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen_address = dup_or_die("127.0.0.1");
    cfg->listen_port = 8080;
    cfg->path_prefix = dup_or_die("");
    cfg->legacy_path = dup_or_die("/signalr");
    cfg->legacy_keepalive_ms = 10000;
    cfg->legacy_disconnect_ms = 30000;
    cfg->legacy_poll_timeout_ms = 110000;
    cfg->keepalive_ms = 15000;
    cfg->client_timeout_ms = 30000;
    cfg->handshake_timeout_ms = 15000;
    cfg->negotiate_ttl_ms = 15000;
    cfg->disconnect_timeout_ms = 15000;
    cfg->stateful_buffer_bytes = 100000; /* ASP.NET Core's HubOptions.StatefulReconnectBufferSize */
    cfg->long_poll_timeout_ms = 90000;
    cfg->backend_timeout_ms = 10000;
    cfg->drain_timeout_ms = 30000;
    cfg->probe_interval_ms = 5000;
    cfg->max_message_bytes = 4u << 20;
    cfg->max_buffered_bytes = 256u << 10;
    cfg->ws_read_buffer_bytes = 256;
    cfg->max_connections = 10000;
    cfg->service_fanout_budget = 1000;
    cfg->max_request_line_bytes = 8u << 10;
    cfg->max_request_headers_bytes = 32u << 10;
    cfg->header_timeout_ms = 10000;
    cfg->log_level = LOG_INFO;
    config_capture_defaults(cfg);
}

static void hub_route_free(struct hub_route *h)
{
    free(h->name);
    free(h->backend_url);
    config_backends_free(h);
}

void config_free(struct relay_config *cfg)
{
    for (size_t i = 0; i < cfg->hub_count; i++)
        hub_route_free(&cfg->hubs[i]);
    free(cfg->hubs);
    for (size_t i = 0; i < cfg->cors_origin_count; i++)
        free(cfg->cors_origins[i]);
    free(cfg->cors_origins);
    for (size_t i = 0; i < cfg->service_key_count; i++)
        free(cfg->service_keys[i]);
    free(cfg->service_keys);
    for (size_t i = 0; i < cfg->hub_methods_count; i++)
        free(cfg->hub_methods[i]);
    free(cfg->hub_methods);
    free(cfg->listen_address);
    free(cfg->path_prefix);
    free(cfg->legacy_path);
    free(cfg->token_secret);
    free(cfg->backend_source_addresses);
    free(cfg->tls_cert);
    free(cfg->tls_key);
    free(cfg->backend_ca);
    free(cfg->dns_servers);
    free(cfg->admin_address);
    free(cfg->resolv_conf);
    free(cfg->log_file);
    free(cfg->demo_dir);
    free(cfg->capture_dir);
    memset(cfg, 0, sizeof *cfg);
}

static bool hub_name_is_valid(const char *name, size_t len)
{
    if (len == 0 || len > 128)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '-' && c != '_' && c != '.')
            return false;
    }
    return true;
}

static enum config_result add_hub(struct relay_config *cfg, const char *name, size_t name_len,
                                  const char *url, char *err, size_t err_len)
{
    if (!hub_name_is_valid(name, name_len))
        return config_fail(err, err_len, "hub name '%.*s' must be 1-128 characters of letters, digits, '-', '_' or '.'",
                    (int)name_len, name);
    if (config_find_hub(cfg, name, name_len))
        return config_fail(err, err_len, "hub '%.*s' is configured twice (names are case-insensitive)",
                    (int)name_len, name);
    struct hub_route route = { 0 };
    route.name = strndup(name, name_len);
    route.backend_url = dup_or_die(url);
    if (!route.name || config_parse_backends(&route, url, err, err_len) != CONFIG_OK) {
        hub_route_free(&route);
        return CONFIG_ERROR;
    }
    struct hub_route *grown = realloc(cfg->hubs, (cfg->hub_count + 1) * sizeof *grown);
    if (!grown) {
        hub_route_free(&route);
        return config_fail(err, err_len, "out of memory");
    }
    cfg->hubs = grown;
    cfg->hubs[cfg->hub_count++] = route;
    return CONFIG_OK;
}

/* --app-negotiate NAME=URL: POST /NAME/negotiate goes to the app's own negotiate at URL. */
static enum config_result add_app_negotiate(struct relay_config *cfg, const char *spec, char *err, size_t err_len)
{
    const char *eq = strchr(spec, '=');
    if (!eq)
        return config_fail(err, err_len, "--app-negotiate wants NAME=APP_HUB_URL, got '%s'", spec);
    if (add_hub(cfg, spec, (size_t)(eq - spec), eq + 1, err, err_len) != CONFIG_OK)
        return CONFIG_ERROR;
    cfg->hubs[cfg->hub_count - 1].app_negotiate = true;
    return CONFIG_OK;
}

enum config_result config_add_hub(struct relay_config *cfg, const char *spec, char *err,
                                  size_t err_len)
{
    const char *eq = strchr(spec, '=');
    if (!eq)
        return config_fail(err, err_len, "--hub wants NAME=BACKEND_URL[,BACKEND_URL...], got '%s'", spec);
    return add_hub(cfg, spec, (size_t)(eq - spec), eq + 1, err, err_len);
}

const struct hub_route *config_find_hub(const struct relay_config *cfg, const char *name,
                                        size_t name_len)
{
    for (size_t i = 0; i < cfg->hub_count; i++)
        if (strlen(cfg->hubs[i].name) == name_len && strncasecmp(cfg->hubs[i].name, name, name_len) == 0)
            return &cfg->hubs[i];
    return NULL;
}

/* An identifier as C# and JavaScript both accept it (ASCII): a method name. */
static bool method_name_is_valid(const char *name, size_t len)
{
    if (len == 0 || len > 128 || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_')
            return false;
    return true;
}

/* One NAME=M1,M2 of --hub-methods: the server methods the legacy proxy
 * script (GET /signalr/hubs) lists for hub NAME. */
static enum config_result add_one_hub_methods(struct relay_config *cfg, const char *spec, size_t spec_len,
                                              char *err, size_t err_len)
{
    const char *eq = memchr(spec, '=', spec_len);
    size_t name_len = eq ? (size_t)(eq - spec) : 0;
    if (!eq || !hub_name_is_valid(spec, name_len) || name_len + 1 == spec_len)
        return config_fail(err, err_len, "--hub-methods wants NAME=METHOD[,METHOD...][;NAME=...], got '%.*s'",
                    (int)spec_len, spec);
    for (const char *m = eq + 1, *end = spec + spec_len;;) {
        size_t len = strcspn(m, ",;");
        if (!method_name_is_valid(m, len))
            return config_fail(err, err_len, "--hub-methods '%.*s': '%.*s' is not a method name (letters, digits, '_')",
                        (int)spec_len, spec, (int)len, m);
        if (m + len >= end)
            break;
        m += len + 1;
    }
    char **grown = realloc(cfg->hub_methods, (cfg->hub_methods_count + 1) * sizeof *grown);
    char *copy = strndup(spec, spec_len);
    if (!grown || !copy) {
        free(copy);
        if (grown)
            cfg->hub_methods = grown;
        return config_fail(err, err_len, "out of memory");
    }
    cfg->hub_methods = grown;
    cfg->hub_methods[cfg->hub_methods_count++] = copy;
    return CONFIG_OK;
}

/* --hub-methods NAME=M1,M2[;NAME=M3...] (several hubs at once: one config-file string). */
static enum config_result add_hub_methods(struct relay_config *cfg, const char *value, char *err, size_t err_len)
{
    for (const char *s = value;;) {
        size_t len = strcspn(s, ";");
        if (add_one_hub_methods(cfg, s, len, err, err_len) != CONFIG_OK)
            return CONFIG_ERROR;
        if (!s[len])
            return CONFIG_OK;
        s += len + 1;
    }
}

const char *config_hub_methods(const struct relay_config *cfg, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = cfg->hub_methods_count; i-- > 0;) {
        const char *spec = cfg->hub_methods[i];
        if (strncasecmp(spec, name, n) == 0 && spec[n] == '=')
            return spec + n + 1;
    }
    return NULL;
}

static enum config_result add_cors_origin(struct relay_config *cfg, const char *origin, char *err,
                                          size_t err_len)
{
    char **grown = realloc(cfg->cors_origins, (cfg->cors_origin_count + 1) * sizeof *grown);
    if (!grown)
        return config_fail(err, err_len, "out of memory");
    cfg->cors_origins = grown;
    cfg->cors_origins[cfg->cors_origin_count++] = dup_or_die(origin);
    return CONFIG_OK;
}

/* One AccessKey of service mode: its literal UTF-8 bytes sign the apps' tokens. */
static enum config_result add_service_key(struct relay_config *cfg, const char *key, char *err,
                                          size_t err_len)
{
    if (!key[0])
        return config_fail(err, err_len, "--service-key wants a non-empty key (the AccessKey of the apps' connection string)");
    char **grown = realloc(cfg->service_keys, (cfg->service_key_count + 1) * sizeof *grown);
    if (!grown)
        return config_fail(err, err_len, "out of memory");
    cfg->service_keys = grown;
    cfg->service_keys[cfg->service_key_count++] = dup_or_die(key);
    return CONFIG_OK;
}

/* "ADDRESS:PORT" for `flag` into *address (replaced) and *port. */
static enum config_result parse_address(const char *flag, const char *value, char **address, int *port_out,
                                        char *err, size_t err_len)
{
    const char *colon = strrchr(value, ':');
    if (!colon || colon == value)
        return config_fail(err, err_len, "%s wants ADDRESS:PORT (e.g. 127.0.0.1:8080), got '%s'", flag, value);
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || port < 0 || port > 65535)
        return config_fail(err, err_len, "%s '%s' has a bad port", flag, value);
    free(*address);
    *address = strndup(value, (size_t)(colon - value));
    *port_out = (int)port;
    return *address ? CONFIG_OK : config_fail(err, err_len, "out of memory");
}

static enum config_result parse_listen(struct relay_config *cfg, const char *value, char *err,
                                       size_t err_len)
{
    return parse_address("--listen", value, &cfg->listen_address, &cfg->listen_port, err, err_len);
}

/* A path like "/prefix" (no trailing '/'; "" allowed when may_be_empty). */
static enum config_result parse_path(const char *flag, char **slot, const char *value, bool may_be_empty,
                                     char *err, size_t err_len)
{
    size_t len = strlen(value);
    while (len > 0 && value[len - 1] == '/')
        len--;
    if ((len > 0 && value[0] != '/') || (len == 0 && !may_be_empty))
        return config_fail(err, err_len, "%s must start with '/', got '%s'", flag, value);
    free(*slot);
    *slot = strndup(value, len);
    return *slot ? CONFIG_OK : config_fail(err, err_len, "out of memory");
}

/* A positive number of seconds (fractions allowed) into milliseconds. */
static enum config_result parse_seconds(const char *flag, const char *value, unsigned *out_ms,
                                        char *err, size_t err_len)
{
    char *end;
    errno = 0;
    double seconds = strtod(value, &end);
    if (errno || *end || end == value || !(seconds > 0) || seconds > 86400)
        return config_fail(err, err_len, "%s wants a number of seconds above 0, at most 86400, got '%s'", flag, value);
    *out_ms = (unsigned)(seconds * 1000.0 + 0.5);
    return CONFIG_OK;
}

/* Like parse_seconds, 0 allowed. */
static enum config_result parse_seconds_or_zero(const char *flag, const char *value, unsigned *out_ms, char *err,
                                                size_t err_len)
{
    char *end;
    errno = 0;
    double seconds = strtod(value, &end);
    if (errno || *end || end == value || !(seconds >= 0) || seconds > 86400)
        return config_fail(err, err_len, "%s wants a number of seconds between 0 and 86400, got '%s'", flag, value);
    *out_ms = (unsigned)(seconds * 1000.0 + 0.5);
    return CONFIG_OK;
}

static enum config_result parse_legacy_websockets(struct relay_config *cfg, const char *value, char *err,
                                                  size_t err_len)
{
    if (strcmp(value, "on") == 0) cfg->legacy_websockets = LEGACY_WEBSOCKETS_ON;
    else if (strcmp(value, "off") == 0) cfg->legacy_websockets = LEGACY_WEBSOCKETS_OFF;
    else if (strcmp(value, "refuse") == 0) cfg->legacy_websockets = LEGACY_WEBSOCKETS_REFUSE;
    else return config_fail(err, err_len, "--legacy-websockets wants on, off or refuse, got '%s'", value);
    return CONFIG_OK;
}

static enum config_result parse_size_between(const char *flag, const char *value, size_t *out,
                                             unsigned long long min, unsigned long long max, const char *range,
                                             char *err, size_t err_len)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(value, &end, 10);
    if (errno || end == value || value[0] == '-')
        return config_fail(err, err_len, "%s wants a size in bytes (optionally with K or M), got '%s'", flag, value);
    if (*end == 'K' || *end == 'k')
        n <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        n <<= 20, end++;
    if (*end || n < min || n > max)
        return config_fail(err, err_len, "%s wants a size between %s, got '%s'", flag, range, value);
    *out = (size_t)n;
    return CONFIG_OK;
}

static enum config_result parse_size(const char *flag, const char *value, size_t *out, char *err,
                                     size_t err_len)
{
    return parse_size_between(flag, value, out, 1024, 1ull << 31, "1K and 2048M", err, err_len);
}

/* A count from 0 (no limit) to 10,000,000. */
static enum config_result parse_count(const char *flag, const char *value, size_t *out, char *err, size_t err_len)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(value, &end, 10);
    if (errno || end == value || *end || value[0] == '-' || n > 10000000)
        return config_fail(err, err_len, "%s wants a whole number from 0 (no limit) to 10000000, got '%s'", flag, value);
    *out = (size_t)n;
    return CONFIG_OK;
}

static enum config_result set_nonempty(const char *flag, char **field, const char *value, char *err, size_t err_len)
{
    if (!*value)
        return config_fail(err, err_len, "%s wants a value, got an empty one", flag);
    replace_string(field, value);
    return CONFIG_OK;
}

/* --log-level, --log-format: a name log.c knows. */
static enum config_result set_log_name(const char *flag, int (*from_name)(const char *), const char *names,
                                       int *out, const char *value, char *err, size_t err_len)
{
    if ((*out = from_name(value)) < 0)
        return config_fail(err, err_len, "%s wants %s, got '%s'", flag, names, value);
    return CONFIG_OK;
}

/* Applies one setting by its flag name (without the leading dashes). Shared
 * by the command line and the config file so the two can never disagree. */
enum config_result config_apply_setting(struct relay_config *cfg, const char *name,
                                        const char *value, char *err, size_t err_len)
{
    if (strcmp(name, "listen") == 0) return parse_listen(cfg, value, err, err_len);
    if (strcmp(name, "hub") == 0) return config_add_hub(cfg, value, err, err_len);
    if (strcmp(name, "hub-methods") == 0) return add_hub_methods(cfg, value, err, err_len);
    if (strcmp(name, "path-prefix") == 0) return parse_path("--path-prefix", &cfg->path_prefix, value, true, err, err_len);
    if (strcmp(name, "legacy-path") == 0) return parse_path("--legacy-path", &cfg->legacy_path, value, true, err, err_len);
    if (strcmp(name, "legacy-keepalive") == 0) return parse_seconds("--legacy-keepalive", value, &cfg->legacy_keepalive_ms, err, err_len);
    if (strcmp(name, "legacy-disconnect-timeout") == 0) return parse_seconds("--legacy-disconnect-timeout", value, &cfg->legacy_disconnect_ms, err, err_len);
    if (strcmp(name, "legacy-poll-timeout") == 0) return parse_seconds("--legacy-poll-timeout", value, &cfg->legacy_poll_timeout_ms, err, err_len);
    if (strcmp(name, "legacy-long-poll-delay") == 0) return parse_seconds_or_zero("--legacy-long-poll-delay", value, &cfg->legacy_long_poll_delay_ms, err, err_len);
    if (strcmp(name, "legacy-websockets") == 0) return parse_legacy_websockets(cfg, value, err, err_len);
    if (strcmp(name, "cors-origin") == 0) return add_cors_origin(cfg, value, err, err_len);
    if (strcmp(name, "keepalive") == 0) return parse_seconds("--keepalive", value, &cfg->keepalive_ms, err, err_len);
    if (strcmp(name, "client-timeout") == 0) return parse_seconds("--client-timeout", value, &cfg->client_timeout_ms, err, err_len);
    if (strcmp(name, "handshake-timeout") == 0) return parse_seconds("--handshake-timeout", value, &cfg->handshake_timeout_ms, err, err_len);
    if (strcmp(name, "negotiate-timeout") == 0) return parse_seconds("--negotiate-timeout", value, &cfg->negotiate_ttl_ms, err, err_len);
    if (strcmp(name, "probe-interval") == 0) {
        if (strcmp(value, "0") == 0) {
            cfg->probe_interval_ms = 0;
            return CONFIG_OK;
        }
        return parse_seconds("--probe-interval", value, &cfg->probe_interval_ms, err, err_len);
    }
    if (strcmp(name, "drain-timeout") == 0) return parse_seconds("--drain-timeout", value, &cfg->drain_timeout_ms, err, err_len);
    if (strcmp(name, "disconnect-timeout") == 0) return parse_seconds("--disconnect-timeout", value, &cfg->disconnect_timeout_ms, err, err_len);
    if (strcmp(name, "stateful-reconnect") == 0 && strcmp(value, "on") == 0) { cfg->stateful_reconnect_off = false; return CONFIG_OK; }
    if (strcmp(name, "stateful-reconnect") == 0 && strcmp(value, "off") == 0) { cfg->stateful_reconnect_off = true; return CONFIG_OK; }
    if (strcmp(name, "stateful-reconnect") == 0) return config_fail(err, err_len, "--stateful-reconnect wants on or off, got '%s'", value);
    if (strcmp(name, "stateful-reconnect-buffer") == 0) return parse_size("--stateful-reconnect-buffer", value, &cfg->stateful_buffer_bytes, err, err_len);
    if (strcmp(name, "long-poll-timeout") == 0) return parse_seconds("--long-poll-timeout", value, &cfg->long_poll_timeout_ms, err, err_len);
    if (strcmp(name, "backend-timeout") == 0) return parse_seconds("--backend-timeout", value, &cfg->backend_timeout_ms, err, err_len);
    if (strcmp(name, "max-message-size") == 0) return parse_size("--max-message-size", value, &cfg->max_message_bytes, err, err_len);
    if (strcmp(name, "max-client-message-size") == 0)
        return parse_size("--max-client-message-size", value, &cfg->max_client_message_bytes, err, err_len);
    if (strcmp(name, "max-hub-message-size") == 0)
        return parse_size("--max-hub-message-size", value, &cfg->max_hub_message_bytes, err, err_len);
    if (strcmp(name, "max-buffered") == 0) return parse_size("--max-buffered", value, &cfg->max_buffered_bytes, err, err_len);
    if (strcmp(name, "max-connections") == 0) return parse_count("--max-connections", value, &cfg->max_connections, err, err_len);
    if (strcmp(name, "max-connections-per-address") == 0)
        return parse_count("--max-connections-per-address", value, &cfg->max_connections_per_address, err, err_len);
    /* At least 128: a control frame's payload (up to 125 bytes) must fit in lws' buffer whole. */
    if (strcmp(name, "ws-read-buffer") == 0)
        return parse_size_between("--ws-read-buffer", value, &cfg->ws_read_buffer_bytes, 128, 64u << 10,
                                  "128 and 64K", err, err_len);
    /* At most 16K + 40K: lws keeps a header's length in 16 bits, so its buffer stays below 64K. */
    if (strcmp(name, "max-request-line") == 0)
        return parse_size_between("--max-request-line", value, &cfg->max_request_line_bytes, 1024, 16u << 10,
                                  "1K and 16K", err, err_len);
    if (strcmp(name, "max-request-headers") == 0)
        return parse_size_between("--max-request-headers", value, &cfg->max_request_headers_bytes, 1024,
                                  40u << 10, "1K and 40K", err, err_len);
    if (strcmp(name, "header-timeout") == 0) return parse_seconds("--header-timeout", value, &cfg->header_timeout_ms, err, err_len);
    if (strcmp(name, "token-secret") == 0) { replace_string(&cfg->token_secret, value); return CONFIG_OK; }
    if (strcmp(name, "backend-source-addresses") == 0) { replace_string(&cfg->backend_source_addresses, value); return CONFIG_OK; }
    if (strcmp(name, "tls-cert") == 0) { replace_string(&cfg->tls_cert, value); return CONFIG_OK; }
    if (strcmp(name, "tls-key") == 0) { replace_string(&cfg->tls_key, value); return CONFIG_OK; }
    if (strcmp(name, "backend-ca") == 0) { replace_string(&cfg->backend_ca, value); return CONFIG_OK; }
    if (strcmp(name, "admin-listen") == 0)
        return parse_address("--admin-listen", value, &cfg->admin_address, &cfg->admin_port, err, err_len);
    if (strcmp(name, "dns-servers") == 0) return set_nonempty("--dns-servers", &cfg->dns_servers, value, err, err_len);
    if (strcmp(name, "resolv-conf") == 0) return set_nonempty("--resolv-conf", &cfg->resolv_conf, value, err, err_len);
    if (strcmp(name, "service-key") == 0) return add_service_key(cfg, value, err, err_len);
    if (strcmp(name, "app-negotiate") == 0) return add_app_negotiate(cfg, value, err, err_len);
    if (strcmp(name, "service-fanout-budget") == 0)
        return parse_count("--service-fanout-budget", value, &cfg->service_fanout_budget, err, err_len);
    if (strcmp(name, "log-level") == 0)
        return set_log_name("--log-level", log_level_from_name, "error, warn, info or debug", &cfg->log_level, value, err, err_len);
    if (strcmp(name, "log-format") == 0)
        return set_log_name("--log-format", log_format_from_name, "text, json or logfmt", &cfg->log_format, value, err, err_len);
    if (strcmp(name, "log-file") == 0) return set_nonempty("--log-file", &cfg->log_file, value, err, err_len);
    if (strcmp(name, "demo-dir") == 0) return set_nonempty("--demo-dir", &cfg->demo_dir, value, err, err_len);
    if (strcmp(name, "capture") == 0) return set_nonempty("--capture", &cfg->capture_dir, value, err, err_len);
    if (strcmp(name, "capture-bodies") == 0 || strcmp(name, "capture-sample") == 0 || strcmp(name, "capture-max-file") == 0 || strcmp(name, "capture-max-dir") == 0) return config_capture_setting(cfg, name, value, err, err_len);
    if (strcmp(name, "config") == 0) return config_load_file(cfg, value, err, err_len);
    return config_fail(err, err_len, "unknown option '--%s' (see --help)", name);
}

enum config_result config_parse_args(struct relay_config *cfg, int argc, char **argv, char *err,
                                     size_t err_len)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            config_print_help(stdout);
            return CONFIG_EXIT_SUCCESS;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("signalr-relay %s\n", RELAY_VERSION);
            return CONFIG_EXIT_SUCCESS;
        }
        if (strncmp(arg, "--", sizeof "--" - 1) != 0)
            return config_fail(err, err_len, "unexpected argument '%s' (options start with --; see --help)", arg);
        char name[64];
        const char *value;
        const char *eq = strchr(arg, '=');
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - arg - 2), arg + 2);
            value = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", arg + 2);
            if (i + 1 >= argc)
                return config_fail(err, err_len, "option '%s' needs a value (see --help)", arg);
            value = argv[++i];
        }
        if (config_apply_setting(cfg, name, value, err, err_len) != CONFIG_OK)
            return CONFIG_ERROR;
    }
    return CONFIG_OK;
}
