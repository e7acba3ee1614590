/* span.h - a borrowed, length-delimited byte range.
 *
 * A span never owns its bytes: whoever produced it says how long they live
 * (usually "as long as the input buffer you decoded from"). A span whose ptr
 * is NULL is *absent*; a span with a ptr and len 0 is *present but empty*.
 * That distinction carries "no invocationId" vs "invocationId: \"\"". */
#ifndef SR_SPAN_H
#define SR_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct span {
    const char *ptr;
    size_t len;
};

#define SPAN_LIT(s) ((struct span){ (s), sizeof(s) - 1 })
#define SPAN_NONE ((struct span){ NULL, 0 })

static inline struct span span_make(const char *ptr, size_t len)
{
    return (struct span){ ptr, len };
}

static inline struct span span_from_cstr(const char *s)
{
    return s ? (struct span){ s, strlen(s) } : SPAN_NONE;
}

static inline bool span_is_set(struct span s) { return s.ptr != NULL; }
static inline bool span_is_empty(struct span s) { return s.len == 0; }

static inline bool span_eq(struct span a, struct span b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static inline bool span_eq_cstr(struct span a, const char *s)
{
    return span_eq(a, span_from_cstr(s));
}

/* ASCII case-insensitive equality: hub and method names are matched this way
 * by both SignalR servers (OrdinalIgnoreCase on ASCII names). */
bool span_eq_nocase(struct span a, struct span b);

/* True if the bytes are well-formed UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF). */
bool utf8_is_valid(const char *p, size_t len);

#endif
