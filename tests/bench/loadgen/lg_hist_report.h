/* lg_hist_report.h - a latency histogram in the load generator's reports: a JSON object
 * {count, mean, min, p50, p90, p99, p999, max} and a readable line "n= p50= ... max= us". */
#ifndef LG_HIST_REPORT_H
#define LG_HIST_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "lg_hist.h"

void lg_report_add_hist(cJSON *parent, const char *name, const struct lg_hist *h);
/* Nothing when the histogram is empty. */
void lg_report_human_hist(FILE *out, const char *name, const struct lg_hist *h);

#endif
