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

/* One backend instance of a hub: "http://host[:port]/path" taken apart. */
struct backend_target {
    char *url;           /* this instance's URL, as configured */
    bool tls;            /* https:// or wss:// */
    char *host;          /* host name or address */
    int port;
    char *path;          /* with leading '/', no trailing '/' */
};

/* One hub the relay serves: clients reach it at /<prefix>/<name>, the relay
 * forwards to one of its backend instances (--hub NAME=URL1,URL2,...). */
struct hub_route {
    char *name;          /* as configured; matched case-insensitively */
    char *backend_url;   /* as configured: the URL, or the comma-separated list */
    struct backend_target *targets; /* target_count >= 1 of them, in configured order */
    size_t target_count;
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
    char *dns_servers;           /* "IP[:PORT],..." for backend host names, or NULL: resolv.conf's */
    char *resolv_conf;           /* a resolv.conf to read instead of /etc/resolv.conf, or NULL */
    char *admin_address;         /* --admin-listen: /healthz, /readyz, /metrics there only; NULL: public port */
    int admin_port;
    char **service_keys;         /* service mode's AccessKeys (several: rotation); none = off */
    size_t service_key_count;
    char *tls_cert;              /* PEM certificate (and chain) clients see: the listener speaks TLS; NULL: plain */
    char *tls_key;               /* its PEM private key; NULL: in tls_cert's file */
    char *backend_ca;            /* PEM CAs https/wss backends are verified with; NULL: the system store */

    char *legacy_path;            /* legacy ASP.NET SignalR endpoint, default "/signalr"; "" = off */
    char **hub_methods;           /* --hub-methods "NAME=M1,M2" (validated), for the legacy proxy script */
    size_t hub_methods_count;
    unsigned legacy_keepalive_ms; /* legacy keep-alive `{}` interval (10 s) */
    unsigned legacy_disconnect_ms;/* legacy DisconnectTimeout (30 s) */
    unsigned legacy_poll_timeout_ms;   /* legacy ConnectionTimeout: longest hold of a long poll (110 s) */
    unsigned legacy_long_poll_delay_ms;/* legacy LongPollDelay: clients wait this between polls (0) */
    int legacy_websockets;        /* LEGACY_WEBSOCKETS_*: whether legacy clients may use WebSockets */

