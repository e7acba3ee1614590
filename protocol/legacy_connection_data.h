/* legacy_connection_data.h - the hubs a legacy client names in `connectionData`.
 *
 * Every legacy request carries connectionData=[{"name":"chathub"}, ...]
 * (jQuery lowercases and writes "name"; the .NET and C++ clients write
 * "Name" with the declared case). The original reads it with Json.NET, so
 * the property matches in any case, other properties are ignored, and two
 * entries naming the same hub in different case are an error. We keep each
 * name exactly as the client spelled it (the relay's pushes name the hub as
 * configured, which the stock clients match case-insensitively).
 *
 * Ownership: names borrow from the input when they had no escapes and are
 * owned copies otherwise; keep the input alive while using the list and call
 * legacy_hub_list_release when done. */
#ifndef SR_LEGACY_CONNECTION_DATA_H
#define SR_LEGACY_CONNECTION_DATA_H

#include <stddef.h>

#include "protocol/proto_status.h"
#include "containers/span.h"

/* More hubs than any page subscribes to; bounds per-connection state. */
#define LEGACY_MAX_HUBS 32

struct legacy_hub_list {
    size_t count;
    struct span names[LEGACY_MAX_HUBS]; /* as the client spelled them, in its order */
    char *owned[LEGACY_MAX_HUBS];       /* unescaped copy behind names[i], or NULL */
};

void legacy_hub_list_init(struct legacy_hub_list *list);
/* Frees the owned copies and empties the list. Safe to call twice. */
void legacy_hub_list_release(struct legacy_hub_list *list);

/* Index of the hub matching name case-insensitively, or -1. */
int legacy_hub_list_find(const struct legacy_hub_list *list, struct span name);

/* Decodes URL-decoded connectionData text into *list (which it
 * initialises; release it afterwards whatever the result). Empty or
 * whitespace-only text, `null` and `[]` mean no hubs. Errors:
 *   PROTO_ERR_SYNTAX    not JSON, or bytes json_strict_check_text refuses
 *                       (control characters in strings, a BOM between tokens)
 *   PROTO_ERR_TYPE      not an array; an entry not an object; a name not a string
 *   PROTO_ERR_MISSING   an entry without a name
 *   PROTO_ERR_VALUE     empty name, \u0000 in a name or in a property name, an
 *                       entry naming its hub twice, or "Duplicate Hub names found."
 *   PROTO_ERR_TOO_LARGE more than LEGACY_MAX_HUBS entries
 *   PROTO_ERR_UTF8      text not valid UTF-8 */
enum proto_status legacy_connection_data_decode(const char *data, size_t len,
                                                struct legacy_hub_list *list,
                                                struct proto_error *err);

#endif
