/* main.c - signalr-relay's entry point: configuration, signals, the event loop. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>

#include "relay/config.h"
#include "relay/log.h"
#include "relay/lws_memory.h"
#include "relay/relay.h"

/* The one thing a signal handler may touch. */
static struct relay *running_relay;

static void on_signal(int signo)
{
    (void)signo;
    if (running_relay)
        relay_stop(running_relay);
}

/* SIGHUP: reread the TLS certificate and the configuration (on the loop: relay_reload). */
static void on_sighup(int signo)
{
    (void)signo;
    if (running_relay)
        relay_request_reload(running_relay);
}

/* libwebsockets' own lines, through the relay's log (its format, its file). */
static void lws_line(int level, const char *line)
{
    char text[512];
    snprintf(text, sizeof text, "lws: %s", line);
    text[strcspn(text, "\n")] = '\0';
    log_text(level == LLL_ERR ? LOG_ERROR : level == LLL_WARN ? LOG_WARN : LOG_DEBUG, text);
}

static void install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_sighup;
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
    struct relay_config cfg;
    char err[512] = "";
    config_init(&cfg);
    enum config_result r = config_parse_args(&cfg, argc, argv, err, sizeof err);
    if (r != CONFIG_OK) {
        if (r == CONFIG_ERROR)
            fprintf(stderr, "signalr-relay: %s\n", err);
        config_free(&cfg);
        return r == CONFIG_EXIT_SUCCESS ? 0 : 2;
    }
    if (cfg.hub_count == 0 && cfg.service_key_count == 0) {
        fprintf(stderr, "signalr-relay: no hub configured: give at least one --hub NAME=URL, a --service-key KEY "
                        "or a --config file.\n\n");
        config_print_help(stderr);
        config_free(&cfg);
        return 2;
    }
    log_set_level((enum log_level)cfg.log_level);
    log_set_format((enum log_format)cfg.log_format);
    if (!log_open_file(cfg.log_file, err, sizeof err)) {
        fprintf(stderr, "signalr-relay: %s\n", err);
        config_free(&cfg);
        return 2;
    }
    lws_memory_install(); /* before anything of lws allocates */
    lws_set_log_level(cfg.log_level >= LOG_DEBUG ? LLL_ERR | LLL_WARN | LLL_NOTICE : LLL_ERR, lws_line);

    /* On the heap: the relay embeds its timer wheel's slot array (about 1 MiB). */
    struct relay *relay = calloc(1, sizeof *relay);
    if (!relay || relay_start(relay, &cfg) != 0) {
        if (relay)
            relay_destroy(relay);
        lws_memory_release();
        free(relay);
        config_free(&cfg);
        log_close();
        return 1;
    }
    relay_enable_reload(relay, argc, argv);
    running_relay = relay;
    install_signal_handlers();
    relay_run(relay);
    log_info("relay: shutting down");
    running_relay = NULL;
    relay_destroy(relay);
    lws_memory_release(); /* after lws_context_destroy (in relay_destroy) */
    free(relay);
    config_free(&cfg);
    log_close();
    return 0;
}
