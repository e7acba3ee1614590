/* lg_stats.h - everything one worker process counts during a run. Plain fixed-size data (no
 * pointers) so a child process can hand it to its parent through a pipe and the parent can
 * add several together. */
#ifndef LG_STATS_H
#define LG_STATS_H

#include <stdint.h>

#include "lg_hist.h"

struct lg_stats {
    /* connections */
    uint64_t conn_requested;
    uint64_t conn_established;
    uint64_t conn_failed;
    uint64_t fail_tcp;          /* connect() refused / reset / fd or port exhaustion */
    uint64_t fail_negotiate;
    uint64_t fail_upgrade;
    uint64_t fail_handshake;    /* Core handshake or legacy init / start */
    uint64_t fail_timeout;
    uint64_t closed_by_server;  /* open connections the server ended during the run */
    uint64_t closed;            /* graceful closes completed */
    uint64_t close_forced;      /* closes that hit --close-timeout */
    uint64_t peak_open;
    /* messages */
    uint64_t msgs_sent;
    uint64_t msgs_received;     /* completions + broadcast deliveries */
    uint64_t msgs_in_window;    /* received during the steady phase */
    uint64_t msg_errors;        /* completions with an error */
    uint64_t protocol_errors;   /* malformed frames or messages, unknown ids */
    uint64_t send_skipped;      /* fixed-rate sends skipped: the connection's queue was full */
    uint64_t pings_sent;
    uint64_t pings_received;
    uint64_t bytes_sent;
    uint64_t bytes_received;
    /* broadcast */
    uint64_t bcast_rounds;
    uint64_t bcast_delivered;
    uint64_t bcast_listeners;
    /* churn */
    uint64_t churn_opened;
    uint64_t churn_closed;
    uint64_t churn_failed;
    uint64_t churn_skipped;
    /* phase lengths, microseconds */
    uint64_t ramp_us;
    uint64_t ramp_settle_us;     /* --ramp-settle: after the ramp, before steady */
    uint64_t steady_us;
    uint64_t drain_us;
    uint64_t close_us;
    /* this process (VmRSS kB / CPU us) at: start, steady start, steady end, after close */
    uint64_t self_rss_kb[4];
    uint64_t self_cpu_us[4];
    uint64_t slot_bytes;        /* fixed memory per connection slot (struct + timer links) */
    int timed_out;
    int interrupted;            /* SIGINT/SIGTERM (or the parent went away) ended it early */
    char first_error[200];
    struct lg_hist latency;     /* echo round trip, or broadcast delivery time */
    struct lg_hist connect;     /* start of negotiate to connection open */
    struct lg_hist sched_lag;   /* fixed-rate: actual send time minus scheduled time */
};

void lg_stats_init(struct lg_stats *s);
/* Adds `from` into `into`; phase lengths and the timed-out flag take the maximum, the first
 * error is kept if `into` has none, resident memory and CPU are summed. */
void lg_stats_merge(struct lg_stats *into, const struct lg_stats *from);

#endif
