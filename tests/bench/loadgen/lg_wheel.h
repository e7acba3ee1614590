/* lg_wheel.h - a hashed timing wheel over connection slots: each slot (0..capacity-1) has at
 * most one timer, kept in intrusive index links, so arming, re-arming and cancelling are O(1)
 * and a tick touches one wheel bucket. Resolution is one millisecond; a due time further away
 * than the wheel's span simply stays in its bucket and is looked at again a lap later. */
#ifndef LG_WHEEL_H
#define LG_WHEEL_H

#include <stdint.h>

#define LG_WHEEL_BUCKETS 4096 /* 4.096 s per lap */

struct lg_wheel {
    uint32_t capacity;
    int32_t *next;        /* per slot; -1 ends a list */
    int32_t *prev;        /* per slot; -1 = first in bucket; -2 = not armed */
    uint64_t *due_ms;
    int32_t head[LG_WHEEL_BUCKETS];
    uint64_t now_ms;      /* everything up to here has been expired */
    uint32_t armed;
};

int lg_wheel_init(struct lg_wheel *w, uint32_t capacity, uint64_t now_ms);
void lg_wheel_free(struct lg_wheel *w);
/* Arms (or re-arms) slot's timer for due_ms; a time already past fires on the next advance. */
void lg_wheel_arm(struct lg_wheel *w, uint32_t slot, uint64_t due_ms);
void lg_wheel_cancel(struct lg_wheel *w, uint32_t slot);
int lg_wheel_is_armed(const struct lg_wheel *w, uint32_t slot);

/* Moves time to now_ms and writes the slots whose timers expired (they are disarmed) into
 * out[0..max). Returns how many; call again while it returns max. Callbacks run by the caller
 * after this returns may re-arm freely. */
uint32_t lg_wheel_advance(struct lg_wheel *w, uint64_t now_ms, uint32_t *out, uint32_t max);

#endif
