/* test_timer_wheel.c - the timer wheel against a naive model, plus the
 * re-entrancy, next-expiry, extreme-time and jitter cases one by one.
 *
 * The model is an array of deadlines. Its rule is the contract in
 * timer_wheel.h: an entry fires in the first run whose `now` (never less than
 * the previous run's) is >= its deadline, exactly once, and an entry armed or
 * re-armed by a callback is not part of the run that called it. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "containers/timer_wheel.h"

static uint64_t rng_next(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t *state, uint64_t bound) { return bound ? rng_next(state) % bound : 0; }

/* Randomised test against the model ----------------------------------------- */

#define SIM_ENTRIES 512

struct sim;

struct sim_entry {
    struct timer_entry timer;
    struct sim *sim;
    unsigned id;
};

struct sim {
    struct timer_wheel wheel;
    struct sim_entry entries[SIM_ENTRIES];
    /* The model. */
    bool armed[SIM_ENTRIES];
    uint64_t deadline[SIM_ENTRIES];
    uint64_t key[SIM_ENTRIES];  /* max(deadline, wheel time when armed): firing order */
    bool far[SIM_ENTRIES];      /* armed a wheel revolution or more ahead */
    uint64_t model_now;
    /* The run in progress: which entries it must still fire. */
    bool expected[SIM_ENTRIES];
    size_t expected_left;
    bool in_run;
    uint64_t run_now;
    uint64_t last_fired_key;
    size_t fired;
    /* Coverage counters, so the test can show it exercised what it claims. */
    size_t fires, reentrant_ops, far_fires, huge_jumps, rewinds;
    bool quiet; /* callbacks only record */
    uint64_t rng;
};

static void sim_schedule(struct sim *s, unsigned id, uint64_t at)
{
    timer_schedule(&s->wheel, &s->entries[id].timer, at);
    s->armed[id] = true;
    s->deadline[id] = at;
    uint64_t clock = s->in_run ? s->run_now : s->model_now; /* the wheel's time now */
    s->key[id] = at > clock ? at : clock;
    s->far[id] = at > clock && at - clock >= TIMER_WHEEL_SLOTS;
    if (s->expected[id]) { /* re-armed from a callback: no longer due in this run */
        s->expected[id] = false;
        s->expected_left--;
    }
}

static void sim_cancel(struct sim *s, unsigned id)
{
    timer_cancel(&s->entries[id].timer);
    s->armed[id] = false;
    if (s->expected[id]) {
        s->expected[id] = false;
        s->expected_left--;
    }
}

/* A deadline spread the way the relay's timers are: mostly near, some far,
 * some beyond the top level, some in the past. */
static uint64_t sim_pick_deadline(struct sim *s)
{
    uint64_t now = s->model_now, r = rng_below(&s->rng, 100);
    if (r < 30)
        return now + rng_below(&s->rng, 64);
    if (r < 60)
        return now + timer_jitter(15000, (uint32_t)rng_next(&s->rng), 10) + rng_below(&s->rng, 5000);
    if (r < 75)
        return now + rng_below(&s->rng, (uint64_t)1 << 30);
    if (r < 85)
        return now + ((uint64_t)1 << 35) + rng_below(&s->rng, (uint64_t)1 << 42);
    if (r < 90)
        return now;
    if (r < 95)
        return now - rng_below(&s->rng, 10000);
    return UINT64_MAX - 1 - rng_below(&s->rng, (uint64_t)1 << 40);
}

static uint64_t sim_pick_now(struct sim *s)
{
    uint64_t now = s->model_now, r = rng_below(&s->rng, 100);
    if (r < 40)
        return now + rng_below(&s->rng, 4);
    if (r < 70)
        return now + rng_below(&s->rng, 100);
    if (r < 90)
        return now + rng_below(&s->rng, 30000);
    if (r < 95)
        return now + rng_below(&s->rng, (uint64_t)1 << 26);
    if (r < 98) {
        s->huge_jumps++;
        return now + ((uint64_t)1 << 36) + rng_below(&s->rng, (uint64_t)1 << 40);
    }
    s->rewinds++;
    return now - rng_below(&s->rng, 1000);
}

