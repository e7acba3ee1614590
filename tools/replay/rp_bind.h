/* rp_bind.h - placeholders (docs/FIXTURES.md) and this run's values for them: finding a
 * placeholder in recorded text, binding it to what the server sent (once, consistently, never
 * two placeholders of one family to one value), and matching a recorded string that holds
 * placeholders against a server's string. */
#ifndef RP_BIND_H
#define RP_BIND_H

#include <stddef.h>

/* Finds the next placeholder of docs/FIXTURES.md in s from `from` on: <kind>, <kind#N>,
 * <kind:N> or <kind:N.K> with a known kind (an echoed "</script>" is not one). Returns 1 and sets
 * *start and *len, or 0. */
int rp_ph_find(const char *s, size_t from, size_t *start, size_t *len);
/* The kind of a placeholder ("cursor" for "<cursor:2.5>") into out (room: cap). */
void rp_ph_kind(const char *ph, size_t len, char *out, size_t cap);

struct rp_binding {
    char *placeholder;
    char *family;     /* "cursor:2" for <cursor:2.5>, else the kind */
    char *value;
};

struct rp_bindings {
    struct rp_binding *v;
    size_t n, cap;
    int shared_cursors;   /* reference fixtures: two recorded cursors may be one value here */
};

void rp_bindings_free(struct rp_bindings *b);
/* This run's value of the placeholder, or NULL. */
const char *rp_bind_get(const struct rp_bindings *b, const char *placeholder);
/* Binds or checks; NULL, or why the value cannot be this placeholder's (caller frees). */
char *rp_bind(struct rp_bindings *b, const char *placeholder, const char *value);

/* Matches a recorded string (maybe with placeholders) against a server's, binding what is
 * unbound. NULL, or why it differs (caller frees). */
char *rp_match_text(const char *expected, const char *actual, struct rp_bindings *b);

/* A copy of text with each bound value (4 characters or longer) put back as its placeholder,
 * longest first (caller frees). */
char *rp_unbind(const struct rp_bindings *b, const char *text);

#endif
