/* json_strict.c - System.Text.Json's strictness on top of cJSON (see json_strict.h). */
#include "protocol/json_strict.h"

#include <limits.h>
#include <stdbool.h>

enum proto_status json_strict_check_text(const char *p, size_t len, int max_depth,
                                         struct proto_error *err)
{
    if (!utf8_is_valid(p, len))
        return proto_fail(err, PROTO_ERR_UTF8, "message is not valid UTF-8");

    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (in_string) {
            if (c == '\\')
                i++; /* the escaped byte cannot end the string */
            else if (c == '"')
                in_string = false;
            else if (c < 0x20)
                return proto_fail(err, PROTO_ERR_SYNTAX, "control character inside a JSON string");
            continue;
        }
        /* cJSON skips every byte <= 0x20 as white space and a UTF-8 BOM before a
         * value; JSON (and Utf8JsonReader) allow only these four, and no byte
         * above 0x7F outside a string. */
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c >= 0x80)
            return proto_fail(err, PROTO_ERR_SYNTAX, "unexpected byte outside a JSON string");
        switch (c) {
        case '"':
            in_string = true;
            break;
        case '{':
        case '[':
            if (depth >= max_depth) /* never ++ past max_depth: INT_MAX is allowed */
                return proto_fail(err, PROTO_ERR_TOO_DEEP, "JSON nested too deeply");
            depth++;
            break;
        case '}':
        case ']':
            /* Unbalanced closers are cJSON's to report as syntax errors. */
            if (depth > 0)
                depth--;
            break;
        default:
            break;
        }
    }
    return PROTO_OK;
}

enum proto_status json_strict_integer(struct span raw, long long min, long long max,
                                      long long *out, struct proto_error *err)
{
    size_t i = 0;
    bool negative = false;
    if (i < raw.len && raw.ptr[i] == '-') {
        negative = true;
        i++;
    }
    size_t first_digit = i;
    while (i < raw.len && raw.ptr[i] >= '0' && raw.ptr[i] <= '9')
        i++;
    size_t digits = i - first_digit;
    if (digits == 0 || i != raw.len || (digits > 1 && raw.ptr[first_digit] == '0'))
        return proto_fail(err, PROTO_ERR_TYPE, "expected an integer");

    /* Accumulate the magnitude; 2^63 is the largest any int64 needs (LLONG_MIN). */
    const unsigned long long limit = (unsigned long long)LLONG_MAX + 1;
    unsigned long long magnitude = 0;
    for (size_t k = first_digit; k < raw.len; k++) {
        unsigned d = (unsigned)(raw.ptr[k] - '0');
        if (magnitude > (limit - d) / 10)
            return proto_fail(err, PROTO_ERR_VALUE, "integer out of range");
        magnitude = magnitude * 10 + d;
    }
    long long value;
    if (negative)
        value = magnitude == limit ? LLONG_MIN : -(long long)magnitude;
    else if (magnitude > (unsigned long long)LLONG_MAX)
        return proto_fail(err, PROTO_ERR_VALUE, "integer out of range");
    else
        value = (long long)magnitude;
    if (value < min || value > max)
        return proto_fail(err, PROTO_ERR_VALUE, "integer out of range");
    *out = value;
    return PROTO_OK;
}