static void sim_fire(struct timer_entry *t)
{
    struct sim_entry *se = list_container_of(t, struct sim_entry, timer);
    struct sim *s = se->sim;
    unsigned id = se->id;

    CHECK(s->in_run);
    CHECK(!timer_is_armed(t));
    if (!s->expected[id]) {
        fprintf(stderr, "entry %u (deadline %llu) fired at %llu but was not due in this run\n", id,
                (unsigned long long)s->deadline[id], (unsigned long long)s->run_now);
        CHECK(s->expected[id]);
        return;
    }
    CHECK(s->deadline[id] <= s->run_now);
    CHECK(s->key[id] >= s->last_fired_key); /* deadline order */
    s->last_fired_key = s->key[id];
    s->expected[id] = false;
    s->expected_left--;
    s->armed[id] = false;
    s->fired++;
    s->fires++;
    if (s->far[id])
        s->far_fires++;

    if (s->quiet)
        return;
    /* Sometimes act on the wheel from inside the callback. */
    unsigned other = (unsigned)rng_below(&s->rng, SIM_ENTRIES);
    switch (rng_below(&s->rng, 10)) {
    case 0: /* re-arm self, possibly for the current time or the past */
        sim_schedule(s, id, s->run_now - 2 + rng_below(&s->rng, 40));
        s->reentrant_ops++;
        break;
    case 1: /* cancel another (maybe one collected but not yet called) */
        sim_cancel(s, other);
        s->reentrant_ops++;
        break;
    case 2: /* re-arm another, maybe for now or earlier: must wait for the next run */
        sim_schedule(s, other, s->run_now - rng_below(&s->rng, 3) + rng_below(&s->rng, 100));
        s->reentrant_ops++;
        break;
    default:
        break;
    }
}

static uint64_t sim_earliest_key(const struct sim *s)
{
    uint64_t earliest = UINT64_MAX;
    for (unsigned i = 0; i < SIM_ENTRIES; i++)
        if (s->armed[i] && s->key[i] < earliest)
            earliest = s->key[i];
    return earliest;
}

static void sim_run_at(struct sim *s, uint64_t now)
{
    uint64_t effective = now > s->model_now ? now : s->model_now;

    s->expected_left = 0;
    for (unsigned i = 0; i < SIM_ENTRIES; i++) {
        s->expected[i] = s->armed[i] && s->deadline[i] <= effective;
        s->expected_left += s->expected[i];
    }
    s->in_run = true;
    s->run_now = effective;
    s->last_fired_key = 0;
    s->fired = 0;
    size_t returned = timer_wheel_run(&s->wheel, now);
    s->in_run = false;
    s->model_now = effective;

    CHECK_EQ_INT(returned, s->fired);
    if (s->expected_left) {
        fprintf(stderr, "%zu entries due at %llu did not fire\n", s->expected_left, (unsigned long long)effective);
        CHECK_EQ_INT(s->expected_left, 0);
        for (unsigned i = 0; i < SIM_ENTRIES; i++)
            s->expected[i] = false;
    }

    size_t armed = 0;
    for (unsigned i = 0; i < SIM_ENTRIES; i++) {
        armed += s->armed[i];
        if (timer_is_armed(&s->entries[i].timer) != s->armed[i]) {
            fprintf(stderr, "entry %u armed=%d, model says %d\n", i, timer_is_armed(&s->entries[i].timer),
                    s->armed[i]);
            CHECK(false);
        }
    }
    CHECK_EQ_INT(timer_wheel_armed(&s->wheel), armed);
    CHECK(timer_wheel_validate(&s->wheel));

    uint64_t next = timer_wheel_next_expiry(&s->wheel);
    uint64_t earliest = sim_earliest_key(s);
    CHECK(next <= earliest);                 /* sleeping until `next` is never late */
    CHECK(next >= s->model_now);             /* and never asks for a time gone by */
    CHECK((next == UINT64_MAX) == (armed == 0));
    if (earliest != UINT64_MAX && earliest - s->model_now < TIMER_WHEEL_SLOTS)
        CHECK_EQ_INT(next, earliest);        /* within one revolution it is exact */
}

static void sim_run(struct sim *s) { sim_run_at(s, sim_pick_now(s)); }

