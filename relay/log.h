/* log.h - leveled log lines on stderr.
 *
 * One process-wide threshold, set once at startup from the configuration
 * (the only mutable static of the relay, like Redis' verbosity). Lines look
 * like `2026-11-30T10:00:00.123Z info  relay: listening on 127.0.0.1:8080`. */
#ifndef SR_LOG_H
#define SR_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "error", "warn", "info", "debug"; returns -1 for anything else. */
int log_level_from_name(const char *name);

void log_line(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A log line that may come from every connection at once (a refusal, an
 * accept failure): at most one per interval_ms per limiter; the next line
 * after a quiet spell says how many were held back. One limiter per kind of
 * line, owned by whatever logs it; zero-initialise it and set interval_ms. */
struct log_limit {
    unsigned interval_ms;
    uint64_t last_ms;       /* when the last line was written (monotonic), 0 = never */
    unsigned long suppressed; /* lines held back since then */
};

/* Writes the line unless one went out less than interval_ms ago (then counts
 * it). Returns whether it was written. */
bool log_limited(struct log_limit *limit, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(...) log_line(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_line(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_line(LOG_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_get_level() >= LOG_DEBUG) log_line(LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
