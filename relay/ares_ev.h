/* ares_ev.h - a c-ares channel driven by libev watchers.
 *
 * c-ares does the DNS protocol and tells, through its sock_state callback,
 * which sockets it has open and whether it wants to read or write them; this
 * module keeps one ev_io per such socket and one ev_timer that follows
 * ares_timeout() for retransmissions, so lookups run on the relay's loop and
 * never block it. The user (relay/resolver.c) starts queries on `channel`
 * and calls ares_ev_rearm after each.
 *
 * Ownership: struct ares_ev is embedded in its user; ares_ev_close frees the
 * channel, the socket watchers and stops the timer. */
#ifndef SR_ARES_EV_H
#define SR_ARES_EV_H

#include <ares.h>
#include <ev.h>
#include <stdbool.h>
#include <stddef.h>

#include "containers/list.h"

struct ares_ev {
    struct ev_loop *loop;
    ares_channel channel;
    bool ready;             /* the channel is initialised */
    struct list_node socks; /* every socket c-ares has open (struct ares_ev_sock) */
    ev_timer timer;         /* c-ares' next timeout */
};

/* Prepares a on loop, with no channel yet (ares_ev_close is then a no-op). */
void ares_ev_init(struct ares_ev *a, struct ev_loop *loop);
/* Initialises the channel with `options` (optmask as for ares_init_options;
 * the socket-state callback is set here) and, when servers is not NULL, the
 * servers ("IP[:PORT],..."). False with err filled; ares_ev_close still
 * applies. */
bool ares_ev_open(struct ares_ev *a, struct ares_options *options, int optmask, const char *servers, char *err,
                  size_t err_len);
/* Points the timer at c-ares' next timeout (after starting a query). */
void ares_ev_rearm(struct ares_ev *a);
/* Destroys the channel: c-ares calls every pending query back with
 * ARES_EDESTRUCTION, inside this call. */
void ares_ev_close(struct ares_ev *a);

#endif
