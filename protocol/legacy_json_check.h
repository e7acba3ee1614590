/* legacy_json_check.h - checks the legacy decoders add to what cJSON enforces.
 *
 * cJSON is lenient where our peers are strict: it takes raw control
 * characters inside strings, does not look at UTF-8, decodes "\u0000" into
 * a C string that then ends early, and nests up to CJSON_NESTING_LIMIT
 * (1000). Client JSON that reaches an ASP.NET Core backend byte for byte must
 * not trip System.Text.Json there (which would close the whole backend link),
 * and names and ids must mean what their bytes say. These few checks close
 * those gaps; everything else is still parsed by cJSON. */
#ifndef SR_LEGACY_JSON_CHECK_H
#define SR_LEGACY_JSON_CHECK_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "hub_msg.h"
#include "json_scan.h"
#include "proto_status.h"
#include "span.h"

/* Whole-text check of client JSON: valid UTF-8 (PROTO_ERR_UTF8) and no
 * control byte other than tab, CR and LF anywhere (PROTO_ERR_SYNTAX; JSON
 * allows none inside strings and only those three as whitespace). */
enum proto_status legacy_json_check_text(const char *data, size_t len, struct proto_error *err);

/* True if no path from item down has more than max_levels arrays/objects
 * (item itself counts when it is one). Scalars are always within. */
bool legacy_json_depth_within(const cJSON *item, int max_levels);

#endif
