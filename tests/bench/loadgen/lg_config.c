/* lg_config.c - command-line parsing and --help for signalr-loadgen. */
#include "lg_config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lg_token.h"

static const char usage_text[] =
"usage: signalr-loadgen --url http://127.0.0.1:PORT [options]\n"
"\n"
"Opens many SignalR client connections to a loopback server (ASP.NET Core SignalR, or\n"
"signalr-relay) and measures it. One JSON summary line goes to stdout, a readable summary to\n"
"stderr. Phases: ramp (open connections) -> steady (scenario traffic for --duration) -> drain\n"
"(wait for outstanding replies) -> close (graceful close of every connection).\n"
"\n"
"Target\n"
"  --url URL              http://HOST:PORT[/PATH]; loopback only (127.0.0.0/8). A PATH here is\n"
"                         used as the hub path unless --path is given.\n"
"  --path PATH            hub path (Core, default /chat) or SignalR base (legacy, default /signalr)\n"
"  --protocol P           json | messagepack | legacy (default json)\n"
"                         legacy = ASP.NET SignalR 2.x hubs over WebSockets (negotiate, connect,\n"
"                         start, {\"H\",\"M\",\"A\",\"I\"} invocations, /abort on close)\n"
"  --legacy-hub NAME      hub name for legacy (default chathub)\n"
"  --skip-negotiate       Core only: open the WebSocket directly, no negotiate\n"
"  --service-key KEY      service mode: --url is signalr-relay's service endpoint; every client\n"
"                         negotiates at /client/negotiate?hub=HUB and connects to /client/ with an\n"
"                         access token signed here with KEY (as the app's negotiate would mint it)\n"
"  --service-hub HUB      the hub key in service mode (default chat)\n"
"  --group NAME           every connection invokes JoinGroup(NAME) (legacy: after /start) and waits\n"
"                         for its completion before it counts as open; broadcast then calls\n"
"                         SendToGroup(NAME, \"t=<us>;...\") and counts \"groupMessage\" deliveries\n"
"  --mixed                half Core, half legacy: with --procs K (K >= 2) the odd-numbered processes\n"
"                         are legacy clients (base /signalr, --legacy-hub; in service mode the\n"
"                         --service-hub, and the relay asks the app's negotiate who they are:\n"
"                         its --app-negotiate), the others use\n"
"                         --protocol, Core only (process 0 sends the broadcast rounds)\n"
"\n"
"Connections\n"
"  --connections N        connections held during the run (default 1)\n"
"  --sources N|LIST       client source addresses: a count (127.0.0.2, .3, ...) or a comma list\n"
"                         of IPv4 loopback addresses (default: one per 15000 connections)\n"
"  --ramp R               connections opened per second (default 1000)\n"
"  --max-pending N        connections being set up at once (default 256)\n"
"  --connect-timeout S    give up on a connection not open after S seconds (default 15)\n"
"  --procs K              split the connections over K processes (for more connections than\n"
"                         one process may have file descriptors); results are merged (default 1)\n"
"\n"
"Scenario\n"
"  --scenario S           idle | echo | broadcast | churn (default echo)\n"
"      idle               hold the connections (Core clients ping every 15 s, like stock ones)\n"
"      echo               invoke Echo(payload) on every connection; --rate 0 = closed loop (next\n"
"                         call when the answer arrives), --rate R = R calls/s per connection\n"
"      broadcast          every connection listens; connection 0 calls Broadcast(\"t=<us>;...\")\n"
"                         --rate times per second; each delivery of \"broadcast\" is counted and\n"
"                         its delivery time (now - t) recorded as latency; --rate 0 = as fast as\n"
"                         the server delivers: a new round whenever fewer than 2 rounds are\n"
"                         still undelivered (one process only: --procs 1)\n"
"      churn              --connections stay open (idle) while extra connections are opened and\n"
"                         closed at --rate per second, each held --churn-hold ms\n"
"  --rate R               see above (defaults: echo 0, broadcast 1, churn 10)\n"
"  --count N              echo: calls per connection; broadcast: rounds; 0 = no cap (default 0)\n"
"  --churn-hold MS        churn: how long each churning connection stays open (default 0)\n"
"  --payload BYTES        string argument size for Echo/Broadcast (default 32)\n"
"\n"
"Time (the run always stops by itself)\n"
"  --duration S           steady phase length (default 10)\n"
"  --drain S              wait at most S for outstanding replies after steady (default 3)\n"
"  --close-timeout S      wait at most S for each graceful close (default 5)\n"
"  --ramp-settle S        after the ramp, the connections idle S seconds before the steady phase\n"
"                         and its CPU sample, so a server can finish its connect work (a relay\n"
"                         still closing the ramp's HTTP requests) outside the window (default 0)\n"
"  --settle S             pause after the close phase before the final memory/CPU sample, so a\n"
"                         server can finish its disconnect work (default 1)\n"
"  --max-time S           hard limit for the whole run; default ramp time + duration + drain +\n"
"                         close timeout + settle + 30 s. On expiry the summary says \"timed_out\":true\n"
"\n"
"Measuring servers\n"
"  --watch-pid PID        sample VmRSS and CPU time of PID at every phase boundary (repeatable,\n"
"                         up to 8); reported under \"watch\" in the JSON summary\n"
"\n"
"Output\n"
"  -q, --quiet            no human summary on stderr\n"
"  -v, --verbose          print connection failures (the first 20) on stderr\n"
"  -h, --help             this text\n"
"\n"
"Exit status: 0 all connections opened and no errors, 2 some connection or message failed,\n"
"3 stopped early (--max-time expired, or SIGINT/SIGTERM: then it closes gracefully and still\n"
"reports), 1 usage or setup error.\n"
"\n"
"JSON summary fields (one line): connections {requested, established, failed, failures by stage,\n"
"closed_by_server, closed, close_forced}, messages {sent, received, errors, ...}, throughput_msgs_s,\n"
"latency_us / connect_us / sched_lag_us {count, mean, p50, p90, p99, p999, max}, connect_rate_s,\n"
"phases_s, self and watch[] {rss_kb_start|steady|steady_end|end, cpu_s_ramp|steady|close|total,\n"
"bytes_per_conn, cpu_us_per_conn_open, cpu_us_per_msg, cpu_us_per_close, cpu_us_per_churn_cycle},\n"
"timed_out, interrupted, first_error, exit_code. Samples: start = before ramp, steady = after ramp,\n"
"steady_end = after steady + drain, end = after close + --settle.\n";

