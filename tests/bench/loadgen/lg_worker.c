/* lg_worker.c - one load-generating process: the epoll loop, the timer wheel, the run phases
 * (ramp -> steady -> drain -> close) and the traffic of each scenario. With several processes,
 * a worker pauses at the end of ramp and of drain until the parent says go, so that all
 * processes measure the same window; the parent samples the watched servers meanwhile. */
#include "lg_worker.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#define CTL_KEY UINT64_MAX
#define MAX_EVENTS 1024
#define MAX_EXPIRED 4096
#define ERRORS_PRINTED_MAX 20

void lg_worker_error(struct lg_worker *w, const char *fmt, ...)
{
    char text[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (!w->st.first_error[0])
        snprintf(w->st.first_error, sizeof w->st.first_error, "%s", text);
    if (w->cfg->verbose && w->errors_printed < ERRORS_PRINTED_MAX) {
        w->errors_printed++;
        fprintf(stderr, "signalr-loadgen[%u]: %s\n", w->index, text);
    }
}

void lg_sample_watch(const struct lg_config *cfg, struct lg_proc_sample watch[][4], int boundary)
{
    for (uint32_t i = 0; i < cfg->nwatch; i++)
        watch[i][boundary] = lg_proc_sample(cfg->watch[i]);
}

static void sample_self(struct lg_worker *w, int boundary)
{
    struct lg_proc_sample s = lg_proc_sample(0);
    w->st.self_rss_kb[boundary] = s.rss_kb;
    w->st.self_cpu_us[boundary] = s.cpu_us;
    if (w->ctl_fd < 0)
        lg_sample_watch(w->cfg, w->watch, boundary);
}

uint32_t lg_worker_churn_slots(const struct lg_config *cfg, uint32_t nworkers)
{
    if (cfg->scenario != LG_SCEN_CHURN)
        return 0;
    /* Enough for every churning connection alive at once: set-up, hold and close time. */
    double alive_s = cfg->churn_hold_ms / 1000.0 + cfg->close_timeout + 2.0;
    double slots = cfg->rate / nworkers * alive_s + 16;
    return slots > 100000 ? 100000 : (uint32_t)slots;
}

uint64_t lg_worker_fds_needed(const struct lg_config *cfg, uint32_t nworkers, uint32_t nconns)
{
    /* Each connection: its WebSocket, and briefly a side HTTP socket while being set up or
     * (legacy) closed. Plus epoll, stdio, the control pipe. */
    uint32_t pending = cfg->max_pending / nworkers + 1;
    uint32_t churn = lg_worker_churn_slots(cfg, nworkers);
    uint64_t side = cfg->proto == LG_PROTO_LEGACY || cfg->mixed ? nconns : pending;
    return (uint64_t)nconns + side + 2ull * churn + 32;
}

/* ---- scenario traffic ---- */

static uint64_t echo_interval_us(const struct lg_worker *w)
{
    uint64_t iv = (uint64_t)(1e6 / w->cfg->rate);
    return iv ? iv : 1;
}

static void echo_send(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    lg_conn_invoke(w, slot, "Echo", w->payload, w->cfg->payload, now);
}

/* A steady connection starts its scenario traffic (at the start of steady, or when it opens). */
static void start_traffic(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    if (w->cfg->scenario != LG_SCEN_ECHO)
        return;
    struct lg_conn *c = &w->conns[slot];
    if (w->cfg->rate <= 0) {
        echo_send(w, slot, now);
        return;
    }
    /* Spread the connections' sends evenly over one interval. */
    uint64_t iv = echo_interval_us(w);
    c->next_send_us = now + (w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull) % iv;
    lg_conn_rearm(w, slot);
}

void lg_worker_on_open(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    if (w->phase == PH_STEADY)
        start_traffic(w, slot, now);
}

void lg_worker_on_completion(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    const struct lg_config *cfg = w->cfg;
    struct lg_conn *c = &w->conns[slot];
    if (cfg->scenario != LG_SCEN_ECHO || cfg->rate > 0 || w->phase != PH_STEADY || c->state != CS_OPEN)
        return;
    if (cfg->count && c->sent >= cfg->count)
        return;
    echo_send(w, slot, now);
}

void lg_worker_on_send_due(struct lg_worker *w, uint32_t slot, uint64_t now)
{
    const struct lg_config *cfg = w->cfg;
    struct lg_conn *c = &w->conns[slot];
    uint64_t intended = c->next_send_us;
    if (w->phase != PH_STEADY || (cfg->count && c->sent >= cfg->count)) {
        c->next_send_us = 0;
        return;
    }
    lg_hist_record(&w->st.sched_lag, now - intended);
    if (c->wsout.len > LG_MAX_QUEUED) {
        w->st.send_skipped++; /* the server is not reading: do not queue without bound */
    } else {
        echo_send(w, slot, now);
        if (c->state != CS_OPEN)
            return;
    }
    uint64_t iv = echo_interval_us(w);
    uint64_t next = intended + iv;
    if (next + 1000000 < now) {
        /* More than a second behind: count the missed sends and resynchronise. */
        w->st.send_skipped += (now - next) / iv;
        next = now + iv;
    }
    c->next_send_us = next;
}

/* Broadcast --rate 0: how many rounds may be undelivered at once. Two keep the
 * server busy while the last deliveries of a round are still on their way. */
#define LG_BCAST_WINDOW 2

static void broadcast_step(struct lg_worker *w, uint64_t now)
{
    const struct lg_config *cfg = w->cfg;
    if (!w->is_sender || w->conns[0].state != CS_OPEN)
        return;
    uint64_t due = (uint64_t)((double)(now - w->t_phase_us) * cfg->rate / 1e6) + 1;
    if (cfg->rate == 0) /* saturated: keep LG_BCAST_WINDOW rounds in flight, no more */
        due = w->st.bcast_listeners ? w->st.bcast_delivered / w->st.bcast_listeners + LG_BCAST_WINDOW : 1;
    if (cfg->count && due > cfg->count)
        due = cfg->count;
    while (w->st.bcast_rounds < due && w->conns[0].state == CS_OPEN) {
        int n = snprintf(w->bcast_arg, 32, "t=%" PRIu64 ";", now);
        size_t len = (size_t)n;
        if (len < cfg->payload) {
            memset(w->bcast_arg + len, 'x', cfg->payload - len);
            len = cfg->payload;
        }
        w->st.bcast_rounds++;
        if (cfg->group[0])
            lg_conn_invoke2(w, 0, "SendToGroup", cfg->group, w->bcast_arg, len, now);
        else
            lg_conn_invoke(w, 0, "Broadcast", w->bcast_arg, len, now);
    }
}

static void churn_step(struct lg_worker *w, uint64_t now)
{
    double per_s = w->cfg->rate / w->nworkers;
    uint64_t due = (uint64_t)((double)(now - w->t_phase_us) * per_s / 1e6) + 1;
    while (w->churn_started < due) {
        w->churn_started++;
        if (w->nchurn_free == 0) {
            w->st.churn_skipped++;
            continue;
        }
        uint32_t slot = w->churn_free[--w->nchurn_free];
        w->conns[slot].flags = CF_CHURN;
        w->churn_active++;
        lg_conn_begin(w, slot, now);
    }
}

static void ramp_step(struct lg_worker *w, uint64_t now)
{
    double per_s = w->cfg->ramp / w->nworkers;
    uint64_t due = (uint64_t)((double)(now - w->t_phase_us) * per_s / 1e6) + 1;
    if (due > w->nsteady)
        due = w->nsteady;
    uint32_t max_pending = w->cfg->max_pending / w->nworkers;
    if (max_pending == 0)
        max_pending = 1;
    while (w->started < due && w->pending < max_pending)
        lg_conn_begin(w, w->started++, now);
}

/* ---- phases ---- */

static void enter(struct lg_worker *w, enum lg_phase phase, uint64_t now)
{
    w->phase = phase;
    w->t_phase_us = now;
}

static void ctl_send(struct lg_worker *w, char what)
{
    if (w->ctl_fd >= 0 && write(w->ctl_fd, &what, 1) != 1)
        *w->stop = 1; /* parent gone */
}

static void enter_steady(struct lg_worker *w, uint64_t now)
{
    enter(w, PH_STEADY, now);
    w->st.bcast_listeners = w->open;
    for (uint32_t i = 0; i < w->nsteady; i++)
        if (w->conns[i].state == CS_OPEN)
            start_traffic(w, i, now);
}

static void enter_close(struct lg_worker *w, uint64_t now)
{
    enter(w, PH_CLOSE, now);
    for (uint32_t i = 0; i < w->ncap; i++) {
        struct lg_conn *c = &w->conns[i];
        if (c->state == CS_OPEN)
            lg_conn_close(w, i, now);
        else if (c->state != CS_FREE && c->state != CS_CLOSING)
            lg_conn_release(w, i); /* still being set up: not part of the measurement */
    }
}

static int drained(const struct lg_worker *w, uint64_t now)
{
    if (now >= w->t_phase_us + (uint64_t)(w->cfg->drain * 1e6))
        return 1;
    if (w->outstanding || w->churn_active)
        return 0;
    if (w->cfg->scenario != LG_SCEN_BROADCAST)
        return 1;
    if (w->nworkers == 1 && w->st.bcast_delivered >= w->st.bcast_rounds * w->st.bcast_listeners)
        return 1;
    /* Several processes: a listener cannot know the round count; wait for 200 ms of quiet. */
    uint64_t quiet_from = w->last_rx_us > w->t_phase_us ? w->last_rx_us : w->t_phase_us;
    return now >= quiet_from + 200000;
}

static void end_steady(struct lg_worker *w, uint64_t now)
{
    w->st.steady_us = now - w->t_phase_us;
    enter(w, PH_DRAIN, now);
}

/* Advances the phase machine; returns 0 when the run is over. */
static int phase_step(struct lg_worker *w, uint64_t now)
{
    const struct lg_config *cfg = w->cfg;
    if (*w->stop && w->phase < PH_CLOSE) {
        w->st.interrupted = 1;
        if (w->phase == PH_RAMP)
            w->st.ramp_us = now - w->t_phase_us;
        if (w->phase == PH_STEADY)
            w->st.steady_us = now - w->t_phase_us;
        enter_close(w, now);
    }
    switch (w->phase) {
    case PH_RAMP:
        ramp_step(w, now);
        if (w->started == w->nsteady && w->pending == 0) {
            w->st.ramp_us = now - w->t_phase_us;
            enter(w, PH_RAMP_SETTLE, now);
        }
        return 1;
    case PH_RAMP_SETTLE:
        if (now >= w->t_phase_us + (uint64_t)(cfg->ramp_settle * 1e6)) {
            w->st.ramp_settle_us = now - w->t_phase_us;
            sample_self(w, LG_AT_STEADY);
            if (w->ctl_fd >= 0) {
                enter(w, PH_WAIT_GO1, now);
                ctl_send(w, 'R');
            } else {
                enter_steady(w, now);
            }
        }
        return 1;
    case PH_STEADY: {
        int nobody = w->open == 0 && w->nworkers == 1 && cfg->scenario != LG_SCEN_CHURN;
        if (nobody || now >= w->t_phase_us + (uint64_t)(cfg->duration * 1e6)) {
            end_steady(w, now);
            return 1;
        }
        if (cfg->scenario == LG_SCEN_BROADCAST)
            broadcast_step(w, now);
        else if (cfg->scenario == LG_SCEN_CHURN)
            churn_step(w, now);
        return 1;
    }
    case PH_DRAIN:
        if (drained(w, now)) {
            w->st.drain_us = now - w->t_phase_us;
            sample_self(w, LG_AT_STEADY_END);
            if (w->ctl_fd >= 0) {
                enter(w, PH_WAIT_GO2, now);
                ctl_send(w, 'S');
            } else {
                enter_close(w, now);
            }
        }
        return 1;
    case PH_CLOSE: {
        uint64_t limit = w->t_phase_us + (uint64_t)((cfg->close_timeout + 2) * 1e6);
        if (w->open + w->closing + w->pending == 0 || now >= limit) {
            for (uint32_t i = 0; i < w->ncap; i++)
                if (w->conns[i].state != CS_FREE) {
                    w->st.close_forced++;
                    lg_conn_release(w, i);
                }
            w->st.close_us = now - w->t_phase_us;
            enter(w, PH_DONE, now);
            return 0;
        }
        return 1;
    }
    case PH_WAIT_GO1: case PH_WAIT_GO2:
        return 1;
    default:
        return 0;
    }
}

static void on_ctl(struct lg_worker *w, uint64_t now)
{
    char b;
    ssize_t n = read(w->ctl_fd, &b, 1);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        *w->stop = 1;
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->ctl_fd, NULL);
        return;
    }
    if (n != 1 || b != 'G')
        return;
    if (w->phase == PH_WAIT_GO1)
        enter_steady(w, now);
    else if (w->phase == PH_WAIT_GO2)
        enter_close(w, now);
}