    unsigned keepalive_ms;        /* Core ping interval (15 s) */
    unsigned client_timeout_ms;   /* Core client timeout (30 s) */
    unsigned handshake_timeout_ms;/* Core handshake timeout (15 s) */
    unsigned negotiate_ttl_ms;    /* unused negotiate tokens expire (15 s) */
    bool stateful_reconnect_off;  /* --stateful-reconnect off: negotiate never offers it */
    size_t stateful_buffer_bytes; /* unacked bytes toward a stateful client before the hub waits (100000) */
    unsigned disconnect_timeout_ms; /* Core SSE/long polling: a client without a poll or stream is gone (15 s) */
    unsigned long_poll_timeout_ms;  /* Core long polling: an empty poll is answered after this (90 s) */
    unsigned probe_interval_ms;   /* TCP connect to every backend instance this often (5 s); 0: off */
    unsigned drain_timeout_ms;    /* links to a backend instance removed by a reload end after this (30 s) */
    unsigned backend_timeout_ms;  /* a backend's answer (negotiate, WebSocket upgrade) may take this long (10 s) */
    size_t max_message_bytes;     /* one hub message / WebSocket message, either direction */
    size_t max_client_message_bytes; /* from clients; 0 = max_message_bytes (config_client_message_limit) */
    size_t max_hub_message_bytes;    /* from backends and apps; 0 = max_message_bytes (config_hub_message_limit) */
    size_t max_buffered_bytes;    /* queued toward one peer before reading from the other pauses */
    size_t max_connections;       /* client connections held at once; 0 = no limit (10000) */
    size_t max_connections_per_address; /* from one peer address; 0 = no limit (the default) */
    size_t service_fanout_budget; /* service mode: deliveries one server connection makes per loop turn (1000); 0 = no bound */
    size_t ws_read_buffer_bytes;  /* lws rx buffer per WebSocket: memory per connection, bytes per read */
    size_t max_request_line_bytes;    /* request target (path and query); longer: 414 (8K, as Kestrel) */
    size_t max_request_headers_bytes; /* request headers; more: 431 (32K, as Kestrel) */
    unsigned header_timeout_ms;       /* a request's headers must arrive within this (10 s) */
    int log_level;
    int log_format;               /* LOG_FORMAT_*: text (the default), json, logfmt */
    char *log_file;               /* --log-file: lines appended there; NULL: stderr */
    char *demo_dir;               /* --demo-dir: static files served under /demo/; NULL: /demo is off */
    char *capture_dir;            /* --capture: record client sessions into this directory; NULL: off */
    bool capture_no_bodies;       /* --capture-bodies none: frames and bodies as their sizes only */
    double capture_sample;        /* --capture-sample: the fraction of new connections recorded (1) */
    size_t capture_max_file_bytes;/* --capture-max-file: one file ends, marked truncated, past this (16M) */
    size_t capture_max_dir_bytes; /* --capture-max-dir: no new captures once the directory holds this (1024M) */
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

/* The server methods configured for hub name (--hub-methods, the last one
 * given): "M1,M2,...", or NULL when none were. */
const char *config_hub_methods(const struct relay_config *cfg, const char *name);

/* The route's backends from "URL1,URL2,..." (relay/config_backends.c); config_backends_free
 * releases them. */
enum config_result config_parse_backends(struct hub_route *h, const char *list, char *err, size_t err_len);

/* Writes the printf-style message into err and returns CONFIG_ERROR (for config.c and
 * config_backends.c). */
enum config_result config_fail(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void config_backends_free(struct hub_route *h);

const struct hub_route *config_find_hub(const struct relay_config *cfg, const char *name,
                                        size_t name_len);

void config_print_help(FILE *out);

/* One setting by its flag name (without the dashes), as the command line and the config file
 * (relay/config_file.c) give it. */
enum config_result config_apply_setting(struct relay_config *cfg, const char *name, const char *value, char *err,
                                        size_t err_len);

/* relay/config_capture.c: the defaults of the --capture-* settings (config_init sets them), and
 * one of --capture-bodies, --capture-sample, --capture-max-file, --capture-max-dir read. */
void config_capture_defaults(struct relay_config *cfg);
enum config_result config_capture_setting(struct relay_config *cfg, const char *name, const char *value, char *err,
                                          size_t err_len);

/* A reload: the settings read once at start (--listen, --admin-listen, --token-secret, the
 * resolver's, --backend-source-addresses, --service-key, --ws-read-buffer, the TLS file
 * locations) take their running values from old in cfg, each change logged as a warning.
 * True when any was changed back. */
bool config_keep_restart_only(const struct relay_config *old, struct relay_config *cfg);
/* libwebsockets' own timeout in whole seconds (its context's timeout_secs and the vhost's
 * connect_timeout_secs), fixed at start: a backstop that stays behind the relay's deadlines on
 * the wheel (lws 4.1.6 gives a backend connection's connect and response waits 20 s of its own,
 * and closed one before a longer --backend-timeout came due; a request body's wait likewise,
 * relay/request_body.h). 20 s, or --backend-timeout or --header-timeout + 5 s when longer. A
 * reload that would need more keeps the running value of those two (config_keep_restart_only). */
unsigned config_lws_timeout_secs(const struct relay_config *cfg);

/* The largest message a client may send (--max-client-message-size, else --max-message-size). */
static inline size_t config_client_message_limit(const struct relay_config *cfg)
{
    return cfg->max_client_message_bytes ? cfg->max_client_message_bytes : cfg->max_message_bytes;
}

/* The largest message a backend link or an app server connection may send
 * (--max-hub-message-size, else --max-message-size). */
static inline size_t config_hub_message_limit(const struct relay_config *cfg)
{
    return cfg->max_hub_message_bytes ? cfg->max_hub_message_bytes : cfg->max_message_bytes;
}

#endif
