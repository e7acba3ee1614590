/* loop.c - the event loop, the wheel's one OS timer and the lws context (see loop.h). */
#include "relay/loop.h"

#include <string.h>

#include "relay/clock.h"
#include "relay/log.h"

/* lws arms a "validity" timer on every WebSocket (a ping after 300 s without
 * a pong, hang-up at 310 s) unless the policy says 0. Its timers live in one
 * sorted list, and a new one at now + 300 s sorts after every other
 * connection's: O(connections) per WebSocket opened. At 8,500 held clients
 * that walk over 17,000 wsi cost the relay ~6 ms of CPU per connect, 74 % of
 * its profile under churn. SignalR has its own keepalives and timeouts (the
 * relay's are on the timer wheel, the backend's are its own), so lws' are
 * switched off for the server side (the vhost) and the backend links. */
const lws_retry_bo_t loop_lws_retry_policy = {
    .secs_since_valid_ping = 0,
    .secs_since_valid_hangup = 0,
};

/* ----------------------------------------------------------- timer wheel */

/* The wheel's one OS-level timer. On lws' own poll() loop it is an lws
 * scheduled callback; on our libev loop it is an ev_timer, because lws 4.1
 * re-arms its libev timer only after socket activity (its idle watcher runs
 * after an I/O callback), so wheel deadlines would wait for the next event. */
static size_t wheel_fire(struct loop *loop)
{
    loop->wheel_due = UINT64_MAX;
    return timer_wheel_run(&loop->wheel, clock_now_ms());
}

static void wheel_rearm(struct loop *loop);

static void wheel_sul_tick(lws_sorted_usec_list_t *sul)
{
    struct loop *loop = lws_container_of(sul, struct loop, wheel_sul);
    wheel_fire(loop);
    wheel_rearm(loop);
}

static void wheel_ev_tick(struct ev_loop *ev, ev_timer *timer, int revents)
{
    (void)ev;
    (void)revents;
    struct loop *loop = timer->data;
    /* Our timers run outside any lws I/O callback, and what they do may
     * schedule an lws timer (lws_set_timeout(LWS_TO_KILL_ASYNC) to close a
     * backend request whose client left, a connect timeout): lws would not
     * look at it until some socket wakes it. Waking lws' own event pipe is
     * that socket activity, so its idle watcher re-arms its timer. */
    if (wheel_fire(loop) > 0)
        lws_cancel_service(loop->lws);
    wheel_rearm(loop);
}

/* Points the OS timer at the wheel's next expiry, if that is earlier than
 * where it points now. */
static void wheel_rearm(struct loop *loop)
{
    uint64_t next = timer_wheel_next_expiry(&loop->wheel);
    if (next == UINT64_MAX || next >= loop->wheel_due)
        return;
    uint64_t now = clock_now_ms();
    uint64_t delay_ms = next > now ? next - now : 0;
    loop->wheel_due = next;
    if (loop->ev) {
        ev_timer_stop(loop->ev, &loop->wheel_ev);
        ev_timer_set(&loop->wheel_ev, (double)delay_ms / 1000.0, 0.0);
        ev_timer_start(loop->ev, &loop->wheel_ev);
        return;
    }
    lws_sul_schedule(loop->lws, 0, &loop->wheel_sul, wheel_sul_tick, (lws_usec_t)delay_ms * LWS_US_PER_MS);
}

void loop_timer_schedule(struct loop *loop, struct timer_entry *e, uint64_t expire_at)
{
    timer_schedule(&loop->wheel, e, expire_at);
    if (expire_at < loop->wheel_due && loop->lws)
        wheel_rearm(loop);
}

/* ------------------------------------------------------------ event loop */

void loop_init(struct loop *loop, const struct relay_config *cfg)
{
    memset(loop, 0, sizeof *loop);
    loop->cfg = cfg;
    loop->wheel_due = UINT64_MAX;
    loop->too_large_log.interval_ms = 10000;
    timer_wheel_init(&loop->wheel, clock_now_ms());
}

/* The event loop. lws' default is poll() over every socket at each wake-up,
 * O(connections) per event: at 9,000 idle clients (18,000 sockets) the
 * relay spent more CPU waking up for keepalives than the backend spent on
 * them. With libev (epoll) each wake-up costs O(ready sockets). The loop is
 * ours (a "foreign" loop to lws) so that loop_break() can break it. */
static bool ev_create(struct loop *loop)
{
    loop->ev = ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOENV);
    loop->foreign_loops[0] = loop->ev;
    ev_timer_init(&loop->wheel_ev, wheel_ev_tick, 0.0, 0.0);
    loop->wheel_ev.data = loop;
    return loop->ev != NULL;
}

static void ev_destroy(struct loop *loop)
{
    if (loop->ev) {
        ev_timer_stop(loop->ev, &loop->wheel_ev);
        ev_loop_destroy(loop->ev);
    }
    loop->ev = NULL;
    loop->foreign_loops[0] = NULL;
}

/* On libev the relay accepts (relay/listener.c, which has the reasons): lws
 * gets a vhost that serves the sockets handed to it but listens on nothing. */
static bool create_on_libev(struct loop *loop, struct lws_context_creation_info *info)
{
    int port = info->port;
    info->options |= LWS_SERVER_OPTION_LIBEV;
    info->foreign_loops = loop->foreign_loops;
    info->port = CONTEXT_PORT_NO_LISTEN_SERVER;
    loop->lws = lws_create_context(info);
    info->port = port;
    if (loop->lws) {
        loop->vhost = lws_get_vhost_by_name(loop->lws, info->vhost_name);
        return true;
    }
    log_warn("relay: the libev event loop is not available (is libwebsockets-evlib-ev installed?); "
             "using poll(), which costs O(connections) per wake-up, with lws accepting (no back-off when "
             "descriptors run out, no --max-connections)");
    ev_destroy(loop);
    info->options &= ~(uint64_t)LWS_SERVER_OPTION_LIBEV;
    info->foreign_loops = NULL;
    return false;
}

bool loop_create_context(struct loop *loop, struct lws_context_creation_info *info, void *user)
{
    info->user = user;
    info->retry_and_idle_policy = &loop_lws_retry_policy;
    if (ev_create(loop) && create_on_libev(loop, info)) {
        log_info("relay: event loop: libev (epoll)");
        return true;
    }
    loop->lws = lws_create_context(info);
    if (!loop->lws)
        return false;
    loop->vhost = lws_get_vhost_by_name(loop->lws, info->vhost_name);
    log_info("relay: event loop: lws poll()");
    return true;
}

void loop_destroy(struct loop *loop)
{
    if (loop->lws) {
        lws_sul_cancel(&loop->wheel_sul);
        loop->destroying = true;
        lws_context_destroy(loop->lws); /* closes every connection through the callbacks */
        loop->lws = NULL;
    }
    ev_destroy(loop);
}

bool loop_run_once(struct loop *loop)
{
    return lws_service(loop->lws, 0) >= 0;
}

void loop_break(struct loop *loop)
{
    if (loop->ev)
        ev_break(loop->ev, EVBREAK_ALL);
}

void loop_wake(struct loop *loop)
{
    if (loop->lws)
        lws_cancel_service(loop->lws);
}
