/* test_log.c - the relay's log lines: control bytes escaped, long lines cut, rate-limited lines counted. */
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

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    return test_main_result("test_log");
}