/* Whether the loop must wake every millisecond (pacing or timers), or may sleep longer. */
static int loop_timeout_ms(const struct lg_worker *w)
{
    if (w->phase == PH_RAMP || w->phase == PH_DRAIN || w->phase == PH_CLOSE)
        return 1;
    if (w->phase == PH_STEADY && w->cfg->scenario != LG_SCEN_IDLE)
        return 1;
    return w->wheel.armed ? 1 : 20;
}

/* ---- set-up and the loop ---- */

static int worker_init(struct lg_worker *w, const struct lg_config *cfg, uint32_t index,
                       uint32_t nworkers, uint32_t nconns, int ctl_fd, volatile int *stop)
{
    memset(w, 0, sizeof *w);
    msgpack_zone_init(&w->zone, 4096);
    w->cfg = cfg;
    w->index = index;
    w->nworkers = nworkers;
    w->ctl_fd = ctl_fd;
    w->stop = stop;
    w->epfd = -1;
    lg_stats_init(&w->st);
    w->st.conn_requested = nconns;
    w->nsteady = nconns;
    uint32_t churn = lg_worker_churn_slots(cfg, nworkers);
    w->ncap = nconns + churn;

    w->conns = calloc(w->ncap, sizeof *w->conns);
    w->churn_free = malloc(sizeof(uint32_t) * (churn ? churn : 1));
    w->rbuf_size = 256 * 1024;
    w->rbuf = malloc(w->rbuf_size);
    w->wbuf_size = (size_t)cfg->payload + LG_SIG_OVERHEAD + 2 * sizeof cfg->legacy_hub + 64;
    w->wbuf = malloc(w->wbuf_size);
    w->payload = malloc((size_t)cfg->payload + 1);
    w->bcast_arg = malloc((size_t)cfg->payload + 32);
    if (!w->conns || !w->churn_free || !w->rbuf || !w->wbuf || !w->payload || !w->bcast_arg ||
        lg_wheel_init(&w->wheel, w->ncap, lg_now_us() / 1000) != 0) {
        fprintf(stderr, "signalr-loadgen: out of memory for %u connections\n", w->ncap);
        return -1;
    }
    for (uint32_t i = 0; i < w->ncap; i++)
        w->conns[i].fd = w->conns[i].hfd = -1;
    for (uint32_t i = 0; i < churn; i++)
        w->churn_free[w->nchurn_free++] = w->ncap - 1 - i;
    memset(w->payload, 'x', cfg->payload);
    w->payload[cfg->payload] = '\0';

    w->target.sin_family = AF_INET;
    w->target.sin_port = htons(cfg->url.port);
    w->target.sin_addr.s_addr = htonl(cfg->url.ip);

    if (RAND_bytes((unsigned char *)&w->key_secret, sizeof w->key_secret) != 1 ||
        RAND_bytes((unsigned char *)&w->rng, sizeof w->rng) != 1) {
        fprintf(stderr, "signalr-loadgen: no randomness from OpenSSL\n");
        return -1;
    }
    w->rng |= 1;
    w->is_sender = cfg->scenario == LG_SCEN_BROADCAST && index == 0;

    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (w->epfd < 0) {
        perror("signalr-loadgen: epoll_create1");
        return -1;
    }
    if (ctl_fd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = CTL_KEY};
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, ctl_fd, &ev);
    }
    return 0;
}