static void test_against_model(void)
{
    static struct sim s; /* ~1.1 MiB (the wheel's slot heads, 512 entries, the model): keep off the stack */
    memset(&s, 0, sizeof s);
    s.rng = 20240611;
    s.model_now = 1700000000000ull + rng_below(&s.rng, 1000000);
    timer_wheel_init(&s.wheel, s.model_now);
    for (unsigned i = 0; i < SIM_ENTRIES; i++) {
        s.entries[i].sim = &s;
        s.entries[i].id = i;
        timer_entry_init(&s.entries[i].timer, sim_fire);
    }

    const int failures_before = check_failures;
    for (long op = 0; op < 200000 && check_failures == failures_before; op++) {
        unsigned id = (unsigned)rng_below(&s.rng, SIM_ENTRIES);
        uint64_t r = rng_below(&s.rng, 100);
        if (r < 35) {
            sim_schedule(&s, id, sim_pick_deadline(&s));
        } else if (r < 50) {
            sim_cancel(&s, id);
        } else if (r < 75) {
            /* activity on a connection: push its keepalive out again */
            if (s.armed[id])
                sim_schedule(&s, id, s.model_now + timer_jitter(15000, (uint32_t)rng_next(&s.rng), 10));
        } else {
            sim_run(&s);
        }
    }
    /* Drain: one jump to the last millisecond fires everything that is left
     * (callbacks stop re-arming, which would wrap around the clock). */
    s.quiet = true;
    sim_run_at(&s, UINT64_MAX);
    CHECK_EQ_INT(timer_wheel_armed(&s.wheel), 0);
    CHECK_EQ_INT(timer_wheel_next_expiry(&s.wheel), UINT64_MAX);
    printf("model: %zu fires, %zu re-entrant ops, %zu far fires, %zu huge jumps, %zu rewinds, %llu far entries skipped\n",
           s.fires, s.reentrant_ops, s.far_fires, s.huge_jumps, s.rewinds,
           (unsigned long long)timer_wheel_skipped(&s.wheel));
    CHECK(s.fires > 10000);
    CHECK(s.reentrant_ops > 1000);
    CHECK(s.far_fires > 0);
    CHECK(timer_wheel_skipped(&s.wheel) > 0);
    CHECK(s.huge_jumps > 100);
    CHECK(s.rewinds > 100);
}

/* One-by-one cases ----------------------------------------------------------- */

/* An entry that records its firings and can be told to do one thing to the
 * wheel from its callback. */
struct probe {
    struct timer_entry timer;
    struct timer_wheel *wheel;
    const char *name;
    int fired;
    uint64_t *clock;       /* the test's current `now`, to record when it fired */
    uint64_t fired_at;
    /* what the callback does */
    struct probe *cancel_other;
    struct probe *move_other;
    uint64_t move_other_to;
    bool rearm_self;
    uint64_t rearm_delay;
    struct probe *schedule_other;
    uint64_t schedule_other_at;
    bool run_nested;
    size_t nested_result;
};

static void probe_fire(struct timer_entry *t)
{
    struct probe *p = list_container_of(t, struct probe, timer);
    p->fired++;
    p->fired_at = p->clock ? *p->clock : 0;
    if (p->cancel_other)
        timer_cancel(&p->cancel_other->timer);
    if (p->move_other)
        timer_schedule(p->wheel, &p->move_other->timer, p->move_other_to);
    if (p->rearm_self)
        timer_schedule(p->wheel, &p->timer, p->fired_at + p->rearm_delay);
    if (p->schedule_other)
        timer_schedule(p->wheel, &p->schedule_other->timer, p->schedule_other_at);
    if (p->run_nested)
        p->nested_result = timer_wheel_run(p->wheel, UINT64_MAX);
}

static void probe_init(struct probe *p, struct timer_wheel *w, uint64_t *clock)
{
    memset(p, 0, sizeof *p);
    p->wheel = w;
    p->clock = clock;
    timer_entry_init(&p->timer, probe_fire);
}

static size_t run_at(struct timer_wheel *w, uint64_t *clock, uint64_t now)
{
    *clock = now;
    size_t n = timer_wheel_run(w, now);
    CHECK(timer_wheel_validate(w));
    return n;
}

