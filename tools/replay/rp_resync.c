/* rp_resync.c - ab (keep_going): how a side goes on past a structural difference instead of
 * stopping there. A server event that does not come within --timeout is reported ("timed out
 * after N ms waiting for line ...") and taken as missing: an answer is given up (one that comes
 * later is not compared), a frame's or an event's records are skipped in their stream, so the
 * next ones compare with what comes next; then the side goes on with its next client action. A
 * side stops only where it cannot go on: its socket closed, refused or failed, a placeholder it
 * must send was never bound. */
#include "rp_run_int.h"

#include <stdlib.h>

/* The stream whose expected items event e's frame holds, NULL when none. */
static struct rp_ws_state *stream_of(struct rp_run *r, const struct rp_event *e)
{
    if (!e->frame)
        return NULL;
    if (e->poll_ws)
        return rp_ws_state_of(r, e->poll_ws);
    if (e->type == EV_SSE)
        return rp_ws_state_of(r, -e->id);
    return rp_ws_state_of(r, e->ws);
}

/* Event j is given up: done, and the stream it belongs to moved past it. */
static void skip_event(struct rp_run *r, size_t j)
{
    struct rp_event *e = &r->fx.ev[j];
    e->done = 1;
    struct rp_ws_state *st = stream_of(r, e);
    if (st) { /* the frames before it in its stream are earlier events: given up before it */
        struct rp_frame *f = e->frame;
        size_t specials = 0;
        for (size_t i = 0; i < st->stream->nframes; i++) {
            specials += st->stream->frames[i]->special;
            if (st->stream->frames[i] == f)
                break;
        }
        f->done = f->head_matched = 1;
        if (st->pos < f->end)
            st->pos = f->end;
        if (st->special_index < specials)
            st->special_index = specials;
        return;
    }
    if (e->type == EV_SSE) /* legacy event stream: the request reading it goes on with the next event */
        for (size_t i = 0; i < r->nreqs; i++)
            if (r->fx.ev[r->reqs[i]->req_ev].id == e->id && r->reqs[i]->next <= e->index)
                r->reqs[i]->next = e->index + 1;
}

void rp_give_up(struct rp_run *r, size_t k)
{
    for (size_t j = r->low; j < k && !r->failure; j++) {
        struct rp_event *e = &r->fx.ev[j];
        if (!e->server || e->done)
            continue;
        char *d = rp_describe(e);
        rp_differ(r, "timed out after %d ms waiting for %s", r->o->timeout_ms, d);
        free(d);
        skip_event(r, j);
    }
}
