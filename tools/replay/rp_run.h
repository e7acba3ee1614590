/* rp_run.h - one replay of one fixture against one server (port of replay.mjs Replayer): the
 * client's actions sent in file order, each after every server event recorded before it has
 * arrived, placeholders filled from this run's bindings, the server's side compared with the
 * rules of docs/FIXTURES.md. Runs share a poll loop (rp_conn.h), so `load` plays many at once
 * and `ab` two. */
#ifndef RP_RUN_H
#define RP_RUN_H

#include <stdint.h>

#include "lg_hist.h"
#include "lg_http.h"
#include "rp_bind.h"
#include "rp_conn.h"
#include "rp_fixture.h"

struct rp_opts {
    struct lg_url target;
    char origin[96];         /* http://host:port */
    int timeout_ms;          /* per wait for a server event */
    double pace;             /* 0: as fast as the answers come; F: F times the recorded pauses */
    int grace_ms;            /* after the last event, for frames beyond the recording */
    int reference;           /* recorded against the real 2.x server: its listed differences masked */
    int verbose;
    int foreign_pushes;      /* load: hub calls that are not the next recorded item are left out */
    int keep_going;          /* ab: a different answer is noted (rp_run.diffs) and the run goes on */
    const char *authorization; /* sent where the recording has <authorization>; "Bearer T" also binds <accessToken> */
};

struct rp_stats {
    unsigned requests, upgrades, frames_sent, items_compared, frames_received;
    unsigned keepalives_ignored, after_close_ignored, foreign_ignored;
    unsigned polls_again, polls_joined; /* Core long polling: polls sent again / recorded ones served by the poll out */
};

struct rp_ws_state;
struct rp_req;

struct rp_run {
    struct rp_fixture fx;
    const struct rp_opts *o;
    struct rp_loop *loop;
    struct rp_bindings b;
    char *failure;              /* the first difference, NULL while none (keep_going: what stopped it) */
    char **diffs;               /* keep_going: every difference in order, the stopping one last */
    size_t ndiffs;
    struct rp_stats stats;
    size_t k;                   /* next event */
    int phase;
    int64_t wait_deadline;      /* for the server events before k */
    int64_t close_deadline;     /* a client close waiting for the server's side */
    struct rp_ws_state *close_wait;
    int64_t grace_deadline;
    int has_last_action;
    int64_t last_action_t, last_action_ms;
    int64_t last_action_us;     /* for latency */
    int64_t settle_until;       /* a held request's head start over the next action */
    size_t low;                 /* every server event before this one is done */
    struct rp_ws_state *ws;     /* per fixture stream */
    struct rp_req **reqs;
    size_t nreqs, capreqs;
    int64_t started_ms, ms;
    struct lg_hist *latency;    /* load: microseconds from a client action to each answer */
    cJSON *carry;               /* legacy long polling: messages beyond a recorded answer (rp_carry.c) */
    char *carry_cursor;         /* the live C after them */
    char *carry_token;          /* the connectionToken=... of the polls they belong to */
};

/* Parses the fixture text and prepares a run; -1 and *err when the fixture is unreadable. */
int rp_run_init(struct rp_run *r, const char *text, const char *name, const struct rp_opts *o,
                struct rp_loop *loop, char **err);
/* Moves the run on as far as it can; returns 1 when it has finished (r->failure says how). */
int rp_run_step(struct rp_run *r);
/* The time (rp_now_ms) by which the run wants rp_run_step again, -1 when only I/O matters. */
int64_t rp_run_wake(const struct rp_run *r);
void rp_run_free(struct rp_run *r);
/* A copy of text with this run's bound values put back as their placeholders (caller frees), so
 * that two runs' differences compare whatever ids each server minted. */
char *rp_run_unbind(const struct rp_run *r, const char *text);

/* Runs the given runs on their loop until all have finished. */
void rp_run_all(struct rp_run **runs, size_t n, struct rp_loop *loop);

#endif
