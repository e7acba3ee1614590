/* main.c - signalr-loadgen: parses the command line, checks that the process may open enough
 * sockets, runs one worker (or forks several and steps them through the phases together), and
 * prints the summaries. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lg_config.h"
#include "lg_proc.h"
#include "lg_report.h"
#include "lg_worker.h"

static volatile int stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static uint32_t share_of(const struct lg_config *cfg, uint32_t k)
{
    return cfg->connections / cfg->procs + (k < cfg->connections % cfg->procs ? 1 : 0);
}

/* Raises RLIMIT_NOFILE to the hard limit and says clearly when even that is too low. */
static int check_fd_limit(const struct lg_config *cfg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        perror("signalr-loadgen: getrlimit");
        return -1;
    }
    uint64_t need = lg_worker_fds_needed(cfg, cfg->procs, share_of(cfg, 0));
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            perror("signalr-loadgen: setrlimit");
    }
    if (need > rl.rlim_cur) {
        uint64_t per_proc = rl.rlim_cur > 64 ? rl.rlim_cur - 64 : 1;
        uint64_t procs = (cfg->connections + per_proc - 1) / per_proc;
        while (procs < 64 && lg_worker_fds_needed(cfg, (uint32_t)procs,
                                                  (uint32_t)((cfg->connections + procs - 1) / procs)) > rl.rlim_cur)
            procs++;
        fprintf(stderr,
                "signalr-loadgen: %u connections need about %llu file descriptors per process, but the\n"
                "  open-file limit is %llu (ulimit -Hn). Split the load: --procs %llu (or more), or raise\n"
                "  the hard limit.\n",
                share_of(cfg, 0) * cfg->procs, (unsigned long long)need, (unsigned long long)rl.rlim_cur,
                (unsigned long long)procs);
        return -1;
    }
    return 0;
}

/* Each source address gives at most the ephemeral port range of connections to one target. */
static int check_ports(const struct lg_config *cfg)
{
    unsigned lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%u %u", &lo, &hi) != 2) {
            lo = 32768;
            hi = 60999;
        }
        fclose(f);
    }
    uint64_t ports = hi >= lo ? hi - lo + 1 : 0;
    uint64_t per_source = ((uint64_t)cfg->connections + lg_worker_churn_slots(cfg, 1) + cfg->max_pending +
                           cfg->nsources - 1) / cfg->nsources;
    if (per_source * 10 > ports * 9) {
        fprintf(stderr,
                "signalr-loadgen: about %llu connections per source address, but only %llu ephemeral ports\n"
                "  (%u-%u): use more source addresses, e.g. --sources %llu\n",
                (unsigned long long)per_source, (unsigned long long)ports, lo, hi,
                (unsigned long long)(((uint64_t)cfg->connections * 10 / 9) / (ports ? ports : 1) + 2));
        return -1;
    }
    return 0;
}

static void finish(const struct lg_config *cfg, const struct lg_stats *st, struct lg_proc_sample watch[][4],
                   int *exit_code)
{
    *exit_code = lg_report_exit_code(st);
    lg_report_json(stdout, cfg, st, watch, *exit_code);
    if (!cfg->quiet)
        lg_report_human(stderr, cfg, st, watch);
}

static int run_single(const struct lg_config *cfg)
{
    struct lg_worker *w = malloc(sizeof *w);
    if (!w) {
        fprintf(stderr, "signalr-loadgen: out of memory\n");
        return 1;
    }
    if (lg_worker_run(w, cfg, 0, 1, cfg->connections, -1, &stop_requested) != 0) {
        free(w);
        return 1;
    }
    int code;
    finish(cfg, &w->st, w->watch, &code);
    free(w);
    return code;
}

/* ---- several processes ---- */

struct child {
    pid_t pid;
    int fd;
    int stage; /* 0 ramping, 1 ramp done, 2 steady done, 3 finished */
    int has_stats;
};

static int read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void child_main(const struct lg_config *all, uint32_t k, int fd)
{
    struct lg_config *cfg = malloc(sizeof *cfg); /* this process's (--mixed); lives until _exit */
    struct lg_worker *w = cfg ? malloc(sizeof *w) : NULL;
    if (cfg)
        lg_config_for_proc(all, k, cfg);
    int rc = w ? lg_worker_run(w, cfg, k, cfg->procs, share_of(cfg, k), fd, &stop_requested) : -1;
    char done = 'C';
    if (rc == 0) {
        write_full(fd, &done, 1);
        write_full(fd, &w->st, sizeof w->st);
    }
    free(w);
    free(cfg);
    _exit(rc == 0 ? 0 : 1);
}