static void test_basic_and_counts(void)
{
    static struct timer_wheel w;
    uint64_t clock = 1000;
    struct probe a, b;
    timer_wheel_init(&w, clock);
    probe_init(&a, &w, &clock);
    probe_init(&b, &w, &clock);

    CHECK_EQ_INT(timer_wheel_armed(&w), 0);
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), UINT64_MAX);
    timer_cancel(&a.timer); /* unarmed: no effect */
    CHECK_EQ_INT(timer_wheel_armed(&w), 0);
    CHECK(!timer_is_armed(&a.timer));

    timer_schedule(&w, &a.timer, 1010);
    timer_schedule(&w, &b.timer, 1005);
    CHECK(timer_is_armed(&a.timer));
    CHECK_EQ_INT(timer_wheel_armed(&w), 2);
    timer_schedule(&w, &b.timer, 1020); /* re-arm moves, does not add */
    CHECK_EQ_INT(timer_wheel_armed(&w), 2);
    CHECK(timer_wheel_validate(&w));
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), 1010);

    CHECK_EQ_INT(run_at(&w, &clock, 1009), 0);
    CHECK_EQ_INT(run_at(&w, &clock, 1010), 1);
    CHECK_EQ_INT(a.fired, 1);
    CHECK_EQ_INT(a.fired_at, 1010);
    CHECK(!timer_is_armed(&a.timer));
    CHECK_EQ_INT(timer_wheel_armed(&w), 1);
    CHECK_EQ_INT(run_at(&w, &clock, 1010), 0); /* never twice */

    timer_cancel(&b.timer);
    timer_cancel(&b.timer);
    CHECK_EQ_INT(timer_wheel_armed(&w), 0);
    CHECK_EQ_INT(run_at(&w, &clock, 5000), 0);
    CHECK_EQ_INT(b.fired, 0);

    /* Scheduled in the past: due on the next run, even one that does not
     * advance the clock; a clock step back behaves like no step. */
    timer_schedule(&w, &a.timer, 10);
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), 5000);
    CHECK_EQ_INT(run_at(&w, &clock, 4000), 1);
    CHECK_EQ_INT(a.fired, 2);
    timer_schedule(&w, &a.timer, 5001);
    CHECK_EQ_INT(run_at(&w, &clock, 4000), 0);
    CHECK_EQ_INT(run_at(&w, &clock, 5001), 1);

    /* Moving an entry from one wheel to another keeps both counts right. */
    static struct timer_wheel w2;
    timer_wheel_init(&w2, 0);
    timer_schedule(&w, &a.timer, 6000);
    timer_schedule(&w2, &a.timer, 6000);
    CHECK_EQ_INT(timer_wheel_armed(&w), 0);
    CHECK_EQ_INT(timer_wheel_armed(&w2), 1);
    CHECK(timer_wheel_validate(&w));
    CHECK(timer_wheel_validate(&w2));
    CHECK_EQ_INT(timer_wheel_run(&w, 7000), 0);
    CHECK_EQ_INT(timer_wheel_run(&w2, 7000), 1);
}

static void test_callback_cancels_other_due_in_same_run(void)
{
    static struct timer_wheel w;
    uint64_t clock = 0;
    struct probe a, b;
    timer_wheel_init(&w, clock);
    probe_init(&a, &w, &clock);
    probe_init(&b, &w, &clock);
    a.cancel_other = &b;
    timer_schedule(&w, &a.timer, 5000); /* both reached by one run over many slots */
    timer_schedule(&w, &b.timer, 5001);
    CHECK_EQ_INT(run_at(&w, &clock, 6000), 1);
    CHECK_EQ_INT(a.fired, 1);
    CHECK_EQ_INT(b.fired, 0);
    CHECK(!timer_is_armed(&b.timer));
    CHECK_EQ_INT(timer_wheel_armed(&w), 0);
}

static void test_callback_rearms_self(void)
{
    static struct timer_wheel w;
    uint64_t clock = 100;
    struct probe a;
    timer_wheel_init(&w, clock);
    probe_init(&a, &w, &clock);
    a.rearm_self = true;
    a.rearm_delay = 15;
    timer_schedule(&w, &a.timer, 115);
    size_t total = 0;
    for (uint64_t t = 101; t <= 400; t++) {
        size_t n = run_at(&w, &clock, t);
        total += n;
        CHECK_EQ_INT(n, (t - 100) % 15 == 0 ? 1 : 0);
    }
    CHECK_EQ_INT(total, 20);
    CHECK(timer_is_armed(&a.timer));
    CHECK_EQ_INT(a.timer.expire_at, 415);

    /* Re-arming for the current time does not loop: once per run. */
    a.rearm_delay = 0;
    CHECK_EQ_INT(run_at(&w, &clock, 415), 1);
    CHECK_EQ_INT(run_at(&w, &clock, 415), 1);
    CHECK_EQ_INT(run_at(&w, &clock, 416), 1);
    CHECK_EQ_INT(a.fired, 23);
    timer_cancel(&a.timer);
}

