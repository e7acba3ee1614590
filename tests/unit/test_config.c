/* test_config.c - the relay's flags and config file: defaults, parsing, clear errors. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "relay/config.h"

static enum config_result parse(struct relay_config *cfg, char *err, size_t err_len, int argc, char **argv)
{
    config_init(cfg);
    return config_parse_args(cfg, argc, argv, err, err_len);
}

static void test_defaults_and_hubs(void)
{
    struct relay_config cfg;
    char err[512] = "";
    char *argv[] = { "relay", "--hub", "chat=http://127.0.0.1:5000/chat/", "--hub=Status=https://backend.example/hubs/status",
                     "--listen", "0.0.0.0:9000", "--path-prefix", "/rt/", "--keepalive", "7.5",
                     "--max-message-size", "64K", "--cors-origin", "https://app.example" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 14, argv), CONFIG_OK);
    CHECK_EQ_INT(cfg.hub_count, 2);
    CHECK(strcmp(cfg.hubs[0].targets[0].host, "127.0.0.1") == 0);
    CHECK_EQ_INT(cfg.hubs[0].targets[0].port, 5000);
    CHECK(strcmp(cfg.hubs[0].targets[0].path, "/chat") == 0);
    CHECK(!cfg.hubs[0].targets[0].tls);
    CHECK(cfg.hubs[1].targets[0].tls);
    CHECK_EQ_INT(cfg.hubs[1].targets[0].port, 443);
    CHECK(strcmp(cfg.hubs[1].targets[0].path, "/hubs/status") == 0);
    CHECK(config_find_hub(&cfg, "STATUS", 6) == &cfg.hubs[1]);
    CHECK(config_find_hub(&cfg, "stat", 4) == NULL);
    CHECK(strcmp(cfg.listen_address, "0.0.0.0") == 0);
    CHECK_EQ_INT(cfg.listen_port, 9000);
    CHECK(strcmp(cfg.path_prefix, "/rt") == 0);
    CHECK_EQ_INT(cfg.keepalive_ms, 7500);
    CHECK_EQ_INT(cfg.client_timeout_ms, 30000);
    CHECK_EQ_INT(cfg.max_message_bytes, 65536);
    CHECK_EQ_INT(cfg.cors_origin_count, 1);
    config_free(&cfg);

    char *defaults[] = { "relay" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 1, defaults), CONFIG_OK);
    CHECK(strcmp(cfg.listen_address, "127.0.0.1") == 0);
    CHECK_EQ_INT(cfg.listen_port, 8080);
    CHECK_EQ_INT(cfg.hub_count, 0);
    CHECK_EQ_INT(cfg.ws_read_buffer_bytes, 256);
    config_free(&cfg);

    char *buffers[] = { "relay", "--ws-read-buffer", "4K" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, buffers), CONFIG_OK);
    CHECK_EQ_INT(cfg.ws_read_buffer_bytes, 4096);
    config_free(&cfg);
    /* Several instances of one hub, comma-separated (spaces allowed around each). */
    char *several[] = { "relay", "--hub", "chat=http://10.0.0.1:5000/chat, https://b.example/hubs/chat", "--dns-servers",
                        "127.0.0.1:5353" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 5, several), CONFIG_OK);
    CHECK_EQ_INT(cfg.hubs[0].target_count, 2);
    CHECK(strcmp(cfg.hubs[0].targets[0].url, "http://10.0.0.1:5000/chat") == 0);
    CHECK(strcmp(cfg.hubs[0].targets[1].host, "b.example") == 0);
    CHECK_EQ_INT(cfg.hubs[0].targets[1].port, 443);
    CHECK(strcmp(cfg.hubs[0].targets[1].path, "/hubs/chat") == 0);
    CHECK(strcmp(cfg.dns_servers, "127.0.0.1:5353") == 0);
    config_free(&cfg);
    char *smallest[] = { "relay", "--ws-read-buffer", "128" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, smallest), CONFIG_OK);
    CHECK_EQ_INT(cfg.ws_read_buffer_bytes, 128);
    config_free(&cfg);
}

