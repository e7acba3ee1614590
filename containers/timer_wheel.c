/* timer_wheel.c - the single-level hashed timing wheel (see timer_wheel.h).
 *
 * Placement rule, which every other function relies on. An armed entry's
 * key is max(expire_at, w->now when it was scheduled); it lives in slot
 * s = key mod TIMER_WHEEL_SLOTS. For the wheel's time `now`, slot s stands for
 * the one time T(s) = now + ((s - now) mod TIMER_WHEEL_SLOTS) in
 * [now, now + TIMER_WHEEL_SLOTS), and the entry is
 *   - near if key == T(s): due in this revolution (only the slot of `now`
 *     itself can hold a near entry whose expire_at is below its key: one
 *     scheduled in the past);
 *   - far if key >= T(s) + TIMER_WHEEL_SLOTS: a later revolution (then
 *     key == expire_at, and key >= now + TIMER_WHEEL_SLOTS).
 * A slot's list holds its far entries first and its near ones after them,
 * and each entry's `where` names its slot and which kind it is. So the first
 * near slot at or after now's holds the earliest deadline of the whole wheel,
 * and a run from `now` to `to` need only visit the occupied slots with T(s)
 * in [now, to]: each one's near entries are all due; for the slots whose
 * T(s) the clock moves past, each far entry is looked at once and is due
 * (only on a jump of a revolution or more), near for the new time, or still
 * far. Slots the clock does not reach keep their meaning as the clock moves. */
#include "containers/timer_wheel.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define SLOT_MASK ((uint64_t)TIMER_WHEEL_SLOTS - 1)
#define SLOT_NONE TIMER_WHEEL_SLOTS

/* timer_entry.where: the slot index, plus WHERE_FAR for a far entry; or
 * exactly WHERE_DUE on the due list (collected by a run, not yet called). */
#define WHERE_FAR ((uint32_t)TIMER_WHEEL_SLOTS)
#define WHERE_DUE ((uint32_t)TIMER_WHEEL_SLOTS << 1)

/* Every connection embeds a few of these. */
_Static_assert(sizeof(struct timer_entry) <= 48, "struct timer_entry grew beyond 48 bytes");

static uint64_t bit(unsigned i) { return (uint64_t)1 << i; }

static struct timer_entry *entry_of(struct list_node *n) { return list_container_of(n, struct timer_entry, link); }

static unsigned slot_of(uint64_t t) { return (unsigned)(t & SLOT_MASK); }

/* Milliseconds from the wheel's time to the time slot `s` stands for. */
static uint64_t slot_distance(const struct timer_wheel *w, unsigned s) { return (s - w->now) & SLOT_MASK; }

/* Occupancy bitmaps ---------------------------------------------------------- */

static void bitmap_set(struct timer_slot_bitmap *b, unsigned s)
{
    b->words[s / 64] |= bit(s % 64);
    b->summary[s / 4096] |= bit(s / 64 % 64);
}

static void bitmap_clear(struct timer_slot_bitmap *b, unsigned s)
{
    uint64_t *word = &b->words[s / 64];
    *word &= ~bit(s % 64);
    if (!*word)
        b->summary[s / 4096] &= ~bit(s / 64 % 64);
}

static bool bitmap_test(const struct timer_slot_bitmap *b, unsigned s) { return (b->words[s / 64] >> (s % 64)) & 1; }

/* The first set slot at or after `from`, or SLOT_NONE. */
static unsigned bitmap_next(const struct timer_slot_bitmap *b, unsigned from)
{
    if (from >= TIMER_WHEEL_SLOTS)
        return SLOT_NONE;
    unsigned word = from / 64;
    uint64_t bits = b->words[word] & (~(uint64_t)0 << (from % 64));
    if (bits)
        return word * 64 + (unsigned)__builtin_ctzll(bits);
    if (++word == TIMER_WHEEL_BITMAP_WORDS)
        return SLOT_NONE;
    unsigned group = word / 64;
    uint64_t words = b->summary[group] & (~(uint64_t)0 << (word % 64));
    while (!words) {
        if (++group == TIMER_WHEEL_SUMMARY_WORDS)
            return SLOT_NONE;
        words = b->summary[group];
    }
    word = group * 64 + (unsigned)__builtin_ctzll(words);
    return word * 64 + (unsigned)__builtin_ctzll(b->words[word]);
}

