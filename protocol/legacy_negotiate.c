/* legacy_negotiate.c - clientProtocol resolution and the negotiate body (see legacy_negotiate.h). */
#include "protocol/legacy_negotiate.h"

#include <limits.h>
#include <stdio.h>

#include "protocol/json_write.h"

static const struct legacy_protocol_version protocol_min = { 1, 2, -1, -1 };
static const struct legacy_protocol_version protocol_max = { 2, 0, -1, -1 };

/* .NET's Char.IsWhiteSpace subset that Int32.TryParse skips: space, \t..\r. */
static bool is_number_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* One Version component as Int32.TryParse(s, NumberStyles.Integer) reads
 * it: optional white space, an optional sign, digits, optional white space;
 * then System.Version refuses negative values. */
static bool parse_component(const char *p, const char *end, int *out)
{
    while (p < end && is_number_space(*p))
        p++;
    while (end > p && is_number_space(end[-1]))
        end--;
    bool negative = false;
    if (p < end && (*p == '+' || *p == '-'))
        negative = (*p++ == '-');
    if (p == end)
        return false;
    long long value = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        value = value * 10 + (*p - '0');
        if (value > INT_MAX) /* overflow, or a negative value Version refuses anyway */
            return false;
    }
    if (negative && value != 0)
        return false;
    *out = (int)value;
    return true;
}

/* System.Version.TryParse: 2 to 4 dot-separated components. */
static bool parse_version(struct span s, struct legacy_protocol_version *v)
{
    int parts[4] = { -1, -1, -1, -1 };
    int count = 0;
    const char *p = s.ptr, *end = s.ptr + s.len;
    for (;;) {
        const char *dot = p;
        while (dot < end && *dot != '.')
            dot++;
        if (count == 4)
            return false;
        int value = 0;
        if (!parse_component(p, dot, &value))
            return false;
        parts[count++] = value;
        if (dot == end)
            break;
        p = dot + 1;
    }
    if (count < 2)
        return false;
    *v = (struct legacy_protocol_version){ parts[0], parts[1], parts[2], parts[3] };
    return true;
}

/* System.Version.CompareTo: component by component, absent (-1) first. */
static int version_compare(struct legacy_protocol_version a, struct legacy_protocol_version b)
{
    const int x[4] = { a.major, a.minor, a.build, a.revision };
    const int y[4] = { b.major, b.minor, b.build, b.revision };
    for (int i = 0; i < 4; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

struct legacy_protocol_version legacy_protocol_resolve(struct span client_protocol)
{
    struct legacy_protocol_version v;
    if (!span_is_set(client_protocol) || !parse_version(client_protocol, &v))
        return protocol_min;
    if (version_compare(v, protocol_max) > 0)
        return protocol_max;
    if (version_compare(v, protocol_min) < 0)
        return protocol_min;
    return v;
}

bool legacy_protocol_delayed_start(struct legacy_protocol_version v)
{
    static const struct legacy_protocol_version delayed_start = { 1, 4, -1, -1 };
    return version_compare(v, delayed_start) >= 0;
}

size_t legacy_protocol_format(struct legacy_protocol_version v, char *out, size_t cap)
{
    int n;
    if (v.build < 0)
        n = snprintf(out, cap, "%d.%d", v.major, v.minor);
    else if (v.revision < 0)
        n = snprintf(out, cap, "%d.%d.%d", v.major, v.minor, v.build);
    else
        n = snprintf(out, cap, "%d.%d.%d.%d", v.major, v.minor, v.build, v.revision);
    if (n < 0)
        return 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

/* Milliseconds as Json.NET writes the double TotalSeconds: the shortest
 * round-trip decimal, with ".0" added when it has no fraction. */
static bool write_seconds(struct buf *b, uint32_t ms)
{
    char text[32];
    int n;
    unsigned whole = ms / 1000, frac = ms % 1000;
    if (frac == 0)
        n = snprintf(text, sizeof text, "%u.0", whole);
    else if (frac % 100 == 0)
        n = snprintf(text, sizeof text, "%u.%u", whole, frac / 100);
    else if (frac % 10 == 0)
        n = snprintf(text, sizeof text, "%u.%02u", whole, frac / 10);
    else
        n = snprintf(text, sizeof text, "%u.%03u", whole, frac);
    return n > 0 && buf_append(b, text, (size_t)n);
}

static bool write_string_member(struct buf *b, const char *key, struct span value, bool first)
{
    return json_write_key(b, key, first) && json_write_string(b, value);
}

static bool write_seconds_member(struct buf *b, const char *key, uint32_t ms)
{
    return json_write_key(b, key, false) && write_seconds(b, ms);
}

static bool write_body(struct buf *b, const struct legacy_negotiate *n)
{
    char protocol[LEGACY_PROTOCOL_TEXT_MAX];
    size_t protocol_len = legacy_protocol_format(n->protocol, protocol, sizeof protocol);

    return buf_append_byte(b, '{') &&
           write_string_member(b, "Url", n->url, true) &&
           write_string_member(b, "ConnectionToken", n->connection_token, false) &&
           write_string_member(b, "ConnectionId", n->connection_id, false) &&
           (n->keep_alive_timeout_ms
                ? write_seconds_member(b, "KeepAliveTimeout", n->keep_alive_timeout_ms)
                : json_write_key(b, "KeepAliveTimeout", false) && buf_append_cstr(b, "null")) &&
           write_seconds_member(b, "DisconnectTimeout", n->disconnect_timeout_ms) &&
           write_seconds_member(b, "ConnectionTimeout", n->connection_timeout_ms) &&
           json_write_key(b, "TryWebSockets", false) &&
           buf_append_cstr(b, n->try_websockets ? "true" : "false") &&
           write_string_member(b, "ProtocolVersion", span_make(protocol, protocol_len), false) &&
           write_seconds_member(b, "TransportConnectTimeout", n->transport_connect_timeout_ms) &&
           write_seconds_member(b, "LongPollDelay", n->long_poll_delay_ms) &&
           buf_append_byte(b, '}');
}

bool legacy_negotiate_encode(struct buf *out, const struct legacy_negotiate *n)
{
    size_t mark = out->len;
    if (write_body(out, n))
        return true;
    out->len = mark;
    return false;
}
