/* test_log.c - the relay's log lines: control bytes escaped, long lines cut, rate-limited lines counted,
 * the JSON and logfmt formats, a connection's id and hub, --log-file and its reopening. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "relay/log.h"

/* Everything written to stderr since the last call (stderr goes to a temporary file). */
static char *captured(FILE *f)
{
    static long offset;
    fflush(stderr);
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    char *text = calloc(1, (size_t)(end - offset) + 1);
    fseek(f, offset, SEEK_SET);
    size_t n = fread(text, 1, (size_t)(end - offset), f);
    text[n] = '\0';
    offset = end;
    return text;
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

int main(void)
{
    char path[] = "/tmp/test_log.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return test_main_result("test_log");
    FILE *f = fdopen(fd, "r");
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    log_set_level(LOG_INFO);

    /* A peer's text with a newline and an escape sequence stays on one line, visibly. */
    log_info("hub %s", "chat\nerror fake line\x1b[31m");
    char *text = captured(f);
    CHECK_EQ_INT(count_lines(text), 1);
    CHECK(strstr(text, " info  hub chat\\x0aerror fake line\\x1b[31m\n") != NULL);
    free(text);

    /* Below the threshold: nothing. */
    log_debug("not shown %d", 1);
    text = captured(f);
    CHECK_EQ_INT(strlen(text), 0);
    free(text);

    /* A very long line is cut, still one line. */
    char *big = malloc(10000);
    memset(big, 'x', 9999);
    big[9999] = '\0';
    log_warn("%s", big);
    free(big);
    text = captured(f);
    CHECK_EQ_INT(count_lines(text), 1);
    CHECK(strlen(text) < 2300);
    CHECK(strstr(text, "...\n") != NULL);
    free(text);

    /* Rate-limited: the first line, then nothing within the interval, then one line that says how many were held. */
    struct log_limit limit = { .interval_ms = 60000 };
    CHECK(log_limited(&limit, LOG_WARN, "refused %d", 1));
    for (int i = 2; i <= 5; i++)
        CHECK(!log_limited(&limit, LOG_WARN, "refused %d", i));
    text = captured(f);
    CHECK_EQ_INT(count_lines(text), 1);
    CHECK(strstr(text, "refused 1\n") != NULL);
    free(text);
    CHECK_EQ_INT(limit.suppressed, 4);
    limit.last_ms -= 60000; /* the interval has passed */
    CHECK(log_limited(&limit, LOG_WARN, "refused %d", 6));
    text = captured(f);
    CHECK(strstr(text, "refused 6 (and 4 more like it since the last such line, not logged)\n") != NULL);
    free(text);
    CHECK_EQ_INT(limit.suppressed, 0);

    /* A connection's line, in each format; a peer's bytes (a newline, a quote, a byte that is not
     * UTF-8) escaped so that the line still parses. */
    log_conn_info("Ab1", "chat", "session: client silent");
    text = captured(f);
    CHECK(strstr(text, " info  session: client silent conn=Ab1 hub=chat\n") != NULL);
    free(text);
    log_set_format(LOG_FORMAT_JSON);
    log_conn_warn("Ab1", "ch\"at", "hub %s", "x\ny\xff\xc3\xa9");
    log_info("no connection");
    text = captured(f);
    CHECK_EQ_INT(count_lines(text), 2);
    CHECK(strncmp(text, "{\"time\":\"", 9) == 0);
    CHECK(strstr(text, "\"level\":\"warn\",\"msg\":\"hub x\\\\x0ay\\\\xff\xc3\xa9\",\"conn\":\"Ab1\",\"hub\":\"ch\\\"at\"}\n") != NULL);
    CHECK(strstr(text, "\"msg\":\"no connection\"}\n") != NULL);
    free(text);
    log_set_format(LOG_FORMAT_LOGFMT);
    log_conn_info("Ab1", "chat", "say \"hi\" a=b");
    log_info("plain");
    text = captured(f);
    CHECK(strstr(text, " level=info msg=\"say \\\"hi\\\" a=b\" conn=Ab1 hub=chat\n") != NULL);
    CHECK(strstr(text, " level=info msg=plain\n") != NULL);
    CHECK(strncmp(text, "time=", 5) == 0);
    free(text);
    log_set_format(LOG_FORMAT_TEXT);
    CHECK_EQ_INT(log_format_from_name("logfmt"), LOG_FORMAT_LOGFMT);
    CHECK_EQ_INT(log_format_from_name("xml"), -1);

    /* --log-file: lines go there; after the file is moved away, a reopen makes a new one. */
    char dir[] = "/tmp/test_log_dir.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[64], moved[64], err[256] = "";
    snprintf(file, sizeof file, "%s/relay.log", dir);
    snprintf(moved, sizeof moved, "%s/relay.log.1", dir);
    CHECK(log_open_file(file, err, sizeof err));
    log_info("first");
    CHECK(rename(file, moved) == 0);
    log_info("second, still in the moved file");
    log_reopen();
    log_info("third, in the new file");
    log_close();
    log_info("back on stderr");
    text = captured(f);
    CHECK(strstr(text, "back on stderr\n") != NULL && strstr(text, "first") == NULL);
    free(text);
    FILE *m = fopen(moved, "r"), *n = fopen(file, "r");
    char a[512] = "", b[512] = "";
    CHECK(m && n);
    if (m && n) {
        a[fread(a, 1, sizeof a - 1, m)] = '\0';
        b[fread(b, 1, sizeof b - 1, n)] = '\0';
    }
    CHECK(strstr(a, "first\n") && strstr(a, "second, still in the moved file\n") && !strstr(a, "third"));
    CHECK(strstr(b, "third, in the new file\n") && count_lines(b) == 1);
    if (m)
        fclose(m);
    if (n)
        fclose(n);
    CHECK(!log_open_file("/nonexistent-dir/x.log", err, sizeof err));
    CHECK(strstr(err, "--log-file /nonexistent-dir/x.log: No such file or directory") != NULL);
    unlink(file);
    unlink(moved);
    rmdir(dir);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    return test_main_result("test_log");
}
