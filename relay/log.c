/* log.c - leveled log lines in text, JSON or logfmt, on stderr or in a file (see log.h). */
#include "relay/log.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "containers/span.h"
#include "relay/clock.h"

/* Where lines go and which: the process' one log sink. */
static struct {
    enum log_level threshold;
    enum log_format format;
    int fd;     /* 2 (stderr) or the --log-file descriptor */
    char *path; /* owned; NULL on stderr */
} sink = { LOG_INFO, LOG_FORMAT_TEXT, 2, NULL };

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_set_level(enum log_level level) { sink.threshold = level; }
enum log_level log_get_level(void) { return sink.threshold; }
void log_set_format(enum log_format format) { sink.format = format; }

int log_level_from_name(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

int log_format_from_name(const char *name)
{
    static const char *const names[] = { "text", "json", "logfmt" };
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------------ the file */

static int open_append(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
}

bool log_open_file(const char *path, char *err, size_t err_len)
{
    if (!path) {
        log_close();
        return true;
    }
    char *copy = strdup(path);
    int fd = copy ? open_append(path) : -1;
    if (fd < 0) {
        snprintf(err, err_len, "--log-file %s: %s", path, copy ? strerror(errno) : "out of memory");
        free(copy);
        return false;
    }
    log_close();
    sink.fd = fd;
    sink.path = copy;
    return true;
}

void log_reopen(void)
{
    if (!sink.path)
        return;
    int fd = open_append(sink.path);
    if (fd < 0) {
        log_error("log: cannot reopen --log-file %s, still writing to the old file: %s", sink.path, strerror(errno));
        return;
    }
    close(sink.fd);
    sink.fd = fd;
}

void log_close(void)
{
    if (sink.path)
        close(sink.fd);
    free(sink.path);
    sink.path = NULL;
    sink.fd = 2;
}

/* ------------------------------------------------------------ one line */

/* The longest message written; longer ones are cut and end in "...". */
#define LOG_LINE_MAX 2048
/* Room for a message once escaped (cut again if escaping made it longer). */
#define LOG_TEXT_MAX (LOG_LINE_MAX + 64)

/* Copies in to out (cap bytes, NUL-terminated) as valid UTF-8 without control
 * bytes: each control byte (a newline, an escape sequence) and each byte that
 * does not start a well-formed UTF-8 character is written as \xNN. */
static void escape_text(const char *in, char *out, size_t cap)
{
    const unsigned char *c = (const unsigned char *)in;
    size_t w = 0;
    while (*c && w + 5 < cap) {
        size_t n = *c < 0x80 ? 1 : *c >= 0xf0 ? 4 : *c >= 0xe0 ? 3 : 2;
        if (*c < 0x20 || *c == 0x7f || (n > 1 && (strnlen((const char *)c, n) < n || !utf8_is_valid((const char *)c, n)))) {
            w += (size_t)snprintf(out + w, cap - w, "\\x%02x", *c);
            c++;
        } else if (w + n + 4 < cap) {
            memcpy(out + w, c, n);
            w += n;
            c += n;
        } else {
            break;
        }
    }
    if (*c)
        memcpy(out + (w < cap - 4 ? w : cap - 4), "...", 4);
    else
        out[w] = '\0';
}

static void format_time(char out[32])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t w = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + w, 32 - w, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* One write(2) per line: lines of one process never interleave, and with
 * O_APPEND neither do those of two processes sharing the file. */
static void write_line(const char *line, size_t len)
{
    while (len > 0) {
        ssize_t n = write(sink.fd, line, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* nowhere left to say it */
        line += n;
        len -= (size_t)n;
    }
}

/* logfmt: key=value, the value quoted when it is empty or holds a space, '=',
 * '"' or '\' (then '"' and '\' escaped with '\'). */
static size_t logfmt_pair(char *out, size_t cap, const char *key, const char *value)
{
    bool quote = !*value || strpbrk(value, " =\"\\") != NULL;
    size_t w = (size_t)snprintf(out, cap, " %s=%s", key, quote ? "\"" : "");
    for (const char *v = value; *v && w + 4 < cap; v++) {
        if (quote && (*v == '"' || *v == '\\'))
            out[w++] = '\\';
        out[w++] = *v;
    }
    if (quote && w + 2 < cap)
        out[w++] = '"';
    out[w] = '\0';
    return w;
}

static void emit_json(const char *time, enum log_level level, const char *msg, const char *conn, const char *hub)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddStringToObject(o, "time", time) && cJSON_AddStringToObject(o, "level", level_names[level]) &&
              cJSON_AddStringToObject(o, "msg", msg) && (!*conn || cJSON_AddStringToObject(o, "conn", conn)) &&
              (!*hub || cJSON_AddStringToObject(o, "hub", hub));
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) {
        static const char oom[] = "{\"level\":\"error\",\"msg\":\"log: out of memory for a log line\"}\n";
        write_line(oom, sizeof oom - 1);
        return;
    }
    size_t len = strlen(text);
    text[len] = '\n'; /* over the NUL: written by length */
    write_line(text, len + 1);
    cJSON_free(text);
}

static void emit(enum log_level level, const char *conn_raw, const char *hub_raw, const char *text)
{
    char time[32], msg[LOG_TEXT_MAX], conn[128], hub[256];
    format_time(time);
    escape_text(text, msg, sizeof msg);
    escape_text(conn_raw ? conn_raw : "", conn, sizeof conn);
    escape_text(hub_raw ? hub_raw : "", hub, sizeof hub);
    if (sink.format == LOG_FORMAT_JSON) {
        emit_json(time, level, msg, conn, hub);
        return;
    }
    char line[2 * LOG_TEXT_MAX + 2 * sizeof hub + 128];
    size_t w;
    if (sink.format == LOG_FORMAT_LOGFMT) {
        w = (size_t)snprintf(line, sizeof line, "time=%s level=%s", time, level_names[level]);
        w += logfmt_pair(line + w, sizeof line - w, "msg", msg);
        if (*conn)
            w += logfmt_pair(line + w, sizeof line - w, "conn", conn);
        if (*hub)
            w += logfmt_pair(line + w, sizeof line - w, "hub", hub);
    } else {
        static const char *const labels[] = { "error", "warn ", "info ", "debug" };
        w = (size_t)snprintf(line, sizeof line, "%s %s %s%s%s%s%s", time, labels[level], msg, *conn ? " conn=" : "",
                             conn, *hub ? " hub=" : "", hub);
    }
    if (w > sizeof line - 2)
        w = sizeof line - 2;
    line[w++] = '\n';
    write_line(line, w);
}

/* Formats the message (cut at LOG_LINE_MAX, then the suffix) and writes it. */
__attribute__((format(printf, 5, 0)))
static void emit_v(enum log_level level, const char *conn, const char *hub, const char *suffix, const char *fmt,
                   va_list ap)
{
    char text[LOG_LINE_MAX + 128];
    int n = vsnprintf(text, LOG_LINE_MAX, fmt, ap);
    if (n < 0)
        n = 0;
    if (n >= LOG_LINE_MAX) {
        memcpy(text + LOG_LINE_MAX - 4, "...", 4);
        n = LOG_LINE_MAX - 1;
    }
    snprintf(text + n, sizeof text - (size_t)n, "%s", suffix);
    emit(level, conn, hub, text);
}

void log_line(enum log_level level, const char *fmt, ...)
{
    if (level > sink.threshold)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit_v(level, NULL, NULL, "", fmt, ap);
    va_end(ap);
}

void log_conn_line(enum log_level level, const char *conn, const char *hub, const char *fmt, ...)
{
    if (level > sink.threshold)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit_v(level, conn, hub, "", fmt, ap);
    va_end(ap);
}

void log_text(enum log_level level, const char *text)
{
    if (level <= sink.threshold)
        emit(level, NULL, NULL, text);
}

bool log_limited(struct log_limit *limit, enum log_level level, const char *fmt, ...)
{
    if (level > sink.threshold)
        return false;
    uint64_t now = clock_now_ms();
    if (limit->last_ms && now - limit->last_ms < limit->interval_ms) {
        limit->suppressed++;
        return false;
    }
    char suffix[96] = "";
    if (limit->suppressed)
        snprintf(suffix, sizeof suffix, " (and %lu more like it since the last such line, not logged)",
                 limit->suppressed);
    va_list ap;
    va_start(ap, fmt);
    emit_v(level, NULL, NULL, suffix, fmt, ap);
    va_end(ap);
    limit->last_ms = now ? now : 1;
    limit->suppressed = 0;
    return true;
}
