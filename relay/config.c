/* config.c - flags, config file and defaults of the relay (see config.h). */
#include "relay/config.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "relay/log.h"

#define RELAY_VERSION "0.1.0"

/* text starts with the string literal, ASCII case-insensitively; its length counted by the compiler. */
#define STARTS_WITH_NOCASE(text, literal) (strncasecmp((text), literal, sizeof(literal) - 1) == 0)

static enum config_result fail(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum config_result fail(char *err, size_t err_len, const char *fmt, ...)
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
    cfg->backend_timeout_ms = 10000;
    cfg->max_message_bytes = 4u << 20;
    cfg->max_buffered_bytes = 256u << 10;
    cfg->ws_read_buffer_bytes = 256;
    cfg->log_level = LOG_INFO;
}

static void hub_route_free(struct hub_route *h)
{
    free(h->name);
    free(h->backend_url);
    free(h->backend_host);
    free(h->backend_path);
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
    free(cfg->listen_address);
    free(cfg->path_prefix);
    free(cfg->legacy_path);
    free(cfg->token_secret);
    free(cfg->backend_source_addresses);
    memset(cfg, 0, sizeof *cfg);
}

/* "http://host[:port]/path" (also https, ws, wss) into the route's fields. */
static enum config_result parse_backend_url(struct hub_route *h, const char *url, char *err,
                                            size_t err_len)
{
    const char *rest;
    if (STARTS_WITH_NOCASE(url, "http://") || STARTS_WITH_NOCASE(url, "ws://")) {
        h->backend_tls = false;
    } else if (STARTS_WITH_NOCASE(url, "https://") || STARTS_WITH_NOCASE(url, "wss://")) {
        h->backend_tls = true;
    } else {
        return fail(err, err_len, "backend URL '%s' must start with http://, https://, ws:// or wss://", url);
    }
    rest = strstr(url, "://") + sizeof "://" - 1;
    size_t host_len = strcspn(rest, ":/?#");
    if (host_len == 0)
        return fail(err, err_len, "backend URL '%s' has no host", url);
    h->backend_host = strndup(rest, host_len);
    rest += host_len;
    h->backend_port = h->backend_tls ? 443 : 80;
    if (*rest == ':') {
        char *end;
        errno = 0;
        long port = strtol(rest + 1, &end, 10);
        if (errno || end == rest + 1 || port < 1 || port > 65535)
            return fail(err, err_len, "backend URL '%s' has a bad port", url);
        h->backend_port = (int)port;
        rest = end;
    }
    if (*rest == '?' || *rest == '#')
        return fail(err, err_len, "backend URL '%s': query strings and fragments are not supported", url);
    size_t path_len = strlen(rest);
    while (path_len > 0 && rest[path_len - 1] == '/')
        path_len--;
    if (path_len == 0)
        return fail(err, err_len, "backend URL '%s' has no hub path (e.g. http://127.0.0.1:5000/chat)", url);
    h->backend_path = strndup(rest, path_len);
    if (!h->backend_host || !h->backend_path) {
        fprintf(stderr, "signalr-relay: out of memory\n");
        exit(1);
    }
    return CONFIG_OK;
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
        return fail(err, err_len, "hub name '%.*s' must be 1-128 characters of letters, digits, '-', '_' or '.'",
                    (int)name_len, name);
    if (config_find_hub(cfg, name, name_len))
        return fail(err, err_len, "hub '%.*s' is configured twice (names are case-insensitive)",
                    (int)name_len, name);
    struct hub_route route = { 0 };
    route.name = strndup(name, name_len);
    route.backend_url = dup_or_die(url);
    if (!route.name || parse_backend_url(&route, url, err, err_len) != CONFIG_OK) {
        hub_route_free(&route);
        return CONFIG_ERROR;
    }
    struct hub_route *grown = realloc(cfg->hubs, (cfg->hub_count + 1) * sizeof *grown);
    if (!grown) {
        hub_route_free(&route);
        return fail(err, err_len, "out of memory");
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
        return fail(err, err_len, "--app-negotiate wants NAME=APP_HUB_URL, got '%s'", spec);
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
        return fail(err, err_len, "--hub wants NAME=BACKEND_URL, got '%s'", spec);
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

static enum config_result add_cors_origin(struct relay_config *cfg, const char *origin, char *err,
                                          size_t err_len)
{
    char **grown = realloc(cfg->cors_origins, (cfg->cors_origin_count + 1) * sizeof *grown);
    if (!grown)
        return fail(err, err_len, "out of memory");
    cfg->cors_origins = grown;
    cfg->cors_origins[cfg->cors_origin_count++] = dup_or_die(origin);
    return CONFIG_OK;
}

/* One AccessKey of service mode: its literal UTF-8 bytes sign the apps' tokens. */
static enum config_result add_service_key(struct relay_config *cfg, const char *key, char *err,
                                          size_t err_len)
{
    if (!key[0])
        return fail(err, err_len, "--service-key wants a non-empty key (the AccessKey of the apps' connection string)");
    char **grown = realloc(cfg->service_keys, (cfg->service_key_count + 1) * sizeof *grown);
    if (!grown)
        return fail(err, err_len, "out of memory");
    cfg->service_keys = grown;
    cfg->service_keys[cfg->service_key_count++] = dup_or_die(key);
    return CONFIG_OK;
}

static enum config_result parse_listen(struct relay_config *cfg, const char *value, char *err,
                                       size_t err_len)
{
    const char *colon = strrchr(value, ':');
    if (!colon || colon == value)
        return fail(err, err_len, "--listen wants ADDRESS:PORT (e.g. 127.0.0.1:8080), got '%s'", value);
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || port < 0 || port > 65535)
        return fail(err, err_len, "--listen '%s' has a bad port", value);
    free(cfg->listen_address);
    cfg->listen_address = strndup(value, (size_t)(colon - value));
    cfg->listen_port = (int)port;
    return cfg->listen_address ? CONFIG_OK : fail(err, err_len, "out of memory");
}

/* A path like "/prefix" (no trailing '/'; "" allowed when may_be_empty). */
static enum config_result parse_path(const char *flag, char **slot, const char *value, bool may_be_empty,
                                     char *err, size_t err_len)
{
    size_t len = strlen(value);
    while (len > 0 && value[len - 1] == '/')
        len--;
    if ((len > 0 && value[0] != '/') || (len == 0 && !may_be_empty))
        return fail(err, err_len, "%s must start with '/', got '%s'", flag, value);
    free(*slot);
    *slot = strndup(value, len);
    return *slot ? CONFIG_OK : fail(err, err_len, "out of memory");
}

/* A positive number of seconds (fractions allowed) into milliseconds. */
static enum config_result parse_seconds(const char *flag, const char *value, unsigned *out_ms,
                                        char *err, size_t err_len)
{
    char *end;
    errno = 0;
    double seconds = strtod(value, &end);
    if (errno || *end || end == value || !(seconds > 0) || seconds > 86400)
        return fail(err, err_len, "%s wants a number of seconds between 0 and 86400, got '%s'", flag, value);
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
        return fail(err, err_len, "%s wants a number of seconds between 0 and 86400, got '%s'", flag, value);
    *out_ms = (unsigned)(seconds * 1000.0 + 0.5);
    return CONFIG_OK;
}

static enum config_result parse_legacy_websockets(struct relay_config *cfg, const char *value, char *err,
                                                  size_t err_len)
{
    if (strcmp(value, "on") == 0) cfg->legacy_websockets = LEGACY_WEBSOCKETS_ON;
    else if (strcmp(value, "off") == 0) cfg->legacy_websockets = LEGACY_WEBSOCKETS_OFF;
    else if (strcmp(value, "refuse") == 0) cfg->legacy_websockets = LEGACY_WEBSOCKETS_REFUSE;
    else return fail(err, err_len, "--legacy-websockets wants on, off or refuse, got '%s'", value);
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
        return fail(err, err_len, "%s wants a size in bytes (optionally with K or M), got '%s'", flag, value);
    if (*end == 'K' || *end == 'k')
        n <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        n <<= 20, end++;
    if (*end || n < min || n > max)
        return fail(err, err_len, "%s wants a size between %s, got '%s'", flag, range, value);
    *out = (size_t)n;
    return CONFIG_OK;
}

static enum config_result parse_size(const char *flag, const char *value, size_t *out, char *err,
                                     size_t err_len)
{
    return parse_size_between(flag, value, out, 1024, 1ull << 31, "1K and 2048M", err, err_len);
}

static enum config_result set_log_level(struct relay_config *cfg, const char *value, char *err,
                                        size_t err_len)
{
    int level = log_level_from_name(value);
    if (level < 0)
        return fail(err, err_len, "--log-level wants error, warn, info or debug, got '%s'", value);
    cfg->log_level = level;
    return CONFIG_OK;
}

/* Applies one setting by its flag name (without the leading dashes). Shared
 * by the command line and the config file so the two can never disagree. */
static enum config_result apply_setting(struct relay_config *cfg, const char *name,
                                        const char *value, char *err, size_t err_len)
{
    if (strcmp(name, "listen") == 0) return parse_listen(cfg, value, err, err_len);
    if (strcmp(name, "hub") == 0) return config_add_hub(cfg, value, err, err_len);
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
    if (strcmp(name, "backend-timeout") == 0) return parse_seconds("--backend-timeout", value, &cfg->backend_timeout_ms, err, err_len);
    if (strcmp(name, "max-message-size") == 0) return parse_size("--max-message-size", value, &cfg->max_message_bytes, err, err_len);
    if (strcmp(name, "max-buffered") == 0) return parse_size("--max-buffered", value, &cfg->max_buffered_bytes, err, err_len);
    /* At least 128: a control frame's payload (up to 125 bytes) must fit in lws' buffer whole. */
    if (strcmp(name, "ws-read-buffer") == 0)
        return parse_size_between("--ws-read-buffer", value, &cfg->ws_read_buffer_bytes, 128, 64u << 10,
                                  "128 and 64K", err, err_len);
    if (strcmp(name, "token-secret") == 0) { replace_string(&cfg->token_secret, value); return CONFIG_OK; }
    if (strcmp(name, "backend-source-addresses") == 0) { replace_string(&cfg->backend_source_addresses, value); return CONFIG_OK; }
    if (strcmp(name, "service-key") == 0) return add_service_key(cfg, value, err, err_len);
    if (strcmp(name, "app-negotiate") == 0) return add_app_negotiate(cfg, value, err, err_len);
    if (strcmp(name, "log-level") == 0) return set_log_level(cfg, value, err, err_len);
    if (strcmp(name, "config") == 0) return config_load_file(cfg, value, err, err_len);
    return fail(err, err_len, "unknown option '--%s' (see --help)", name);
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
            return fail(err, err_len, "unexpected argument '%s' (options start with --; see --help)", arg);
        char name[64];
        const char *value;
        const char *eq = strchr(arg, '=');
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - arg - 2), arg + 2);
            value = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", arg + 2);
            if (i + 1 >= argc)
                return fail(err, err_len, "option '%s' needs a value (see --help)", arg);
            value = argv[++i];
        }
        if (apply_setting(cfg, name, value, err, err_len) != CONFIG_OK)
            return CONFIG_ERROR;
    }
    return CONFIG_OK;
}

