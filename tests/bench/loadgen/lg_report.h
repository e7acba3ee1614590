/* lg_report.h - the run's results: one JSON line for programs (stdout) and a short readable
 * summary for people (stderr), plus the exit status that sums them up. */
#ifndef LG_REPORT_H
#define LG_REPORT_H

#include <stdio.h>

#include "lg_config.h"
#include "lg_proc.h"
#include "lg_stats.h"

/* 0 = everything worked, 2 = some connection or message failed, 3 = stopped early (--max-time
 * expired, or a signal). */
int lg_report_exit_code(const struct lg_stats *st);

void lg_report_json(FILE *out, const struct lg_config *cfg, const struct lg_stats *st,
                    struct lg_proc_sample watch[][4], int exit_code);
void lg_report_human(FILE *out, const struct lg_config *cfg, const struct lg_stats *st,
                     struct lg_proc_sample watch[][4]);

#endif
