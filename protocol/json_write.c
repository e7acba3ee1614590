/* json_write.c - JSON string token writer (see json_write.h). */
#include "protocol/json_write.h"

static bool write_escape(struct buf *b, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    switch (c) {
    case '"': return buf_append(b, "\\\"", 2);
    case '\\': return buf_append(b, "\\\\", 2);
    case '\n': return buf_append(b, "\\n", 2);
    case '\r': return buf_append(b, "\\r", 2);
    case '\t': return buf_append(b, "\\t", 2);
    case '\b': return buf_append(b, "\\b", 2);
    case '\f': return buf_append(b, "\\f", 2);
    default: {
        char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
        return buf_append(b, u, sizeof u);
    }
    }
}

bool json_write_string(struct buf *b, struct span s)
{
    if (!buf_reserve(b, s.len + 2) || !buf_append_byte(b, '"'))
        return false;
    size_t run_start = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (!buf_append(b, s.ptr + run_start, i - run_start) || !write_escape(b, c))
            return false;
        run_start = i + 1;
    }
    return buf_append(b, s.ptr + run_start, s.len - run_start) && buf_append_byte(b, '"');
}

bool json_write_key(struct buf *b, const char *key, bool first)
{
    return (first || buf_append_byte(b, ',')) && json_write_string(b, span_from_cstr(key)) &&
           buf_append_byte(b, ':');
}
