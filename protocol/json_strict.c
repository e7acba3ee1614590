/* json_strict.c - System.Text.Json's strictness on top of cJSON (see json_strict.h). */
#include "protocol/json_strict.h"

#include <limits.h>
#include <stdbool.h>

static bool is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* The escape after the backslash at p[i]: one of \" \\ \/ \b \f \n \r \t or
 * \u and four hex digits. Returns its length after the backslash, 0 if bad.
 * cJSON reads a \u with non-hex digits ("\u12;x") as U+0000, which then cuts
 * its C string short. */
static size_t escape_length(const char *p, size_t len, size_t i)
{
    if (i + 1 >= len)
        return 0;
    switch (p[i + 1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        return 1;
    case 'u':
        if (len - i < 6)
            return 0;
        for (size_t k = 2; k < 6; k++)
            if (!is_hex((unsigned char)p[i + k]))
                return 0;
        return 5;
    default:
        return 0;
    }
}

/* The number token starting at p[i] (a '-' or a digit): the run of bytes
 * cJSON collects for strtod ([0-9+-.eE]) must be exactly
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; cJSON would also take
 * "01", "1." or "1.e5", which Utf8JsonReader refuses. In valid JSON no byte of
 * that set follows a number. Returns the run's length, 0 if it is no number. */
static size_t number_length(const char *p, size_t len, size_t i)
{
    size_t end = i;
    while (end < len && (is_digit((unsigned char)p[end]) || p[end] == '+' || p[end] == '-' ||
                         p[end] == '.' || p[end] == 'e' || p[end] == 'E'))
        end++;
    size_t k = i;
    if (k < end && p[k] == '-')
        k++;
    if (k < end && p[k] == '0')
        k++;
    else if (k < end && is_digit((unsigned char)p[k]))
        while (k < end && is_digit((unsigned char)p[k]))
            k++;
    else
        return 0;
    if (k < end && p[k] == '.') {
        size_t first = ++k;
        while (k < end && is_digit((unsigned char)p[k]))
            k++;
        if (k == first)
            return 0;
    }
    if (k < end && (p[k] == 'e' || p[k] == 'E')) {
        k++;
        if (k < end && (p[k] == '+' || p[k] == '-'))
            k++;
        size_t first = k;
        while (k < end && is_digit((unsigned char)p[k]))
            k++;
        if (k == first)
            return 0;
    }
    return k == end ? end - i : 0;
}

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
            if (c == '\\') {
                size_t n = escape_length(p, len, i);
                if (n == 0)
                    return proto_fail(err, PROTO_ERR_SYNTAX, "invalid escape in a JSON string");
                i += n; /* the escaped bytes cannot end the string */
            }
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
        if (c == '-' || is_digit(c)) {
            size_t n = number_length(p, len, i);
            if (n == 0)
                return proto_fail(err, PROTO_ERR_SYNTAX, "invalid JSON number");
            i += n - 1;
            continue;
        }
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
