/* log.h - leveled log lines, one event per line, on stderr or in a file.
 *
 * One process-wide sink (threshold, format, file), set once at startup from the
 * configuration (the only mutable statics of the relay, like Redis' verbosity),
 * the file reopened on SIGHUP. A line has a time, a level, the message and, when
 * it concerns a client connection, the relay's id for it and its hub:
 *   text    2026-11-30T10:00:00.123Z info  session: client silent for 30000 ms, closing conn=Ab1 hub=chat
 *   json    {"time":"2026-11-30T10:00:00.123Z","level":"info","msg":"session: ...","conn":"Ab1","hub":"chat"}
 *   logfmt  time=2026-11-30T10:00:00.123Z level=info msg="session: ..." conn=Ab1 hub=chat
 * In every format a control byte or a byte that is not UTF-8 (a peer's text in a
 * hub name, a URL) is written as \xNN, so no peer can forge, hide or break a line. */
#ifndef SR_LOG_H
#define SR_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };
enum log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON = 1, LOG_FORMAT_LOGFMT = 2 };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "error", "warn", "info", "debug"; returns -1 for anything else. */
int log_level_from_name(const char *name);
/* Parses "text", "json", "logfmt"; returns -1 for anything else. */
int log_format_from_name(const char *name);
void log_set_format(enum log_format format);

/* --log-file: lines go to path, opened for appending (created 0640), instead of
 * stderr; NULL goes back to stderr. False, with one sentence in err, when it
 * cannot be opened (the sink is then unchanged). */
bool log_open_file(const char *path, char *err, size_t err_len);
/* SIGHUP: opens the file's path again (after logrotate moved it away), then
 * closes the old descriptor. If it cannot be opened the old one stays, and an
 * error line says why. Nothing to do on stderr. */
void log_reopen(void);
/* Closes the file (back to stderr); at exit. */
void log_close(void);

void log_line(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line about one client connection: conn is the relay's connection id (never
 * a token), hub the hub's name; either may be NULL or "" (then left out). */
void log_conn_line(enum log_level level, const char *conn, const char *hub, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A line another library produced (libwebsockets): written as a message. */
void log_text(enum log_level level, const char *text);

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

#define log_conn_warn(conn, hub, ...) log_conn_line(LOG_WARN, conn, hub, __VA_ARGS__)
#define log_conn_info(conn, hub, ...) log_conn_line(LOG_INFO, conn, hub, __VA_ARGS__)
#define log_conn_debug(conn, hub, ...) \
    do { if (log_get_level() >= LOG_DEBUG) log_conn_line(LOG_DEBUG, conn, hub, __VA_ARGS__); } while (0)

#endif
