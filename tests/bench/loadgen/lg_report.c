/* lg_report.c - JSON summary (built with cJSON) and the human summary. */
#include "lg_report.h"

#include <inttypes.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "lg_hist_report.h"
#include "lg_worker.h"

int lg_report_exit_code(const struct lg_stats *st)
{
    if (st->timed_out || st->interrupted)
        return 3;
    if (st->conn_failed || st->msg_errors || st->protocol_errors || st->closed_by_server ||
        st->churn_failed || st->conn_established < st->conn_requested)
        return 2;
    return 0;
}

static double seconds(uint64_t us) { return (double)us / 1e6; }

static double per(double num, double den) { return den > 0 ? num / den : 0; }

/* Memory, CPU and the derived per-connection / per-message / per-close figures of one process
 * sampled at the four phase boundaries. */
static void add_process(cJSON *o, const uint64_t rss[4], const uint64_t cpu[4], const struct lg_stats *st)
{
    cJSON_AddNumberToObject(o, "rss_kb_start", (double)rss[LG_AT_START]);
    cJSON_AddNumberToObject(o, "rss_kb_steady", (double)rss[LG_AT_STEADY]);
    cJSON_AddNumberToObject(o, "rss_kb_steady_end", (double)rss[LG_AT_STEADY_END]);
    cJSON_AddNumberToObject(o, "rss_kb_end", (double)rss[LG_AT_CLOSED]);
    cJSON_AddNumberToObject(o, "cpu_s_ramp", seconds(cpu[LG_AT_STEADY] - cpu[LG_AT_START]));
    cJSON_AddNumberToObject(o, "cpu_s_steady", seconds(cpu[LG_AT_STEADY_END] - cpu[LG_AT_STEADY]));
    cJSON_AddNumberToObject(o, "cpu_s_close", seconds(cpu[LG_AT_CLOSED] - cpu[LG_AT_STEADY_END]));
    cJSON_AddNumberToObject(o, "cpu_s_total", seconds(cpu[LG_AT_CLOSED] - cpu[LG_AT_START]));
    double conns = (double)st->conn_established;
    /* Memory per connection: growth from start to the end of steady (after idling, buffers
     * that a busy start-up allocated have had time to go). */
    double grown_kb = (double)rss[LG_AT_STEADY_END] - (double)rss[LG_AT_START];
    cJSON_AddNumberToObject(o, "bytes_per_conn", (double)(int64_t)per(grown_kb * 1024, conns));
    cJSON_AddNumberToObject(o, "cpu_us_per_conn_open",
                            per((double)(cpu[LG_AT_STEADY] - cpu[LG_AT_START]), conns));
    cJSON_AddNumberToObject(o, "cpu_us_per_msg",
                            per((double)(cpu[LG_AT_STEADY_END] - cpu[LG_AT_STEADY]), (double)st->msgs_received));
    cJSON_AddNumberToObject(o, "cpu_us_per_close",
                            per((double)(cpu[LG_AT_CLOSED] - cpu[LG_AT_STEADY_END]), (double)st->closed));
    /* Churn: the whole steady CPU divided by open+close cycles (the idle connections cost
     * next to nothing meanwhile; run the idle scenario alone to see how much). */
    cJSON_AddNumberToObject(o, "cpu_us_per_churn_cycle",
                            per((double)(cpu[LG_AT_STEADY_END] - cpu[LG_AT_STEADY]), (double)st->churn_closed));
}

void lg_report_json(FILE *out, const struct lg_config *cfg, const struct lg_stats *st,
                    struct lg_proc_sample watch[][4], int exit_code)
{
    cJSON *root = cJSON_CreateObject();
    char target[400];
    snprintf(target, sizeof target, "http://%s:%u%s", cfg->url.host, cfg->url.port, cfg->path);
    cJSON_AddStringToObject(root, "tool", "signalr-loadgen");
    cJSON_AddNumberToObject(root, "format", 1);
    cJSON_AddStringToObject(root, "target", target);
    cJSON_AddStringToObject(root, "protocol", lg_proto_name(cfg->proto));
    cJSON_AddStringToObject(root, "scenario", lg_scenario_name(cfg->scenario));
    cJSON_AddNumberToObject(root, "processes", cfg->procs);

    cJSON *params = cJSON_AddObjectToObject(root, "params");
    cJSON_AddNumberToObject(params, "connections", cfg->connections);
    cJSON_AddNumberToObject(params, "sources", cfg->nsources);
    cJSON_AddNumberToObject(params, "ramp", cfg->ramp);
    cJSON_AddNumberToObject(params, "rate", cfg->rate);
    cJSON_AddNumberToObject(params, "count", (double)cfg->count);
    cJSON_AddNumberToObject(params, "payload", cfg->payload);
    cJSON_AddNumberToObject(params, "duration_s", cfg->duration);
    cJSON_AddNumberToObject(params, "churn_hold_ms", cfg->churn_hold_ms);
    cJSON_AddBoolToObject(params, "skip_negotiate", cfg->skip_negotiate);

