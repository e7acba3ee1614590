/* lg_hist.h - a fixed-size log-linear latency histogram (HdrHistogram-style buckets).
 *
 * Values are non-negative integers (the load generator records microseconds). Values below 256
 * get one bucket each; above that every power of two is split into 128 equal buckets, so a
 * reported value is within 1/128 (< 0.8 %) of the true one. Values at or above 2^41 are
 * clamped into the last bucket (the exact maximum is kept separately). The structure is plain
 * data of fixed size (no pointers), so it can be copied, written to a pipe and merged. */
#ifndef LG_HIST_H
#define LG_HIST_H

#include <stdint.h>

#define LG_HIST_SUB_BITS 7
#define LG_HIST_SUB_COUNT (1u << LG_HIST_SUB_BITS)        /* 128 buckets per power of two */
#define LG_HIST_LINEAR_LIMIT (2u * LG_HIST_SUB_COUNT)      /* values < 256 are exact */
#define LG_HIST_MAX_EXPONENT 40                           /* last exponent with own buckets */
#define LG_HIST_BUCKETS \
    (LG_HIST_LINEAR_LIMIT + (LG_HIST_MAX_EXPONENT - LG_HIST_SUB_BITS) * LG_HIST_SUB_COUNT)

struct lg_hist {
    uint64_t count;
    uint64_t sum;
    uint64_t min;
    uint64_t max;
    uint64_t buckets[LG_HIST_BUCKETS];
};

void lg_hist_init(struct lg_hist *h);
void lg_hist_record(struct lg_hist *h, uint64_t value);
/* Adds every count of `from` into `into` (for results of several processes). */
void lg_hist_merge(struct lg_hist *into, const struct lg_hist *from);
/* The value at `percentile` (0..100]: the highest value equivalent to the bucket holding that
 * rank, never above the recorded maximum. 0 when the histogram is empty. */
uint64_t lg_hist_percentile(const struct lg_hist *h, double percentile);
double lg_hist_mean(const struct lg_hist *h);

/* Bucket arithmetic, exposed for the self-test. */
uint32_t lg_hist_bucket_of(uint64_t value);
uint64_t lg_hist_bucket_low(uint32_t index);
uint64_t lg_hist_bucket_high(uint32_t index);

#endif
