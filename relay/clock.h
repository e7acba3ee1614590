/* clock.h - the relay's one clock: monotonic milliseconds.
 * hub/ never reads a clock; relay/ reads this one and passes `now` in. */
#ifndef SR_CLOCK_H
#define SR_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#endif
