/* rp_ab.h - ab's comparison of two live sessions of one fixture: each side's differences from
 * the recording (placeholders put back, so ids each server minted compare alike) grouped by the
 * recorded event they are at, and every event where side A's answer is not side B's reported. */
#ifndef RP_AB_H
#define RP_AB_H

#include <stddef.h>
#include <stdio.h>

struct rp_ab_side {
    const char *url;
    char **diffs;          /* in order; each names its event as "line N" (none: beyond the recording) */
    size_t n;
    const char *failure;   /* what stopped the run early, NULL when it ran to the end */
};

/* Prints "same FILE: ..." or "DIFF FILE: ..." with every point where the sides differ; returns
 * the number of such points. */
int rp_ab_report(FILE *out, const char *file, const struct rp_ab_side *a, const struct rp_ab_side *b);

#endif