static void expect_error(const char *contains, int argc, char **argv)
{
    struct relay_config cfg;
    char err[512] = "";
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, argc, argv), CONFIG_ERROR);
    if (!strstr(err, contains)) {
        check_failures++;
        fprintf(stderr, "error '%s' does not mention '%s'\n", err, contains);
    }
    config_free(&cfg);
}

static void test_errors(void)
{
    expect_error("unknown option '--bogus'", 2, (char *[]){ "relay", "--bogus=1" });
    expect_error("needs a value", 2, (char *[]){ "relay", "--hub" });
    expect_error("NAME=BACKEND_URL", 3, (char *[]){ "relay", "--hub", "chat" });
    expect_error("must start with http://", 3, (char *[]){ "relay", "--hub", "chat=ftp://x/chat" });
    expect_error("no hub path", 3, (char *[]){ "relay", "--hub", "chat=http://127.0.0.1:5000" });
    expect_error("bad port", 3, (char *[]){ "relay", "--hub", "chat=http://127.0.0.1:99999/chat" });
    expect_error("configured twice", 5, (char *[]){ "relay", "--hub", "chat=http://a/chat", "--hub", "CHAT=http://b/chat" });
    expect_error("empty backend URL", 3, (char *[]){ "relay", "--hub", "chat=http://a/chat,,http://b/chat" });
    expect_error("listed twice", 3, (char *[]){ "relay", "--hub", "chat=http://a/chat,http://A/chat" });
    expect_error("bad port", 3, (char *[]){ "relay", "--hub", "chat=http://a/chat,http://b:0/chat" });
    expect_error("empty one", 3, (char *[]){ "relay", "--dns-servers", "" });
    expect_error("hub name", 3, (char *[]){ "relay", "--hub", "c/h=http://a/chat" });
    expect_error("ADDRESS:PORT", 3, (char *[]){ "relay", "--listen", "8080" });
    expect_error("seconds", 3, (char *[]){ "relay", "--keepalive", "-1" });
    expect_error("size", 3, (char *[]){ "relay", "--max-message-size", "12" });
    /* a control frame (up to 125 payload bytes) must fit lws' buffer whole */
    expect_error("between 128 and 64K", 3, (char *[]){ "relay", "--ws-read-buffer", "100" });
    expect_error("between 128 and 64K", 3, (char *[]){ "relay", "--ws-read-buffer", "1M" });
    expect_error("log-level", 3, (char *[]){ "relay", "--log-level", "loud" });
    expect_error("unexpected argument", 2, (char *[]){ "relay", "chat" });
    expect_error("cannot read config file", 3, (char *[]){ "relay", "--config", "/nonexistent/relay.json" });
}

static const char *write_temp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/sr-config-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? path : NULL;
}

