/* bench_timers.c - cost of the timer wheel as the number of armed timers grows.
 *
 * The load is the relay's common case: every connection holds a 15 s
 * keepalive with 10 % jitter that is pushed out again whenever the
 * connection is active, and that re-arms itself when it fires. For 1k, 10k,
 * 100k and 1M connections it measures, in ns per operation:
 *   schedule - arming an unarmed timer (random memory order);
 *   re-arm   - moving an armed timer on activity (random connection);
 *   cancel   - disarming (random order), until the wheel is empty;
 *   expire   - 300 s of 1 ms ticks in which every timer fires and re-arms
 *              itself about 20 times: total run() time / callbacks, so it
 *              includes the ticks where nothing fires;
 *   skips/cb - entries runs looked at without firing them (far entries
 *              passed before their revolution), per callback;
 *   tick     - the same run() time / number of run() calls (this includes
 *              two CLOCK_MONOTONIC reads, ~50 ns);
 *   worst    - the run() that touched the most entries (fired + skipped),
 *              with its wall time: over those 300 s of 1 ms ticks, then over
 *              300 s more of 50 ms ticks (the relay does not tick every
 *              millisecond: it sleeps until next_expiry, and a busy loop
 *              may come back late), with their run() time per call.
 * Other times are the thread's CPU time, so other load on the machine does
 * not inflate them. Prints a markdown table. Only this file reads a clock. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "containers/timer_wheel.h"

#define KEEPALIVE_MS 15000
#define JITTER_PERCENT 10
#define EXPIRE_MS 300000
#define COARSE_TICK_MS 50

struct bench;

struct conn {
    struct timer_entry keepalive;
    struct bench *bench;
    size_t pings;
};

struct bench {
    struct timer_wheel wheel;
    struct conn *conns;
    size_t *order;
    size_t n;
    uint64_t now;
    uint64_t rng;
};

static uint64_t rng_next(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time, so that other load on a shared machine does not inflate totals. */
static uint64_t clock_ns(void) { return read_ns(CLOCK_THREAD_CPUTIME_ID); }

/* Wall time, cheap enough (vDSO) to read around every tick. */
static uint64_t wall_ns(void) { return read_ns(CLOCK_MONOTONIC); }

static uint64_t keepalive_at(uint64_t now, uint64_t *rng)
{
    return now + timer_jitter(KEEPALIVE_MS, (uint32_t)rng_next(rng), JITTER_PERCENT);
}

/* A keepalive fired: the relay would send a ping here, then wait again. */
static void on_keepalive(struct timer_entry *t)
{
    struct conn *c = list_container_of(t, struct conn, keepalive);
    struct bench *b = c->bench;
    c->pings++;
    timer_schedule(&b->wheel, t, keepalive_at(b->now, &b->rng));
}

static void shuffle(size_t *a, size_t n, uint64_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(rng_next(rng) % i);
        size_t tmp = a[i - 1];
        a[i - 1] = a[j];
        a[j] = tmp;
    }
}

static double per_op(uint64_t ns, size_t ops) { return ops ? (double)ns / (double)ops : 0.0; }

struct expire_stats {
    size_t fired, runs;
    uint64_t cpu_ns, skipped;
    uint64_t worst_entries, worst_ns; /* the run that touched the most entries */
};

/* Ticks every `tick_ms` for `duration_ms`; every keepalive fires and re-arms. */
static struct expire_stats expire_for(struct bench *b, uint64_t tick_ms, uint64_t duration_ms)
{
    struct expire_stats st = { 0 };
    uint64_t end = b->now + duration_ms, skipped_before = timer_wheel_skipped(&b->wheel);
    uint64_t t0 = clock_ns();
    while (b->now < end) {
        b->now += tick_ms;
        uint64_t tick_start = wall_ns(), skipped = timer_wheel_skipped(&b->wheel);
        size_t n_fired = timer_wheel_run(&b->wheel, b->now);
        uint64_t tick_ns = wall_ns() - tick_start;
        uint64_t touched = n_fired + timer_wheel_skipped(&b->wheel) - skipped;
        if (touched > st.worst_entries) {
            st.worst_entries = touched;
            st.worst_ns = tick_ns;
        }
        st.fired += n_fired;
        st.runs++;
    }
    st.cpu_ns = clock_ns() - t0;
    st.skipped = timer_wheel_skipped(&b->wheel) - skipped_before;
    return st;
}

