/* test_rng.h - the unit tests' random numbers: xorshift64*, from a fixed seed the
 * caller keeps, so that a failing run reproduces. Not for anything but tests. */
#ifndef SR_TEST_RNG_H
#define SR_TEST_RNG_H

#include <stdint.h>

/* The next number of the sequence *state (non-zero) stands for. */
static inline uint64_t test_rng_next(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * UINT64_C(2685821657736338717);
}

#endif