static void test_callback_moves_other_due_in_same_run(void)
{
    static struct timer_wheel w;
    uint64_t clock = 0;
    struct probe a, b;
    timer_wheel_init(&w, clock);
    probe_init(&a, &w, &clock);
    probe_init(&b, &w, &clock);
    a.move_other = &b;
    a.move_other_to = 100;
    timer_schedule(&w, &a.timer, 5);
    timer_schedule(&w, &b.timer, 6);
    CHECK_EQ_INT(run_at(&w, &clock, 10), 1);
    CHECK_EQ_INT(b.fired, 0);
    CHECK(timer_is_armed(&b.timer));
    CHECK(timer_wheel_next_expiry(&w) <= 100);
    CHECK_EQ_INT(run_at(&w, &clock, 99), 0);
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), 100); /* within one revolution: exact */
    CHECK_EQ_INT(run_at(&w, &clock, 100), 1);
    CHECK_EQ_INT(b.fired, 1);
    CHECK_EQ_INT(b.fired_at, 100);
}

static void test_callback_schedules_for_now(void)
{
    static struct timer_wheel w;
    uint64_t clock = 0;
    struct probe a, b, c;
    timer_wheel_init(&w, clock);
    probe_init(&a, &w, &clock);
    probe_init(&b, &w, &clock);
    probe_init(&c, &w, &clock);
    a.schedule_other = &b;
    a.schedule_other_at = 20; /* exactly the run's now */
    a.move_other = &c;
    a.move_other_to = 3; /* in the past */
    timer_schedule(&w, &a.timer, 7);
    CHECK_EQ_INT(run_at(&w, &clock, 20), 1);
    CHECK_EQ_INT(b.fired + c.fired, 0);
    CHECK_EQ_INT(timer_wheel_armed(&w), 2);
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), 20);
    CHECK_EQ_INT(run_at(&w, &clock, 20), 2);
    CHECK_EQ_INT(b.fired, 1);
    CHECK_EQ_INT(c.fired, 1);
}

static void free_probe(struct timer_entry *t)
{
    free(list_container_of(t, struct probe, timer));
}

static void test_nested_run_and_self_free(void)
{
    static struct timer_wheel w;
    uint64_t clock = 0;
    struct probe a;
    timer_wheel_init(&w, clock);
    probe_init(&a, &w, &clock);
    a.run_nested = true;
    a.nested_result = 99;
    timer_schedule(&w, &a.timer, 1);
    CHECK_EQ_INT(run_at(&w, &clock, 1), 1);
    CHECK_EQ_INT(a.nested_result, 0);

    /* A callback may free the memory its entry lives in (ASan checks). */
    struct probe *heap = malloc(sizeof *heap);
    CHECK(heap != NULL);
    if (!heap)
        return;
    probe_init(heap, &w, &clock);
    heap->timer.cb = free_probe;
    timer_schedule(&w, &heap->timer, 2);
    CHECK_EQ_INT(run_at(&w, &clock, 2), 1);
}

/* Sleeping exactly until next_expiry and running then fires every entry at
 * its own deadline, with few wake-ups that fire nothing. */
