/* test_ptr_map.c - records found by the pointer they are about: add, find, remove, duplicates, clear. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "containers/list.h"
#include "containers/ptr_map.h"

static const uint8_t SEED[DICT_SEED_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

struct record {
    struct ptr_map_entry entry;
    int about; /* the record is about objects[about] */
};

static int objects[1000];

static void release(struct ptr_map_entry *e, void *ctx)
{
    size_t *released = ctx;
    (*released)++;
    free(list_container_of(e, struct record, entry));
}

static void test_add_find_remove(void)
{
    struct ptr_map m;
    ptr_map_init(&m, SEED);
    CHECK(ptr_map_find(&m, &objects[0]) == NULL); /* empty: nothing allocated */
    struct record *r[1000];
    for (int i = 0; i < 1000; i++) {
        r[i] = calloc(1, sizeof *r[i]);
        r[i]->about = i;
        CHECK(ptr_map_add(&m, &r[i]->entry, &objects[i]));
    }
    CHECK_EQ_INT(ptr_map_count(&m), 1000);
    struct record dup = { .about = 7 };
    CHECK(!ptr_map_add(&m, &dup.entry, &objects[7])); /* one record per pointer */
    for (int i = 0; i < 1000; i++) {
        struct ptr_map_entry *e = ptr_map_find(&m, &objects[i]);
        CHECK(e != NULL && list_container_of(e, struct record, entry)->about == i);
    }
    for (int i = 0; i < 1000; i += 2) {
        ptr_map_remove(&m, &r[i]->entry);
        free(r[i]);
    }
    CHECK_EQ_INT(ptr_map_count(&m), 500);
    for (int i = 0; i < 1000; i++)
        CHECK((ptr_map_find(&m, &objects[i]) != NULL) == (i % 2 == 1));
    CHECK(ptr_map_find(&m, &m) == NULL); /* a pointer never added */
    size_t released = 0;
    ptr_map_clear(&m, release, &released); /* frees the 500 left: ASan reports a leak otherwise */
    CHECK_EQ_INT(released, 500);
    CHECK_EQ_INT(ptr_map_count(&m), 0);
    CHECK(ptr_map_find(&m, &objects[1]) == NULL);
    struct record again = { .about = 1 };
    CHECK(ptr_map_add(&m, &again.entry, &objects[1])); /* usable after a clear */
    ptr_map_remove(&m, &again.entry);
    released = 0;
    ptr_map_clear(&m, release, &released);
    CHECK_EQ_INT(released, 0);
}

int main(void)
{
    test_add_find_remove();
    return test_main_result("test_ptr_map");
}
