/* rp_text.h - small text helpers of signalr-replay: formatted strings on the heap, a growable
 * byte buffer, a value quoted as a JSON string for messages. Every returned char * is the
 * caller's to free. */
#ifndef RP_TEXT_H
#define RP_TEXT_H

#include <stddef.h>

/* printf into a new string (never NULL: aborts when memory runs out). */
char *rp_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* s as a JSON string literal, cut to max characters of s ("..." marks a cut). */
char *rp_quote(const char *s, size_t max);
char *rp_strdup(const char *s);
char *rp_strndup(const char *s, size_t n);
void *rp_xmalloc(size_t n);
/* Decodes base64 (OpenSSL) into a new NUL-terminated buffer of *len bytes; NULL when invalid. */
char *rp_decode_base64(const char *b64, size_t *len);
void *rp_xrealloc(void *p, size_t n);

/* Bytes that grow as needed; p is NUL-terminated whenever len > 0 or p != NULL. */
struct rp_buf {
    char *p;
    size_t len;
    size_t cap;
};
void rp_buf_add(struct rp_buf *b, const void *data, size_t n);
void rp_buf_adds(struct rp_buf *b, const char *s);
/* Drops the first n bytes. */
void rp_buf_consume(struct rp_buf *b, size_t n);
void rp_buf_free(struct rp_buf *b);

#endif