static char *read_whole_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *data = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (1u << 24)) { /* a config file over 16 MiB is a mistake */
                free(data);
                fclose(f);
                return NULL;
            }
            char *grown = realloc(data, cap);
            if (!grown) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = grown;
        }
        got = fread(data + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return data;
}

static enum config_result add_hub_member(struct relay_config *cfg, const cJSON *h, const char *path, char *err,
                                         size_t err_len)
{
    if (!cJSON_IsString(h))
        return fail(err, err_len, "%s: hub \"%s\" must map to a URL string", path, h->string);
    return add_hub(cfg, h->string, strlen(h->string), h->valuestring, err, err_len);
}

static enum config_result add_cors_member(struct relay_config *cfg, const cJSON *o, const char *path, char *err,
                                          size_t err_len)
{
    if (!cJSON_IsString(o))
        return fail(err, err_len, "%s: \"cors-origins\" must hold strings", path);
    return add_cors_origin(cfg, o->valuestring, err, err_len);
}

static enum config_result add_service_key_member(struct relay_config *cfg, const cJSON *k, const char *path, char *err,
                                                 size_t err_len)
{
    if (!cJSON_IsString(k))
        return fail(err, err_len, "%s: \"service-keys\" must hold strings", path);
    return add_service_key(cfg, k->valuestring, err, err_len);
}

