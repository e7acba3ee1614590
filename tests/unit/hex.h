/* hex.h - hex text to bytes, for the golden vectors the specs write in hex. */
#ifndef SR_TEST_HEX_H
#define SR_TEST_HEX_H

#include <stddef.h>

/* "0d 96 01 ..." (spaces and other non-hex characters ignored) into out;
 * returns the number of bytes the text holds (which may exceed cap). */
static inline size_t hex(const char *text, char *out, size_t cap)
{
    size_t n = 0;
    int high = -1;
    for (const char *p = text; *p; p++) {
        int v;
        if (*p >= '0' && *p <= '9') v = *p - '0';
        else if (*p >= 'a' && *p <= 'f') v = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F') v = *p - 'A' + 10;
        else continue;
        if (high < 0) {
            high = v;
        } else {
            if (n < cap)
                out[n] = (char)(high << 4 | v);
            n++;
            high = -1;
        }
    }
    return n;
}

#endif
