/* test_spent_ids.c - spent connection ids: remembered until their deadline, dropped after, re-adds extend. */
#include <string.h>

#include "check.h"
#include "hub/spent_ids.h"

static const uint8_t SEED[DICT_SEED_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static void test_remembered_until_deadline(void)
{
    struct spent_ids set;
    spent_ids_init(&set, SEED);
    CHECK(!spent_ids_has(&set, span_from_cstr("a"), 0));
    CHECK(spent_ids_add(&set, span_from_cstr("a"), 1000, 0));
    CHECK(spent_ids_add(&set, span_from_cstr("b"), 1500, 500));
    CHECK(spent_ids_has(&set, span_from_cstr("a"), 999));
    CHECK(spent_ids_has(&set, span_from_cstr("b"), 999));
    CHECK(!spent_ids_has(&set, span_from_cstr("c"), 999));
    CHECK(!spent_ids_has(&set, span_from_cstr("a"), 1000)); /* its deadline: gone, and dropped */
    CHECK_EQ_INT(spent_ids_count(&set), 1);
    CHECK(spent_ids_has(&set, span_from_cstr("b"), 1499));
    CHECK(!spent_ids_has(&set, span_from_cstr("b"), 1500));
    CHECK_EQ_INT(spent_ids_count(&set), 0);
    spent_ids_free(&set);
}

static void test_readd_extends(void)
{
    struct spent_ids set;
    spent_ids_init(&set, SEED);
    CHECK(spent_ids_add(&set, span_from_cstr("a"), 1000, 0));
    CHECK(spent_ids_add(&set, span_from_cstr("b"), 1200, 100));
    CHECK(spent_ids_add(&set, span_from_cstr("a"), 3000, 200)); /* moves to the back, later deadline */
    CHECK_EQ_INT(spent_ids_count(&set), 2);
    CHECK(!spent_ids_has(&set, span_from_cstr("b"), 1300));
    CHECK(spent_ids_has(&set, span_from_cstr("a"), 2999));
    CHECK(!spent_ids_has(&set, span_from_cstr("a"), 3000));
    spent_ids_free(&set);
}

/* Many ids, freed with entries still held (ASan checks nothing leaks). */
static void test_many_then_free(void)
{
    struct spent_ids set;
    spent_ids_init(&set, SEED);
    char id[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(id, sizeof id, "id-%d", i);
        CHECK(spent_ids_add(&set, span_make(id, (size_t)n), (uint64_t)i + 100, (uint64_t)i));
    }
    CHECK_EQ_INT(spent_ids_count(&set), 100); /* each add first dropped the expired ones */
    CHECK(spent_ids_has(&set, span_from_cstr("id-4999"), 5000));
    CHECK(!spent_ids_has(&set, span_from_cstr("id-4800"), 5000));
    spent_ids_free(&set);
}

int main(void)
{
    test_remembered_until_deadline();
    test_readd_extends();
    test_many_then_free();
    return test_main_result("test_spent_ids");
}
