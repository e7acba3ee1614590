/* json_scan.h - walk the members of one JSON object, keeping each value's raw bytes.
 *
 * cJSON parses values but does not say where in the input they were. Our hub
 * messages keep arguments and results as the exact bytes that arrived, so the
 * decoders walk the *top-level* object here: the punctuation between members
 * ({ , : }) is stepped over by hand, and every key and value is parsed by cJSON
 * (cJSON_ParseWithLengthOpts reports where the value ended). The raw span of a
 * value is therefore exactly the bytes cJSON accepted as that value.
 *
 * Nesting depth is bounded by cJSON (CJSON_NESTING_LIMIT); cJSON does not check
 * UTF-8, so json_member_string() does where a string matters (names, ids).
 * cJSON decodes the escape \u0000 into a NUL that silently ends its C string,
 * so a key or a string read here that contains it is refused, never cut short. */
#ifndef SR_JSON_SCAN_H
#define SR_JSON_SCAN_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "protocol/hub_msg.h"
#include "protocol/proto_status.h"
#include "containers/span.h"

struct json_object_iter {
    const char *pos;
    const char *end;
    int members;    /* members returned so far */
    int finished;   /* the closing brace was consumed */
};

struct json_member {
    cJSON *key_item;   /* parsed key (a cJSON string); owned until json_member_release */
    const char *key;   /* NUL-terminated decoded key, from key_item */
    cJSON *value;      /* parsed value; owned until json_member_release */
    struct span raw;   /* the value's bytes in the input */
};

/* Positions the iterator on the object in (data, len). Leading and trailing
 * whitespace is allowed; anything else around the object is PROTO_ERR_SYNTAX. */
enum proto_status json_object_begin(struct json_object_iter *it, const char *data, size_t len,
                                    struct proto_error *err);

/* Fills *m with the next member and returns PROTO_OK, or returns
 * PROTO_INCOMPLETE (used here to mean "no more members": the object ended
 * cleanly), or an error: PROTO_ERR_VALUE for a key containing \u0000 (a key
 * "H\u0000x" is not "H"). On PROTO_OK the caller must json_member_release(m). */
enum proto_status json_object_next(struct json_object_iter *it, struct json_member *m,
                                   struct proto_error *err);

void json_member_release(struct json_member *m);

typedef enum proto_status (*json_member_visitor)(void *ctx, const struct json_member *m,
                                                 struct proto_error *err);

/* The whole walk in one call: checks the text as System.Text.Json would
 * (json_strict_check_text with max_depth), then calls visit for each member of
 * the object, stopping at the first status other than PROTO_OK. */
enum proto_status json_object_walk(const char *data, size_t len, int max_depth, json_member_visitor visit,
                                   void *ctx, struct proto_error *err);

/* The member's string value as a span, checked but not copied: it points
 * into the input when the raw string has no escapes, otherwise at the decoded
 * value inside m (valid until json_member_release). Fails with PROTO_ERR_TYPE
 * if the value is not a string, PROTO_ERR_VALUE if it contains the escape
 * \u0000 and PROTO_ERR_UTF8 if its bytes are not valid UTF-8. */
enum proto_status json_member_string_view(const struct json_member *m, struct span *out,
                                          struct proto_error *err);

/* True if a span from json_member_string_view points into the input (so it
 * lives as long as the input, not as long as m). */
static inline bool json_string_view_borrows_input(const struct json_member *m, struct span s)
{
    return s.ptr == m->raw.ptr + 1;
}

/* json_member_string_view, made to outlive m: zero-copy into the input when
 * the raw string has no escapes, otherwise an unescaped copy owned by `owner`.
 * The same errors, and PROTO_ERR_NOMEM. */
enum proto_status json_member_string(const struct json_member *m, struct hub_msg *owner,
                                     struct span *out, struct proto_error *err);

/* The member's value as a payload of raw JSON bytes. */
static inline struct payload json_member_payload(const struct json_member *m)
{
    return (struct payload){ PAYLOAD_JSON, m->raw };
}

#endif
