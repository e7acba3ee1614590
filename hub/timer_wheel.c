/* timer_wheel.c - the hierarchical hashed timing wheel (see timer_wheel.h).
 *
 * Placement rule, which every other function relies on: an entry whose
 * effective deadline is key = max(expire_at, w->now at scheduling) lives
 *   - on the overflow list if key and w->now differ above the top level's
 *     bits (key is in a later 2^36 ms epoch);
 *   - otherwise on level L = index of the highest 6-bit digit where key and
 *     w->now differ (0 if equal), in slot digit_L(key).
 * Because key >= now and the two agree above level L, digit_L(key) >
 * digit_L(now) for L > 0 (and >= for L = 0): every occupied slot lies ahead
 * of the clock within its level, nothing wraps around, and every slot of
 * level L starts later than every slot of level L-1. So the next thing to
 * happen is always the lowest occupied slot of the lowest occupied level,
 * found with one count-trailing-zeros per level. When the clock reaches that
 * slot's start, only that slot's entries break the rule, and re-placing them
 * moves each to a strictly lower level. */
#include "timer_wheel.h"

#include <inttypes.h>
#include <stdio.h>

#define SLOT_MASK ((uint64_t)TIMER_WHEEL_SLOTS - 1)
#define WHEEL_BITS (TIMER_WHEEL_BITS_PER_LEVEL * TIMER_WHEEL_LEVELS)

/* timer_entry.where is level * TIMER_WHEEL_SLOTS + slot, or this. */
#define TIMER_WHERE_OVERFLOW ((uint32_t)(TIMER_WHEEL_LEVELS * TIMER_WHEEL_SLOTS))
/* Only a name for the due list in validation messages. */
#define TIMER_WHERE_DUE (TIMER_WHERE_OVERFLOW + 1)

static unsigned digit(uint64_t t, unsigned level)
{
    return (unsigned)((t >> (level * TIMER_WHEEL_BITS_PER_LEVEL)) & SLOT_MASK);
}

/* The time at which slot `slot` of `level` begins, for a clock reading `now`
 * (the slot shares now's digits above `level`). */
static uint64_t slot_start(uint64_t now, unsigned level, unsigned slot)
{
    unsigned above = (level + 1) * TIMER_WHEEL_BITS_PER_LEVEL;
    uint64_t base = (now >> above) << above;
    return base | ((uint64_t)slot << (level * TIMER_WHEEL_BITS_PER_LEVEL));
}

/* First millisecond of the epoch after now's, or UINT64_MAX if now is in the
 * last one (then nothing can be in overflow: no key lies beyond it). */
static uint64_t next_epoch_start(uint64_t now)
{
    uint64_t epoch = now >> WHEEL_BITS;
    if (epoch == (UINT64_MAX >> WHEEL_BITS))
        return UINT64_MAX;
    return (epoch + 1) << WHEEL_BITS;
}

static uint64_t effective_key(const struct timer_wheel *w, const struct timer_entry *e)
{
    return e->expire_at > w->now ? e->expire_at : w->now;
}

/* Where the placement rule puts `key` for the wheel's current time. */
static uint32_t placement(const struct timer_wheel *w, uint64_t key)
{
    uint64_t diff = key ^ w->now;
    if (diff >> WHEEL_BITS)
        return TIMER_WHERE_OVERFLOW;
    unsigned level = diff ? (unsigned)(63 - __builtin_clzll(diff)) / TIMER_WHEEL_BITS_PER_LEVEL : 0;
    return level * TIMER_WHEEL_SLOTS + digit(key, level);
}

static struct list_node *slot_head(struct timer_wheel *w, uint32_t where)
{
    return &w->slots[where / TIMER_WHEEL_SLOTS][where % TIMER_WHEEL_SLOTS];
}

/* Links an armed entry into the list the placement rule names. */
static void place(struct timer_wheel *w, struct timer_entry *e)
{
    uint32_t where = placement(w, effective_key(w, e));
    e->where = where;
    if (where == TIMER_WHERE_OVERFLOW) {
        list_push_back(&w->overflow, &e->link);
        return;
    }
    list_push_back(slot_head(w, where), &e->link);
    w->occupied[where / TIMER_WHEEL_SLOTS] |= (uint64_t)1 << (where % TIMER_WHEEL_SLOTS);
}

/* Unlinks an armed entry from whichever list holds it, keeping the
 * occupancy bit of its slot truthful. */
static void unlink_entry(struct timer_entry *e)
{
    struct timer_wheel *w = e->wheel;
    list_unlink(&e->link);
    if (e->where < TIMER_WHERE_OVERFLOW && list_is_empty(slot_head(w, e->where)))
        w->occupied[e->where / TIMER_WHEEL_SLOTS] &= ~((uint64_t)1 << (e->where % TIMER_WHEEL_SLOTS));
}