static void run_size(size_t n)
{
    struct bench *b = malloc(sizeof *b);
    if (!b)
        exit(1);
    b->n = n;
    b->now = 1700000000000ull;
    b->rng = 12345 + n;
    b->conns = calloc(n, sizeof *b->conns);
    b->order = malloc(n * sizeof *b->order);
    if (!b->conns || !b->order)
        exit(1);
    timer_wheel_init(&b->wheel, b->now);
    for (size_t i = 0; i < n; i++) {
        timer_entry_init(&b->conns[i].keepalive, on_keepalive);
        b->conns[i].bench = b;
        b->order[i] = i;
    }
    shuffle(b->order, n, &b->rng);

    /* schedule and cancel: arm every connection's keepalive (connections
     * arriving in random memory order over one keepalive period), then close them all
     * in another random order; repeated for at least 1M operations each. */
    size_t rounds = n >= 1000000 ? 1 : 1000000 / n;
    uint64_t schedule_ns = 0, cancel_ns = 0;
    for (size_t round = 0; round < rounds; round++) {
        uint64_t t0 = clock_ns();
        for (size_t i = 0; i < n; i++)
            timer_schedule(&b->wheel, &b->conns[b->order[i]].keepalive,
                           keepalive_at(b->now + i * KEEPALIVE_MS / n, &b->rng));
        schedule_ns += clock_ns() - t0;
        shuffle(b->order, n, &b->rng);
        t0 = clock_ns();
        for (size_t i = 0; i < n; i++)
            timer_cancel(&b->conns[b->order[i]].keepalive);
        cancel_ns += clock_ns() - t0;
    }
    for (size_t i = 0; i < n; i++)
        timer_schedule(&b->wheel, &b->conns[b->order[i]].keepalive, keepalive_at(b->now + i * KEEPALIVE_MS / n, &b->rng));

    /* re-arm: activity on random connections (at least 1M operations). */
    size_t rearms = n > 1000000 ? n : 1000000;
    uint64_t t0 = clock_ns();
    for (size_t i = 0; i < rearms; i++) {
        size_t k = (size_t)(rng_next(&b->rng) % n);
        timer_schedule(&b->wheel, &b->conns[k].keepalive, keepalive_at(b->now + i * KEEPALIVE_MS / rearms, &b->rng));
    }
    uint64_t rearm_ns = clock_ns() - t0;

    /* expire: 1 ms ticks, then 50 ms ticks, EXPIRE_MS each. Each phase is
     * longer than 2^18 ms, the period at which a hierarchical wheel with
     * 64-slot levels cascades every keepalive at once, so a burst of that
     * kind would show in the worst run. */
    struct expire_stats fine = expire_for(b, 1, EXPIRE_MS);
    struct expire_stats coarse = expire_for(b, COARSE_TICK_MS, EXPIRE_MS);

    for (size_t i = 0; i < n; i++)
        timer_cancel(&b->conns[i].keepalive);
    if (timer_wheel_armed(&b->wheel) != 0 || !timer_wheel_validate(&b->wheel)) {
        fprintf(stderr, "wheel not empty after cancelling everything\n");
        exit(1);
    }
    printf("| %7zu | %8.1f | %8.1f | %8.1f | %8.1f | %9zu | %8.2f | %7.1f | %7" PRIu64 " | %8.1f | %7.1f | %7" PRIu64
           " | %8.1f |\n",
           n, per_op(schedule_ns, n * rounds), per_op(rearm_ns, rearms), per_op(cancel_ns, n * rounds),
           per_op(fine.cpu_ns, fine.fired), fine.fired, (double)fine.skipped / (double)(fine.fired ? fine.fired : 1),
           per_op(fine.cpu_ns, fine.runs), fine.worst_entries, (double)fine.worst_ns / 1000.0,
           per_op(coarse.cpu_ns, coarse.runs) / 1000.0, coarse.worst_entries, (double)coarse.worst_ns / 1000.0);
    free(b->conns);
    free(b->order);
    free(b);
}

int main(int argc, char **argv)
{
    /* --smoke: the two smallest sizes only, so the test command keeps this program working. */
    size_t rows = argc > 1 && strcmp(argv[1], "--smoke") == 0 ? 2 : 4;
    printf("15 s keepalives, 10 %% jitter; ns per operation (thread CPU time)\n\n");
    printf("|   armed | schedule |   re-arm |   cancel |   expire | callbacks | skips/cb | ns/tick "
           "| worst 1 ms run: entries | µs | 50 ms ticks: µs/run | worst 50 ms run: entries | µs |\n");
    printf("|--------:|---------:|---------:|---------:|---------:|----------:|---------:|--------:"
           "|--------:|---------:|-------:|--------:|---------:|\n");
    static const size_t sizes[] = { 1000, 10000, 100000, 1000000 };
    for (size_t i = 0; i < rows; i++)
        run_size(sizes[i]);
    return 0;
}
