/* msgpack_sink.h - msgpack-c's packer writing into a struct buf.
 *
 * After the first failed append every later write is refused, so packing code
 * can run straight through and check `failed` once at the end. */
#ifndef SR_MSGPACK_SINK_H
#define SR_MSGPACK_SINK_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"

struct buf_sink {
    struct buf *out;
    bool failed;
};

/* A msgpack_packer_write callback: msgpack_packer_init(&pk, &sink, msgpack_sink_write). */
static inline int msgpack_sink_write(void *data, const char *p, size_t n)
{
    struct buf_sink *s = data;
    if (s->failed || !buf_append(s->out, p, n)) {
        s->failed = true;
        return -1;
    }
    return 0;
}

#endif