static void test_sleep_until_next_expiry(void)
{
    enum { COUNT = 2000 };
    static struct timer_wheel w;
    static struct probe p[COUNT];
    uint64_t clock = 123456789, rng = 7;
    timer_wheel_init(&w, clock);
    for (unsigned i = 0; i < COUNT; i++) {
        probe_init(&p[i], &w, &clock);
        uint64_t r = rng_below(&rng, 4);
        uint64_t delay = r == 0   ? rng_below(&rng, 64)
                         : r == 1 ? rng_below(&rng, 20000)
                         : r == 2 ? rng_below(&rng, 100000000)
                                  : ((uint64_t)1 << 36) + rng_below(&rng, (uint64_t)1 << 38);
        timer_schedule(&w, &p[i].timer, clock + delay);
    }
    size_t wakeups = 0, idle = 0, fired = 0, idle_in_a_row = 0, most_idle_in_a_row = 0;
    while (timer_wheel_armed(&w)) {
        uint64_t next = timer_wheel_next_expiry(&w);
        CHECK(next >= clock);
        size_t n = run_at(&w, &clock, next);
        wakeups++;
        idle += n == 0;
        fired += n;
        idle_in_a_row = n == 0 ? idle_in_a_row + 1 : 0;
        if (idle_in_a_row > most_idle_in_a_row)
            most_idle_in_a_row = idle_in_a_row;
        if (wakeups > 2 * COUNT + 1)
            break;
    }
    CHECK_EQ_INT(fired, COUNT);
    for (unsigned i = 0; i < COUNT; i++)
        CHECK_EQ_INT(p[i].fired_at, p[i].timer.expire_at);
    /* An idle wake-up happens only when every entry is a revolution or more
     * away and the earliest far deadline the wheel knew has fired; its run
     * passes every slot and measures that deadline again. With nothing
     * cancelled, the next wake-up therefore fires: never two idle in a row. */
    CHECK(most_idle_in_a_row <= 1);
    printf("sleep loop: %zu entries, %zu wake-ups, %zu without a firing\n", fired, wakeups, idle);
}

/* Deadlines exactly around one revolution ahead: the one at now + 2^16 ms
 * shares now's slot but must not fire on the next run. Sleeping until
 * next_expiry fires each at its own time. */
static void test_revolution_boundaries(void)
{
    static struct timer_wheel w;
    const uint64_t revolution = TIMER_WHEEL_SLOTS;
    uint64_t clock = 3 * revolution + 500;
    const uint64_t start = clock;
    struct probe p[5];
    const uint64_t delay[5] = { revolution - 1, revolution, revolution + 1, 2 * revolution, 0 };
    timer_wheel_init(&w, clock);
    for (unsigned i = 0; i < 5; i++) {
        probe_init(&p[i], &w, &clock);
        timer_schedule(&w, &p[i].timer, start + delay[i]);
    }
    CHECK(timer_wheel_validate(&w));
    CHECK_EQ_INT(run_at(&w, &clock, start), 1); /* only the one due now */
    CHECK_EQ_INT(p[4].fired, 1);
    CHECK_EQ_INT(run_at(&w, &clock, start + 1), 0);
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), start + revolution - 1);
    size_t fired = 0;
    for (unsigned wakeups = 0; timer_wheel_armed(&w) && wakeups < 10; wakeups++)
        fired += run_at(&w, &clock, timer_wheel_next_expiry(&w));
    CHECK_EQ_INT(fired, 4);
    for (unsigned i = 0; i < 4; i++) {
        CHECK_EQ_INT(p[i].fired, 1);
        CHECK_EQ_INT(p[i].fired_at, start + delay[i]);
    }
}

/* Entries due in the same slot but different revolutions share its list:
 * cancelling and re-arming either kind keeps next_expiry exact. */
static void test_near_and_far_in_one_slot(void)
{
    static struct timer_wheel w;
    uint64_t clock = 0;
    const uint64_t revolution = TIMER_WHEEL_SLOTS;
    struct probe far, near1, near2;
    timer_wheel_init(&w, clock);
    probe_init(&far, &w, &clock);
    probe_init(&near1, &w, &clock);
    probe_init(&near2, &w, &clock);
    timer_schedule(&w, &near1.timer, 10);
    timer_schedule(&w, &far.timer, 3 * revolution + 10);
    timer_schedule(&w, &near2.timer, 10);
    CHECK(timer_wheel_validate(&w));
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), 10);
    timer_cancel(&near2.timer); /* the last near one: another is left */
    CHECK(timer_wheel_validate(&w));
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), 10);
    timer_cancel(&near1.timer); /* no near entry left, only the far one */
    CHECK(timer_wheel_validate(&w));
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), 3 * revolution + 10);
    timer_schedule(&w, &near1.timer, 10);
    timer_cancel(&far.timer); /* a far one goes, the near one stays */
    CHECK(timer_wheel_validate(&w));
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), 10);
    timer_schedule(&w, &far.timer, revolution + 10);
    CHECK_EQ_INT(run_at(&w, &clock, 10), 1);
    CHECK_EQ_INT(near1.fired, 1);
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), revolution + 10);
    CHECK_EQ_INT(run_at(&w, &clock, revolution + 9), 0);
    CHECK_EQ_INT(run_at(&w, &clock, revolution + 10), 1);
    CHECK_EQ_INT(far.fired, 1);
    CHECK_EQ_INT(timer_wheel_armed(&w), 0);
}

