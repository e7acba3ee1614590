/* rp_bind.c - placeholders and their bindings (see rp_bind.h; port of replay.mjs Bindings and
 * matchString). */
#include "rp_bind.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "rp_text.h"

static const char *const KINDS[] = {
    "connectionToken", "connectionId", "accessToken", "cursor", "groupsToken", "backendId", "timestamp",
    "tid", "noCache", "upstream", "authorization", "cookie", "origin", NULL,
};

/* Length of a placeholder starting at s (s[0] == '<'), 0 when it is none. */
static size_t ph_at(const char *s)
{
    size_t i = 1;
    while (isalpha((unsigned char)s[i]))
        i++;
    int known = 0;
    for (int k = 0; KINDS[k]; k++)
        if (strlen(KINDS[k]) == i - 1 && strncmp(KINDS[k], s + 1, i - 1) == 0)
            known = 1;
    if (!known)
        return 0;
    if (s[i] == '#' || s[i] == ':') {
        int colon = s[i] == ':';
        size_t d = ++i;
        while (isdigit((unsigned char)s[i]))
            i++;
        if (i == d)
            return 0;
        if (colon && s[i] == '.') {
            d = ++i;
            while (isdigit((unsigned char)s[i]))
                i++;
            if (i == d)
                return 0;
        }
    }
    return s[i] == '>' ? i + 1 : 0;
}

int rp_ph_find(const char *s, size_t from, size_t *start, size_t *len)
{
    for (const char *p = strchr(s + from, '<'); p; p = strchr(p + 1, '<')) {
        size_t n = ph_at(p);
        if (n) {
            *start = (size_t)(p - s);
            *len = n;
            return 1;
        }
    }
    return 0;
}

void rp_ph_kind(const char *ph, size_t len, char *out, size_t cap)
{
    size_t i = 1, w = 0;
    while (i < len && isalpha((unsigned char)ph[i]) && w + 1 < cap)
        out[w++] = ph[i++];
    out[w] = '\0';
}

static char *family_of(const char *ph)
{
    char kind[32];
    size_t len = strlen(ph);
    rp_ph_kind(ph, len, kind, sizeof kind);
    const char *colon = strchr(ph, ':');
    const char *dot = colon ? strchr(colon, '.') : NULL;
    if (colon && dot)
        return rp_fmt("%s:%.*s", kind, (int)(dot - colon - 1), colon + 1);
    return rp_strdup(kind);
}

static int is_backend_id(const char *v, size_t n)
{
    if (n != 22)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)v[i]) && v[i] != '_' && v[i] != '-')
            return 0;
    return 1;
}

void rp_bindings_free(struct rp_bindings *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->v[i].placeholder);
        free(b->v[i].family);
        free(b->v[i].value);
    }
    free(b->v);
    b->v = NULL;
    b->n = b->cap = 0;
}

const char *rp_bind_get(const struct rp_bindings *b, const char *placeholder)
{
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->v[i].placeholder, placeholder) == 0)
            return b->v[i].value;
    return NULL;
}

char *rp_bind(struct rp_bindings *b, const char *placeholder, const char *value)
{
    char kind[32];
    rp_ph_kind(placeholder, strlen(placeholder), kind, sizeof kind);
    if (strcmp(kind, "backendId") == 0 && !is_backend_id(value, strlen(value))) {
        char *q = rp_quote(value, 200);
        char *why = rp_fmt("%s is not a backendId", q);
        free(q);
        return why;
    }
    if (!value[0])
        return rp_fmt("empty value for %s", placeholder);
    const char *known = rp_bind_get(b, placeholder);
    if (known) {
        if (strcmp(known, value) == 0)
            return NULL;
        char *qk = rp_quote(known, 200), *qv = rp_quote(value, 200);
        char *why = rp_fmt("%s was %s earlier in this run, now %s", placeholder, qk, qv);
        free(qk);
        free(qv);
        return why;
    }
    char *family = family_of(placeholder);
    int shared = b->shared_cursors && strcmp(kind, "cursor") == 0;
    for (size_t i = 0; i < b->n && !shared; i++) {
        if (strcmp(b->v[i].family, family) == 0 && strcmp(b->v[i].value, value) == 0) {
            char *qv = rp_quote(value, 200);
            char *why = rp_fmt("%s is already %s in this run; the fixture has a different value (%s) here", qv,
                               b->v[i].placeholder, placeholder);
            free(qv);
            free(family);
            return why;
        }
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->v = rp_xrealloc(b->v, b->cap * sizeof *b->v);
    }
    b->v[b->n].placeholder = rp_strdup(placeholder);
    b->v[b->n].family = family;
    b->v[b->n].value = rp_strdup(value);
    b->n++;
    return NULL;
}

/* ---- a recorded string with placeholders inside a longer text */

struct seg {
    const char *lit;      /* literal text before the placeholder (or the tail) */
    size_t lit_len;
    char *ph;             /* the placeholder, NULL for the tail */
    const char *bound;    /* its value in this run, or NULL */
    int first;            /* the first unbound occurrence (captures) */
    int backend;          /* backendId: 22 characters of base64url */
    const char *cap;      /* capture (start in actual) while matching */
    size_t cap_len;
};

/* Backtracking over the segments: literals must match, a bound placeholder is its value, an
 * unbound one takes 22 base64url characters (backendId) or one or more non-quote characters,
 * shortest first; its repeats must be the same text. */
