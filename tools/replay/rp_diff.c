/* rp_diff.c - how a run notes a difference (see rp_run_int.h): check stops at the first one
 * (r->failure); ab (keep_going) notes every one in order (r->diffs) and goes on where it can. */
#include "rp_run_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void note_diff(struct rp_run *r, char *text)
{
    r->diffs = rp_xrealloc(r->diffs, (r->ndiffs + 1) * sizeof *r->diffs);
    r->diffs[r->ndiffs++] = text;
    if (r->o->verbose)
        fprintf(stderr, "MISMATCH %s\n", text);
}

static char *vfmt(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, again);
    va_end(again);
    char *s = rp_xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

void rp_fail(struct rp_run *r, const char *fmt, ...)
{
    if (r->failure)
        return;
    va_list ap;
    va_start(ap, fmt);
    r->failure = vfmt(fmt, ap);
    va_end(ap);
    if (r->o->keep_going)
        note_diff(r, rp_strdup(r->failure));
    else if (r->o->verbose)
        fprintf(stderr, "MISMATCH %s\n", r->failure);
}

int rp_differ(struct rp_run *r, const char *fmt, ...)
{
    if (r->failure)
        return 1;
    va_list ap;
    va_start(ap, fmt);
    char *text = vfmt(fmt, ap);
    va_end(ap);
    if (r->o->keep_going) {
        note_diff(r, text);
        return 0;
    }
    rp_fail(r, "%s", text);
    free(text);
    return 1;
}

int rp_fail_why(struct rp_run *r, char *why, const char *prefix)
{
    if (!why)
        return 0;
    int stop = rp_differ(r, "%s: %s", prefix, why);
    free(why);
    return stop;
}
