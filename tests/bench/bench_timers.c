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
 *              includes cascading and the ticks where nothing fires;
 *   cascades - entries moved down a level per callback;
 *   tick     - the same run() time / number of run() calls (this includes
 *              two CLOCK_MONOTONIC reads, ~50 ns), and the run() that moved
 *              the most entries (a whole slot cascades in one call), with
 *              its wall time.
 * Other times are the thread's CPU time, so other load on the machine does
 * not inflate them. Prints a markdown table. Only this file reads a clock. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "timer_wheel.h"

#define KEEPALIVE_MS 15000
#define JITTER_PERCENT 10
#define EXPIRE_MS 300000

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

    /* expire: 1 ms ticks for EXPIRE_MS; every keepalive fires and re-arms
     * itself. Long enough to cross a level-3 boundary (every 2^18 ms), where
     * every timer armed across it cascades at once. */
    size_t fired = 0, runs = 0;
    uint64_t end = b->now + EXPIRE_MS, worst_tick_ns = 0, worst_tick_work = 0;
    uint64_t cascaded_before = timer_wheel_cascaded(&b->wheel);
    t0 = clock_ns();
    while (b->now < end) {
        b->now++;
        uint64_t tick_start = wall_ns(), moved = timer_wheel_cascaded(&b->wheel);
        size_t n_fired = timer_wheel_run(&b->wheel, b->now);
        uint64_t tick_ns = wall_ns() - tick_start;
        uint64_t work = n_fired + timer_wheel_cascaded(&b->wheel) - moved;
        if (work > worst_tick_work) {
            worst_tick_work = work;
            worst_tick_ns = tick_ns;
        }
        fired += n_fired;
        runs++;
    }
    uint64_t expire_ns = clock_ns() - t0;
    uint64_t cascaded = timer_wheel_cascaded(&b->wheel) - cascaded_before;

    for (size_t i = 0; i < n; i++)
        timer_cancel(&b->conns[i].keepalive);
    if (timer_wheel_armed(&b->wheel) != 0 || !timer_wheel_validate(&b->wheel)) {
        fprintf(stderr, "wheel not empty after cancelling everything\n");
        exit(1);
    }
    printf("| %7zu | %8.1f | %8.1f | %8.1f | %8.1f | %9zu | %9.2f | %8.1f | %8" PRIu64 " | %8.1f |\n", n,
           per_op(schedule_ns, n * rounds), per_op(rearm_ns, rearms), per_op(cancel_ns, n * rounds),
           per_op(expire_ns, fired), fired, (double)cascaded / (double)(fired ? fired : 1), per_op(expire_ns, runs),
           worst_tick_work, (double)worst_tick_ns / 1000.0);
    free(b->conns);
    free(b->order);
    free(b);
}

int main(void)
{
    printf("15 s keepalives, 10 %% jitter; ns per operation (thread CPU time)\n\n");
    printf("|   armed | schedule |   re-arm |   cancel |   expire | callbacks | cascades/cb | ns/tick | worst tick: entries | µs |\n");
    printf("|--------:|---------:|---------:|---------:|---------:|----------:|------------:|--------:|---------:|---------:|\n");
    static const size_t sizes[] = { 1000, 10000, 100000, 1000000 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        run_size(sizes[i]);
    return 0;
}
