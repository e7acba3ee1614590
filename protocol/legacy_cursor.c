/* legacy_cursor.c - "<instance>-<seq>" cursors (see legacy_cursor.h). */
#include "protocol/legacy_cursor.h"

/* v in lower-case hex without leading zeros ("0" for 0) at out; returns the digits written. A
 * cursor goes into every frame to every legacy recipient: snprintf's format parsing was a
 * measurable part of a fan-out's per-recipient work. */
static size_t put_hex(char *out, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[16];
    size_t n = 0;
    do {
        tmp[n++] = digits[v & 0xf];
        v >>= 4;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

size_t legacy_cursor_format(char out[LEGACY_CURSOR_MAX], uint32_t instance, uint64_t seq)
{
    size_t n = put_hex(out, instance);
    out[n++] = '-';
    n += put_hex(out + n, seq);
    out[n] = '\0';
    return n;
}

/* Lower-case hex without leading zeros (except "0" itself), at most max_digits. */
static bool parse_hex(const char *p, size_t len, size_t max_digits, uint64_t *out)
{
    if (len == 0 || len > max_digits || (len > 1 && p[0] == '0'))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            return false;
        v = v << 4 | d;
    }
    *out = v;
    return true;
}

bool legacy_cursor_parse(struct span text, uint32_t *instance, uint64_t *seq)
{
    size_t dash = 0;
    while (dash < text.len && text.ptr[dash] != '-')
        dash++;
    if (dash == text.len)
        return false;
    uint64_t inst;
    if (!parse_hex(text.ptr, dash, 8, &inst) ||
        !parse_hex(text.ptr + dash + 1, text.len - dash - 1, 16, seq))
        return false;
    *instance = (uint32_t)inst;
    return true;
}
