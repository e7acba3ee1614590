/* lg_proc.h - what /proc says about a process: resident memory (VmRSS) and CPU time consumed
 * (utime + stime). Used to report the load generator's own cost and that of watched servers. */
#ifndef LG_PROC_H
#define LG_PROC_H

#include <stdint.h>
#include <sys/types.h>

struct lg_proc_sample {
    int ok;              /* 0 when the process could not be read (gone, no permission) */
    uint64_t rss_kb;     /* VmRSS */
    uint64_t cpu_us;     /* utime + stime, microseconds */
};

/* Reads both figures for pid (0 = this process). */
struct lg_proc_sample lg_proc_sample(pid_t pid);

/* Parses the text of /proc/PID/stat: fields 14 (utime) and 15 (stime) in clock ticks, counted
 * after the closing ')' of the command name (which may contain spaces and parentheses).
 * Returns 0 or -1. Exposed for the self-test. */
int lg_proc_parse_stat(const char *text, uint64_t *utime, uint64_t *stime);

#endif