static int match_from(struct seg *s, size_t k, size_t nseg, const char *a, size_t pos, size_t alen)
{
    if (s[k].lit_len > alen - pos || memcmp(a + pos, s[k].lit, s[k].lit_len) != 0)
        return 0;
    pos += s[k].lit_len;
    if (!s[k].ph)
        return pos == alen;
    if (s[k].bound || !s[k].first) {
        const char *v = s[k].bound;
        size_t vlen = v ? strlen(v) : 0;
        if (!v) {
            for (size_t j = 0; j < k; j++)
                if (s[j].ph && s[j].first && strcmp(s[j].ph, s[k].ph) == 0) {
                    v = s[j].cap;
                    vlen = s[j].cap_len;
                }
        }
        if (!v || vlen > alen - pos || memcmp(a + pos, v, vlen) != 0)
            return 0;
        return match_from(s, k + 1, nseg, a, pos + vlen, alen);
    }
    if (s[k].backend) {
        if (alen - pos < 22 || !is_backend_id(a + pos, 22))
            return 0;
        s[k].cap = a + pos;
        s[k].cap_len = 22;
        return match_from(s, k + 1, nseg, a, pos + 22, alen);
    }
    for (size_t n = 1; pos + n <= alen && a[pos + n - 1] != '"'; n++) {
        s[k].cap = a + pos;
        s[k].cap_len = n;
        if (match_from(s, k + 1, nseg, a, pos + n, alen))
            return 1;
    }
    return 0;
}

char *rp_match_text(const char *expected, const char *actual, struct rp_bindings *b)
{
    size_t start, len;
    if (!rp_ph_find(expected, 0, &start, &len)) {
        if (strcmp(expected, actual) == 0)
            return NULL;
        char *qe = rp_quote(expected, 300), *qa = rp_quote(actual, 300);
        char *why = rp_fmt("expected %s, got %s", qe, qa);
        free(qe);
        free(qa);
        return why;
    }
    if (start == 0 && len == strlen(expected)) {
        char *why = rp_bind(b, expected, actual);
        if (!why)
            return NULL;
        char *out = rp_fmt("%s: %s", expected, why);
        free(why);
        return out;
    }
    size_t nseg = 0, cap = 8, last = 0;
    struct seg *s = rp_xmalloc(cap * sizeof *s);
    size_t from = 0;
    while (rp_ph_find(expected, from, &start, &len)) {
        if (nseg + 1 >= cap)
            s = rp_xrealloc(s, (cap *= 2) * sizeof *s);
        struct seg *g = &s[nseg++];
        memset(g, 0, sizeof *g);
        g->lit = expected + last;
        g->lit_len = start - last;
        g->ph = rp_strndup(expected + start, len);
        g->bound = rp_bind_get(b, g->ph);
        g->first = 1;
        for (size_t j = 0; j + 1 < nseg; j++)
            if (strcmp(s[j].ph, g->ph) == 0)
                g->first = 0;
        char kind[32];
        rp_ph_kind(g->ph, len, kind, sizeof kind);
        g->backend = strcmp(kind, "backendId") == 0;
        last = from = start + len;
    }
    struct seg *tail = &s[nseg++];
    memset(tail, 0, sizeof *tail);
    tail->lit = expected + last;
    tail->lit_len = strlen(expected + last);
    char *why = NULL;
    if (!match_from(s, 0, nseg, actual, 0, strlen(actual))) {
        char *qe = rp_quote(expected, 300), *qa = rp_quote(actual, 300);
        why = rp_fmt("expected %s, got %s", qe, qa);
        free(qe);
        free(qa);
    }
    for (size_t k = 0; k < nseg && !why; k++) {
        if (!s[k].ph || s[k].bound || !s[k].first)
            continue;
        char *v = rp_strndup(s[k].cap, s[k].cap_len);
        char *bwhy = rp_bind(b, s[k].ph, v);
        free(v);
        if (bwhy) {
            why = rp_fmt("%s: %s", s[k].ph, bwhy);
            free(bwhy);
        }
    }
    for (size_t k = 0; k < nseg; k++)
        free(s[k].ph);
    free(s);
    return why;
}

/* Longest value first, so that a value inside another is not put back inside it. */
static int by_value_length(const void *a, const void *b)
{
    size_t la = strlen((*(const struct rp_binding *const *)a)->value);
    size_t lb = strlen((*(const struct rp_binding *const *)b)->value);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

char *rp_unbind(const struct rp_bindings *bs, const char *text)
{
    char *out = rp_strdup(text);
    const struct rp_binding **order = rp_xmalloc((bs->n + 1) * sizeof *order);
    for (size_t i = 0; i < bs->n; i++)
        order[i] = &bs->v[i];
    qsort(order, bs->n, sizeof *order, by_value_length);
    for (size_t i = 0; i < bs->n; i++) {
        const char *v = order[i]->value, *ph = order[i]->placeholder;
        size_t vl = strlen(v), pl = strlen(ph);
        if (vl < 4)
            continue; /* a short value ("1", a cursor) would be put back where it is only a digit */
        struct rp_buf b = {0};
        const char *p = out, *hit;
        while ((hit = strstr(p, v)) != NULL) {
            rp_buf_add(&b, p, (size_t)(hit - p));
            rp_buf_add(&b, ph, pl);
            p = hit + vl;
        }
        rp_buf_add(&b, p, strlen(p));
        free(out);
        out = b.p ? b.p : rp_strdup("");
    }
    free(order);
    return out;
}
