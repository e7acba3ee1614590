/* span_property.h - span checks the zero-copy decoders' fuzz properties share:
 * every decoded span lies inside the input, and two spans are the same
 * (present or absent alike, equal bytes). */
#ifndef SR_FUZZ_SPAN_PROPERTY_H
#define SR_FUZZ_SPAN_PROPERTY_H

#include <stdbool.h>

#include "containers/span.h"

static inline bool inside(struct span s, struct span body)
{
    if (!s.ptr || s.len == 0)
        return true;
    return s.ptr >= body.ptr && s.ptr + s.len <= body.ptr + body.len;
}

static inline bool same_span(struct span a, struct span b)
{
    return span_is_set(a) == span_is_set(b) && span_eq(a, b);
}

#endif
