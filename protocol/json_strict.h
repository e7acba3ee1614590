/* json_strict.h - the checks System.Text.Json makes that cJSON does not.
 *
 * The ASP.NET Core SignalR parsers read JSON with Utf8JsonReader, which is
 * stricter than cJSON in a few places that matter to a relay: it refuses more
 * than 64 nested containers (JsonReaderOptions.MaxDepth), raw control
 * characters inside strings, escapes other than the nine of RFC 8259 (cJSON
 * reads "\u12;x" as a NUL), numbers outside RFC 8259's grammar ("01", "1.",
 * "1.e5", which cJSON takes), white space other than space/tab/CR/LF, a byte
 * order mark, and malformed UTF-8, and it reads `type`,
 * `version`, `sequenceId` and `negotiateVersion` with GetInt32/GetInt64, which
 * accept only a plain integer literal ("1", not "1.0" or "1e0").
 *
 * json_strict_check_text runs once over a whole message before cJSON sees it:
 * one linear pass, no recursion, so a "[[[[..." bomb of any depth costs O(n)
 * and never reaches cJSON's recursive descent.
 *
 * The legacy decoders use the same text check. Json.NET, which the original
 * 2.x server reads client JSON with, is looser inside strings (it takes raw
 * control characters) but refuses a byte order mark between tokens as well;
 * and a legacy client's arguments go on to an ASP.NET Core backend byte for
 * byte, where a raw tab in a string would make System.Text.Json close the
 * whole backend link. So one rule serves both; only the depth differs. */
#ifndef SR_JSON_STRICT_H
#define SR_JSON_STRICT_H

#include <stddef.h>

#include "protocol/proto_status.h"
#include "containers/span.h"

/* Utf8JsonReader's default MaxDepth: at most this many containers open at once,
 * the message's own top-level object included. */
#define JSON_STRICT_MAX_DEPTH 64

/* PROTO_ERR_UTF8 for malformed UTF-8 anywhere, PROTO_ERR_SYNTAX for a raw
 * control character (< 0x20) or a bad escape inside a string, a number token
 * outside RFC 8259's grammar or, outside strings, any control
 * character but tab/CR/LF or any byte >= 0x80 (which is how cJSON's looser
 * white space and BOM skipping are kept out), PROTO_ERR_TOO_DEEP for more than
 * max_depth open containers (INT_MAX: no limit of its own); PROTO_OK
 * otherwise. It does not check the rest of the grammar: cJSON does that. */
enum proto_status json_strict_check_text(const char *p, size_t len, int max_depth,
                                         struct proto_error *err);

/* Reads the raw bytes of a JSON number as an integer literal: -?(0|[1-9][0-9]*).
 * PROTO_ERR_TYPE if it has a fraction or an exponent (or is not a number),
 * PROTO_ERR_VALUE if it lies outside [min, max]. */
enum proto_status json_strict_integer(struct span raw, long long min, long long max,
                                      long long *out, struct proto_error *err);

#endif
