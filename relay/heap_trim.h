/* heap_trim.h - giving the heap's free pages back to the OS after bursts of connections.
 *
 * Every connection's setup borrows large short-lived buffers (lws' 16 KiB HTTP header table per
 * request, negotiate bodies, handshakes) between long-lived per-connection objects, so after a
 * burst of connects glibc's heap holds many free pages between live objects. malloc's own
 * trimming only returns the heap's top; malloc_trim(0) also releases whole free pages in the
 * middle (madvise). The relay calls it on a timer, only after enough connections came or went
 * since the last call, so an idle or steady relay does not pay for it. Without glibc this does
 * nothing. */
#ifndef SR_RELAY_HEAP_TRIM_H
#define SR_RELAY_HEAP_TRIM_H

#include <stdint.h>

#include "containers/timer_wheel.h"
#include "relay/loop.h"

#define HEAP_TRIM_INTERVAL_MS 5000u
#define HEAP_TRIM_MIN_EVENTS 256u   /* connections opened + closed since the last trim */

struct heap_trim {
    struct loop *loop;
    struct timer_entry timer;
    uint64_t events_seen;           /* the loop's counters at the last check that trimmed */
    uint64_t trims;
};

/* Starts the periodic check on loop's wheel. */
void heap_trim_start(struct heap_trim *t, struct loop *loop);
void heap_trim_stop(struct heap_trim *t);

#endif
