/* timer_wheel.h - the process's one hierarchical hashed timing wheel.
 *
 * Every time-driven thing in the relay (keepalives, client and handshake
 * timeouts, token expiry, reconnect windows, long-poll holds, back-off) is a
 * struct timer_entry embedded in its owner and armed in one struct
 * timer_wheel. The wheel is pure state: the caller passes the time in (in
 * milliseconds, any epoch) and calls timer_wheel_run() when
 * timer_wheel_next_expiry() says so; the wheel owns no memory and no clock.
 *
 * Shape (after Varghese & Lauck, and h2o's lib/common/timerwheel.c):
 * TIMER_WHEEL_LEVELS levels of 64 slots; level L slots are 64^L ms wide, so
 * the levels together cover 2^36 ms (about 795 days). An entry due at `key`
 * sits on the level of the highest 6-bit digit in which `key` differs from
 * the wheel's current time, in the slot named by that digit of `key`. As time
 * reaches a higher-level slot, its entries are re-placed ("cascaded") onto
 * lower levels; level-0 slots hold exactly one millisecond each. Entries
 * further away than the top level can express wait on an overflow list that is
 * re-placed when time crosses into the next 2^36 ms epoch.
 *
 * Costs: schedule, reschedule and cancel are O(1); a run costs O(slots that
 * come due + entries cascaded + entries fired), never O(elapsed ms), so a huge
 * jump of `now` is as cheap as a small one. Each entry is cascaded at most
 * TIMER_WHEEL_LEVELS - 1 times in its life. Not bounded: the work of one
 * run. A slot cascades whole in the run that reaches it, and every timer
 * armed across a 2^18 ms boundary sits in the same level-3 slot, so with N
 * 15 s keepalives one run every ~262 s moves all N (about 0.25 s for a
 * million, 20 ms for 100k; tests/bench/bench_timers.c measures it).
 *
 * Re-entrancy: a run first collects every due entry into a list, then calls
 * them one by one. A callback may re-arm itself, cancel or re-arm any other
 * entry (an entry collected but not yet called then simply does not fire), or
 * schedule new entries; an entry scheduled from a callback for a time at or
 * before the run's `now` fires on the next run, never in the current one. */
#ifndef SR_TIMER_WHEEL_H
#define SR_TIMER_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"

#define TIMER_WHEEL_BITS_PER_LEVEL 6
#define TIMER_WHEEL_SLOTS (1u << TIMER_WHEEL_BITS_PER_LEVEL)
#define TIMER_WHEEL_LEVELS 6

struct timer_wheel;
struct timer_entry;

typedef void (*timer_cb)(struct timer_entry *entry);

/* Embed one in the owner; recover the owner in the callback with
 * list_container_of(entry, struct owner, member). All fields are the wheel's
 * except expire_at, which callers may read (it is the time last passed to
 * timer_schedule, even if that was in the past). */
struct timer_entry {
    struct list_node link;      /* in a slot, the overflow list or the due list */
    uint64_t expire_at;         /* requested deadline, ms */
    timer_cb cb;
    struct timer_wheel *wheel;  /* the wheel it is armed in; NULL when unarmed */
    uint32_t where;             /* slot index or overflow (on the due list: the slot it left) */
};

struct timer_wheel {
    /* Time of the last run (or of init): everything due at or before it has
     * been collected, except entries scheduled for it afterwards. */
    uint64_t now;
    size_t armed;
    uint64_t cascaded; /* entries moved down a level since init (statistics) */
    bool running;
    /* Bit s of occupied[L] is set iff slots[L][s] is non-empty, so finding
     * the next non-empty slot is a count-trailing-zeros, not a scan. */
    uint64_t occupied[TIMER_WHEEL_LEVELS];
    struct list_node slots[TIMER_WHEEL_LEVELS][TIMER_WHEEL_SLOTS];
    struct list_node overflow; /* due beyond the current 2^36 ms epoch */
    struct list_node due;      /* collected by the current run, not yet called */
};

/* Prepares an empty wheel whose clock reads `now`. The wheel holds no
 * allocation, so there is nothing to free; owners cancel their entries. */
void timer_wheel_init(struct timer_wheel *w, uint64_t now);

/* Prepares an unarmed entry that will call `cb` when it fires. */
void timer_entry_init(struct timer_entry *e, timer_cb cb);

/* Arms `e` to fire at the first run whose `now` >= expire_at (a time at or
 * before the wheel's current time means "on the next run"). Re-arming an armed
 * entry moves it, even from another wheel. O(1). */
void timer_schedule(struct timer_wheel *w, struct timer_entry *e, uint64_t expire_at);

/* Disarms `e`; does nothing if it is not armed. O(1). */
void timer_cancel(struct timer_entry *e);

static inline bool timer_is_armed(const struct timer_entry *e) { return e->wheel != NULL; }

/* Advances the wheel to `now` and calls every entry due at or before it, in
 * deadline order (one scheduled for the past counts as due at the wheel's
 * time when it was scheduled); each is disarmed just before its callback
 * runs, so the callback may free it or re-arm it. A `now`
 * earlier than the wheel's time (a clock step back) is treated as the
 * wheel's time. A call from inside a callback does nothing and returns 0.
 * Returns the number of callbacks made. */
size_t timer_wheel_run(struct timer_wheel *w, uint64_t now);

/* A time before which nothing can fire, and at which a run has work to do.
 * Never later than the earliest deadline, so sleeping until it never fires
 * late. Exact when the earliest entry lies in the wheel's current aligned
 * 64 ms block; otherwise it may be the start of the higher-level slot that
 * holds the entry (a run then cascades that slot and the next call is more
 * precise): at most TIMER_WHEEL_LEVELS - 1 such early wake-ups per slot.
 * Returns the wheel's own time if something is already due, UINT64_MAX when
 * nothing is armed. O(TIMER_WHEEL_LEVELS). */
uint64_t timer_wheel_next_expiry(const struct timer_wheel *w);

/* Number of armed entries (including ones collected by a run in progress). */
static inline size_t timer_wheel_armed(const struct timer_wheel *w) { return w->armed; }

/* Entries re-placed from a higher level (or the overflow list) since init:
 * the work runs do besides firing, for /metrics and benchmarks. */
static inline uint64_t timer_wheel_cascaded(const struct timer_wheel *w) { return w->cascaded; }

/* Checks every structural invariant (placement of each entry, occupancy
 * bits, back-pointers, the armed count); prints what is wrong to stderr.
 * O(entries + slots): for tests. */
bool timer_wheel_validate(const struct timer_wheel *w);

/* A keepalive interval shortened by up to `percent` % (capped at 100),
 * chosen by the caller's random value, so that timers armed in the same
 * millisecond spread out instead of firing in the same tick. The result lies
 * in [interval - interval * percent / 100, interval]. */
uint64_t timer_jitter(uint64_t interval_ms, uint32_t random_value, unsigned percent);

#endif
