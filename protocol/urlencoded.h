/* urlencoded.h - URL query strings and application/x-www-form-urlencoded bodies.
 *
 *   id=7a%2Fb&connectionData=%5B%7B%22name%22%3A%22chathub%22%7D%5D&tid=3
 *
 * The input is what follows the '?' of a URL (or a whole form body): pairs
 * separated by '&', each "name=value" split at its first '=' ("name" alone
 * is a name with an empty value; empty pairs, as in "a=1&&b=2", are skipped).
 * Names and values are percent-decoded ("%2F" is '/', hex digits in either
 * case) and, with URLENCODED_PLUS_IS_SPACE, '+' is a space. Both ASP.NET
 * servers read query strings that way too (QueryHelpers and HttpUtility
 * turn '+' into a space in queries as well as in forms), so a relay that
 * wants to see what they see passes the flag for both; without it '+' stays
 * '+' (RFC 3986).
 *
 * Nothing is cut to a fixed size: values land in a growable buf, and the
 * caller's limits decide what is too long, with a status instead of a
 * different meaning. Every function reads only [s, s + len) (no NUL needed)
 * and checks the whole input, not only the pair it looks for, so a bad
 * escape or an oversized value anywhere is an error (a relay answers 400 or
 * 414 instead of guessing). Errors (with a static detail in *err):
 *   PROTO_ERR_TOO_LARGE  len > max_total, a decoded name > max_name, a
 *                        decoded value > max_value, more than max_pairs pairs
 *   PROTO_ERR_SYNTAX     '%' not followed by two hex digits
 *   PROTO_ERR_VALUE      a NUL byte, raw or as %00 (C strings downstream would
 *                        end there); urlencoded_find: the key given twice
 *   PROTO_ERR_UTF8       with URLENCODED_UTF8, a decoded name or value that is
 *                        not well-formed UTF-8
 *   PROTO_ERR_MISSING    urlencoded_find: no pair has that name
 *   PROTO_ERR_NOMEM */
#ifndef SR_URLENCODED_H
#define SR_URLENCODED_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"
#include "containers/span.h"
#include "protocol/proto_status.h"

/* Flags. */
#define URLENCODED_PLUS_IS_SPACE 1u /* '+' decodes to ' ' (forms, and ASP.NET's query parsing) */
#define URLENCODED_UTF8 2u          /* decoded names and values must be well-formed UTF-8 */

struct urlencoded_limits {
    size_t max_total; /* bytes of the whole input, as received */
    size_t max_name;  /* bytes of one decoded name */
    size_t max_value; /* bytes of one decoded value */
    size_t max_pairs; /* pairs in the input (empty ones not counted) */
};

/* Limits for a request's query string: 8 KiB in all (Kestrel's default
 * request line is 8 KiB), every name and value up to that too. */
#define URLENCODED_QUERY_LIMITS ((struct urlencoded_limits){ 8192, 8192, 8192, 1024 })

/* Decodes one name or value: (s, len) must hold no '&' meaning (it is
 * decoded as it is, '=' and '&' included). The result replaces out's
 * contents; on failure out is left empty. max: the largest decoded length. */
enum proto_status urlencoded_decode(const char *s, size_t len, unsigned flags, size_t max,
                                    struct buf *out, struct proto_error *err);

/* Appends s percent-encoded so that urlencoded_decode gives it back with the
 * same flags: ALPHA, DIGIT and "-._~" as they are, with
 * URLENCODED_PLUS_IS_SPACE a space as '+', every other byte as %XX
 * (upper-case hex). False only when out of memory (out then unchanged). */
bool urlencoded_append(struct buf *out, struct span s, unsigned flags);

/* The value of the one pair whose decoded name equals key, ignoring ASCII
 * case as both ASP.NET servers do ("ID" is "id"). On PROTO_OK *value holds
 * it (replacing its contents; "" for "key" or "key="). Every pair is checked
 * (see the errors above); a key given twice is PROTO_ERR_VALUE (ASP.NET Core
 * would join the values with a comma: "a,b" is never what either meant),
 * absent is PROTO_ERR_MISSING. On failure *value is left empty. */
enum proto_status urlencoded_find(const char *s, size_t len, const char *key, unsigned flags,
                                  const struct urlencoded_limits *limits, struct buf *value,
                                  struct proto_error *err);

/* Pair by pair:
 *     struct urlencoded_iter it;
 *     st = urlencoded_iter_begin(&it, s, len, flags, &limits, &err);
 *     while (st == PROTO_OK && (st = urlencoded_next(&it, &name, &value, &err)) == PROTO_OK)
 *         use(name, value);
 *     if (st != PROTO_INCOMPLETE) fail(st);   // PROTO_INCOMPLETE: no more pairs
 * urlencoded_iter_begin fails only for len > max_total. */
struct urlencoded_iter {
    const char *pos;
    const char *end;
    unsigned flags;
    struct urlencoded_limits limits;
    size_t pairs;
};

enum proto_status urlencoded_iter_begin(struct urlencoded_iter *it, const char *s, size_t len,
                                        unsigned flags, const struct urlencoded_limits *limits,
                                        struct proto_error *err);

/* The next pair, decoded into name and value (replacing their contents),
 * and PROTO_OK; PROTO_INCOMPLETE when there are no more; or an error, after
 * which the iterator stays at the bad pair (calling again repeats the error). */
enum proto_status urlencoded_next(struct urlencoded_iter *it, struct buf *name, struct buf *value,
                                  struct proto_error *err);

#endif
