/* clock32.h - a time of the relay's clock kept in 32 bits, for records held per client.
 *
 * clock_now_ms() (relay/clock.h) is 64-bit and never wraps; a per-client
 * record keeps its deadlines and its last-receipt time as the low 32 bits of
 * that clock, which wrap every 2^32 ms (49.7 days), so a relay that runs for
 * months sees them wrap many times. They stay exact under these bounds:
 *  - a deadline is compared with now while it is less than 2^31 ms (24.8
 *    days) away, in the future or in the past (every deadline the relay sets
 *    is at most 86,400 s away: the configuration caps every duration there,
 *    relay/config.c, and a passed deadline is acted on by the next wheel tick);
 *  - a time in the past is read as "how long ago" while that is less than
 *    2^32 ms.
 * tests/unit/test_clock32.c checks both across many wraps. */
#ifndef SR_CLOCK32_H
#define SR_CLOCK32_H

#include <stdint.h>

static inline uint32_t clock32(uint64_t now_ms)
{
    return (uint32_t)now_ms;
}

/* Milliseconds from now until t (negative: t has passed). */
static inline int64_t clock32_until(uint32_t t, uint64_t now_ms)
{
    uint32_t d = t - (uint32_t)now_ms; /* modulo 2^32 */
    return d <= INT32_MAX ? (int64_t)d : (int64_t)d - ((int64_t)1 << 32);
}

/* t on the 64-bit clock (now when t has passed). */
static inline uint64_t clock32_absolute(uint32_t t, uint64_t now_ms)
{
    int64_t until = clock32_until(t, now_ms);
    return until > 0 ? now_ms + (uint64_t)until : now_ms;
}

/* Milliseconds since t (t in the past). */
static inline uint32_t clock32_since(uint32_t t, uint64_t now_ms)
{
    return (uint32_t)now_ms - t;
}

#endif
