/* msgpack_check.h - a structural guard run before untrusted bytes reach msgpack-c.
 *
 * Why this exists: msgpack-c's unpacker allocates count * sizeof(msgpack_object)
 * (24 bytes) from its zone as soon as it reads an array or map header, before
 * it has seen a single element. A 6-byte input "dd ff ff ff ff 00" therefore
 * asks for ~100 GB (under ASan: an immediate abort). msgpack-c also nests at
 * most MSGPACK_EMBED_STACK_SIZE (32) containers: the 33rd container header,
 * even an empty one, fails with MSGPACK_UNPACK_NOMEM_ERROR, which is
 * indistinguishable from a real allocation failure.
 *
 * msgpack_check_value() walks one value's headers without allocating and
 * rejects what would hurt: a container declaring more elements than there are
 * bytes left (every element takes at least one byte, every map entry two), a
 * str/bin/ext length past the end, the reserved byte 0xc1, and nesting deeper
 * than max_depth. After it says OK, msgpack-c's allocations are bounded by
 * 24 bytes per input byte and its stack never overflows. It does not look
 * inside strings (UTF-8 is the caller's business). */
#ifndef SR_MSGPACK_CHECK_H
#define SR_MSGPACK_CHECK_H

#include <stddef.h>

#include "protocol/proto_status.h"

/* Deepest container nesting msgpack-c can unpack (its MSGPACK_EMBED_STACK_SIZE);
 * the outermost container counts as depth 1. */
#define MSGPACK_MAX_DEPTH 32

/* A payload (arguments, item, result, headers, stream ids) always sits one
 * level inside a hub message's top-level array. */
#define MSGPACK_PAYLOAD_MAX_DEPTH (MSGPACK_MAX_DEPTH - 1)

/* Checks the one MessagePack value that starts at data[0]. On PROTO_OK
 * *value_len is its size in bytes (bytes after it are not looked at). Errors:
 * PROTO_ERR_SYNTAX (truncated, 0xc1, count larger than the bytes left),
 * PROTO_ERR_TOO_DEEP (more than max_depth nested containers; max_depth is
 * capped at MSGPACK_MAX_DEPTH). */
enum proto_status msgpack_check_value(const char *data, size_t len, unsigned max_depth,
                                      size_t *value_len, struct proto_error *err);

#endif
