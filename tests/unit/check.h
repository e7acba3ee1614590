/* check.h - the assertion macros of the unit tests.
 *
 * A failed CHECK prints file:line and the expression, counts the failure and
 * continues, so one run reports every broken expectation; test_main_result()
 * turns the count into the exit status ctest reads. A test that ran no check
 * at all fails too: a green run must mean something was checked. */
#ifndef SR_CHECK_H
#define SR_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        check_count++;                                                                \
        if (!(cond)) {                                                                \
            check_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                             \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                            \
    do {                                                                              \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);               \
        check_count++;                                                                \
        if (check_a_ != check_b_) {                                                   \
            check_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld != %lld)\n",         \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);                  \
        }                                                                             \
    } while (0)

/* Compares n bytes at p with a NUL-terminated expected string. */
#define CHECK_BYTES(p, n, expected)                                                   \
    do {                                                                              \
        const char *check_p_ = (const char *)(p);                                     \
        size_t check_n_ = (size_t)(n);                                                \
        const char *check_e_ = (expected);                                            \
        check_count++;                                                                \
        if (check_n_ != strlen(check_e_) || memcmp(check_p_, check_e_, check_n_)) {   \
            check_failures++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n  got:      %.*s\n  expected: %s\n", \
                    __FILE__, __LINE__, #p, (int)check_n_, check_p_, check_e_);       \
        }                                                                             \
    } while (0)

static inline int test_main_result(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    if (check_count == 0) {
        fprintf(stderr, "%s: no check ran\n", name);
        return 1;
    }
    return check_failures ? 1 : 0;
}

#endif
