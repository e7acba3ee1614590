/* lg_proc.c - VmRSS from /proc/PID/status, utime+stime from /proc/PID/stat. */
#include "lg_proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int read_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return 0;
}

int lg_proc_parse_stat(const char *text, uint64_t *utime, uint64_t *stime)
{
    const char *p = strrchr(text, ')');
    if (!p)
        return -1;
    p++;
    /* After ')' comes field 3 (state); utime is field 14, so skip 11 fields. */
    for (int field = 3; field < 14; field++) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
        if (!*p)
            return -1;
    }
    char *end;
    unsigned long long u = strtoull(p, &end, 10);
    if (end == p)
        return -1;
    p = end;
    unsigned long long s = strtoull(p, &end, 10);
    if (end == p)
        return -1;
    *utime = u;
    *stime = s;
    return 0;
}

struct lg_proc_sample lg_proc_sample(pid_t pid)
{
    struct lg_proc_sample s = {0, 0, 0};
    char path[64], buf[4096];
    if (pid == 0)
        pid = getpid();

    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (read_file(path, buf, sizeof buf) != 0)
        return s;
    const char *rss = strstr(buf, "\nVmRSS:");
    if (!rss)
        return s;
    s.rss_kb = strtoull(rss + 7, NULL, 10);

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    uint64_t ut, st;
    if (read_file(path, buf, sizeof buf) != 0 || lg_proc_parse_stat(buf, &ut, &st) != 0)
        return s;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0)
        hz = 100;
    s.cpu_us = (ut + st) * 1000000u / (uint64_t)hz;
    s.ok = 1;
    return s;
}