/* Moves every entry of one slot onto `dst` and marks the slot empty. */
static void take_slot(struct timer_wheel *w, unsigned level, unsigned slot, struct list_node *dst)
{
    list_splice_back(dst, &w->slots[level][slot]);
    w->occupied[level] &= ~((uint64_t)1 << slot);
}

/* Re-places every entry of `pending` (already unlinked from their slot, so
 * `where` is stale) for the wheel's current time. */
static void replace_all(struct timer_wheel *w, struct list_node *pending)
{
    while (!list_is_empty(pending)) {
        struct timer_entry *e = list_container_of(pending->next, struct timer_entry, link);
        list_unlink(&e->link);
        place(w, e);
        w->cascaded++;
    }
}

/* Moves the entries due exactly at w->now (level 0, current slot) to the due
 * list in O(1). Their `where` keeps naming the slot they left, on purpose:
 * cancelling one of them then clears that slot's bit only if the slot is
 * empty, which is exactly right, and collecting need not touch each entry
 * (with a million timers, that pass would be a cache miss per entry). */
static void collect_current(struct timer_wheel *w)
{
    take_slot(w, 0, digit(w->now, 0), &w->due);
}

/* Lowest occupied level and its first occupied slot; false if all are empty. */
static bool first_occupied(const struct timer_wheel *w, unsigned *level, unsigned *slot)
{
    for (unsigned l = 0; l < TIMER_WHEEL_LEVELS; l++) {
        if (w->occupied[l]) {
            *level = l;
            *slot = (unsigned)__builtin_ctzll(w->occupied[l]);
            return true;
        }
    }
    return false;
}

/* Moves every overflow entry back into the wheel once the clock has left the
 * epoch they were waiting behind. The levels are empty when this runs, so the
 * clock may jump straight to the earliest overflow deadline (or to `limit`
 * if that comes first): no slot is skipped. Returns false if nothing moved. */
static bool drain_overflow(struct timer_wheel *w, uint64_t limit)
{
    if (list_is_empty(&w->overflow) || next_epoch_start(w->now) > limit)
        return false;
    uint64_t earliest = UINT64_MAX;
    for (struct list_node *n = w->overflow.next; n != &w->overflow; n = n->next) {
        uint64_t at = list_container_of(n, struct timer_entry, link)->expire_at;
        if (at < earliest)
            earliest = at;
    }
    struct list_node pending;
    list_init_head(&pending);
    list_splice_back(&pending, &w->overflow);
    w->now = earliest < limit ? earliest : limit;
    replace_all(w, &pending);
    return true;
}

/* Advances the clock to `now`, visiting only occupied slots: each step jumps
 * to the start of the next one, cascades it (or, on level 0, collects it). */
static void advance(struct timer_wheel *w, uint64_t now)
{
    collect_current(w);
    while (w->now < now) {
        unsigned level, slot;
        if (!first_occupied(w, &level, &slot)) {
            if (!drain_overflow(w, now))
                w->now = now;
            collect_current(w);
            continue;
        }
        uint64_t start = slot_start(w->now, level, slot);
        if (start > now) {
            /* No slot begins in (w->now, now]: the rule still holds at now. */
            w->now = now;
            break;
        }
        w->now = start;
        if (level > 0) {
            struct list_node pending;
            list_init_head(&pending);
            take_slot(w, level, slot, &pending);
            replace_all(w, &pending);
        }
        collect_current(w);
    }
}

void timer_wheel_init(struct timer_wheel *w, uint64_t now)
{
    w->now = now;
    w->armed = 0;
    w->cascaded = 0;
    w->running = false;
    for (unsigned l = 0; l < TIMER_WHEEL_LEVELS; l++) {
        w->occupied[l] = 0;
        for (unsigned s = 0; s < TIMER_WHEEL_SLOTS; s++)
            list_init_head(&w->slots[l][s]);
    }
    list_init_head(&w->overflow);
    list_init_head(&w->due);
}

void timer_entry_init(struct timer_entry *e, timer_cb cb)
{
    list_init_node(&e->link);
    e->expire_at = 0;
    e->cb = cb;
    e->wheel = NULL;
    e->where = 0;
}

void timer_schedule(struct timer_wheel *w, struct timer_entry *e, uint64_t expire_at)
{
    timer_cancel(e);
    e->expire_at = expire_at;
    e->wheel = w;
    w->armed++;
    place(w, e);
}

void timer_cancel(struct timer_entry *e)
{
    if (!e->wheel)
        return;
    unlink_entry(e);
    e->wheel->armed--;
    e->wheel = NULL;
}