static void test_config_file(void)
{
    const char *path = write_temp("{\"listen\":\"127.0.0.1:7000\",\"hubs\":{\"chat\":\"http://127.0.0.1:5000/chat\"},"
                                  "\"cors-origins\":[\"https://a.example\",\"https://b.example\"],\"keepalive\":5,"
                                  "\"log-level\":\"warn\"}");
    CHECK(path != NULL);
    struct relay_config cfg;
    char err[512] = "";
    /* A flag after --config overrides the file. */
    char *argv[] = { "relay", "--config", (char *)path, "--listen", "127.0.0.1:7001" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 5, argv), CONFIG_OK);
    CHECK_EQ_INT(cfg.hub_count, 1);
    CHECK_EQ_INT(cfg.listen_port, 7001);
    CHECK_EQ_INT(cfg.keepalive_ms, 5000);
    CHECK_EQ_INT(cfg.cors_origin_count, 2);
    CHECK_EQ_INT(cfg.log_level, 1);
    config_free(&cfg);
    unlink(path);

    path = write_temp("{\"hubs\":{\"chat\":[\"http://a:5000/chat\",\"http://b:5000/chat\"]}}");
    char *argv1[] = { "relay", "--config", (char *)path };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, argv1), CONFIG_OK);
    CHECK_EQ_INT(cfg.hubs[0].target_count, 2);
    CHECK(strcmp(cfg.hubs[0].targets[1].host, "b") == 0);
    config_free(&cfg);
    unlink(path);
    path = write_temp("{\"hubs\":{\"chat\":[]}}");
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, argv1), CONFIG_ERROR);
    CHECK(strstr(err, "non-empty list") != NULL);
    config_free(&cfg);
    unlink(path);

    path = write_temp("{\"hubs\":[\"chat\"]}");
    char *argv2[] = { "relay", "--config", (char *)path };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, argv2), CONFIG_ERROR);
    CHECK(strstr(err, "\"hubs\" must be an object") != NULL);
    config_free(&cfg);
    unlink(path);

    path = write_temp("{\"listen\": 12,");
    char *argv3[] = { "relay", "--config", (char *)path };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, argv3), CONFIG_ERROR);
    CHECK(strstr(err, "not a JSON object") != NULL);
    config_free(&cfg);
    unlink(path);
}

/* Service mode: keys from flags and from the file, several of them (rotation). */
static void test_service_keys(void)
{
    struct relay_config cfg;
    char err[512] = "";
    char *argv[] = { "relay", "--service-key", "first key", "--service-key=second" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 4, argv), CONFIG_OK);
    CHECK_EQ_INT(cfg.service_key_count, 2);
    CHECK(strcmp(cfg.service_keys[0], "first key") == 0);
    CHECK(strcmp(cfg.service_keys[1], "second") == 0);
    CHECK_EQ_INT(cfg.hub_count, 0);
    config_free(&cfg);

    const char *path = write_temp("{\"service-keys\":[\"a\",\"b\"],\"service-key\":\"c\"}");
    CHECK(path != NULL);
    char *argv2[] = { "relay", "--config", (char *)path, "--service-key", "d" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 5, argv2), CONFIG_OK);
    CHECK_EQ_INT(cfg.service_key_count, 4);
    CHECK(strcmp(cfg.service_keys[3], "d") == 0);
    config_free(&cfg);
    unlink(path);

    path = write_temp("{\"service-keys\":\"a\"}");
    char *argv3[] = { "relay", "--config", (char *)path };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, argv3), CONFIG_ERROR);
    CHECK(strstr(err, "\"service-keys\" must be an array") != NULL);
    config_free(&cfg);
    unlink(path);

    expect_error("non-empty key", 3, (char *[]){ "relay", "--service-key", "" });

    char *argv4[] = { "relay", "--service-key", "k", "--app-negotiate", "board=http://127.0.0.1:5000/board",
                      "--hub", "chat=http://127.0.0.1:5000/chat" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 7, argv4), CONFIG_OK);
    CHECK_EQ_INT(cfg.hub_count, 2);
    CHECK(cfg.hubs[0].app_negotiate);
    CHECK(strcmp(cfg.hubs[0].targets[0].path, "/board") == 0);
    CHECK(!cfg.hubs[1].app_negotiate);
    config_free(&cfg);
    expect_error("NAME=APP_HUB_URL", 3, (char *[]){ "relay", "--app-negotiate", "board" });
}