/* Each member of a JSON object or array through add, stopping at the first error. */
static enum config_result add_members(struct relay_config *cfg, const cJSON *item, const char *path,
                                      enum config_result (*add)(struct relay_config *, const cJSON *, const char *,
                                                                char *, size_t),
                                      char *err, size_t err_len)
{
    const cJSON *member;
    cJSON_ArrayForEach(member, item) {
        if (add(cfg, member, path, err, err_len) != CONFIG_OK)
            return CONFIG_ERROR;
    }
    return CONFIG_OK;
}

/* Config-file keys are the flag names; hubs is an object NAME -> URL and
 * corsOrigins an array, the rest strings or numbers. */
static enum config_result apply_json_member(struct relay_config *cfg, const cJSON *item,
                                            const char *path, char *err, size_t err_len)
{
    const char *key = item->string;
    if (strcmp(key, "hubs") == 0)
        return cJSON_IsObject(item) ? add_members(cfg, item, path, add_hub_member, err, err_len)
                                    : fail(err, err_len, "%s: \"hubs\" must be an object of NAME: URL", path);
    if (strcmp(key, "cors-origins") == 0)
        return cJSON_IsArray(item) ? add_members(cfg, item, path, add_cors_member, err, err_len)
                                   : fail(err, err_len, "%s: \"cors-origins\" must be an array of strings", path);
    if (strcmp(key, "service-keys") == 0)
        return cJSON_IsArray(item) ? add_members(cfg, item, path, add_service_key_member, err, err_len)
                                   : fail(err, err_len, "%s: \"service-keys\" must be an array of strings", path);
    if (strcmp(key, "config") == 0 || strcmp(key, "hub") == 0 || strcmp(key, "cors-origin") == 0)
        return fail(err, err_len, "%s: key \"%s\" is not allowed in a config file", path, key);
    char number[64];
    const char *value;
    if (cJSON_IsString(item)) {
        value = item->valuestring;
    } else if (cJSON_IsNumber(item)) {
        snprintf(number, sizeof number, "%.17g", item->valuedouble);
        value = number;
    } else {
        return fail(err, err_len, "%s: \"%s\" must be a string or a number", path, key);
    }
    if (apply_setting(cfg, key, value, err, err_len) != CONFIG_OK) {
        char inner[256];
        snprintf(inner, sizeof inner, "%s", err);
        return fail(err, err_len, "%s: %s", path, inner);
    }
    return CONFIG_OK;
}

