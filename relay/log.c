/* log.c - leveled log lines on stderr (see log.h). */
#include "relay/log.h"

#include "relay/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level threshold = LOG_INFO;

void log_set_level(enum log_level level) { threshold = level; }
enum log_level log_get_level(void) { return threshold; }

int log_level_from_name(const char *name)
{
    static const char *names[] = { "error", "warn", "info", "debug" };
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* The longest line written; longer ones are cut and end in "...". */
#define LOG_LINE_MAX 2048

/* Writes one whole line: stamp, level, the formatted text with every control
 * byte (a newline or an escape sequence a peer put in a hub name, a protocol
 * name, a URL) written as \xNN, so no peer can forge or hide a log line, and
 * the suffix. One fputs, so lines of one process do not interleave. */
__attribute__((format(printf, 3, 0)))
static void log_emit(enum log_level level, const char *suffix, const char *fmt, va_list ap)
{
    static const char *labels[] = { "error", "warn ", "info ", "debug" };
    char text[LOG_LINE_MAX], line[LOG_LINE_MAX + 256];
    int n = vsnprintf(text, sizeof text, fmt, ap);
    if (n >= (int)sizeof text)
        memcpy(text + sizeof text - 4, "...", 4);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t w = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    w += (size_t)snprintf(line + w, sizeof line - w, ".%03ldZ %s ", ts.tv_nsec / 1000000, labels[level]);
    size_t room = LOG_LINE_MAX + 64; /* the rest is for the suffix and the newline */
    for (const unsigned char *c = (const unsigned char *)text; *c && w + 5 < room; c++) {
        if (*c < 0x20 || *c == 0x7f)
            w += (size_t)snprintf(line + w, sizeof line - w, "\\x%02x", *c);
        else
            line[w++] = (char)*c;
    }
    snprintf(line + w, sizeof line - w, "%s\n", suffix);
    fputs(line, stderr);
}

void log_line(enum log_level level, const char *fmt, ...)
{
    if (level > threshold)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_emit(level, "", fmt, ap);
    va_end(ap);
}

bool log_limited(struct log_limit *limit, enum log_level level, const char *fmt, ...)
{
    if (level > threshold)
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
    log_emit(level, suffix, fmt, ap);
    va_end(ap);
    limit->last_ms = now ? now : 1;
    limit->suppressed = 0;
    return true;
}
