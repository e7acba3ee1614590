/* rp_json.h - JSON values as a replay compares them: parsed by cJSON, every number keeping the
 * text it was written with (cJSON keeps a double: 2^53 + 1 would compare equal to 2^53), and the
 * comparison rules of docs/FIXTURES.md: by type and value, numbers exact, objects by member set
 * (and order when asked), strings through the placeholders. */
#ifndef RP_JSON_H
#define RP_JSON_H

#include <cjson/cJSON.h>

#include "rp_bind.h"

/* The marker a masked expected value carries (reference fixtures): it matches anything. */
#define RP_JSON_ANY "<any>"

/* Parses NUL-terminated text; NULL when it is not JSON. Each number node carries its literal in
 * valuestring (freed by cJSON_Delete). */
cJSON *rp_json_parse(const char *text);
/* Compact JSON text of v, numbers as written, cut after max characters ("..."). Caller frees. */
char *rp_json_show(const cJSON *v, size_t max);
/* "null", "object", "array", "number", "string", "boolean". */
const char *rp_json_type(const cJSON *v);
int rp_json_number_equal(const cJSON *a, const cJSON *b);
/* The text of a number node (its literal, else %.17g into buf). */
const char *rp_json_number_text(const cJSON *v, char buf[32]);

/* Compares a recorded value with a server's. `ordered`: the top level's member order must be the
 * recorded one too. NULL, or "<path>: <reason>" (caller frees). */
char *rp_json_match(const cJSON *expected, const cJSON *actual, struct rp_bindings *b, int ordered,
                    const char *path);
/* A string node or not: "expected a string ..." when actual is no string. */
char *rp_json_match_string(const char *expected, const cJSON *actual, struct rp_bindings *b);

int rp_json_is_keepalive(const cJSON *v);          /* {} */
int rp_json_is_persistent(const cJSON *v);         /* an object with an M array */

#endif
