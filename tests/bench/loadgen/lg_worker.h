/* lg_worker.h - one load-generating process: its connection slots, its epoll loop and timer
 * wheel, the run phases (ramp -> steady -> drain -> close) and the scenario traffic.
 * lg_conn.c drives each connection through its protocol; lg_worker.c owns the loop and the
 * phases. Everything here is single-threaded. */
#ifndef LG_WORKER_H
#define LG_WORKER_H

#include <stdint.h>

#include <netinet/in.h>

#include <msgpack.h>

#include "lg_config.h"
#include "lg_proc.h"
#include "lg_stats.h"
#include "lg_wheel.h"

/* A byte buffer that exists only while it holds something: idle connections own none. */
struct lg_bytes {
    char *p;
    uint32_t len;
    uint32_t cap;
};

enum lg_conn_state {
    CS_FREE,
    CS_NEGOTIATE,     /* HTTP negotiate on hfd */
    CS_UPGRADE,       /* WebSocket upgrade request sent on fd, waiting for 101 */
    CS_HANDSHAKE,     /* Core: handshake sent, waiting for {} */
    CS_LEGACY_INIT,   /* legacy: waiting for the init frame ("S":1) */
    CS_LEGACY_START,  /* legacy: /start sent on hfd */
    CS_JOINING,       /* Core --group: JoinGroup sent, waiting for its completion */
    CS_OPEN,
    CS_CLOSING,       /* Close message / frame sent (Core) or /abort sent (legacy) */
};

enum {
    CF_FD_CONNECTING = 1u << 0,
    CF_HFD_CONNECTING = 1u << 1,
    CF_FD_WANT_OUT = 1u << 2,
    CF_CHURN = 1u << 3,
    CF_CLOSE_FRAME_SENT = 1u << 4,
    CF_ABORT_DONE = 1u << 5,
};

/* One client connection. Kept small: everything transient (tokens, partial input, unsent output)
 * lives in buffers allocated while needed. */
struct lg_conn {
    int fd;                 /* the WebSocket, -1 when none */
    int hfd;                /* side HTTP request (negotiate, legacy start/abort), -1 when none */
    uint8_t state;
    uint8_t flags;
    uint16_t src;           /* index into the source address list */
    uint32_t outstanding;   /* invocations sent and not yet answered */
    uint64_t t_start_us;    /* when this connection attempt began */
    uint64_t deadline_us;   /* connect / churn-hold / close deadline, 0 = none */
    uint64_t next_send_us;  /* fixed-rate echo schedule, 0 = none */
    uint64_t last_tx_us;    /* last time anything was sent (Core keepalive) */
    uint64_t last_id;       /* last invocation id used (ids are send times in microseconds) */
    uint64_t sent;          /* invocations sent by this connection */
    char *token;            /* connection token from negotiate, freed once the socket is open */
    struct lg_bytes wsin;   /* unparsed bytes from fd (partial frame) */
    struct lg_bytes msg;    /* partial application message (Core stream / fragmented frame) */
    struct lg_bytes wsout;  /* bytes the socket did not take yet */
    struct lg_bytes hin;    /* HTTP response being received on hfd */
};

enum lg_phase { PH_RAMP, PH_RAMP_SETTLE, PH_WAIT_GO1, PH_STEADY, PH_DRAIN, PH_WAIT_GO2, PH_CLOSE, PH_DONE };

struct lg_worker {
    const struct lg_config *cfg;
    uint32_t index;             /* worker number when several processes run */
    uint32_t nworkers;
    int ctl_fd;                 /* pipe to the parent, -1 when alone */
    int epfd;

    struct lg_conn *conns;
    uint32_t nsteady;           /* slots 0..nsteady-1 hold the connections kept for the run */
    uint32_t ncap;              /* plus churn slots nsteady..ncap-1 */
    uint32_t *churn_free;
    uint32_t nchurn_free;
    struct lg_wheel wheel;

