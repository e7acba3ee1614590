/* test_early_sends.c - bytes POSTed before a first GET: appended per token, taken once, bounded, dropped at their deadline. */
#include <string.h>

#include "check.h"
#include "hub/early_sends.h"

static const uint8_t SEED[DICT_SEED_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static void test_append_then_take(void)
{
    struct early_sends set;
    early_sends_init(&set, SEED);
    CHECK(early_sends_append(&set, span_from_cstr("t"), "ab", 2, 10, 1000, 0) == EARLY_OK);
    CHECK(early_sends_append(&set, span_from_cstr("t"), "cd", 2, 10, 1000, 1) == EARLY_OK);
    CHECK(early_sends_append(&set, span_from_cstr("u"), "x", 1, 10, 1000, 1) == EARLY_OK);
    struct buf out;
    buf_init(&out);
    early_sends_take(&set, span_from_cstr("t"), &out, 2);
    CHECK_EQ_INT(out.len, 4);
    CHECK(memcmp(out.data, "abcd", 4) == 0);
    buf_free(&out);
    early_sends_take(&set, span_from_cstr("t"), &out, 3); /* taken once */
    CHECK_EQ_INT(out.len, 0);
    CHECK_EQ_INT(early_sends_count(&set), 1);
    early_sends_free(&set); /* "u" still held: ASan checks nothing leaks */
}

static void test_bounded_and_expiring(void)
{
    struct early_sends set;
    early_sends_init(&set, SEED);
    CHECK(early_sends_append(&set, span_from_cstr("t"), "12345", 5, 8, 1000, 0) == EARLY_OK);
    CHECK(early_sends_append(&set, span_from_cstr("t"), "6789", 4, 8, 1000, 0) == EARLY_TOO_LARGE);
    CHECK(early_sends_append(&set, span_from_cstr("t"), "678", 3, 8, 1000, 0) == EARLY_OK);
    CHECK(early_sends_append(&set, span_from_cstr("v"), "too long", 9, 8, 1000, 0) == EARLY_TOO_LARGE);
    CHECK_EQ_INT(early_sends_count(&set), 1);
    struct buf out;
    buf_init(&out);
    early_sends_take(&set, span_from_cstr("t"), &out, 1000); /* its deadline: gone */
    CHECK_EQ_INT(out.len, 0);
    CHECK_EQ_INT(early_sends_count(&set), 0);
    early_sends_free(&set);
}

int main(void)
{
    test_append_then_take();
    test_bounded_and_expiring();
    return test_main_result("test_early_sends");
}