/* The TLS settings are paths, kept as given (relay/tls.c reads the files); the last one wins. */
static void test_tls_paths(void)
{
    struct relay_config cfg;
    char err[512] = "";
    char *argv[] = { "relay", "--tls-cert", "old.pem", "--tls-cert", "/etc/relay/chain.pem", "--tls-key=/etc/relay/key.pem",
                     "--backend-ca", "/etc/relay/backends.pem" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 8, argv), CONFIG_OK);
    CHECK(strcmp(cfg.tls_cert, "/etc/relay/chain.pem") == 0);
    CHECK(strcmp(cfg.tls_key, "/etc/relay/key.pem") == 0);
    CHECK(strcmp(cfg.backend_ca, "/etc/relay/backends.pem") == 0);
    config_free(&cfg);

    config_init(&cfg);
    CHECK(cfg.tls_cert == NULL && cfg.tls_key == NULL && cfg.backend_ca == NULL);
    config_free(&cfg);

    const char *path = write_temp("{\"tls-cert\":\"a.pem\",\"tls-key\":\"a.key\",\"backend-ca\":\"ca.pem\"}");
    CHECK(path != NULL);
    char *argv2[] = { "relay", "--config", (char *)path, "--tls-key", "b.key" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 5, argv2), CONFIG_OK);
    CHECK(strcmp(cfg.tls_cert, "a.pem") == 0);
    CHECK(strcmp(cfg.tls_key, "b.key") == 0);
    CHECK(strcmp(cfg.backend_ca, "ca.pem") == 0);
    config_free(&cfg);
    unlink(path);
    expect_error("needs a value", 2, (char *[]){ "relay", "--tls-cert" });
}

/* --hub-methods: the legacy proxy script's server methods per hub; the last one given wins. */
static void test_hub_methods(void)
{
    struct relay_config cfg;
    char err[512] = "";
    char *argv[] = { "relay", "--hub-methods", "ChatHub=Send,JoinGroup", "--hub-methods", "status=Echo",
                     "--hub-methods", "chathub=Send" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 7, argv), CONFIG_OK);
    CHECK(strcmp(config_hub_methods(&cfg, "CHATHUB"), "Send") == 0);
    CHECK(strcmp(config_hub_methods(&cfg, "Status"), "Echo") == 0);
    CHECK(config_hub_methods(&cfg, "stat") == NULL);
    CHECK(config_hub_methods(&cfg, "secure") == NULL);
    config_free(&cfg);
    expect_error("NAME=METHOD", 3, (char *[]){ "relay", "--hub-methods", "ChatHub" });
    expect_error("NAME=METHOD", 3, (char *[]){ "relay", "--hub-methods", "ChatHub=" });
    expect_error("NAME=METHOD", 3, (char *[]){ "relay", "--hub-methods", "ChatHub=Send;" });
    expect_error("'' is not a method name", 3, (char *[]){ "relay", "--hub-methods", "ChatHub=Send,,Join" });
    expect_error("'1x' is not a method name", 3, (char *[]){ "relay", "--hub-methods", "ChatHub=1x" });
    expect_error("'a-b' is not a method name", 3, (char *[]){ "relay", "--hub-methods", "ChatHub=a-b" });

    /* Several hubs in one value: the config-file form. */
    const char *path = write_temp("{\"hub-methods\":\"ChatHub=Send,Join;StatusHub=Echo\"}");
    CHECK(path != NULL);
    char *file_argv[] = { "relay", "--config", (char *)path };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, file_argv), CONFIG_OK);
    CHECK(strcmp(config_hub_methods(&cfg, "chathub"), "Send,Join") == 0);
    CHECK(strcmp(config_hub_methods(&cfg, "statushub"), "Echo") == 0);
    config_free(&cfg);
    unlink(path);
}