/* The first set slot at or after `from`, wrapping around; or SLOT_NONE. */
static unsigned bitmap_next_cyclic(const struct timer_slot_bitmap *b, unsigned from)
{
    unsigned s = bitmap_next(b, from);
    return s != SLOT_NONE || from == 0 ? s : bitmap_next(b, 0);
}

/* Placement ------------------------------------------------------------------- */

/* Links an armed entry into its slot for the wheel's current time: near
 * entries at the tail (so same-deadline entries fire in the order they were
 * armed), far ones at the head. */
static void place(struct timer_wheel *w, struct timer_entry *e)
{
    uint64_t key = e->expire_at > w->now ? e->expire_at : w->now;
    unsigned s = slot_of(key);
    struct list_node *head = &w->slots[s];
    if (key - w->now < TIMER_WHEEL_SLOTS) {
        e->where = s;
        list_push_back(head, &e->link);
        bitmap_set(&w->near, s);
    } else {
        e->where = s | WHERE_FAR;
        list_insert_before(head->next, &e->link);
        if (key < w->far_min)
            w->far_min = key;
    }
    bitmap_set(&w->occupied, s);
}

/* Unlinks an armed entry from its slot or the due list, keeping both bits of
 * its slot truthful by looking only at its neighbours (which unlinking
 * touches anyway): the slot lost its last near entry iff this one was near,
 * was the tail, and what precedes it is far. */
static void unlink_entry(struct timer_entry *e)
{
    struct timer_wheel *w = e->wheel;
    struct list_node *prev = e->link.prev, *next = e->link.next;
    list_unlink(&e->link);
    if (e->where == WHERE_DUE)
        return;
    unsigned s = e->where & (uint32_t)SLOT_MASK;
    struct list_node *head = &w->slots[s];
    if (list_is_empty(head)) {
        bitmap_clear(&w->occupied, s);
        bitmap_clear(&w->near, s);
    } else if (!(e->where & WHERE_FAR) && next == head && (entry_of(prev)->where & WHERE_FAR)) {
        bitmap_clear(&w->near, s);
    }
}

/* Running ---------------------------------------------------------------------- */

/* Moves the near entries of slot `s` (its tail) to the due list, in order. */
static void collect_near(struct timer_wheel *w, unsigned s)
{
    struct list_node *head = &w->slots[s], batch;
    list_init_head(&batch);
    while (!list_is_empty(head) && !(entry_of(head->prev)->where & WHERE_FAR)) {
        struct timer_entry *e = entry_of(head->prev);
        list_unlink(&e->link);
        list_insert_before(batch.next, &e->link);
        e->where = WHERE_DUE;
    }
    list_splice_back(&w->due, &batch);
    bitmap_clear(&w->near, s);
    if (list_is_empty(head))
        bitmap_clear(&w->occupied, s);
}

/* The clock (already at its new time) has moved past slot `s`, whose near
 * entries are collected: looks at each far entry once, oldest first, and
 * moves it to `late` if due, else places it again (near if its revolution
 * has come, far otherwise; either way in the same slot). */
static void pass_far(struct timer_wheel *w, unsigned s, struct list_node *late)
{
    struct list_node *head = &w->slots[s], far;
    list_init_head(&far);
    list_splice_back(&far, head);
    bitmap_clear(&w->occupied, s);
    while (!list_is_empty(&far)) {
        struct timer_entry *e = entry_of(far.prev);
        list_unlink(&e->link);
        if (e->expire_at <= w->now) {
            e->where = WHERE_DUE;
            list_push_back(late, &e->link);
        } else {
            w->skipped++;
            place(w, e);
        }
    }
}

/* Far entries collected by a jump of a revolution or more are in slot order,
 * not deadline order: they are sorted (a stable merge sort over their `next`
 * pointers) and merged into the due list. The due list compares by
 * expire_at too: its entries scheduled in the past (expire_at below their
 * key) come first and are below every far deadline, and for all others
 * expire_at is the key. */
static bool due_before(struct list_node *a, struct list_node *b)
{
    return entry_of(a)->expire_at < entry_of(b)->expire_at;
}

/* Merges two NULL-terminated runs; on equal deadlines `a` comes first. */
static struct list_node *merge_runs(struct list_node *a, struct list_node *b)
{
    struct list_node first, *tail = &first;
    while (a && b) {
        struct list_node **from = due_before(b, a) ? &b : &a;
        tail->next = *from;
        tail = *from;
        *from = (*from)->next;
    }
    tail->next = a ? a : b;
    return first.next;
}

