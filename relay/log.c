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

static void log_stamp(enum log_level level)
{
    static const char *labels[] = { "error", "warn ", "info ", "debug" };
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ldZ %s ", stamp, ts.tv_nsec / 1000000, labels[level]);
}

void log_line(enum log_level level, const char *fmt, ...)
{
    if (level > threshold)
        return;
    log_stamp(level);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
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
    log_stamp(level);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (limit->suppressed)
        fprintf(stderr, " (and %lu more like it since the last such line, not logged)", limit->suppressed);
    fputc('\n', stderr);
    limit->last_ms = now ? now : 1;
    limit->suppressed = 0;
    return true;
}