/* Connection limits and the per-direction message sizes: defaults, values, errors. */
static void test_limits(void)
{
    struct relay_config cfg;
    char err[512] = "";
    char *none[] = { "relay" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 1, none), CONFIG_OK);
    CHECK_EQ_INT(cfg.max_connections, 10000);
    CHECK_EQ_INT(cfg.max_connections_per_address, 0);
    CHECK_EQ_INT(config_client_message_limit(&cfg), 4u << 20);
    CHECK_EQ_INT(config_hub_message_limit(&cfg), 4u << 20);
    config_free(&cfg);
    char *set[] = { "relay", "--max-connections", "0", "--max-connections-per-address", "50", "--max-message-size", "1M",
                    "--max-client-message-size", "32K" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 9, set), CONFIG_OK);
    CHECK_EQ_INT(cfg.max_connections, 0);
    CHECK_EQ_INT(cfg.max_connections_per_address, 50);
    CHECK_EQ_INT(config_client_message_limit(&cfg), 32u << 10);
    CHECK_EQ_INT(config_hub_message_limit(&cfg), 1u << 20);
    config_free(&cfg);
    expect_error("whole number from 0", 3, (char *[]){ "relay", "--max-connections", "-1" });
    expect_error("whole number from 0", 3, (char *[]){ "relay", "--max-connections-per-address", "12x" });
    expect_error("whole number from 0", 3, (char *[]){ "relay", "--max-connections", "20000000" });
    expect_error("--max-hub-message-size wants a size", 3, (char *[]){ "relay", "--max-hub-message-size", "12" });
    /* Service mode's per-turn fan-out budget: 1000 deliveries unless told otherwise, 0 = no bound. */
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 1, none), CONFIG_OK);
    CHECK_EQ_INT(cfg.service_fanout_budget, 1000);
    config_free(&cfg);
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, (char *[]){ "relay", "--service-fanout-budget", "0" }), CONFIG_OK);
    CHECK_EQ_INT(cfg.service_fanout_budget, 0);
    config_free(&cfg);
    expect_error("--service-fanout-budget wants a whole number", 3, (char *[]){ "relay", "--service-fanout-budget", "many" });
    /* Stateful reconnect: on with ASP.NET Core's 100,000-byte buffer unless told otherwise. */
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 1, none), CONFIG_OK);
    CHECK(!cfg.stateful_reconnect_off);
    CHECK_EQ_INT(cfg.stateful_buffer_bytes, 100000);
    config_free(&cfg);
    char *stateful[] = { "relay", "--stateful-reconnect", "off", "--stateful-reconnect-buffer", "16K" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 5, stateful), CONFIG_OK);
    CHECK(cfg.stateful_reconnect_off);
    CHECK_EQ_INT(cfg.stateful_buffer_bytes, 16u << 10);
    config_free(&cfg);
    expect_error("--stateful-reconnect wants on or off, got 'yes'", 3, (char *[]){ "relay", "--stateful-reconnect", "yes" });
    expect_error("--stateful-reconnect-buffer wants a size", 3, (char *[]){ "relay", "--stateful-reconnect-buffer", "12" });
}

/* libwebsockets' own timeout stays behind --backend-timeout, and a reload cannot outgrow it. */
static void test_lws_timeout(void)
{
    struct relay_config old, cfg;
    char err[512] = "";
    char *none[] = { "relay" };
    CHECK_EQ_INT(parse(&old, err, sizeof err, 1, none), CONFIG_OK);
    CHECK_EQ_INT(config_lws_timeout_secs(&old), 20); /* --backend-timeout 10: lws' own 20 s as ever */
    char *longer[] = { "relay", "--backend-timeout", "30" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, longer), CONFIG_OK);
    CHECK_EQ_INT(config_lws_timeout_secs(&cfg), 35);
    CHECK(config_keep_restart_only(&old, &cfg)); /* 30 s needs more than the running 20 s */
    CHECK_EQ_INT(cfg.backend_timeout_ms, 10000);
    config_free(&cfg);
    char *within[] = { "relay", "--backend-timeout", "15" };
    CHECK_EQ_INT(parse(&cfg, err, sizeof err, 3, within), CONFIG_OK);
    CHECK(!config_keep_restart_only(&old, &cfg));
    CHECK_EQ_INT(cfg.backend_timeout_ms, 15000);
    config_free(&cfg);
    config_free(&old);
    expect_error("--backend-timeout wants a number of seconds above 0", 3, (char *[]){ "relay", "--backend-timeout", "0" });
}

int main(void)
{
    test_lws_timeout();
    test_hub_methods();
    test_defaults_and_hubs();
    test_limits();
    test_errors();
    test_config_file();
    test_service_keys();
    test_tls_paths();
    return test_main_result("test_config");
}