/* A deadline many revolutions ahead stays in its slot while the clock passes
 * it again and again, is looked at once per pass (the wheel's skipped count),
 * and fires exactly once, in the first run at or after it: with 1 ms ticks,
 * with 50 ms ticks that step over it, and when sleeping until next_expiry.
 * A self-re-arming 15 s keepalive keeps the wheel busy; it is never far, so
 * every skipped look is at the far entry. */
static void check_beyond_one_revolution(uint64_t tick)
{
    enum { REVOLUTIONS = 10 };
    static struct timer_wheel w;
    uint64_t clock = 7000000 + 17, start = clock;
    struct probe far, keepalive;
    timer_wheel_init(&w, clock);
    probe_init(&far, &w, &clock);
    probe_init(&keepalive, &w, &clock);
    keepalive.rearm_self = true;
    keepalive.rearm_delay = 15000;
    uint64_t due = start + REVOLUTIONS * (uint64_t)TIMER_WHEEL_SLOTS + 123;
    timer_schedule(&w, &far.timer, due);
    timer_schedule(&w, &keepalive.timer, start + 15000);
    CHECK(timer_wheel_validate(&w));

    uint64_t end = due + 2 * (uint64_t)TIMER_WHEEL_SLOTS, runs = 0, fired_in_run = 0;
    while (clock < end) {
        uint64_t next = timer_wheel_next_expiry(&w);
        if (!far.fired)
            CHECK(next <= due);
        uint64_t now = tick ? clock + tick : next;
        clock = now;
        int before = far.fired;
        timer_wheel_run(&w, now);
        runs++;
        if (far.fired != before)
            fired_in_run = runs;
        if (runs % 4096 == 0)
            CHECK(timer_wheel_validate(&w));
    }
    CHECK(timer_wheel_validate(&w));
    CHECK_EQ_INT(far.fired, 1);
    /* the first run whose now >= due: due itself unless ticks step over it */
    uint64_t expected_at = tick ? start + (due - start + tick - 1) / tick * tick : due;
    CHECK_EQ_INT(far.fired_at, expected_at);
    CHECK(fired_in_run > 0);
    CHECK(!timer_is_armed(&far.timer));
    /* passed REVOLUTIONS times before its own revolution (the last of those
     * passes made it near), looked at once each time */
    CHECK_EQ_INT(timer_wheel_skipped(&w), REVOLUTIONS);
    CHECK(keepalive.fired >= (int)(REVOLUTIONS * (uint64_t)TIMER_WHEEL_SLOTS / 15000)); /* it kept running */
    timer_cancel(&keepalive.timer);
    CHECK_EQ_INT(timer_wheel_armed(&w), 0);
}

static void test_deadline_beyond_one_revolution(void)
{
    check_beyond_one_revolution(1);
    check_beyond_one_revolution(50);
    check_beyond_one_revolution(0); /* sleep until next_expiry */
}

