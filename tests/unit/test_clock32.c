/* test_clock32.c - 32-bit times of the relay's clock (relay/clock32.h) stay exact across wraps, for a relay running for months.
 *
 * The reference is the 64-bit clock itself. Each case is checked at times
 * right around a wrap of the low 32 bits (every 49.7 days) and at random times
 * over a year of uptime; then a session-like deadline (armed 15 s to 86,400 s
 * ahead, the longest the configuration allows, and checked by a clock that
 * moves forward in uneven steps, sometimes late) is followed through six months
 * and compared with the same deadline kept in 64 bits after every step. */
#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "test_rng.h"
#include "relay/clock32.h"

#define WRAP (UINT64_C(1) << 32)
#define DAY_MS UINT64_C(86400000)

static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);
static uint64_t rng_next(void) { return test_rng_next(&rng_state); }

/* until, absolute and since at `now` for a time `delta` ms away (negative: past). */
static void check_at(uint64_t now, int64_t delta)
{
    uint64_t t = now + (uint64_t)delta; /* delta > -now everywhere below */
    uint32_t t32 = clock32(t);
    CHECK_EQ_INT(clock32_until(t32, now), delta);
    CHECK(clock32_absolute(t32, now) == (delta > 0 ? t : now));
    if (delta <= 0)
        CHECK_EQ_INT(clock32_since(t32, now), -delta);
}

static void test_around_wraps(void)
{
    const int64_t deltas[] = { 0, 1, -1, 15000, -15000, (int64_t)DAY_MS, -(int64_t)DAY_MS, INT32_MAX, -(int64_t)INT32_MAX };
    for (uint64_t w = 1; w <= 8; w++) /* the first eight wraps: a year of uptime */
        for (int64_t off = -3; off <= 3; off++)
            for (size_t i = 0; i < sizeof deltas / sizeof deltas[0]; i++) {
                check_at(w * WRAP + (uint64_t)off, deltas[i]);
                check_at(w * WRAP + (uint64_t)off - (uint64_t)DAY_MS, deltas[i]);
            }
}

static void test_random_times(void)
{
    int failures_before = check_failures;
    for (int i = 0; i < 200000 && check_failures == failures_before; i++) {
        uint64_t now = WRAP + rng_next() % (8 * WRAP);
        int64_t delta = (int64_t)(rng_next() % ((uint64_t)INT32_MAX * 2 + 1)) - INT32_MAX;
        check_at(now, delta);
    }
    /* "how long ago" is exact up to 2^32 - 1 ms. */
    uint64_t now = 5 * WRAP + 12345;
    CHECK(clock32_since(clock32(now - (WRAP - 1)), now) == WRAP - 1);
}

/* A deadline armed and re-armed as a session does, against its 64-bit twin. */
static void test_session_deadline_for_months(void)
{
    uint64_t now = WRAP - 3 * DAY_MS; /* the first wrap three days in */
    const uint64_t end = now + 183 * DAY_MS;
    uint64_t due64 = 0;
    uint32_t due32 = 0;
    bool armed = false;
    int fired = 0, wraps_crossed = 0, failures_before = check_failures;
    while (now < end && check_failures == failures_before) {
        if (!armed) {
            uint64_t in = 15000 + rng_next() % (DAY_MS - 15000 + 1);
            due64 = now + in;
            due32 = clock32(due64);
            armed = true;
        }
        uint64_t step = rng_next() % 4 == 0 ? rng_next() % (DAY_MS / 4) : rng_next() % 60000;
        if ((now + step) / WRAP != now / WRAP)
            wraps_crossed++;
        now += step;
        bool due_ref = now >= due64;
        CHECK(due_ref == (clock32_until(due32, now) <= 0));
        CHECK(clock32_absolute(due32, now) == (due_ref ? now : due64));
        if (due_ref) {
            fired++;
            armed = false;
        }
    }
    CHECK(fired > 300);
    CHECK(wraps_crossed >= 3);
}

int main(void)
{
    test_around_wraps();
    test_random_times();
    test_session_deadline_for_months();
    return test_main_result("clock32");
}
