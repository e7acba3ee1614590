/* msgpack_array.h - one MessagePack message array, read element by element.
 *
 * The Core MessagePack hub protocol and the service protocol both frame every
 * message as one array whose elements are decoded in order, some kept as raw
 * bytes (arguments, payloads). This reader does the common part once: it
 * checks the whole value with msgpack_check_value (so msgpack-c never
 * allocates for a hostile count), reads the array header, and hands out one
 * element at a time, each unpacked into a zone that is cleared before the
 * next, with its raw bytes as a span into the input.
 *
 * Ownership: the reader borrows `body` for its lifetime and owns its zone;
 * msgpack_array_close frees it. An element's msgpack_object is valid until
 * the next msgpack_array_next. */
#ifndef SR_MSGPACK_ARRAY_H
#define SR_MSGPACK_ARRAY_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/span.h"
#include "protocol/proto_status.h"

struct msgpack_array {
    const char *body;
    size_t len;
    size_t pos;         /* offset of the next element */
    uint32_t count;     /* elements the array declares */
    uint32_t used;      /* elements read so far */
    msgpack_zone zone;  /* holds the current element's arrays and maps */
    msgpack_object obj; /* the current element */
};

/* Opens body[0..len) as exactly one array, nested at most max_depth deep.
 * `what` names the message in errors ("message", "service message"). On
 * failure nothing needs closing. */
enum proto_status msgpack_array_open(struct msgpack_array *a, const char *body, size_t len, unsigned max_depth,
                                     const char *what, struct proto_error *err);
void msgpack_array_close(struct msgpack_array *a);

static inline bool msgpack_array_has_more(const struct msgpack_array *a) { return a->used < a->count; }

/* The next element into *obj and, when raw is not NULL, its bytes into *raw.
 * `missing` is the error detail when the array has no more elements. */
enum proto_status msgpack_array_next(struct msgpack_array *a, const msgpack_object **obj, struct span *raw,
                                     const char *missing, struct proto_error *err);

/* A str element as a span into the input (checked UTF-8); nil gives SPAN_NONE,
 * an empty str a present, empty span. Anything else fails with type_detail. */
enum proto_status msgpack_object_to_string(const msgpack_object *o, struct span *out, const char *type_detail,
                                           struct proto_error *err);

/* An integer element as int64 / int32; false when it is not an integer or does not fit. */
bool msgpack_object_to_i64(const msgpack_object *o, int64_t *v);
bool msgpack_object_to_i32(const msgpack_object *o, int32_t *v);

#endif