    cJSON *c = cJSON_AddObjectToObject(root, "connections");
    cJSON_AddNumberToObject(c, "requested", (double)st->conn_requested);
    cJSON_AddNumberToObject(c, "established", (double)st->conn_established);
    cJSON_AddNumberToObject(c, "failed", (double)st->conn_failed);
    cJSON_AddNumberToObject(c, "failed_tcp", (double)st->fail_tcp);
    cJSON_AddNumberToObject(c, "failed_negotiate", (double)st->fail_negotiate);
    cJSON_AddNumberToObject(c, "failed_upgrade", (double)st->fail_upgrade);
    cJSON_AddNumberToObject(c, "failed_handshake", (double)st->fail_handshake);
    cJSON_AddNumberToObject(c, "failed_timeout", (double)st->fail_timeout);
    cJSON_AddNumberToObject(c, "peak_open", (double)st->peak_open);
    cJSON_AddNumberToObject(c, "closed_by_server", (double)st->closed_by_server);
    cJSON_AddNumberToObject(c, "closed", (double)st->closed);
    cJSON_AddNumberToObject(c, "close_forced", (double)st->close_forced);
    cJSON_AddNumberToObject(root, "connect_rate_s", per((double)st->conn_established, seconds(st->ramp_us)));

    cJSON *m = cJSON_AddObjectToObject(root, "messages");
    cJSON_AddNumberToObject(m, "sent", (double)st->msgs_sent);
    cJSON_AddNumberToObject(m, "received", (double)st->msgs_received);
    cJSON_AddNumberToObject(m, "received_in_window", (double)st->msgs_in_window);
    cJSON_AddNumberToObject(m, "errors", (double)st->msg_errors);
    cJSON_AddNumberToObject(m, "protocol_errors", (double)st->protocol_errors);
    cJSON_AddNumberToObject(m, "send_skipped", (double)st->send_skipped);
    cJSON_AddNumberToObject(m, "pings_sent", (double)st->pings_sent);
    cJSON_AddNumberToObject(m, "pings_received", (double)st->pings_received);
    cJSON_AddNumberToObject(m, "bytes_sent", (double)st->bytes_sent);
    cJSON_AddNumberToObject(m, "bytes_received", (double)st->bytes_received);
    cJSON_AddNumberToObject(root, "throughput_msgs_s", per((double)st->msgs_in_window, seconds(st->steady_us)));

    lg_report_add_hist(root, "latency_us", &st->latency);
    lg_report_add_hist(root, "connect_us", &st->connect);
    lg_report_add_hist(root, "sched_lag_us", &st->sched_lag);

    if (cfg->scenario == LG_SCEN_BROADCAST) {
        cJSON *b = cJSON_AddObjectToObject(root, "broadcast");
        cJSON_AddNumberToObject(b, "rounds", (double)st->bcast_rounds);
        cJSON_AddNumberToObject(b, "listeners", (double)st->bcast_listeners);
        cJSON_AddNumberToObject(b, "expected", (double)(st->bcast_rounds * st->bcast_listeners));
        cJSON_AddNumberToObject(b, "delivered", (double)st->bcast_delivered);
    }
    if (cfg->scenario == LG_SCEN_CHURN) {
        cJSON *ch = cJSON_AddObjectToObject(root, "churn");
        cJSON_AddNumberToObject(ch, "opened", (double)st->churn_opened);
        cJSON_AddNumberToObject(ch, "closed", (double)st->churn_closed);
        cJSON_AddNumberToObject(ch, "failed", (double)st->churn_failed);
        cJSON_AddNumberToObject(ch, "skipped", (double)st->churn_skipped);
        cJSON_AddNumberToObject(ch, "rate_s", per((double)st->churn_opened, seconds(st->steady_us)));
    }

    cJSON *ph = cJSON_AddObjectToObject(root, "phases_s");
    cJSON_AddNumberToObject(ph, "ramp", seconds(st->ramp_us));
    cJSON_AddNumberToObject(ph, "ramp_settle", seconds(st->ramp_settle_us));
    cJSON_AddNumberToObject(ph, "steady", seconds(st->steady_us));
    cJSON_AddNumberToObject(ph, "drain", seconds(st->drain_us));
    cJSON_AddNumberToObject(ph, "close", seconds(st->close_us));

    cJSON *self = cJSON_AddObjectToObject(root, "self");
    add_process(self, st->self_rss_kb, st->self_cpu_us, st);
    cJSON_AddNumberToObject(self, "slot_bytes", (double)st->slot_bytes);