static void test_extreme_times(void)
{
    static struct timer_wheel w;
    uint64_t clock = 0;
    struct probe a, b, c, d;
    timer_wheel_init(&w, clock);
    probe_init(&a, &w, &clock);
    probe_init(&b, &w, &clock);
    probe_init(&c, &w, &clock);
    probe_init(&d, &w, &clock);

    /* Beyond the levels' reach: held back, then fired at exactly its time. */
    uint64_t far = ((uint64_t)1 << 40) + 12345;
    timer_schedule(&w, &a.timer, far);
    timer_schedule(&w, &b.timer, UINT64_MAX - 1);
    timer_schedule(&w, &c.timer, UINT64_MAX);
    timer_schedule(&w, &d.timer, 3);
    CHECK(timer_wheel_validate(&w));
    CHECK_EQ_INT(timer_wheel_next_expiry(&w), 3);
    CHECK_EQ_INT(run_at(&w, &clock, far - 1), 1); /* one huge jump */
    CHECK_EQ_INT(a.fired, 0);
    CHECK(timer_wheel_next_expiry(&w) <= far);
    CHECK_EQ_INT(run_at(&w, &clock, far), 1);
    CHECK_EQ_INT(a.fired, 1);
    CHECK_EQ_INT(run_at(&w, &clock, UINT64_MAX - 2), 0);
    CHECK(timer_wheel_next_expiry(&w) <= UINT64_MAX - 1);
    CHECK_EQ_INT(run_at(&w, &clock, UINT64_MAX - 1), 1);
    CHECK_EQ_INT(b.fired, 1);
    CHECK_EQ_INT(run_at(&w, &clock, UINT64_MAX), 1);
    CHECK_EQ_INT(c.fired, 1);
    CHECK_EQ_INT(timer_wheel_armed(&w), 0);

    /* A wheel that starts at the end of time still works. */
    timer_wheel_init(&w, UINT64_MAX - 100);
    clock = UINT64_MAX - 100;
    timer_schedule(&w, &a.timer, UINT64_MAX);
    timer_schedule(&w, &b.timer, 0);
    CHECK_EQ_INT(run_at(&w, &clock, UINT64_MAX - 100), 1);
    CHECK_EQ_INT(b.fired, 2);
    CHECK_EQ_INT(run_at(&w, &clock, UINT64_MAX), 1);
    CHECK_EQ_INT(a.fired, 2);

    /* Many entries over many epochs, all fired by one jump, in deadline order. */
    enum { MANY = 3000 };
    static struct probe m[MANY];
    uint64_t rng = 99;
    timer_wheel_init(&w, 0);
    clock = 0;
    for (unsigned i = 0; i < MANY; i++) {
        probe_init(&m[i], &w, &clock);
        timer_schedule(&w, &m[i].timer, rng_next(&rng) >> (rng_below(&rng, 64)));
    }
    CHECK(timer_wheel_validate(&w));
    CHECK_EQ_INT(run_at(&w, &clock, UINT64_MAX), MANY);
    CHECK_EQ_INT(timer_wheel_armed(&w), 0);
}

static void test_jitter(void)
{
    CHECK_EQ_INT(timer_jitter(15000, 0, 10), 15000);
    CHECK_EQ_INT(timer_jitter(15000, 123456, 0), 15000);
    CHECK_EQ_INT(timer_jitter(15000, UINT32_MAX, 10), 13500); /* the full 10 % */
    CHECK_EQ_INT(timer_jitter(15000, UINT32_MAX, 250), 0);    /* percent capped at 100 */
    CHECK_EQ_INT(timer_jitter(0, UINT32_MAX, 50), 0);
    CHECK(timer_jitter(UINT64_MAX, UINT32_MAX, 100) < ((uint64_t)1 << 33));
    CHECK(timer_jitter(UINT64_MAX, 0, 100) == UINT64_MAX);

    /* 100k keepalives armed in the same millisecond spread over the whole
     * allowed window, roughly evenly (ten 150 ms buckets). */
    enum { N = 100000, BUCKETS = 10 };
    size_t bucket[BUCKETS] = { 0 };
    uint64_t rng = 1;
    bool in_range = true;
    for (int i = 0; i < N; i++) {
        uint64_t j = timer_jitter(15000, (uint32_t)rng_next(&rng), 10);
        if (j < 13500 || j > 15000)
            in_range = false;
        else
            bucket[j == 13500 ? 0 : (j - 13501) / 150]++;
    }
    CHECK(in_range);
    for (int b = 0; b < BUCKETS; b++)
        CHECK(bucket[b] > N / BUCKETS * 8 / 10 && bucket[b] < N / BUCKETS * 12 / 10);
}

int main(void)
{
    test_basic_and_counts();
    test_callback_cancels_other_due_in_same_run();
    test_callback_rearms_self();
    test_callback_moves_other_due_in_same_run();
    test_callback_schedules_for_now();
    test_nested_run_and_self_free();
    test_sleep_until_next_expiry();
    test_revolution_boundaries();
    test_near_and_far_in_one_slot();
    test_deadline_beyond_one_revolution();
    test_extreme_times();
    test_jitter();
    test_against_model();
    return test_main_result("test_timer_wheel");
}