static const char *const proto_names[] = {"json", "messagepack", "legacy"};
static const char *const scenario_names[] = {"idle", "echo", "broadcast", "churn"};

const char *lg_proto_name(enum lg_proto proto) { return proto_names[proto]; }
const char *lg_scenario_name(enum lg_scenario scenario) { return scenario_names[scenario]; }

void lg_config_for_proc(const struct lg_config *cfg, uint32_t k, struct lg_config *out)
{
    *out = *cfg;
    if (!cfg->mixed || k % 2 == 0)
        return;
    out->proto = LG_PROTO_LEGACY;
    snprintf(out->path, sizeof out->path, "/signalr");
    if (cfg->service_hub[0]) /* the same hub as the Core half's */
        snprintf(out->legacy_hub, sizeof out->legacy_hub, "%s", cfg->service_hub);
    out->service_hub[0] = '\0';
    out->service_token[0] = '\0';
}

static int parse_double(const char *opt, const char *text, double min, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < min) {
        fprintf(stderr, "signalr-loadgen: %s: bad value '%s'\n", opt, text);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_u64(const char *opt, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || *end || text[0] == '-' || v < min || v > max) {
        fprintf(stderr, "signalr-loadgen: %s: bad value '%s' (%llu..%llu)\n", opt, text,
                (unsigned long long)min, (unsigned long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_sources(const char *text, struct lg_config *cfg)
{
    if (!strchr(text, '.')) {
        uint64_t n;
        if (parse_u64("--sources", text, 1, LG_MAX_SOURCES, &n) != 0)
            return -1;
        cfg->nsources = (uint32_t)n;
        for (uint32_t i = 0; i < n; i++)
            cfg->sources[i] = 0x7F000002u + i;
        return 0;
    }
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", text);
    cfg->nsources = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        struct in_addr a;
        if (inet_pton(AF_INET, tok, &a) != 1 || (ntohl(a.s_addr) >> 24) != 127) {
            fprintf(stderr, "signalr-loadgen: --sources: '%s' is not a 127.x.y.z address\n", tok);
            return -1;
        }
        if (cfg->nsources == LG_MAX_SOURCES) {
            fprintf(stderr, "signalr-loadgen: --sources: at most %d addresses\n", LG_MAX_SOURCES);
            return -1;
        }
        cfg->sources[cfg->nsources++] = ntohl(a.s_addr);
    }
    return cfg->nsources ? 0 : -1;
}

/* Hub and group names go into URLs and JSON unescaped: letters, digits, '-', '_', '.'. */
static int plain_name(const char *s, size_t size)
{
    size_t n = strlen(s);
    if (n == 0 || n >= size)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '_' || s[i] == '.'))
            return 0;
    return 1;
}

enum {
    OPT_URL = 256, OPT_PATH, OPT_PROTOCOL, OPT_LEGACY_HUB, OPT_SKIP_NEG, OPT_CONNECTIONS, OPT_SOURCES,
    OPT_RAMP, OPT_MAX_PENDING, OPT_CONNECT_TIMEOUT, OPT_PROCS, OPT_SCENARIO, OPT_RATE, OPT_COUNT,
    OPT_CHURN_HOLD, OPT_PAYLOAD, OPT_DURATION, OPT_DRAIN, OPT_CLOSE_TIMEOUT, OPT_MAX_TIME, OPT_WATCH, OPT_SETTLE, OPT_RAMP_SETTLE,
    OPT_SERVICE_KEY, OPT_SERVICE_HUB, OPT_GROUP, OPT_MIXED,
};

int lg_config_parse(int argc, char **argv, struct lg_config *cfg)
{
    static const struct option options[] = {
        {"url", required_argument, NULL, OPT_URL},
        {"path", required_argument, NULL, OPT_PATH},
        {"protocol", required_argument, NULL, OPT_PROTOCOL},
        {"legacy-hub", required_argument, NULL, OPT_LEGACY_HUB},
        {"skip-negotiate", no_argument, NULL, OPT_SKIP_NEG},
        {"service-key", required_argument, NULL, OPT_SERVICE_KEY},
        {"service-hub", required_argument, NULL, OPT_SERVICE_HUB},
        {"group", required_argument, NULL, OPT_GROUP},
        {"mixed", no_argument, NULL, OPT_MIXED},
        {"connections", required_argument, NULL, OPT_CONNECTIONS},
        {"sources", required_argument, NULL, OPT_SOURCES},
        {"ramp", required_argument, NULL, OPT_RAMP},
        {"max-pending", required_argument, NULL, OPT_MAX_PENDING},
        {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
        {"procs", required_argument, NULL, OPT_PROCS},
        {"scenario", required_argument, NULL, OPT_SCENARIO},
        {"rate", required_argument, NULL, OPT_RATE},
        {"count", required_argument, NULL, OPT_COUNT},
        {"churn-hold", required_argument, NULL, OPT_CHURN_HOLD},
        {"payload", required_argument, NULL, OPT_PAYLOAD},
        {"duration", required_argument, NULL, OPT_DURATION},
        {"drain", required_argument, NULL, OPT_DRAIN},
        {"close-timeout", required_argument, NULL, OPT_CLOSE_TIMEOUT},
        {"max-time", required_argument, NULL, OPT_MAX_TIME},
        {"settle", required_argument, NULL, OPT_SETTLE},
        {"ramp-settle", required_argument, NULL, OPT_RAMP_SETTLE},
        {"watch-pid", required_argument, NULL, OPT_WATCH},
        {"quiet", no_argument, NULL, 'q'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };

    memset(cfg, 0, sizeof *cfg);
    cfg->proto = LG_PROTO_JSON;
    snprintf(cfg->legacy_hub, sizeof cfg->legacy_hub, "chathub");
    cfg->connections = 1;
    cfg->ramp = 1000;
    cfg->max_pending = 256;
    cfg->scenario = LG_SCEN_ECHO;
    cfg->rate = -1; /* scenario default */
    cfg->payload = 32;
    cfg->duration = 10;
    cfg->max_time = -1;
    cfg->connect_timeout = 15;
    cfg->close_timeout = 5;
    cfg->drain = 3;
    cfg->settle = 1;
    cfg->procs = 1;

    const char *url = NULL, *path = NULL, *service_key = NULL, *service_hub = "chat";
    uint64_t u;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qvh", options, NULL)) != -1) {
        switch (c) {
        case OPT_URL: url = optarg; break;
        case OPT_PATH: path = optarg; break;
        case OPT_PROTOCOL:
            if (strcmp(optarg, "json") == 0) cfg->proto = LG_PROTO_JSON;
            else if (strcmp(optarg, "messagepack") == 0 || strcmp(optarg, "msgpack") == 0) cfg->proto = LG_PROTO_MSGPACK;
            else if (strcmp(optarg, "legacy") == 0) cfg->proto = LG_PROTO_LEGACY;
            else { fprintf(stderr, "signalr-loadgen: --protocol: json, messagepack or legacy\n"); return -1; }
            break;
        case OPT_LEGACY_HUB:
            if (strlen(optarg) == 0 || strlen(optarg) >= sizeof cfg->legacy_hub || strpbrk(optarg, "\"\\")) {
                fprintf(stderr, "signalr-loadgen: --legacy-hub: bad name\n");
                return -1;
            }
            snprintf(cfg->legacy_hub, sizeof cfg->legacy_hub, "%s", optarg);
            break;
        case OPT_SKIP_NEG: cfg->skip_negotiate = 1; break;
        case OPT_SERVICE_KEY:
            if (optarg[0] == '\0') { fprintf(stderr, "signalr-loadgen: --service-key: empty key\n"); return -1; }
            service_key = optarg;
            break;
        case OPT_SERVICE_HUB:
            if (!plain_name(optarg, sizeof cfg->service_hub)) { fprintf(stderr, "signalr-loadgen: --service-hub: bad name\n"); return -1; }
            service_hub = optarg;
            break;
        case OPT_GROUP:
            if (!plain_name(optarg, sizeof cfg->group)) { fprintf(stderr, "signalr-loadgen: --group: bad name\n"); return -1; }
            snprintf(cfg->group, sizeof cfg->group, "%s", optarg);
            break;
        case OPT_MIXED: cfg->mixed = 1; break;
        case OPT_CONNECTIONS:
            if (parse_u64("--connections", optarg, 1, 10000000, &u)) return -1;
            cfg->connections = (uint32_t)u;
            break;
        case OPT_SOURCES: if (parse_sources(optarg, cfg)) return -1; break;
        case OPT_RAMP: if (parse_double("--ramp", optarg, 0.001, &cfg->ramp)) return -1; break;
        case OPT_MAX_PENDING:
            if (parse_u64("--max-pending", optarg, 1, 100000, &u)) return -1;
            cfg->max_pending = (uint32_t)u;
            break;
        case OPT_CONNECT_TIMEOUT: if (parse_double("--connect-timeout", optarg, 0.01, &cfg->connect_timeout)) return -1; break;
        case OPT_PROCS:
            if (parse_u64("--procs", optarg, 1, 64, &u)) return -1;
            cfg->procs = (uint32_t)u;
            break;
        case OPT_SCENARIO: {
            int found = 0;
            for (int i = 0; i < 4; i++)
                if (strcmp(optarg, scenario_names[i]) == 0) { cfg->scenario = (enum lg_scenario)i; found = 1; }
            if (!found) { fprintf(stderr, "signalr-loadgen: --scenario: idle, echo, broadcast or churn\n"); return -1; }
            break;
        }
        case OPT_RATE: if (parse_double("--rate", optarg, 0, &cfg->rate)) return -1; break;
        case OPT_COUNT: if (parse_u64("--count", optarg, 0, UINT64_MAX, &cfg->count)) return -1; break;
        case OPT_CHURN_HOLD:
            if (parse_u64("--churn-hold", optarg, 0, 3600000, &u)) return -1;
            cfg->churn_hold_ms = (uint32_t)u;
            break;
        case OPT_PAYLOAD:
            if (parse_u64("--payload", optarg, 0, 16 * 1024 * 1024, &u)) return -1;
            cfg->payload = (uint32_t)u;
            break;
        case OPT_DURATION: if (parse_double("--duration", optarg, 0, &cfg->duration)) return -1; break;
        case OPT_DRAIN: if (parse_double("--drain", optarg, 0, &cfg->drain)) return -1; break;
        case OPT_CLOSE_TIMEOUT: if (parse_double("--close-timeout", optarg, 0.01, &cfg->close_timeout)) return -1; break;
        case OPT_SETTLE: if (parse_double("--settle", optarg, 0, &cfg->settle)) return -1; break;
        case OPT_RAMP_SETTLE: if (parse_double("--ramp-settle", optarg, 0, &cfg->ramp_settle)) return -1; break;
        case OPT_MAX_TIME: if (parse_double("--max-time", optarg, 0.1, &cfg->max_time)) return -1; break;
        case OPT_WATCH:
            if (cfg->nwatch == LG_MAX_WATCH) { fprintf(stderr, "signalr-loadgen: at most %d --watch-pid\n", LG_MAX_WATCH); return -1; }
            if (parse_u64("--watch-pid", optarg, 1, 4194304, &u)) return -1;
            cfg->watch[cfg->nwatch++] = (pid_t)u;
            break;
        case 'q': cfg->quiet = 1; break;
        case 'v': cfg->verbose = 1; break;
        case 'h': fputs(usage_text, stdout); return 1;
        default: fputs("signalr-loadgen: see --help\n", stderr); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "signalr-loadgen: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (!url) {
        fprintf(stderr, "signalr-loadgen: --url is required (see --help)\n");
        return -1;
    }
    const char *detail;
    if (lg_url_parse(url, &cfg->url, &detail) != 0) {
        fprintf(stderr, "signalr-loadgen: --url: %s\n", detail);
        return -1;
    }
    if (!path)
        path = cfg->url.path[0] ? cfg->url.path : (cfg->proto == LG_PROTO_LEGACY ? "/signalr" : "/chat");
    if (path[0] != '/' || strlen(path) >= sizeof cfg->path - 1 || strpbrk(path, "?# ")) {
        fprintf(stderr, "signalr-loadgen: --path must start with '/' and have no query\n");
        return -1;
    }
    snprintf(cfg->path, sizeof cfg->path, "%s", path);
    size_t plen = strlen(cfg->path);
    while (plen > 1 && cfg->path[plen - 1] == '/')
        cfg->path[--plen] = '\0';

    if (cfg->skip_negotiate && cfg->proto == LG_PROTO_LEGACY) {
        fprintf(stderr, "signalr-loadgen: --skip-negotiate is for Core protocols only\n");
        return -1;
    }
    if (service_key && cfg->proto == LG_PROTO_LEGACY) {
        fprintf(stderr, "signalr-loadgen: --service-key is for Core protocols only (legacy clients of a service-mode\n"
                        "  relay connect at its /signalr as anywhere: the relay asks the app who they are)\n");
        return -1;
    }
    if (cfg->mixed && (cfg->proto == LG_PROTO_LEGACY || cfg->procs < 2)) {
        fprintf(stderr, "signalr-loadgen: --mixed needs --procs 2 or more and a Core --protocol (json, messagepack)\n");
        return -1;
    }
    if (service_key) {
        if (cfg->skip_negotiate) {
            fprintf(stderr, "signalr-loadgen: --service-key needs negotiate (no --skip-negotiate)\n");
            return -1;
        }
        snprintf(cfg->service_hub, sizeof cfg->service_hub, "%s", service_hub);
        snprintf(cfg->path, sizeof cfg->path, "/client");
        if (lg_token_client(service_key, cfg->service_hub, cfg->url.host, cfg->url.port, (int64_t)time(NULL),
                            24 * 3600, cfg->service_token, sizeof cfg->service_token) < 0) {
            fprintf(stderr, "signalr-loadgen: --service-key: could not mint the client token\n");
            return -1;
        }
    }
    if (cfg->rate < 0)
        cfg->rate = cfg->scenario == LG_SCEN_BROADCAST ? 1 : cfg->scenario == LG_SCEN_CHURN ? 10 : 0;
    if (cfg->scenario == LG_SCEN_BROADCAST && cfg->rate == 0 && cfg->procs > 1) {
        fprintf(stderr, "signalr-loadgen: broadcast --rate 0 needs --procs 1 (the sender counts every delivery)\n");
        return -1;
    }
    if (cfg->scenario == LG_SCEN_CHURN && cfg->rate <= 0) {
        fprintf(stderr, "signalr-loadgen: --rate must be > 0 for %s\n", scenario_names[cfg->scenario]);
        return -1;
    }
    if (cfg->procs > cfg->connections) {
        fprintf(stderr, "signalr-loadgen: --procs larger than --connections\n");
        return -1;
    }
    if (cfg->nsources == 0) {
        uint32_t n = (cfg->connections + 14999) / 15000;
        if (n > LG_MAX_SOURCES)
            n = LG_MAX_SOURCES;
        cfg->nsources = n;
        for (uint32_t i = 0; i < n; i++)
            cfg->sources[i] = 0x7F000002u + i;
    }
    if (cfg->max_time < 0)
        cfg->max_time = cfg->connections / cfg->ramp + cfg->connect_timeout + cfg->duration +
                        cfg->drain + cfg->close_timeout + cfg->settle + cfg->ramp_settle + 30;
    return 0;
}
