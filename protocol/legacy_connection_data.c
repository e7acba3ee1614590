/* legacy_connection_data.c - decoding the connectionData hub list (see legacy_connection_data.h).
 *
 * The array's punctuation ([ , ]) is stepped over here; each element is
 * parsed by cJSON to find where it ends and then walked with json_scan so
 * the name keeps its place in the input (zero-copy when unescaped). */
#include "protocol/legacy_connection_data.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "protocol/hub_msg.h"
#include "protocol/json_scan.h"
#include "protocol/json_strict.h"

void legacy_hub_list_init(struct legacy_hub_list *list)
{
    memset(list, 0, sizeof *list);
}

void legacy_hub_list_release(struct legacy_hub_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        free(list->owned[i]);
    legacy_hub_list_init(list);
}

int legacy_hub_list_find(const struct legacy_hub_list *list, struct span name)
{
    for (size_t i = 0; i < list->count; i++)
        if (span_eq_nocase(list->names[i], name))
            return (int)i;
    return -1;
}

static const char *skip_whitespace(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Json.NET binds a member to the Name property in any case ("name", "NAME"). */
static bool is_name_key(const char *key)
{
    return span_eq_nocase(span_from_cstr(key), SPAN_LIT("Name"));
}

/* Appends the name of the entry object in (p, len) to the list. json_member_string
 * puts an unescaped copy into a hub_msg; we take that one allocation over. */
static enum proto_status decode_entry(const char *p, size_t len, struct legacy_hub_list *list,
                                      struct proto_error *err)
{
    struct json_object_iter it;
    struct json_member m;
    struct hub_msg scratch;
    struct span name = SPAN_NONE;
    enum proto_status st = json_object_begin(&it, p, len, err);

    hub_msg_init(&scratch);
    while (st == PROTO_OK && (st = json_object_next(&it, &m, err)) == PROTO_OK) {
        if (is_name_key(m.key)) {
            if (span_is_set(name))
                st = proto_fail(err, PROTO_ERR_VALUE, "connectionData entry names its hub twice");
            else if (cJSON_IsNull(m.value))
                st = proto_fail(err, PROTO_ERR_TYPE, "hub name must be a string");
            else
                st = json_member_string(&m, &scratch, &name, err);
        }
        json_member_release(&m);
    }
    if (st == PROTO_INCOMPLETE) { /* the object ended cleanly */
        if (!span_is_set(name))
            st = proto_fail(err, PROTO_ERR_MISSING, "connectionData entry has no hub name");
        else if (name.len == 0)
            st = proto_fail(err, PROTO_ERR_VALUE, "hub name is empty");
        else if (legacy_hub_list_find(list, name) >= 0)
            st = proto_fail(err, PROTO_ERR_VALUE, "Duplicate Hub names found.");
        else
            st = PROTO_OK;
    }
    if (st == PROTO_OK) {
        size_t i = list->count++;
        list->names[i] = name;
        if (scratch.owned_count == 1) {
            list->owned[i] = scratch.owned[0];
            scratch.owned_count = 0;
        }
    }
    hub_msg_release(&scratch);
    return st;
}

/* Text that is not an array: valid JSON of another type, or not JSON at all. */
static enum proto_status not_an_array(const char *p, const char *end, struct proto_error *err)
{
    const char *parse_end = NULL;
    cJSON *value = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &parse_end, 0);
    bool whole = value && skip_whitespace(parse_end, end) == end;
    bool is_null = whole && cJSON_IsNull(value);
    cJSON_Delete(value);
    if (is_null) /* Json.NET reads `null` as no list: no hubs */
        return PROTO_OK;
    if (whole)
        return proto_fail(err, PROTO_ERR_TYPE, "connectionData is not a JSON array");
    return proto_fail(err, PROTO_ERR_SYNTAX, "connectionData is not valid JSON");
}

/* One element at *pos: parsed to find its end, then decoded as an entry. */
static enum proto_status decode_element(const char **pos, const char *end,
                                        struct legacy_hub_list *list, struct proto_error *err)
{
    const char *p = *pos, *parse_end = NULL;
    cJSON *value = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &parse_end, 0);
    if (!value || parse_end <= p || parse_end > end) {
        cJSON_Delete(value);
        return proto_fail(err, PROTO_ERR_SYNTAX, "connectionData is not valid JSON");
    }
    bool is_object = cJSON_IsObject(value);
    cJSON_Delete(value);
    if (!is_object)
        return proto_fail(err, PROTO_ERR_TYPE, "connectionData entry is not a JSON object");
    if (list->count == LEGACY_MAX_HUBS)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "connectionData names too many hubs");
    *pos = parse_end;
    return decode_entry(p, (size_t)(parse_end - p), list, err);
}

enum proto_status legacy_connection_data_decode(const char *data, size_t len,
                                                struct legacy_hub_list *list,
                                                struct proto_error *err)
{
    legacy_hub_list_init(list);
    /* No depth limit of our own: only the top two levels are read, and
     * cJSON's nesting limit bounds what it parses below them. */
    enum proto_status st = json_strict_check_text(data, len, INT_MAX, err);
    if (st != PROTO_OK)
        return st;
    const char *end = data + len;
    const char *p = skip_whitespace(data, end);
    if (p == end)
        return PROTO_OK;
    if (*p != '[')
        return not_an_array(p, end, err);

    p = skip_whitespace(p + 1, end);
    for (size_t index = 0;; index++) {
        if (p == end)
            return proto_fail(err, PROTO_ERR_SYNTAX, "unterminated connectionData array");
        if (*p == ']')
            break;
        if (index > 0) {
            if (*p != ',')
                return proto_fail(err, PROTO_ERR_SYNTAX, "expected ',' between connectionData entries");
            p = skip_whitespace(p + 1, end);
        }
        if ((st = decode_element(&p, end, list, err)) != PROTO_OK)
            return st;
        p = skip_whitespace(p, end);
    }
    if (skip_whitespace(p + 1, end) != end)
        return proto_fail(err, PROTO_ERR_SYNTAX, "unexpected bytes after connectionData");
    return PROTO_OK;
}