/* Bottom-up: bins[i] holds a sorted run of 2^i nodes (or nothing), older
 * nodes in higher bins, so merging a bin before what follows keeps order. */
static struct list_node *sort_run(struct list_node *run)
{
    struct list_node *bins[64] = { NULL };
    while (run) {
        struct list_node *merged = run;
        run = run->next;
        merged->next = NULL;
        unsigned i = 0;
        for (; bins[i]; i++) {
            merged = merge_runs(bins[i], merged);
            bins[i] = NULL;
        }
        bins[i] = merged;
    }
    struct list_node *sorted = NULL;
    for (unsigned i = 0; i < 64; i++)
        if (bins[i])
            sorted = merge_runs(bins[i], sorted);
    return sorted;
}

/* Takes every node of the list at `head` as a NULL-terminated run. */
static struct list_node *detach(struct list_node *head)
{
    if (list_is_empty(head))
        return NULL;
    struct list_node *run = head->next;
    head->prev->next = NULL;
    list_init_head(head);
    return run;
}

/* Links a NULL-terminated run, in order, into the empty list at `head`. */
static void attach(struct list_node *head, struct list_node *run)
{
    while (run) {
        struct list_node *next = run->next;
        list_push_back(head, run);
        run = next;
    }
}

static void merge_late(struct timer_wheel *w, struct list_node *late)
{
    struct list_node *due = detach(&w->due);
    attach(&w->due, merge_runs(due, sort_run(detach(late))));
}

/* Advances the clock to `to` (>= w->now) and collects everything due at or
 * before it. Visits, in time order, the occupied slots whose time lies in
 * [old now, to] (all of them on a jump of a revolution or more): collects
 * their near entries and, in the ones the clock moves past, looks at the far
 * ones. A jump that passes every slot re-places every far entry, so it
 * measures far_min afresh. */
static void advance(struct timer_wheel *w, uint64_t to)
{
    uint64_t span = to - w->now;
    bool whole_revolution = span >= TIMER_WHEEL_SLOTS;
    uint64_t last = whole_revolution ? SLOT_MASK : span; /* last slot distance to visit */
    unsigned start = slot_of(w->now);
    struct list_node late;
    list_init_head(&late);

    w->now = to; /* entries placed again below are placed for the new time */
    if (whole_revolution)
        w->far_min = UINT64_MAX;
    for (uint64_t next = 0; next <= last;) {
        unsigned s = bitmap_next_cyclic(&w->occupied, (unsigned)((start + next) & SLOT_MASK));
        if (s == SLOT_NONE)
            break;
        uint64_t distance = (s - start) & SLOT_MASK;
        if (distance < next || distance > last)
            break; /* only slots already visited, or not reached by `to` */
        collect_near(w, s);
        if (distance < span)
            pass_far(w, s, &late);
        next = distance + 1;
    }
    if (!list_is_empty(&late))
        merge_late(w, &late);
}

/* API ------------------------------------------------------------------------ */

