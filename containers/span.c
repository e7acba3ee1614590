/* span.c - comparisons and validation on borrowed byte ranges. */
#include "containers/span.h"

#include <stdint.h>

static unsigned char ascii_lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

bool span_eq_nocase(struct span a, struct span b)
{
    if (a.len != b.len)
        return false;
    for (size_t i = 0; i < a.len; i++)
        if (ascii_lower((unsigned char)a.ptr[i]) != ascii_lower((unsigned char)b.ptr[i]))
            return false;
    return true;
}

/* Length of the sequence that starts with lead byte c, 0 if c cannot lead. */
static size_t utf8_sequence_length(unsigned char c)
{
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

bool utf8_is_valid(const char *p, size_t len)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_sequence_length(s[i]);
        if (n == 0 || n > len - i)
            return false;
        for (size_t k = 1; k < n; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
        /* Reject overlongs, surrogates and values past U+10FFFF. */
        if (n == 3 && s[i] == 0xE0 && s[i + 1] < 0xA0) return false;
        if (n == 3 && s[i] == 0xED && s[i + 1] > 0x9F) return false;
        if (n == 4 && s[i] == 0xF0 && s[i + 1] < 0x90) return false;
        if (n == 4 && s[i] == 0xF4 && s[i + 1] > 0x8F) return false;
        i += n;
    }
    return true;
}
