/* rp_ab.c - ab's comparison of two sides (see rp_ab.h). A point is a recorded event (its line
 * in the fixture); at each point a side either answered as recorded, differed (its differences
 * there, in order), or never got there (it stopped at an earlier line). Where the two sides'
 * accounts of a point are not the same text, A and B differ there. */
#include "rp_ab.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "rp_text.h"

/* The event a difference names ("line 12: ..."); INT_MAX when none (beyond the recording). */
static int line_of(const char *d)
{
    const char *l = d ? strstr(d, "line ") : NULL;
    int n = l ? atoi(l + 5) : 0;
    return n > 0 ? n : INT_MAX;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* A side's account of point `line` (caller frees). */
static char *account(const struct rp_ab_side *s, int line)
{
    struct rp_buf b = {0};
    for (size_t i = 0; i < s->n; i++) {
        if (line_of(s->diffs[i]) != line)
            continue;
        if (b.len)
            rp_buf_adds(&b, "\n          ");
        rp_buf_adds(&b, s->diffs[i]);
    }
    if (b.p)
        return b.p;
    int stop = s->failure ? line_of(s->failure) : INT_MAX;
    if (stop < line)
        return rp_fmt("not reached (it stopped at line %d)", stop);
    return rp_strdup("as recorded");
}

int rp_ab_report(FILE *out, const char *file, const struct rp_ab_side *a, const struct rp_ab_side *b)
{
    size_t n = 0;
    int *lines = rp_xmalloc((a->n + b->n + 1) * sizeof *lines);
    for (size_t i = 0; i < a->n; i++)
        lines[n++] = line_of(a->diffs[i]);
    for (size_t i = 0; i < b->n; i++)
        lines[n++] = line_of(b->diffs[i]);
    qsort(lines, n, sizeof *lines, cmp_int);
    struct rp_buf report = {0};
    int points = 0, alike_differences = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && lines[i] == lines[i - 1])
            continue;
        char *ta = account(a, lines[i]), *tb = account(b, lines[i]);
        if (strcmp(ta, tb) != 0) {
            char *where = lines[i] == INT_MAX ? rp_strdup("beyond the recording") : rp_fmt("line %d", lines[i]);
            char *p = rp_fmt("     %s:\n       a: %s\n       b: %s\n", where, ta, tb);
            rp_buf_adds(&report, p);
            free(p);
            free(where);
            points++;
        } else {
            alike_differences++;
        }
        free(ta);
        free(tb);
    }
    free(lines);
    if (points)
        fprintf(out, "DIFF %s: a (%s) and b (%s) differ at %d point%s\n%s", file, a->url, b->url, points,
                points == 1 ? "" : "s", report.p);
    else if (alike_differences)
        fprintf(out, "same %s: a and b answer alike (both differ from the recording the same way at %d point%s)\n",
                file, alike_differences, alike_differences == 1 ? "" : "s");
    else
        fprintf(out, "same %s: a and b answer alike (as recorded)\n", file);
    fflush(out);
    rp_buf_free(&report);
    return points;
}