size_t timer_wheel_run(struct timer_wheel *w, uint64_t now)
{
    if (w->running)
        return 0;
    w->running = true;
    if (now > w->now)
        advance(w, now);
    else
        collect_current(w);

    /* Callbacks run only now that collection is over: whatever they schedule
     * lands at or after w->now, in a slot this run no longer looks at. */
    size_t fired = 0;
    while (!list_is_empty(&w->due)) {
        struct timer_entry *e = list_container_of(w->due.next, struct timer_entry, link);
        list_unlink(&e->link);
        e->wheel = NULL;
        w->armed--;
        fired++;
        e->cb(e); /* may free e: not touched afterwards */
    }
    w->running = false;
    return fired;
}

uint64_t timer_wheel_next_expiry(const struct timer_wheel *w)
{
    if (!list_is_empty(&w->due))
        return w->now;
    unsigned level, slot;
    if (first_occupied(w, &level, &slot))
        return slot_start(w->now, level, slot);
    if (!list_is_empty(&w->overflow))
        return next_epoch_start(w->now);
    return UINT64_MAX;
}

/* Validation ---------------------------------------------------------------- */

#define REPORT(...) (fprintf(stderr, "timer_wheel_validate: " __VA_ARGS__), ok = false)

static bool validate_list(const struct timer_wheel *w, const struct list_node *head, uint32_t where,
                          size_t *count)
{
    bool ok = true;
    const struct list_node *prev = head;
    for (const struct list_node *n = head->next; n != head; prev = n, n = n->next) {
        const struct timer_entry *e = list_container_of(n, struct timer_entry, link);
        (*count)++;
        if (n->prev != prev)
            REPORT("broken back link in list %" PRIu32 "\n", where);
        if (e->wheel != w)
            REPORT("entry %p in list %" PRIu32 " belongs to wheel %p\n", (void *)e, where, (void *)e->wheel);
        if (where == TIMER_WHERE_DUE ? e->where >= TIMER_WHEEL_SLOTS : e->where != where)
            REPORT("entry %p in list %" PRIu32 " says it is in %" PRIu32 "\n", (void *)e, where, e->where);
        if (where != TIMER_WHERE_DUE && placement(w, effective_key(w, e)) != where)
            REPORT("entry %p due %" PRIu64 " misplaced in list %" PRIu32 " at now=%" PRIu64 "\n", (void *)e,
                   e->expire_at, where, w->now);
        if (where == TIMER_WHERE_DUE && e->expire_at > w->now)
            REPORT("entry %p due %" PRIu64 " collected at now=%" PRIu64 "\n", (void *)e, e->expire_at, w->now);
    }
    return ok;
}

bool timer_wheel_validate(const struct timer_wheel *w)
{
    bool ok = true;
    size_t count = 0;
    for (unsigned l = 0; l < TIMER_WHEEL_LEVELS; l++) {
        for (unsigned s = 0; s < TIMER_WHEEL_SLOTS; s++) {
            const struct list_node *head = &w->slots[l][s];
            bool bit = (w->occupied[l] >> s) & 1;
            if (bit == list_is_empty(head))
                REPORT("occupancy bit of level %u slot %u is %d\n", l, s, (int)bit);
            if (!validate_list(w, head, l * TIMER_WHEEL_SLOTS + s, &count))
                ok = false;
        }
    }
    if (!validate_list(w, &w->overflow, TIMER_WHERE_OVERFLOW, &count))
        ok = false;
    if (!validate_list(w, &w->due, TIMER_WHERE_DUE, &count))
        ok = false;
    if (!w->running && !list_is_empty(&w->due))
        REPORT("due list not empty outside a run\n");
    if (count != w->armed)
        REPORT("armed count %zu but %zu entries linked\n", w->armed, count);
    return ok;
}

#undef REPORT

/* Jitter ------------------------------------------------------------------- */

/* floor(range * r / 2^32), computed without overflow: a value in [0, range). */
static uint64_t scale_by_u32(uint64_t range, uint32_t r)
{
    return (range >> 32) * r + (((range & 0xffffffffu) * r) >> 32);
}

uint64_t timer_jitter(uint64_t interval_ms, uint32_t random_value, unsigned percent)
{
    if (percent > 100)
        percent = 100;
    /* interval * percent / 100 without overflowing for huge intervals. */
    uint64_t max_cut = interval_ms / 100 * percent + interval_ms % 100 * percent / 100;
    uint64_t choices = max_cut == UINT64_MAX ? UINT64_MAX : max_cut + 1;
    return interval_ms - scale_by_u32(choices, random_value);
}
