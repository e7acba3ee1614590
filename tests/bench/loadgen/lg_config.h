/* lg_config.h - the load generator's command line: every option, its default, and --help. */
#ifndef LG_CONFIG_H
#define LG_CONFIG_H

#include <stdint.h>
#include <sys/types.h>

#include "lg_http.h"
#include "lg_sig.h"

enum lg_scenario { LG_SCEN_IDLE, LG_SCEN_ECHO, LG_SCEN_BROADCAST, LG_SCEN_CHURN };

#define LG_MAX_SOURCES 256
#define LG_MAX_WATCH 8

struct lg_config {
    struct lg_url url;
    char path[256];              /* hub path (Core) or SignalR base path (legacy) */
    enum lg_proto proto;
    char legacy_hub[64];
    uint32_t connections;
    uint32_t sources[LG_MAX_SOURCES]; /* IPv4, host order */
    uint32_t nsources;           /* 0 = choose from the connection count */
    double ramp;                 /* connections started per second */
    uint32_t max_pending;        /* connections being set up at once */
    enum lg_scenario scenario;
    double rate;                 /* echo: msgs/s per connection (0 = closed loop);
                                    broadcast: rounds/s; churn: cycles/s */
    uint64_t count;              /* echo: messages per connection; broadcast: rounds; 0 = no cap */
    uint32_t churn_hold_ms;
    uint32_t payload;
    double duration;             /* seconds of steady traffic */
    double max_time;             /* hard stop for the whole run, seconds */
    double connect_timeout;
    double close_timeout;
    double drain;
    double settle;               /* pause after the close phase before the last sample */
    double ramp_settle;          /* pause after the ramp before the steady sample */
    int skip_negotiate;
    char service_hub[64];        /* service mode (relay's /client/ endpoint) when not "" */
    char service_token[1024];    /* the client access token every connection presents */
    char group[64];              /* join this group during setup; broadcast sends to it */
    int mixed;                   /* --procs K: the odd-numbered processes are legacy clients */
    pid_t watch[LG_MAX_WATCH];
    uint32_t nwatch;
    uint32_t procs;
    int quiet;
    int verbose;
};

/* Fills cfg from argv. Returns 0 to run, 1 when --help was printed, -1 on a usage error
 * (message already printed to stderr). */
int lg_config_parse(int argc, char **argv, struct lg_config *cfg);

/* The configuration process k of --procs runs with: cfg itself, except that with --mixed the
 * odd-numbered processes are legacy clients (base /signalr, no service token). */
void lg_config_for_proc(const struct lg_config *cfg, uint32_t k, struct lg_config *out);

const char *lg_proto_name(enum lg_proto proto);
const char *lg_scenario_name(enum lg_scenario scenario);

#endif
