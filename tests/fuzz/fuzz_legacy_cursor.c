/* fuzz_legacy_cursor.c - the legacy message cursor "<instance>-<seq>" (protocol/legacy_cursor.h).
 *
 * Properties:
 *   - rejection: legacy_cursor_parse accepts the input exactly when a
 *     recogniser written here does: lower-case hex without leading zeros
 *     ("0" itself allowed), at most 8 digits, '-', at most 16 digits, nothing
 *     else; and what it accepts formats back to exactly the input (one
 *     spelling per cursor, so a foreign or altered cursor is never read as a
 *     position). ASan checks nothing past the input is read.
 *   - round trip: the first 12 bytes as (instance, seq) format to a cursor
 *     the recogniser accepts, whose length is returned, NUL-terminated within
 *     LEGACY_CURSOR_MAX, that parses back to the same two numbers; every
 *     one-byte change of it (to each of the next input bytes) is refused or
 *     parses to the numbers that the changed text spells.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 150000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/legacy_cursor.h"

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_legacy_cursor: property violated: %s\n", what);
    abort();
}

/* Reads canonical lower-case hex of at most max digits from p[0..n). */
static bool ref_hex(const unsigned char *p, size_t n, size_t max, uint64_t *out)
{
    if (n == 0 || n > max || (n > 1 && p[0] == '0'))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        const char *digits = "0123456789abcdef";
        const char *at = p[i] ? strchr(digits, p[i]) : NULL;
        if (!at)
            return false;
        v = v * 16 + (uint64_t)(at - digits);
    }
    *out = v;
    return true;
}

static bool ref_parse(const unsigned char *p, size_t n, uint32_t *instance, uint64_t *seq)
{
    const unsigned char *dash = memchr(p, '-', n);
    if (!dash)
        return false;
    size_t left = (size_t)(dash - p);
    uint64_t inst;
    if (!ref_hex(p, left, 8, &inst) || !ref_hex(dash + 1, n - left - 1, 16, seq))
        return false;
    *instance = (uint32_t)inst;
    return true;
}

static void check_text(const unsigned char *p, size_t n)
{
    uint32_t instance = 0, ref_instance = 0;
    uint64_t seq = 0, ref_seq = 0;
    bool ok = legacy_cursor_parse(span_make((const char *)p, n), &instance, &seq);
    bool ref = ref_parse(p, n, &ref_instance, &ref_seq);
    if (ok != ref)
        fail(ok ? "a cursor the recogniser refuses was accepted" : "a well-formed cursor was refused");
    if (!ok)
        return;
    if (instance != ref_instance || seq != ref_seq)
        fail("parsed to other numbers than the text spells");
    char again[LEGACY_CURSOR_MAX];
    size_t len = legacy_cursor_format(again, instance, seq);
    if (len != n || memcmp(again, p, n) != 0)
        fail("an accepted cursor does not format back to itself");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_text(data, size);
    if (size < 12)
        return 0;

    uint32_t instance = 0;
    uint64_t seq = 0;
    for (int i = 0; i < 4; i++)
        instance = instance << 8 | data[i];
    for (int i = 4; i < 12; i++)
        seq = seq << 8 | data[i];
    char text[LEGACY_CURSOR_MAX + 1];
    memset(text, 'X', sizeof text);
    size_t n = legacy_cursor_format(text, instance, seq);
    if (n == 0 || n >= LEGACY_CURSOR_MAX || text[n] != '\0' || strlen(text) != n)
        fail("format did not write a NUL-terminated cursor within LEGACY_CURSOR_MAX");
    uint32_t ref_instance;
    uint64_t ref_seq;
    if (!ref_parse((const unsigned char *)text, n, &ref_instance, &ref_seq) || ref_instance != instance ||
        ref_seq != seq)
        fail("format wrote something the recogniser does not read as the same numbers");
    uint32_t back_instance;
    uint64_t back_seq;
    if (!legacy_cursor_parse(span_make(text, n), &back_instance, &back_seq) || back_instance != instance ||
        back_seq != seq)
        fail("format then parse changed the numbers");

    /* one-byte changes, truncations and extensions, each judged by check_text */
    unsigned char changed[LEGACY_CURSOR_MAX + 1];
    for (size_t i = 12; i < size && i < 12 + 64; i++) {
        memcpy(changed, text, n);
        changed[(i - 12) % n] = data[i];
        check_text(changed, n);
        changed[n] = data[i];
        check_text(changed, n + 1);
    }
    for (size_t cut = 0; cut < n; cut++)
        check_text((const unsigned char *)text, cut);
    return 0;
}
