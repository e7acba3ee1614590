/* timer_wheel.h - the process's one hashed timing wheel.
 *
 * Every time-driven thing in the relay (keepalives, client and handshake
 * timeouts, token expiry, reconnect windows, long-poll holds, back-off) is a
 * struct timer_entry embedded in its owner and armed in one struct
 * timer_wheel. The wheel is pure state: the caller passes the time in (in
 * milliseconds, any epoch) and calls timer_wheel_run() when
 * timer_wheel_next_expiry() says so; the wheel owns no memory and no clock.
 *
 * Shape: Varghese & Lauck's scheme 6, a single-level hashed wheel.
 * TIMER_WHEEL_SLOTS slots of one millisecond each; one revolution is
 * 65.536 s, longer than every keepalive and client timeout. An entry sits in
 * slot (deadline mod TIMER_WHEEL_SLOTS) and never moves to another slot.
 * Within its slot it is "near" if its deadline falls in the current
 * revolution and "far" if it falls in a later one; a far entry is looked at
 * once per revolution, when the clock passes its slot, and either becomes
 * near or stays. Two two-level occupancy bitmaps (any entry; near entries)
 * let a run and next_expiry jump over empty slots with count-trailing-zeros
 * instead of visiting them. There is no cascading: a run touches only the
 * slots the clock passes, and in them only what fires plus far entries.
 *
 * Costs: schedule, reschedule and cancel are O(1). A run costs
 *   O(occupied slots passed + entries fired + far entries in those slots),
 * never O(elapsed ms) and never O(armed entries) as such: with only
 * deadlines under one revolution (the relay's keepalives and timeouts) the
 * entries a run touches are exactly the ones it fires. A jump of a whole
 * revolution or more passes every occupied slot once, and sorts whatever
 * far entries it fires into deadline order (O(k log k) for k of them).
 *
 * Memory: the slot array is embedded (TIMER_WHEEL_SLOTS list heads, 1 MiB on
 * 64-bit, plus 16.25 KiB of bitmaps), so init cannot fail and there is
 * nothing to free. There is one wheel per process; give it static or heap
 * storage (inside the owner's struct), not a small stack.
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

#include "containers/list.h"

#define TIMER_WHEEL_SLOT_BITS 16
#define TIMER_WHEEL_SLOTS (1u << TIMER_WHEEL_SLOT_BITS) /* 1 ms each: a revolution is 65.536 s */
#define TIMER_WHEEL_BITMAP_WORDS (TIMER_WHEEL_SLOTS / 64)
#define TIMER_WHEEL_SUMMARY_WORDS (TIMER_WHEEL_BITMAP_WORDS / 64)

struct timer_wheel;
struct timer_entry;

typedef void (*timer_cb)(struct timer_entry *entry);

/* Embed one in the owner; recover the owner in the callback with
 * list_container_of(entry, struct owner, member). All fields are the wheel's
 * except expire_at, which callers may read (it is the time last passed to
 * timer_schedule, even if that was in the past). 48 bytes on 64-bit. */
struct timer_entry {
    struct list_node link;      /* in a slot or on the due list */
    uint64_t expire_at;         /* requested deadline, ms */
    timer_cb cb;
    struct timer_wheel *wheel;  /* the wheel it is armed in; NULL when unarmed */
    uint32_t where;             /* slot index and near/far flag, or "due" */
};

/* One bit per slot, and one summary bit per 64-slot word that is non-zero:
 * the next set bit after any slot is found in at most two
 * count-trailing-zeros plus a scan of TIMER_WHEEL_SUMMARY_WORDS words. */
struct timer_slot_bitmap {
    uint64_t summary[TIMER_WHEEL_SUMMARY_WORDS];
    uint64_t words[TIMER_WHEEL_BITMAP_WORDS];
};

struct timer_wheel {
    /* Time of the last run (or of init): everything due at or before it has
     * been collected, except entries scheduled for it afterwards. */
    uint64_t now;
    size_t armed;
    /* Never more than the earliest far deadline (UINT64_MAX if none was
     * seen since it was last measured); exact after a run that passes a whole
     * revolution, only lowered by schedule. */
    uint64_t far_min;
    uint64_t skipped; /* far entries runs looked at and left armed (statistics) */
    bool running;
    struct timer_slot_bitmap occupied; /* slot holds any entry */
    struct timer_slot_bitmap near;     /* slot holds an entry due this revolution */
    struct list_node due;              /* collected by the current run, not yet called */
    /* Each slot's far entries come first, its near entries after them. */
    struct list_node slots[TIMER_WHEEL_SLOTS];
};

/* Prepares an empty wheel whose clock reads `now`. The wheel holds no
 * allocation, so there is nothing to free; owners cancel their entries.
 * Writes the whole struct (about 1 MiB). */
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
 * late. Exact when the earliest deadline is less than one revolution
 * (TIMER_WHEEL_SLOTS ms) after the wheel's time. Otherwise every armed entry
 * is far, and it is the earliest far deadline as last measured, but at least
 * one revolution ahead: a wake-up there fires nothing only if that entry was
 * cancelled or fired since, and the run it causes measures again, so two
 * such wake-ups never follow each other without a cancel in between.
 * Returns the wheel's own time if something is already due, UINT64_MAX when
 * nothing is armed. O(TIMER_WHEEL_SUMMARY_WORDS). */
uint64_t timer_wheel_next_expiry(const struct timer_wheel *w);

/* Number of armed entries (including ones collected by a run in progress). */
static inline size_t timer_wheel_armed(const struct timer_wheel *w) { return w->armed; }

/* Entries that runs looked at without firing them (far entries whose
 * revolution had not come) since init: the work runs do besides firing, for
 * /metrics and benchmarks. */
static inline uint64_t timer_wheel_skipped(const struct timer_wheel *w) { return w->skipped; }

/* Checks every structural invariant (placement and order of each entry,
 * both bitmaps, back-pointers, far_min, the armed count); prints what is
 * wrong to stderr. O(bitmap words + occupied slots + entries): for tests. */
bool timer_wheel_validate(const struct timer_wheel *w);

/* A keepalive interval shortened by up to `percent` % (capped at 100),
 * chosen by the caller's random value, so that timers armed in the same
 * millisecond spread out instead of firing in the same tick. The result lies
 * in [interval - interval * percent / 100, interval]. */
uint64_t timer_jitter(uint64_t interval_ms, uint32_t random_value, unsigned percent);

#endif
