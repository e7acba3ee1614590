/* log.h - leveled log lines on stderr.
 *
 * One process-wide threshold, set once at startup from the configuration
 * (the only mutable static of the relay, like Redis' verbosity). Lines look
 * like `2026-11-30T10:00:00.123Z info  relay: listening on 127.0.0.1:8080`. */
#ifndef SR_LOG_H
#define SR_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "error", "warn", "info", "debug"; returns -1 for anything else. */
int log_level_from_name(const char *name);

void log_line(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_line(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_line(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_line(LOG_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_get_level() >= LOG_DEBUG) log_line(LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
