/* base64url.c - unpadded, canonical base64url over OpenSSL's base64 (see base64url.h). */
#include "hub/base64url.h"

#include <limits.h>
#include <string.h>

#include <openssl/evp.h>

bool base64url_is_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

bool base64url_append(struct buf *out, const unsigned char *in, size_t n)
{
    if (n > INT_MAX / 2 || !buf_reserve(out, (n + 2) / 3 * 4 + 1)) /* padding and NUL included */
        return false;
    char *text = out->data + out->len;
    int written = EVP_EncodeBlock((unsigned char *)text, in, (int)n);
    size_t len = written > 0 ? (size_t)written : 0;
    while (len > 0 && text[len - 1] == '=')
        len--;
    for (size_t i = 0; i < len; i++)
        text[i] = text[i] == '+' ? '-' : text[i] == '/' ? '_' : text[i];
    text[len] = '\0';
    out->len += len;
    return true;
}

/* Decodes into out's spare room; returns the byte count or -1. `scratch`
 * holds the padded standard-alphabet text. */
static long decode_block(struct buf *out, struct span text, char *scratch)
{
    size_t pad = (4 - text.len % 4) % 4;
    for (size_t i = 0; i < text.len; i++)
        scratch[i] = text.ptr[i] == '-' ? '+' : text.ptr[i] == '_' ? '/' : text.ptr[i];
    memset(scratch + text.len, '=', pad);
    unsigned char *bytes = (unsigned char *)out->data + out->len;
    int got = EVP_DecodeBlock(bytes, (const unsigned char *)scratch, (int)(text.len + pad));
    if (got < 0 || (size_t)got < pad)
        return -1;
    return (long)((size_t)got - pad); /* EVP_DecodeBlock counts padding as zero bytes */
}

enum proto_status base64url_decode_append(struct buf *out, struct span text)
{
    if (text.len % 4 == 1 || text.len > INT_MAX / 2) /* no byte count encodes to len % 4 == 1 */
        return PROTO_ERR_SYNTAX;
    for (size_t i = 0; i < text.len; i++)
        if (!base64url_is_char((unsigned char)text.ptr[i]))
            return PROTO_ERR_SYNTAX;
    size_t padded = (text.len + 3) / 4 * 4;
    struct buf scratch;
    buf_init(&scratch);
    if (!buf_reserve(&scratch, padded + 1) || !buf_reserve(out, padded / 4 * 3 + 1)) {
        buf_free(&scratch);
        return PROTO_ERR_NOMEM;
    }
    enum proto_status status = PROTO_ERR_SYNTAX;
    long len = decode_block(out, text, scratch.data);
    if (len >= 0) {
        /* The canonical check: encoding the bytes again gives the same text. */
        const unsigned char *bytes = (const unsigned char *)out->data + out->len;
        buf_reset(&scratch);
        if (!base64url_append(&scratch, bytes, (size_t)len))
            status = PROTO_ERR_NOMEM;
        else if (scratch.len == text.len && memcmp(scratch.data, text.ptr, text.len) == 0)
            status = PROTO_OK;
    }
    if (status == PROTO_OK) {
        out->len += (size_t)len;
        out->data[out->len] = '\0';
    }
    buf_free(&scratch);
    return status;
}