    enum lg_phase phase;
    uint64_t t_phase_us;        /* when the current phase began */
    uint64_t t_start_us;
    uint64_t hard_deadline_us;
    uint32_t started;           /* steady connections begun */
    uint32_t pending;           /* connections being set up */
    uint32_t open;              /* connections open */
    uint32_t closing;           /* connections closing */
    uint32_t churn_active;
    uint64_t outstanding;       /* invocations without answer, all connections */
    uint64_t churn_started;
    uint64_t last_rx_us;
    uint32_t src_next;
    uint32_t errors_printed;
    int is_sender;              /* broadcast: this worker's slot 0 sends the rounds */

    struct sockaddr_in target;
    uint8_t *rbuf;              /* shared read buffer */
    size_t rbuf_size;
    uint8_t *wbuf;              /* shared frame-building buffer */
    size_t wbuf_size;
    char *payload;              /* the Echo argument */
    uint64_t rng;
    uint64_t key_secret;
    msgpack_zone zone;

    char *bcast_arg;            /* broadcast argument being built */
    volatile int *stop;         /* set by a signal handler: finish early, gracefully */
    /* Samples of --watch-pid processes at the four phase boundaries (lone process only;
     * with several processes the parent takes them). */
    struct lg_proc_sample watch[LG_MAX_WATCH][4];

    struct lg_stats st;
};

/* Phase boundaries at which memory and CPU are sampled. */
enum { LG_AT_START, LG_AT_STEADY, LG_AT_STEADY_END, LG_AT_CLOSED };

void lg_sample_watch(const struct lg_config *cfg, struct lg_proc_sample watch[][4], int boundary);

/* Runs a whole worker (all phases) and fills w->st. `ctl_fd` is -1 for a lone process. */
int lg_worker_run(struct lg_worker *w, const struct lg_config *cfg, uint32_t index,
                  uint32_t nworkers, uint32_t nconns, int ctl_fd, volatile int *stop);

/* Connection slots a worker needs beyond its steady connections (churn), and file descriptors
 * in all: used to check RLIMIT_NOFILE before starting. */
uint32_t lg_worker_churn_slots(const struct lg_config *cfg, uint32_t nworkers);
uint64_t lg_worker_fds_needed(const struct lg_config *cfg, uint32_t nworkers, uint32_t nconns);

/* ---- lg_conn.c ---- */
uint64_t lg_now_us(void);
void lg_conn_begin(struct lg_worker *w, uint32_t slot, uint64_t now);
void lg_conn_on_event(struct lg_worker *w, uint32_t slot, int is_http, uint32_t events, uint64_t now);
void lg_conn_on_timer(struct lg_worker *w, uint32_t slot, uint64_t now);
/* Starts a graceful close of an open connection (or drops one still being set up). */
void lg_conn_close(struct lg_worker *w, uint32_t slot, uint64_t now);
/* Drops the connection at once: sockets closed, buffers freed, timer cancelled. */
void lg_conn_release(struct lg_worker *w, uint32_t slot);
/* Sends one invocation of `target` with the given argument; 0 or -1 (connection gone). */
int lg_conn_invoke(struct lg_worker *w, uint32_t slot, const char *target, const char *arg,
                   size_t arg_len, uint64_t now);
/* The same with two string arguments (arg0, arg). */
int lg_conn_invoke2(struct lg_worker *w, uint32_t slot, const char *target, const char *arg0, const char *arg,
                    size_t arg_len, uint64_t now);
/* Re-arms the connection's timer for its earliest pending deadline. */
void lg_conn_rearm(struct lg_worker *w, uint32_t slot);

/* ---- lg_worker.c, called by lg_conn.c ---- */
void lg_worker_on_open(struct lg_worker *w, uint32_t slot, uint64_t now);
void lg_worker_on_completion(struct lg_worker *w, uint32_t slot, uint64_t now);
/* A fixed-rate connection's next send time has come. */
void lg_worker_on_send_due(struct lg_worker *w, uint32_t slot, uint64_t now);
void lg_worker_error(struct lg_worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LG_KEEPALIVE_US 15000000u   /* Core client ping interval, as the stock clients */
#define LG_MAX_QUEUED 65536u        /* fixed-rate sends are skipped above this much unsent */

#endif
