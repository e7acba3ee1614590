/* heap_trim.c - releasing free heap pages after bursts of connections (see heap_trim.h). */
#include "relay/heap_trim.h"

#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "relay/clock.h"

static uint64_t connection_events(const struct relay_stats *s)
{
    return s->negotiations + s->legacy_negotiations + s->sessions_opened + s->sessions_closed;
}

static void heap_trim_due(struct timer_entry *e)
{
    struct heap_trim *t = list_container_of(e, struct heap_trim, timer);
    uint64_t events = connection_events(&t->loop->stats);
    if (events - t->events_seen >= HEAP_TRIM_MIN_EVENTS) {
        t->events_seen = events;
#if defined(__GLIBC__)
        malloc_trim(0);
        t->trims++;
#endif
    }
    loop_timer_schedule(t->loop, &t->timer, clock_now_ms() + HEAP_TRIM_INTERVAL_MS);
}

void heap_trim_start(struct heap_trim *t, struct loop *loop)
{
    t->loop = loop;
    t->events_seen = connection_events(&loop->stats);
    t->trims = 0;
    timer_entry_init(&t->timer, heap_trim_due);
    loop_timer_schedule(loop, &t->timer, clock_now_ms() + HEAP_TRIM_INTERVAL_MS);
}

void heap_trim_stop(struct heap_trim *t)
{
    timer_cancel(&t->timer);
}
