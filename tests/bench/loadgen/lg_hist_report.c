/* lg_hist_report.c - how a latency histogram is reported: the JSON object of the summary line
 * and the one line of the readable summary. Shared by signalr-loadgen and signalr-replay load. */
#include "lg_hist_report.h"

#include <inttypes.h>

void lg_report_add_hist(cJSON *parent, const char *name, const struct lg_hist *h)
{
    cJSON *o = cJSON_AddObjectToObject(parent, name);
    cJSON_AddNumberToObject(o, "count", (double)h->count);
    cJSON_AddNumberToObject(o, "mean", (double)(uint64_t)(lg_hist_mean(h) + 0.5));
    cJSON_AddNumberToObject(o, "min", (double)(h->count ? h->min : 0));
    cJSON_AddNumberToObject(o, "p50", (double)lg_hist_percentile(h, 50));
    cJSON_AddNumberToObject(o, "p90", (double)lg_hist_percentile(h, 90));
    cJSON_AddNumberToObject(o, "p99", (double)lg_hist_percentile(h, 99));
    cJSON_AddNumberToObject(o, "p999", (double)lg_hist_percentile(h, 99.9));
    cJSON_AddNumberToObject(o, "max", (double)h->max);
}

void lg_report_human_hist(FILE *out, const char *name, const struct lg_hist *h)
{
    if (!h->count)
        return;
    fprintf(out, "  %-13s n=%" PRIu64 " p50=%" PRIu64 " p90=%" PRIu64 " p99=%" PRIu64 " p99.9=%" PRIu64
                 " max=%" PRIu64 " us\n",
            name, h->count, lg_hist_percentile(h, 50), lg_hist_percentile(h, 90), lg_hist_percentile(h, 99),
            lg_hist_percentile(h, 99.9), h->max);
}
