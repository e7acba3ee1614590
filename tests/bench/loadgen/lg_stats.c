/* lg_stats.c - initialising and merging run statistics. */
#include "lg_stats.h"

#include <string.h>

void lg_stats_init(struct lg_stats *s)
{
    memset(s, 0, sizeof *s);
    lg_hist_init(&s->latency);
    lg_hist_init(&s->connect);
    lg_hist_init(&s->sched_lag);
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

void lg_stats_merge(struct lg_stats *into, const struct lg_stats *from)
{
#define ADD(f) into->f += from->f
    ADD(conn_requested); ADD(conn_established); ADD(conn_failed); ADD(fail_tcp);
    ADD(fail_negotiate); ADD(fail_upgrade); ADD(fail_handshake); ADD(fail_timeout);
    ADD(closed_by_server); ADD(closed); ADD(close_forced); ADD(peak_open);
    ADD(msgs_sent); ADD(msgs_received); ADD(msgs_in_window); ADD(msg_errors);
    ADD(protocol_errors); ADD(send_skipped); ADD(pings_sent); ADD(pings_received);
    ADD(bytes_sent); ADD(bytes_received);
    ADD(bcast_rounds); ADD(bcast_delivered); ADD(bcast_listeners);
    ADD(churn_opened); ADD(churn_closed); ADD(churn_failed); ADD(churn_skipped);
#undef ADD
    into->ramp_us = max_u64(into->ramp_us, from->ramp_us);
    into->ramp_settle_us = max_u64(into->ramp_settle_us, from->ramp_settle_us);
    into->steady_us = max_u64(into->steady_us, from->steady_us);
    into->drain_us = max_u64(into->drain_us, from->drain_us);
    into->close_us = max_u64(into->close_us, from->close_us);
    for (int i = 0; i < 4; i++) {
        into->self_rss_kb[i] += from->self_rss_kb[i];
        into->self_cpu_us[i] += from->self_cpu_us[i];
    }
    into->timed_out |= from->timed_out;
    into->slot_bytes = from->slot_bytes;
    into->interrupted |= from->interrupted;
    if (!into->first_error[0])
        memcpy(into->first_error, from->first_error, sizeof into->first_error);
    lg_hist_merge(&into->latency, &from->latency);
    lg_hist_merge(&into->connect, &from->connect);
    lg_hist_merge(&into->sched_lag, &from->sched_lag);
}