void timer_wheel_init(struct timer_wheel *w, uint64_t now)
{
    w->now = now;
    w->armed = 0;
    w->far_min = UINT64_MAX;
    w->skipped = 0;
    w->running = false;
    memset(&w->occupied, 0, sizeof w->occupied);
    memset(&w->near, 0, sizeof w->near);
    list_init_head(&w->due);
    for (unsigned s = 0; s < TIMER_WHEEL_SLOTS; s++)
        list_init_head(&w->slots[s]);
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
    advance(w, now > w->now ? now : w->now);

    /* Callbacks run only now that collection is over: whatever they schedule
     * lands at or after w->now, in a slot this run no longer looks at. */
    size_t fired = 0;
    while (!list_is_empty(&w->due)) {
        struct timer_entry *e = entry_of(w->due.next);
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
    if (w->armed == 0)
        return UINT64_MAX;
    unsigned s = bitmap_next_cyclic(&w->near, slot_of(w->now));
    if (s != SLOT_NONE)
        return w->now + slot_distance(w, s);
    /* Every entry is far, so due at least a revolution from now (which
     * therefore does not overflow). */
    uint64_t revolution = w->now + TIMER_WHEEL_SLOTS;
    return w->far_min > revolution ? w->far_min : revolution;
}

/* Validation ---------------------------------------------------------------- */

#define REPORT(...) (fprintf(stderr, "timer_wheel_validate: " __VA_ARGS__), ok = false)

static bool validate_bitmap(const struct timer_slot_bitmap *b, const char *name)
{
    bool ok = true;
    for (unsigned i = 0; i < TIMER_WHEEL_BITMAP_WORDS; i++)
        if (((b->summary[i / 64] >> (i % 64)) & 1) != (b->words[i] != 0))
            REPORT("%s: summary bit of word %u disagrees with the word\n", name, i);
    return ok;
}

/* Where the placement rule allows `e` in slot `s`, and as which kind. */
static bool validate_placement(const struct timer_wheel *w, const struct timer_entry *e, unsigned s)
{
    bool ok = true;
    uint64_t distance = slot_distance(w, s);
    if (e->where & WHERE_FAR) {
        if (slot_of(e->expire_at) != s || e->expire_at < w->now || e->expire_at - w->now < TIMER_WHEEL_SLOTS)
            REPORT("far entry %p due %" PRIu64 " misplaced in slot %u at now=%" PRIu64 "\n", (void *)e, e->expire_at,
                   s, w->now);
        if (e->expire_at < w->far_min)
            REPORT("far entry %p due %" PRIu64 " before far_min %" PRIu64 "\n", (void *)e, e->expire_at, w->far_min);
    } else if (distance == 0 ? e->expire_at > w->now : e->expire_at != w->now + distance) {
        REPORT("near entry %p due %" PRIu64 " misplaced in slot %u at now=%" PRIu64 "\n", (void *)e, e->expire_at, s,
               w->now);
    }
    return ok;
}

static bool validate_slot(const struct timer_wheel *w, unsigned s, size_t *count)
{
    bool ok = true, seen_near = false;
    const struct list_node *head = &w->slots[s], *prev = head;
    if (list_is_empty(head))
        REPORT("slot %u marked occupied but empty\n", s);
    for (const struct list_node *n = head->next; n != head; prev = n, n = n->next) {
        const struct timer_entry *e = list_container_of(n, struct timer_entry, link);
        (*count)++;
        if (n->prev != prev)
            REPORT("broken back link in slot %u\n", s);
        if (e->wheel != w)
            REPORT("entry %p in slot %u belongs to wheel %p\n", (void *)e, s, (void *)e->wheel);
        if ((e->where & ~WHERE_FAR) != s)
            REPORT("entry %p in slot %u says %" PRIu32 "\n", (void *)e, s, e->where);
        if ((e->where & WHERE_FAR) && seen_near)
            REPORT("far entry %p after a near one in slot %u\n", (void *)e, s);
        seen_near |= !(e->where & WHERE_FAR);
        if (!validate_placement(w, e, s))
            ok = false;
    }
    if (head->prev != prev)
        REPORT("broken tail link in slot %u\n", s);
    if (bitmap_test(&w->near, s) != seen_near)
        REPORT("near bit of slot %u is %d\n", s, (int)!seen_near);
    return ok;
}

bool timer_wheel_validate(const struct timer_wheel *w)
{
    bool ok = validate_bitmap(&w->occupied, "occupied");
    if (!validate_bitmap(&w->near, "near"))
        ok = false;
    for (unsigned i = 0; i < TIMER_WHEEL_BITMAP_WORDS; i++)
        if (w->near.words[i] & ~w->occupied.words[i])
            REPORT("near bit set for an unoccupied slot in word %u\n", i);

    /* Entries are counted only in occupied slots and on the due list: if the
     * total matches the armed count, no entry hides in a slot marked empty. */
    size_t count = 0;
    for (unsigned s = bitmap_next(&w->occupied, 0); s != SLOT_NONE; s = bitmap_next(&w->occupied, s + 1))
        if (!validate_slot(w, s, &count))
            ok = false;
    const struct list_node *prev = &w->due;
    for (const struct list_node *n = w->due.next; n != &w->due; prev = n, n = n->next) {
        const struct timer_entry *e = list_container_of(n, struct timer_entry, link);
        count++;
        if (n->prev != prev)
            REPORT("broken back link in the due list\n");
        if (e->wheel != w || e->where != WHERE_DUE)
            REPORT("entry %p on the due list: wheel %p, where %" PRIu32 "\n", (void *)e, (void *)e->wheel, e->where);
        if (e->expire_at > w->now)
            REPORT("entry %p due %" PRIu64 " collected at now=%" PRIu64 "\n", (void *)e, e->expire_at, w->now);
    }
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
