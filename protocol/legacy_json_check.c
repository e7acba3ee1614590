/* legacy_json_check.c - strictness checks on client JSON (see legacy_json_check.h). */
#include "legacy_json_check.h"

#include <stddef.h>

enum proto_status legacy_json_check_text(const char *data, size_t len, struct proto_error *err)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)data[i];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            return proto_fail(err, PROTO_ERR_SYNTAX, "control character in JSON text");
    }
    if (!utf8_is_valid(data, len))
        return proto_fail(err, PROTO_ERR_UTF8, "JSON text is not valid UTF-8");
    return PROTO_OK;
}

bool legacy_json_depth_within(const cJSON *item, int max_levels)
{
    if (!cJSON_IsArray(item) && !cJSON_IsObject(item))
        return true;
    if (max_levels <= 0)
        return false;
    /* Recursion is bounded by max_levels, not by the input. */
    for (const cJSON *child = item->child; child; child = child->next)
        if (!legacy_json_depth_within(child, max_levels - 1))
            return false;
    return true;
}