static void worker_free(struct lg_worker *w)
{
    if (w->conns)
        for (uint32_t i = 0; i < w->ncap; i++)
            lg_conn_release(w, i);
    if (w->epfd >= 0)
        close(w->epfd);
    lg_wheel_free(&w->wheel);
    msgpack_zone_destroy(&w->zone);
    free(w->conns);
    free(w->churn_free);
    free(w->rbuf);
    free(w->wbuf);
    free(w->payload);
    free(w->bcast_arg);
    w->conns = NULL;
}

int lg_worker_run(struct lg_worker *w, const struct lg_config *cfg, uint32_t index,
                  uint32_t nworkers, uint32_t nconns, int ctl_fd, volatile int *stop)
{
    /* The first sample comes before any slot is allocated, so the growth to the steady
     * sample is the whole per-connection cost of this process. */
    struct lg_proc_sample self_start = lg_proc_sample(0);
    struct lg_proc_sample watch_start[LG_MAX_WATCH][4];
    if (ctl_fd < 0)
        lg_sample_watch(cfg, watch_start, LG_AT_START);
    if (worker_init(w, cfg, index, nworkers, nconns, ctl_fd, stop) != 0) {
        worker_free(w);
        return -1;
    }
    w->st.self_rss_kb[LG_AT_START] = self_start.rss_kb;
    w->st.self_cpu_us[LG_AT_START] = self_start.cpu_us;
    for (uint32_t i = 0; ctl_fd < 0 && i < cfg->nwatch; i++)
        w->watch[i][LG_AT_START] = watch_start[i][LG_AT_START];
    w->st.slot_bytes = sizeof(struct lg_conn) + 2 * sizeof(int32_t) + sizeof(uint64_t);
    struct epoll_event events[MAX_EVENTS];
    uint32_t expired[MAX_EXPIRED];
    uint64_t now = lg_now_us();
    w->t_start_us = now;
    w->hard_deadline_us = now + (uint64_t)(cfg->max_time * 1e6);
    enter(w, PH_RAMP, now);

    for (;;) {
        now = lg_now_us();
        if (now >= w->hard_deadline_us) {
            w->st.timed_out = 1;
            /* Keep what was measured: the phase cut short still gets its length. */
            if (w->phase == PH_RAMP)
                w->st.ramp_us = now - w->t_phase_us;
            else if (w->phase == PH_STEADY)
                w->st.steady_us = now - w->t_phase_us;
            else if (w->phase == PH_DRAIN)
                w->st.drain_us = now - w->t_phase_us;
            else if (w->phase == PH_CLOSE)
                w->st.close_us = now - w->t_phase_us;
            lg_worker_error(w, "--max-time of %.1f s reached in phase %d", cfg->max_time, (int)w->phase);
            break;
        }
        if (!phase_step(w, now))
            break;
        int n = epoll_wait(w->epfd, events, MAX_EVENTS, loop_timeout_ms(w));
        if (n < 0 && errno != EINTR) {
            perror("signalr-loadgen: epoll_wait");
            break;
        }
        now = lg_now_us();
        for (int i = 0; i < n; i++) {
            /* A fresh clock per event: a batch of hundreds of deliveries takes milliseconds
             * to process, and one timestamp for all would bunch their latencies together. */
            now = lg_now_us();
            uint64_t key = events[i].data.u64;
            if (key == CTL_KEY)
                on_ctl(w, now);
            else
                lg_conn_on_event(w, (uint32_t)(key >> 1), (int)(key & 1), events[i].events, now);
        }
        uint32_t m;
        now = lg_now_us();
        do {
            m = lg_wheel_advance(&w->wheel, now / 1000, expired, MAX_EXPIRED);
            for (uint32_t i = 0; i < m; i++)
                lg_conn_on_timer(w, expired[i], now);
        } while (m == MAX_EXPIRED);
    }
    /* Whatever is still open (timed out) is dropped now. */
    for (uint32_t i = 0; i < w->ncap; i++)
        lg_conn_release(w, i);
    if (ctl_fd < 0 && cfg->settle > 0 && !w->st.timed_out) {
        struct timespec ts = {(time_t)cfg->settle, (long)((cfg->settle - (time_t)cfg->settle) * 1e9)};
        nanosleep(&ts, NULL);
    }
    sample_self(w, LG_AT_CLOSED);
    worker_free(w);
    return 0;
}