    cJSON *wl = cJSON_AddArrayToObject(root, "watch");
    for (uint32_t i = 0; i < cfg->nwatch; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "pid", cfg->watch[i]);
        int ok = 1;
        uint64_t rss[4], cpu[4];
        for (int b = 0; b < 4; b++) {
            ok &= watch[i][b].ok;
            rss[b] = watch[i][b].rss_kb;
            cpu[b] = watch[i][b].cpu_us;
        }
        cJSON_AddBoolToObject(o, "ok", ok);
        add_process(o, rss, cpu, st);
        cJSON_AddItemToArray(wl, o);
    }

    cJSON_AddBoolToObject(root, "timed_out", st->timed_out);
    cJSON_AddBoolToObject(root, "interrupted", st->interrupted);
    if (st->first_error[0])
        cJSON_AddStringToObject(root, "first_error", st->first_error);
    else
        cJSON_AddNullToObject(root, "first_error");
    cJSON_AddNumberToObject(root, "exit_code", exit_code);

    char *text = cJSON_PrintUnformatted(root);
    if (text) {
        fprintf(out, "%s\n", text);
        fflush(out);
    }
    free(text);
    cJSON_Delete(root);
}

void lg_report_human(FILE *out, const struct lg_config *cfg, const struct lg_stats *st,
                     struct lg_proc_sample watch[][4])
{
    fprintf(out, "signalr-loadgen: %s %s -> http://%s:%u%s (%u process%s, %u source address%s)\n",
            lg_proto_name(cfg->proto), lg_scenario_name(cfg->scenario), cfg->url.host, cfg->url.port,
            cfg->path, cfg->procs, cfg->procs == 1 ? "" : "es", cfg->nsources, cfg->nsources == 1 ? "" : "es");
    fprintf(out, "  connections   %" PRIu64 "/%" PRIu64 " open in %.2f s (%.0f/s), failed %" PRIu64
                 ", dropped by server %" PRIu64 ", closed %" PRIu64 " (forced %" PRIu64 ")\n",
            st->conn_established, st->conn_requested, seconds(st->ramp_us),
            per((double)st->conn_established, seconds(st->ramp_us)), st->conn_failed, st->closed_by_server,
            st->closed, st->close_forced);
    fprintf(out, "  messages      sent %" PRIu64 ", received %" PRIu64 " (%.0f/s over %.2f s), errors %" PRIu64
                 ", protocol errors %" PRIu64 ", skipped %" PRIu64 "\n",
            st->msgs_sent, st->msgs_received, per((double)st->msgs_in_window, seconds(st->steady_us)),
            seconds(st->steady_us), st->msg_errors, st->protocol_errors, st->send_skipped);
    if (cfg->scenario == LG_SCEN_BROADCAST)
        fprintf(out, "  broadcast     %" PRIu64 " rounds x %" PRIu64 " listeners: %" PRIu64 " of %" PRIu64 " delivered\n",
                st->bcast_rounds, st->bcast_listeners, st->bcast_delivered, st->bcast_rounds * st->bcast_listeners);
    if (cfg->scenario == LG_SCEN_CHURN)
        fprintf(out, "  churn         opened %" PRIu64 ", closed %" PRIu64 ", failed %" PRIu64 ", skipped %" PRIu64 "\n",
                st->churn_opened, st->churn_closed, st->churn_failed, st->churn_skipped);
    lg_report_human_hist(out, cfg->scenario == LG_SCEN_BROADCAST ? "delivery" : "latency", &st->latency);
    lg_report_human_hist(out, "connect", &st->connect);
    lg_report_human_hist(out, "schedule lag", &st->sched_lag);
    fprintf(out, "  loadgen       RSS %" PRIu64 " -> %" PRIu64 " kB (%.0f B/conn), CPU %.2f s\n",
            st->self_rss_kb[LG_AT_START], st->self_rss_kb[LG_AT_STEADY_END],
            per(((double)st->self_rss_kb[LG_AT_STEADY_END] - (double)st->self_rss_kb[LG_AT_START]) * 1024,
                (double)st->conn_established),
            seconds(st->self_cpu_us[LG_AT_CLOSED] - st->self_cpu_us[LG_AT_START]));
    for (uint32_t i = 0; i < cfg->nwatch; i++) {
        const struct lg_proc_sample *s = watch[i];
        fprintf(out, "  pid %-9d RSS %" PRIu64 " -> %" PRIu64 " -> %" PRIu64 " kB, CPU ramp %.2f s, steady %.2f s, close %.2f s%s\n",
                (int)cfg->watch[i], s[LG_AT_START].rss_kb, s[LG_AT_STEADY_END].rss_kb, s[LG_AT_CLOSED].rss_kb,
                seconds(s[LG_AT_STEADY].cpu_us - s[LG_AT_START].cpu_us),
                seconds(s[LG_AT_STEADY_END].cpu_us - s[LG_AT_STEADY].cpu_us),
                seconds(s[LG_AT_CLOSED].cpu_us - s[LG_AT_STEADY_END].cpu_us),
                s[LG_AT_CLOSED].ok ? "" : " (could not read it)");
    }
    if (st->first_error[0])
        fprintf(out, "  first error   %s\n", st->first_error);
    if (st->timed_out)
        fprintf(out, "  TIMED OUT (--max-time %.1f s)\n", cfg->max_time);
    if (st->interrupted)
        fprintf(out, "  INTERRUPTED (signal): phases after the interruption were cut short\n");
}
