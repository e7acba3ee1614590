/* test_legacy_cursor.c - cursor round trips and refusal of foreign cursors. */
#include "check.h"
#include "protocol/legacy_cursor.h"

int main(void)
{
    char text[LEGACY_CURSOR_MAX];
    uint32_t instance;
    uint64_t seq;
    size_t n = legacy_cursor_format(text, 0x5c1b2a9fu, 0);
    CHECK_BYTES(text, n, "5c1b2a9f-0");
    CHECK(legacy_cursor_parse(span_make(text, n), &instance, &seq));
    CHECK_EQ_INT(instance, 0x5c1b2a9fu);
    CHECK_EQ_INT(seq, 0);
    n = legacy_cursor_format(text, 0xffffffffu, UINT64_MAX);
    CHECK_BYTES(text, n, "ffffffff-ffffffffffffffff");
    CHECK(legacy_cursor_parse(span_make(text, n), &instance, &seq));
    CHECK(seq == UINT64_MAX);
    n = legacy_cursor_format(text, 0, 0x10a);
    CHECK_BYTES(text, n, "0-10a");
    CHECK(text[n] == '\0');
    /* What the original server wrote, and other junk, is not ours. */
    const char *foreign[] = { "d-5C1B2A9F-A,0|B,0|C,1", "", "-", "1-", "-1", "1-1-1", "01-1", "1-01",
                              "1-G", "123456789-1", "1-12345678901234567", "1 -1", "A-1" };
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
        CHECK(!legacy_cursor_parse(span_from_cstr(foreign[i]), &instance, &seq));
    return test_main_result("test_legacy_cursor");
}
