/* loop.h - the bottom of relay/: the event loop, its clock-driven timer wheel, and the lws context.
 *
 * struct loop is what every connection of the process runs on: our libev
 * (epoll) loop, which lws runs on through its libev plugin (or lws' own
 * poll() loop when the plugin is missing), the one lws context and vhost, the
 * timer wheel with its one OS-level timer, and the configuration and counters
 * every layer reads. Sessions, channels and links reach it through a pointer
 * they are given; nothing in relay/ calls up into relay.c. */
#ifndef SR_LOOP_H
#define SR_LOOP_H

#include <ev.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/timer_wheel.h"
#include "relay/config.h"
#include "relay/log.h"

/* The counters /metrics shows. */
struct relay_stats {
    uint64_t negotiations;
    uint64_t sessions_opened;
    uint64_t sessions_closed;
    uint64_t sessions_active;
    uint64_t backend_links_active;
    uint64_t backend_failures;
    uint64_t messages_to_backend;
    uint64_t messages_to_clients;
    uint64_t bytes_to_backend;
    uint64_t bytes_to_clients;
    uint64_t protocol_errors;
    uint64_t flow_control_pauses;
    uint64_t out_of_memory_closes;  /* connections closed because a message could not be queued */
    uint64_t legacy_sessions_active;
    uint64_t legacy_polls_held;       /* long polls held open now */
    uint64_t legacy_negotiations;
    uint64_t legacy_shared_translations; /* server invocations a legacy link took already translated (a fan-out's) */
    uint64_t core_polls_waiting;    /* Core long polls held open */
    uint64_t core_streams_open;     /* Core SSE streams */
    uint64_t core_stateful_away;    /* stateful-reconnect sessions whose client's WebSocket is gone */
    uint64_t core_stateful_resumes; /* stateful-reconnect clients back on a new WebSocket */
    uint64_t capture_files;         /* --capture: files started */
    uint64_t capture_skipped;       /* new connections not recorded: the directory is over --capture-max-dir */
    uint64_t capture_dropped;       /* captures given up: the writer's queue was full (or out of memory) */
    uint64_t capture_truncated;     /* files ended at --capture-max-file */
};

struct capture;

struct loop {
    const struct relay_config *cfg;
    struct lws_context *lws;
    struct lws_vhost *vhost;
    struct ev_loop *ev;               /* our libev loop (lws runs on it), or NULL: lws' poll() loop */
    void *foreign_loops[1];           /* lws keeps a pointer to this */
    struct timer_wheel wheel;
    ev_timer wheel_ev;                /* with libev: the wheel's OS timer */
    lws_sorted_usec_list_t wheel_sul; /* without: the same, as an lws scheduled callback */
    uint64_t wheel_due;               /* when the OS timer fires next (ms), UINT64_MAX if idle */
    bool destroying;                  /* inside lws_context_destroy: make no lws calls on wsis */
    struct log_limit too_large_log;   /* "a message over the size limit" lines, any connection */
    struct relay_stats stats;
    struct capture *capture;          /* --capture (relay/capture.h), or NULL: off */
    /* After a response that keeps its connection open (http.c, inside an lws callback): the
     * relay reads the connection's next head first (relay/next_head.h). NULL: lws reads it. */
    void (*next_request)(void *ctx, struct lws *wsi);
    void *next_request_ctx;
    /* After a whole response, before its transaction completes (http.c): true when the
     * request's body has not all arrived; the relay then reads and discards it first, under a
     * deadline (relay/request_body.h, request_body_drain). NULL: lws discards it. */
    bool (*drain_body)(void *ctx, struct lws *wsi);
    void *drain_body_ctx;
    /* A client WebSocket the relay has closed, shut down for writing (wsmsg.c): the relay reads
     * it to its end instead of lws (relay/linger.h). NULL: lws reads it. */
    bool (*linger_read)(void *ctx, struct lws *wsi);
    void *linger_read_ctx;
};

/* The loop a wsi of the relay's context runs on: the context's user object
 * (struct relay) starts with its struct loop (relay.c asserts it). */
static inline struct loop *loop_of_wsi(struct lws *wsi)
{
    return (struct loop *)lws_context_user(lws_get_context(wsi));
}

/* The retry and idle policy of every lws connection the relay makes or
 * accepts: no lws-level validity (WebSocket ping) timer. See loop.c. */
extern const lws_retry_bo_t loop_lws_retry_policy;

void loop_init(struct loop *loop, const struct relay_config *cfg);
/* Creates the lws context on our libev loop (falling back, with a warning,
 * to lws' poll() loop). info's options, protocols and the rest are the
 * caller's; info->user is set to user. False if no context could be made.
 * On libev (loop->ev set afterwards) lws does not listen: the caller
 * accepts on info->iface:info->port (relay/listener.h). */
bool loop_create_context(struct loop *loop, struct lws_context_creation_info *info, void *user);
/* Destroys the lws context (closing every connection through the
 * callbacks, with loop->destroying set) and the libev loop. */
void loop_destroy(struct loop *loop);

/* Runs the loop once (lws_service); false once lws says stop. */
bool loop_run_once(struct loop *loop);
/* From the loop's own thread: makes the current loop_run_once return. */
void loop_break(struct loop *loop);
/* From anywhere (a signal handler): wakes the loop (lws_cancel_service). */
void loop_wake(struct loop *loop);

/* The one way relay code arms a timer: schedules on the wheel and, if the
 * deadline is earlier than the OS timer's, moves the OS timer forward. */
void loop_timer_schedule(struct loop *loop, struct timer_entry *e, uint64_t expire_at);

#endif
