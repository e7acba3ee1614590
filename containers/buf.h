/* buf.h - a growable byte buffer that owns its memory.
 *
 * Encoders append to a caller-owned buf; the caller frees it with buf_free.
 * Every append reports allocation failure by returning false and leaves the
 * buffer as it was, so a failed encode never leaves half a message behind
 * unless the encoder says so. */
#ifndef SR_BUF_H
#define SR_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/span.h"

struct buf {
    char *data;
    size_t len;
    size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
static inline void buf_reset(struct buf *b) { b->len = 0; }
static inline struct span buf_span(const struct buf *b) { return span_make(b->data, b->len); }

bool buf_reserve(struct buf *b, size_t extra);
bool buf_append(struct buf *b, const void *p, size_t n);
bool buf_append_byte(struct buf *b, char c);
bool buf_append_cstr(struct buf *b, const char *s);
static inline bool buf_append_span(struct buf *b, struct span s) { return buf_append(b, s.ptr, s.len); }
/* Decimal rendering of a signed 64-bit integer. */
bool buf_append_i64(struct buf *b, long long v);
/* Drops the first n bytes (used by consumers that parse from the front). */
void buf_consume(struct buf *b, size_t n);

#endif