/* Waits until every live child has reached `stage` (or finished); collects stats on the way. */
static void wait_stage(struct child *kids, uint32_t n, int stage, struct lg_stats *all, uint64_t deadline_us)
{
    for (;;) {
        struct pollfd pfd[64];
        uint32_t idx[64], m = 0;
        for (uint32_t k = 0; k < n; k++)
            if (kids[k].stage < stage && kids[k].stage < 3) {
                pfd[m].fd = kids[k].fd;
                pfd[m].events = POLLIN;
                idx[m++] = k;
            }
        if (m == 0)
            return;
        uint64_t now = lg_now_us();
        if (now >= deadline_us || stop_requested > 1)
            return;
        int r = poll(pfd, m, 200);
        if (r <= 0)
            continue;
        for (uint32_t i = 0; i < m; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            struct child *c = &kids[idx[i]];
            char b;
            if (read_full(c->fd, &b, 1) != 0) {
                c->stage = 3;
                continue;
            }
            if (b == 'R')
                c->stage = 1;
            else if (b == 'S')
                c->stage = 2;
            else if (b == 'C') {
                struct lg_stats *st = malloc(sizeof *st);
                if (st && read_full(c->fd, st, sizeof *st) == 0) {
                    lg_stats_merge(all, st);
                    c->has_stats = 1;
                }
                free(st);
                c->stage = 3;
            }
        }
    }
}

static void send_go(struct child *kids, uint32_t n)
{
    char go = 'G';
    for (uint32_t k = 0; k < n; k++)
        if (kids[k].stage < 3 && write_full(kids[k].fd, &go, 1) != 0)
            kids[k].stage = 3;
}

static int run_multi(const struct lg_config *cfg)
{
    struct child kids[64];
    struct lg_proc_sample watch[LG_MAX_WATCH][4];
    memset(watch, 0, sizeof watch);
    struct lg_stats *all = malloc(sizeof *all);
    if (!all)
        return 1;
    lg_stats_init(all);
    uint64_t deadline = lg_now_us() + (uint64_t)((cfg->max_time + 15) * 1e6);

    lg_sample_watch(cfg, watch, LG_AT_START);
    fflush(NULL);
    for (uint32_t k = 0; k < cfg->procs; k++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
            perror("signalr-loadgen: socketpair");
            return 1;
        }
        pid_t pid = fork();
        if (pid < 0) {
            perror("signalr-loadgen: fork");
            return 1;
        }
        if (pid == 0) {
            close(sv[0]);
            for (uint32_t j = 0; j < k; j++)
                close(kids[j].fd);
            child_main(cfg, k, sv[1]);
        }
        close(sv[1]);
        kids[k] = (struct child){.pid = pid, .fd = sv[0], .stage = 0, .has_stats = 0};
    }

    wait_stage(kids, cfg->procs, 1, all, deadline);
    lg_sample_watch(cfg, watch, LG_AT_STEADY);
    send_go(kids, cfg->procs);
    wait_stage(kids, cfg->procs, 2, all, deadline);
    lg_sample_watch(cfg, watch, LG_AT_STEADY_END);
    send_go(kids, cfg->procs);
    wait_stage(kids, cfg->procs, 3, all, deadline);
    if (cfg->settle > 0) {
        struct timespec ts = {(time_t)cfg->settle, (long)((cfg->settle - (time_t)cfg->settle) * 1e9)};
        nanosleep(&ts, NULL);
    }
    lg_sample_watch(cfg, watch, LG_AT_CLOSED);

    uint32_t missing = 0;
    for (uint32_t k = 0; k < cfg->procs; k++) {
        if (!kids[k].has_stats) {
            missing++;
            kill(kids[k].pid, SIGKILL); /* our own child, past the deadline */
        }
        close(kids[k].fd);
        waitpid(kids[k].pid, NULL, 0);
    }
    if (missing) {
        all->timed_out = 1;
        snprintf(all->first_error, sizeof all->first_error, "%u of %u worker processes gave no result",
                 missing, cfg->procs);
    }
    int code;
    finish(cfg, all, watch, &code);
    free(all);
    return code;
}

int main(int argc, char **argv)
{
    struct lg_config cfg;
    int rc = lg_config_parse(argc, argv, &cfg);
    if (rc != 0)
        return rc > 0 ? 0 : 1;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (check_fd_limit(&cfg) != 0 || check_ports(&cfg) != 0)
        return 1;
    return cfg.procs > 1 ? run_multi(&cfg) : run_single(&cfg);
}
