/* json_scan.c - top-level JSON object walker with raw value spans (see json_scan.h). */
#include "protocol/json_scan.h"

#include "protocol/json_strict.h"

#include <stdbool.h>
#include <string.h>

static const char *skip_whitespace(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* True if a raw JSON string token ("...") contains the escape \u0000. cJSON
 * decodes it into a NUL that would silently cut the C string short. The token
 * was accepted by cJSON, so every backslash starts a complete escape. */
static bool has_nul_escape(struct span raw)
{
    for (size_t i = 0; i + 5 < raw.len; i++) {
        if (raw.ptr[i] != '\\')
            continue;
        if (memcmp(raw.ptr + i + 1, "u0000", 5) == 0)
            return true;
        i++; /* skip the escaped character, so "\\u0000" is a backslash, not a NUL */
    }
    return false;
}

enum proto_status json_object_begin(struct json_object_iter *it, const char *data, size_t len,
                                    struct proto_error *err)
{
    it->pos = data;
    it->end = data + len;
    it->members = 0;
    it->finished = 0;
    it->pos = skip_whitespace(it->pos, it->end);
    if (it->pos == it->end)
        return proto_fail(err, PROTO_ERR_SYNTAX, "empty message: expected a JSON object");
    if (*it->pos != '{')
        return proto_fail(err, PROTO_ERR_TYPE, "message is not a JSON object");
    it->pos++;
    return PROTO_OK;
}

/* Parses one JSON value at it->pos with cJSON; on success *item owns the tree
 * and *raw spans exactly the accepted bytes. */
static enum proto_status parse_value(struct json_object_iter *it, cJSON **item, struct span *raw,
                                     struct proto_error *err)
{
    const char *parse_end = NULL;
    size_t remaining = (size_t)(it->end - it->pos);
    *item = cJSON_ParseWithLengthOpts(it->pos, remaining, &parse_end, 0);
    if (!*item)
        return proto_fail(err, PROTO_ERR_SYNTAX, "invalid JSON value");
    if (parse_end < it->pos || parse_end > it->end) {
        cJSON_Delete(*item);
        *item = NULL;
        return proto_fail(err, PROTO_ERR_SYNTAX, "invalid JSON value");
    }
    *raw = span_make(it->pos, (size_t)(parse_end - it->pos));
    it->pos = parse_end;
    return PROTO_OK;
}

static enum proto_status finish_object(struct json_object_iter *it, struct proto_error *err)
{
    it->pos = skip_whitespace(it->pos + 1, it->end); /* past the closing brace */
    if (it->pos != it->end)
        return proto_fail(err, PROTO_ERR_SYNTAX, "unexpected bytes after the JSON object");
    it->finished = 1;
    return PROTO_INCOMPLETE;
}

enum proto_status json_object_next(struct json_object_iter *it, struct json_member *m,
                                   struct proto_error *err)
{
    memset(m, 0, sizeof *m);
    if (it->finished)
        return PROTO_INCOMPLETE;
    it->pos = skip_whitespace(it->pos, it->end);
    if (it->pos == it->end)
        return proto_fail(err, PROTO_ERR_SYNTAX, "unterminated JSON object");
    if (*it->pos == '}')
        return finish_object(it, err);
    if (it->members > 0) {
        if (*it->pos != ',')
            return proto_fail(err, PROTO_ERR_SYNTAX, "expected ',' between JSON members");
        it->pos = skip_whitespace(it->pos + 1, it->end);
        if (it->pos == it->end)
            return proto_fail(err, PROTO_ERR_SYNTAX, "unterminated JSON object");
    }
    if (*it->pos != '"')
        return proto_fail(err, PROTO_ERR_SYNTAX, "expected a string key in JSON object");

    struct span key_raw;
    enum proto_status st = parse_value(it, &m->key_item, &key_raw, err);
    if (st != PROTO_OK)
        return st;
    if (!cJSON_IsString(m->key_item) || !m->key_item->valuestring) {
        json_member_release(m);
        return proto_fail(err, PROTO_ERR_SYNTAX, "invalid JSON object key");
    }
    if (has_nul_escape(key_raw)) { /* "H\u0000x" would read as "H" */
        json_member_release(m);
        return proto_fail(err, PROTO_ERR_VALUE, "JSON object key contains \\u0000");
    }
    m->key = m->key_item->valuestring;

    it->pos = skip_whitespace(it->pos, it->end);
    if (it->pos == it->end || *it->pos != ':') {
        json_member_release(m);
        return proto_fail(err, PROTO_ERR_SYNTAX, "expected ':' after JSON key");
    }
    it->pos = skip_whitespace(it->pos + 1, it->end);
    st = parse_value(it, &m->value, &m->raw, err);
    if (st != PROTO_OK) {
        json_member_release(m);
        return st;
    }
    it->members++;
    return PROTO_OK;
}

void json_member_release(struct json_member *m)
{
    cJSON_Delete(m->key_item);
    cJSON_Delete(m->value);
    memset(m, 0, sizeof *m);
}

enum proto_status json_member_string_view(const struct json_member *m, struct span *out,
                                          struct proto_error *err)
{
    if (!cJSON_IsString(m->value) || !m->value->valuestring)
        return proto_fail(err, PROTO_ERR_TYPE, "expected a JSON string");
    /* raw is "...": the interior, if it has no escapes, is the value itself. */
    struct span s = span_make(m->raw.ptr + 1, m->raw.len - 2);
    if (memchr(s.ptr, '\\', s.len)) {
        if (has_nul_escape(m->raw))
            return proto_fail(err, PROTO_ERR_VALUE, "JSON string contains \\u0000");
        s = span_from_cstr(m->value->valuestring);
    }
    if (!utf8_is_valid(s.ptr, s.len))
        return proto_fail(err, PROTO_ERR_UTF8, "string is not valid UTF-8");
    *out = s;
    return PROTO_OK;
}

enum proto_status json_member_string(const struct json_member *m, struct hub_msg *owner,
                                     struct span *out, struct proto_error *err)
{
    struct span s;
    enum proto_status st = json_member_string_view(m, &s, err);
    if (st != PROTO_OK)
        return st;
    /* An escaped string lives in m: copy it into memory the owner keeps. */
    if (!json_string_view_borrows_input(m, s) && !hub_msg_own_copy(owner, s.ptr, s.len, &s))
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory copying a string");
    *out = s;
    return PROTO_OK;
}

enum proto_status json_object_walk(const char *data, size_t len, int max_depth, json_member_visitor visit,
                                   void *ctx, struct proto_error *err)
{
    enum proto_status st = json_strict_check_text(data, len, max_depth, err);
    if (st != PROTO_OK)
        return st;
    struct json_object_iter it;
    st = json_object_begin(&it, data, len, err);
    while (st == PROTO_OK) {
        struct json_member m;
        st = json_object_next(&it, &m, err);
        if (st == PROTO_INCOMPLETE)
            return PROTO_OK;
        if (st != PROTO_OK)
            break;
        st = visit(ctx, &m, err);
        json_member_release(&m);
    }
    return st;
}
