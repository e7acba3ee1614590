/* relay_reload.c - SIGHUP on the loop: the log file reopened, the listener's certificate and the
 * configuration read again, checked, and put in place for new connections; what a reload replaced
 * is kept until relay_destroy (see relay.h). */
#include "relay/relay.h"

#include <stdio.h>
#include <stdlib.h>

#include "relay/legacy_session.h"
#include "relay/log.h"

/* What a reload replaced: kept until relay_destroy, because connections made under it still
 * point into it (routes, endpoints). A few hundred bytes a hub, per reload. */
struct relay_retired {
    struct relay_retired *next;
    struct relay_config *cfg;          /* NULL: main's, which main frees */
    struct proxy_endpoint *endpoints;
};

void relay_enable_reload(struct relay *relay, int argc, char **argv)
{
    relay->argc = argc;
    relay->argv = argv;
}

void relay_request_reload(struct relay *relay)
{
    relay->reload_requested = true;
    loop_wake(&relay->loop);
}

/* SIGHUP: the listener's certificate and the configuration read again, checked, and put in
 * place for new connections. */
void relay_reload(struct relay *relay)
{
    log_reopen(); /* first: logrotate moved the file away, and this reload's lines go to the new one */
    tls_reload(&relay->tls);
    if (!relay->argv) {
        log_warn("relay: reload requested, but this relay was started without a command line to reread");
        return;
    }
    struct relay_config *cfg = malloc(sizeof *cfg);
    struct relay_retired *retired = calloc(1, sizeof *retired);
    char err[512] = "out of memory";
    if (cfg)
        config_init(cfg);
    enum config_result r = cfg ? config_parse_args(cfg, relay->argc, relay->argv, err, sizeof err) : CONFIG_ERROR;
    if (r == CONFIG_OK && cfg->hub_count == 0 && cfg->service_key_count == 0) {
        snprintf(err, sizeof err, "no hub configured");
        r = CONFIG_ERROR;
    }
    struct proxy_endpoint *endpoints = r == CONFIG_OK ? calloc(cfg->hub_count ? cfg->hub_count : 1, sizeof *endpoints) : NULL;
    if (r != CONFIG_OK || !retired || !endpoints) {
        log_error("relay: configuration reload refused, the running configuration stays: %s", err);
        if (cfg)
            config_free(cfg);
        free(cfg);
        free(retired);
        free(endpoints);
        return;
    }
    const struct relay_config *old = relay->loop.cfg;
    config_keep_restart_only(old, cfg);
    for (size_t i = 0; i < cfg->hub_count; i++)
        proxy_endpoint_init(&endpoints[i], &relay->backends, &cfg->hubs[i]);
    /* Legacy hubs follow: added, re-pointed, removed (legacy_table_apply); service mode's app hubs
     * keep their named endpoint (relay_legacy_service_hubs). */
    struct hub_endpoint **legacy_eps = calloc(cfg->hub_count ? cfg->hub_count : 1, sizeof *legacy_eps);
    for (size_t i = 0; legacy_eps && i < cfg->hub_count; i++) {
        const char *name = cfg->hubs[i].name;
        struct legacy_hub *was = legacy_table_hub(&relay->legacy, span_from_cstr(name));
        legacy_eps[i] = was && was->app_identity ? was->endpoint : &endpoints[i].base;
    }
    if (!legacy_eps || !legacy_table_apply(&relay->legacy, legacy_eps, cfg->hub_count))
        log_error("relay: reload: out of memory while updating the legacy hubs; they stay as they were");
    free(legacy_eps);
    retired->cfg = relay->owned_cfg;
    retired->endpoints = relay->endpoints;
    retired->next = relay->retired;
    relay->retired = retired;
    relay->owned_cfg = cfg;
    relay->loop.cfg = cfg;
    relay->endpoints = endpoints;
    if (!backends_apply_config(&relay->backends))
        log_error("relay: reload: out of memory while updating the backend instances");
    log_set_level((enum log_level)cfg->log_level);
    log_set_format((enum log_format)cfg->log_format);
    log_info("relay: configuration reloaded: %zu hub%s", cfg->hub_count, cfg->hub_count == 1 ? "" : "s");
    for (size_t i = 0; i < cfg->hub_count; i++)
        log_info("relay: hub %s -> %s", cfg->hubs[i].name, cfg->hubs[i].backend_url);
}

void relay_free_retired(struct relay *relay)
{
    while (relay->retired) {
        struct relay_retired *r = relay->retired;
        relay->retired = r->next;
        if (r->cfg)
            config_free(r->cfg);
        free(r->cfg);
        free(r->endpoints);
        free(r);
    }
}
