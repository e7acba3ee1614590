/* config.h - the relay's configuration: command-line flags and the JSON config file.
 *
 * Everything the relay can be told lives in struct relay_config, filled from
 * defaults, then from the flags in order (a --config FILE is read at the point
 * where it appears, so later flags override it). config_free releases every
 * string the parser allocated. */
#ifndef SR_CONFIG_H
#define SR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One hub the relay serves: clients reach it at /<prefix>/<name>, the relay
 * forwards to backend_url. */
struct hub_route {
    char *name;          /* as configured; matched case-insensitively */
    char *backend_url;   /* as configured, e.g. http://127.0.0.1:5000/chat */
    bool backend_tls;    /* https:// or wss:// */
    char *backend_host;  /* host name or address */
    int backend_port;
    char *backend_path;  /* with leading '/', no trailing '/' */
    bool app_negotiate;  /* service mode (--app-negotiate): only negotiate is forwarded, and the
                            app's answer (a redirect to /client/) goes back as it is */
};

/* --legacy-websockets */
enum { LEGACY_WEBSOCKETS_ON = 0, LEGACY_WEBSOCKETS_OFF, LEGACY_WEBSOCKETS_REFUSE };

struct relay_config {
    char *listen_address;        /* default 127.0.0.1 */
    int listen_port;             /* default 8080 */
    char *path_prefix;           /* "" or "/something" (no trailing '/') */
    struct hub_route *hubs;
    size_t hub_count;
    char **cors_origins;         /* exact origins allowed for browsers; none by default */
    size_t cors_origin_count;
    char *token_secret;          /* signs connection tokens; random per process if NULL */
    char *backend_source_addresses; /* comma list of local addresses for backend links, or NULL */
    char **service_keys;         /* service mode's AccessKeys (several: rotation); none = off */
    size_t service_key_count;

    char *legacy_path;            /* legacy ASP.NET SignalR endpoint, default "/signalr"; "" = off */
    unsigned legacy_keepalive_ms; /* legacy keep-alive `{}` interval (10 s) */
    unsigned legacy_disconnect_ms;/* legacy DisconnectTimeout (30 s) */
    unsigned legacy_poll_timeout_ms;   /* legacy ConnectionTimeout: longest hold of a long poll (110 s) */
    unsigned legacy_long_poll_delay_ms;/* legacy LongPollDelay: clients wait this between polls (0) */
    int legacy_websockets;        /* LEGACY_WEBSOCKETS_*: whether legacy clients may use WebSockets */

    unsigned keepalive_ms;        /* Core ping interval (15 s) */
    unsigned client_timeout_ms;   /* Core client timeout (30 s) */
    unsigned handshake_timeout_ms;/* Core handshake timeout (15 s) */
    unsigned negotiate_ttl_ms;    /* unused negotiate tokens expire (15 s) */
    unsigned backend_timeout_ms;  /* a backend's answer to a negotiate may take this long (10 s) */
    size_t max_message_bytes;     /* one hub message / WebSocket message, either direction */
    size_t max_buffered_bytes;    /* queued toward one peer before reading from the other pauses */
    size_t ws_read_buffer_bytes;  /* lws rx buffer per WebSocket: memory per connection, bytes per read */
    int log_level;
};

enum config_result { CONFIG_OK = 0, CONFIG_EXIT_SUCCESS = 1, CONFIG_ERROR = -1 };

void config_init(struct relay_config *cfg);
void config_free(struct relay_config *cfg);

/* Parses argv. CONFIG_EXIT_SUCCESS means --help or --version was printed.
 * On CONFIG_ERROR, err holds one clear sentence. */
enum config_result config_parse_args(struct relay_config *cfg, int argc, char **argv, char *err,
                                     size_t err_len);
/* Reads a JSON config file (see --help for its keys). */
enum config_result config_load_file(struct relay_config *cfg, const char *path, char *err,
                                    size_t err_len);
/* Adds one hub from "NAME=URL". */
enum config_result config_add_hub(struct relay_config *cfg, const char *spec, char *err,
                                  size_t err_len);

const struct hub_route *config_find_hub(const struct relay_config *cfg, const char *name,
                                        size_t name_len);

void config_print_help(FILE *out);

#endif
