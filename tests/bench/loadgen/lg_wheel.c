/* lg_wheel.c - hashed timing wheel with index links (see lg_wheel.h). */
#include "lg_wheel.h"

#include <stdlib.h>

#define NOT_ARMED (-2)

int lg_wheel_init(struct lg_wheel *w, uint32_t capacity, uint64_t now_ms)
{
    w->capacity = capacity;
    w->next = malloc(sizeof(int32_t) * capacity);
    w->prev = malloc(sizeof(int32_t) * capacity);
    w->due_ms = malloc(sizeof(uint64_t) * capacity);
    if (!w->next || !w->prev || !w->due_ms) {
        lg_wheel_free(w);
        return -1;
    }
    for (uint32_t i = 0; i < capacity; i++)
        w->prev[i] = NOT_ARMED;
    for (uint32_t b = 0; b < LG_WHEEL_BUCKETS; b++)
        w->head[b] = -1;
    w->now_ms = now_ms;
    w->armed = 0;
    return 0;
}

void lg_wheel_free(struct lg_wheel *w)
{
    free(w->next);
    free(w->prev);
    free(w->due_ms);
    w->next = w->prev = NULL;
    w->due_ms = NULL;
}

int lg_wheel_is_armed(const struct lg_wheel *w, uint32_t slot)
{
    return w->prev[slot] != NOT_ARMED;
}

void lg_wheel_cancel(struct lg_wheel *w, uint32_t slot)
{
    int32_t prev = w->prev[slot];
    if (prev == NOT_ARMED)
        return;
    int32_t next = w->next[slot];
    if (prev == -1)
        w->head[w->due_ms[slot] % LG_WHEEL_BUCKETS] = next;
    else
        w->next[prev] = next;
    if (next >= 0)
        w->prev[next] = prev;
    w->prev[slot] = NOT_ARMED;
    w->armed--;
}

void lg_wheel_arm(struct lg_wheel *w, uint32_t slot, uint64_t due_ms)
{
    lg_wheel_cancel(w, slot);
    /* Never file a timer into a bucket the wheel has already passed for this lap. */
    if (due_ms <= w->now_ms)
        due_ms = w->now_ms + 1;
    w->due_ms[slot] = due_ms;
    uint32_t b = (uint32_t)(due_ms % LG_WHEEL_BUCKETS);
    int32_t first = w->head[b];
    w->next[slot] = first;
    w->prev[slot] = -1;
    if (first >= 0)
        w->prev[first] = (int32_t)slot;
    w->head[b] = (int32_t)slot;
    w->armed++;
}

uint32_t lg_wheel_advance(struct lg_wheel *w, uint64_t now_ms, uint32_t *out, uint32_t max)
{
    uint32_t n = 0;
    if (now_ms <= w->now_ms || w->armed == 0) {
        if (now_ms > w->now_ms)
            w->now_ms = now_ms;
        return 0;
    }
    /* Visit buckets now_ms+1 .. now; a full lap at most. */
    uint64_t from = w->now_ms + 1;
    uint64_t to = now_ms;
    if (to - from >= LG_WHEEL_BUCKETS)
        from = to - LG_WHEEL_BUCKETS + 1;
    for (uint64_t t = from; t <= to; t++) {
        uint32_t b = (uint32_t)(t % LG_WHEEL_BUCKETS);
        int32_t s = w->head[b];
        while (s >= 0) {
            int32_t next = w->next[s];
            if (w->due_ms[s] <= now_ms) {
                if (n == max) {
                    /* Out of room: stop just before this bucket so the caller's next call
                     * resumes here. */
                    w->now_ms = t - 1;
                    return n;
                }
                lg_wheel_cancel(w, (uint32_t)s);
                out[n++] = (uint32_t)s;
            }
            s = next;
        }
    }
    w->now_ms = now_ms;
    return n;
}
