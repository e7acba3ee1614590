/* msgpack_check.c - allocation-free structural walk of one MessagePack value
 * (see msgpack_check.h for why it runs before msgpack-c). */
#include "protocol/msgpack_check.h"

#include <msgpack/unpack_define.h>
#include <stdbool.h>
#include <stdint.h>

/* The limit is msgpack-c's parser stack: a 33rd nested container fails there. */
_Static_assert(MSGPACK_MAX_DEPTH == MSGPACK_EMBED_STACK_SIZE,
               "MSGPACK_MAX_DEPTH must match msgpack-c's MSGPACK_EMBED_STACK_SIZE");

/* What one header says: how many bytes it occupies, how many opaque bytes
 * follow it (str/bin/ext data, fixed-size numbers), and how many values it
 * opens (array elements, or keys plus values of a map). */
struct header {
    size_t header_len;
    uint64_t body_len;
    uint64_t children;
    bool container;
};

static uint64_t load_be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Reads the header at p (avail >= 1 bytes). Returns false on a truncated
 * header or the reserved byte 0xc1. */
static bool read_header(const unsigned char *p, size_t avail, struct header *h)
{
    unsigned char b = p[0];
    *h = (struct header){ 1, 0, 0, false };

    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
        return true; /* fixint, nil, bool */
    if (b >= 0x80 && b <= 0x8f) {
        h->children = 2u * (b & 0x0f);
        h->container = true;
        return true;
    }
    if (b >= 0x90 && b <= 0x9f) {
        h->children = b & 0x0f;
        h->container = true;
        return true;
    }
    if (b >= 0xa0 && b <= 0xbf) {
        h->body_len = b & 0x1f;
        return true;
    }

    size_t len_bytes = 0; /* size of the length field that follows b */
    switch (b) {
    case 0xca: h->body_len = 4; return true;              /* float 32 */
    case 0xcb: h->body_len = 8; return true;              /* float 64 */
    case 0xcc: case 0xd0: h->body_len = 1; return true;   /* (u)int 8 */
    case 0xcd: case 0xd1: h->body_len = 2; return true;   /* (u)int 16 */
    case 0xce: case 0xd2: h->body_len = 4; return true;   /* (u)int 32 */
    case 0xcf: case 0xd3: h->body_len = 8; return true;   /* (u)int 64 */
    case 0xd4: h->body_len = 1 + 1; return true;          /* fixext: type byte + data */
    case 0xd5: h->body_len = 1 + 2; return true;
    case 0xd6: h->body_len = 1 + 4; return true;
    case 0xd7: h->body_len = 1 + 8; return true;
    case 0xd8: h->body_len = 1 + 16; return true;
    case 0xc4: case 0xc7: case 0xd9: len_bytes = 1; break; /* bin8, ext8, str8 */
    case 0xc5: case 0xc8: case 0xda: case 0xdc: case 0xde: len_bytes = 2; break;
    case 0xc6: case 0xc9: case 0xdb: case 0xdd: case 0xdf: len_bytes = 4; break;
    default: return false; /* 0xc1: never used */
    }
    if (avail < 1 + len_bytes)
        return false;
    uint64_t n = load_be(p + 1, len_bytes);
    h->header_len = 1 + len_bytes;
    switch (b) {
    case 0xdc: case 0xdd: h->children = n; h->container = true; break;
    case 0xde: case 0xdf: h->children = 2 * n; h->container = true; break;
    case 0xc7: case 0xc8: case 0xc9: h->body_len = n + 1; break; /* ext: + type byte */
    default: h->body_len = n; break;
    }
    return true;
}

enum proto_status msgpack_check_value(const char *data, size_t len, unsigned max_depth,
                                      size_t *value_len, struct proto_error *err)
{
    /* pending[d] = values still to read in the container open at depth d;
     * pending[0] is the single root value. */
    uint64_t pending[MSGPACK_MAX_DEPTH + 1];
    unsigned depth = 0;
    size_t pos = 0;

    if (max_depth > MSGPACK_MAX_DEPTH)
        max_depth = MSGPACK_MAX_DEPTH;
    pending[0] = 1;
    for (;;) {
        while (pending[depth] == 0) {
            if (depth == 0) {
                *value_len = pos;
                return PROTO_OK;
            }
            depth--;
        }
        if (pos >= len)
            return proto_fail(err, PROTO_ERR_SYNTAX, "truncated MessagePack value");
        struct header h;
        const unsigned char *p = (const unsigned char *)data + pos;
        if (!read_header(p, len - pos, &h))
            return proto_fail(err, PROTO_ERR_SYNTAX, "invalid or truncated MessagePack header");
        pos += h.header_len;
        size_t left = len - pos;
        pending[depth]--;
        if (h.container) {
            /* Each child takes at least one byte: a count beyond what is left is a lie. */
            if (h.children > left)
                return proto_fail(err, PROTO_ERR_SYNTAX,
                                  "MessagePack array/map declares more elements than bytes remain");
            if (depth + 1 > max_depth)
                return proto_fail(err, PROTO_ERR_TOO_DEEP, "MessagePack nesting too deep");
            if (h.children > 0)
                pending[++depth] = h.children;
        } else {
            if (h.body_len > left)
                return proto_fail(err, PROTO_ERR_SYNTAX, "MessagePack value runs past the end");
            pos += (size_t)h.body_len;
        }
    }
}