enum config_result config_load_file(struct relay_config *cfg, const char *path, char *err,
                                    size_t err_len)
{
    size_t len = 0;
    char *text = read_whole_file(path, &len);
    if (!text)
        return fail(err, err_len, "cannot read config file '%s': %s", path, strerror(errno ? errno : EIO));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root || !cJSON_IsObject(root)) {
        size_t offset = end && end >= text ? (size_t)(end - text) : 0;
        cJSON_Delete(root);
        free(text);
        return fail(err, err_len, "config file '%s' is not a JSON object (error near byte %zu)", path, offset);
    }
    enum config_result result = CONFIG_OK;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if ((result = apply_json_member(cfg, item, path, err, err_len)) != CONFIG_OK)
            break;
    }
    cJSON_Delete(root);
    free(text);
    return result;
}

void config_print_help(FILE *out)
{
    fputs(
"Usage: signalr-relay [OPTIONS]\n"
"\n"
"A relay in front of ASP.NET Core SignalR hubs. In proxy mode every client\n"
"connection gets its own backend link to the configured hub, so the backend\n"
"needs no change.\n"
"\n"
"Hubs (at least one is needed, unless service mode is on):\n"
"  --hub NAME=URL            serve hub NAME at /NAME (case-insensitive) and forward it to\n"
"                            the ASP.NET Core hub at URL, e.g. chat=http://127.0.0.1:5000/chat.\n"
"                            Repeatable.\n"
"  --config FILE             read settings from a JSON file: the keys are the option names\n"
"                            below without the dashes, plus \"hubs\": {\"NAME\": \"URL\"} and\n"
"                            \"cors-origins\": [\"https://app.example\"], \"service-keys\": [\"KEY\"].\n"
"                            Options after --config override the file.\n"
"\n"
"Service mode (ASP.NET Core apps using the Azure SignalR SDK connect to the relay):\n"
"  --service-key KEY         turn service mode on: apps whose connection string is\n"
"                            Endpoint=http://HOST;Port=PORT;AccessKey=KEY;Version=1.0;\n"
"                            connect their hubs at /server/ and their clients are sent to\n"
"                            /client/. The relay holds the clients, groups and users. KEY is\n"
"                            used as its literal UTF-8 bytes, as the SDK does. Repeatable\n"
"                            (key rotation: a token signed with any of them is accepted).\n"
"                            Hubs are those the apps connect; no --hub is needed for them.\n"
"  --app-negotiate NAME=URL  answer POST /NAME/negotiate by forwarding it (query, Authorization,\n"
"                            cookies) to the app's own negotiate for its hub at URL, e.g.\n"
"                            board=http://127.0.0.1:5000/board, and passing its answer back as\n"
"                            it is (the redirect to /client/), so clients need to reach only\n"
"                            the relay. Repeatable.\n"
"\n"
"Listening:\n"
"  --listen ADDRESS:PORT     where clients connect (default 127.0.0.1:8080; use\n"
"                            0.0.0.0:PORT to accept connections from other machines)\n"
"  --path-prefix PREFIX      serve hubs at PREFIX/NAME instead of /NAME (default none)\n"
"  --cors-origin ORIGIN      allow browser pages from ORIGIN (exact match, echoed with\n"
"                            credentials allowed). Repeatable. Default: none.\n"
"\n"
"Legacy ASP.NET SignalR 2.x clients (jQuery, .NET, C++; webSockets, serverSentEvents,\n"
"longPolling; foreverFrame is declined so that clients move on):\n"
"  --legacy-path PATH        their endpoint (default /signalr; \"\" turns it off). A legacy hub\n"
"                            proxy named like a configured hub (case-insensitive) reaches it.\n"
"  --legacy-keepalive S      keep-alive interval; clients give up after twice this (10)\n"
"  --legacy-disconnect-timeout S\n"
"                            how long a dropped client may take to reconnect before its\n"
"                            backend links are closed (30)\n"
"  --legacy-poll-timeout S   longest hold of a long poll with nothing to send (110)\n"
"  --legacy-long-poll-delay S\n"
"                            LongPollDelay: clients wait S seconds between polls (0)\n"
"  --legacy-websockets MODE  on (default); off: negotiate says TryWebSockets false; refuse:\n"
"                            it says true but every upgrade is refused with 400, as behind a\n"
"                            proxy that blocks WebSockets, so clients fall back by themselves\n"
"\n"
"Timing (seconds; the ASP.NET Core defaults):\n"
"  --keepalive S             ping a client after S seconds without sending it anything (15)\n"
"  --client-timeout S        close a client silent for S seconds, once it has pinged (30)\n"
"  --handshake-timeout S     close a client that sent no handshake within S seconds (15)\n"
"  --negotiate-timeout S     forget a negotiated connection not used within S seconds (15)\n"
"  --backend-timeout S       answer a negotiate 504 when its backend has not answered within\n"
"                            S seconds (10)\n"
"\n"
"Limits:\n"
"  --max-message-size N      largest message accepted in either direction, bytes with\n"
"                            optional K or M (default 4M); larger ones close the connection\n"
"                            with a clear error\n"
"  --max-buffered N          bytes queued toward a slow peer before the relay stops reading\n"
"                            from the other side (default 256K)\n"
"  --ws-read-buffer N        lws' receive buffer per WebSocket, client side and backend\n"
"                            link alike (128 to 64K, default 256): held by every connection,\n"
"                            idle ones too, and the most one read takes from a socket; larger\n"
"                            trades memory per connection for fewer reads per large message\n"
"\n"
"Other:\n"
"  --token-secret SECRET     key that signs connection tokens (default: random per start, so\n"
"                            tokens do not survive a restart)\n"
"  --backend-source-addresses A,B,...\n"
"                            local addresses to open backend links from, round robin, so\n"
"                            more than ~28k links can reach one backend (default: the kernel's)\n"
"  --log-level LEVEL         error, warn, info (default) or debug\n"
"  --help                    this text\n"
"  --version                 the version\n"
"\n"
"Endpoints: POST /NAME/negotiate (negotiateVersion 0 and 1), GET /NAME with a WebSocket\n"
"upgrade (JSON and MessagePack hub protocols), the legacy endpoint (negotiate, connect,\n"
"reconnect, start, abort, ping over WebSockets), GET /metrics. Server-Sent Events and long\n"
"polling are not served yet, for either kind of client. With --service-key also GET /server/\n"
"(the apps' WebSockets), POST /client/negotiate (negotiateVersion 1) and GET /client/ with\n"
"a WebSocket upgrade for Core clients.\n",
        out);
}
