/* lg_hist.c - log-linear histogram: bucket arithmetic, recording, merging, percentiles. */
#include "lg_hist.h"

#include <string.h>

void lg_hist_init(struct lg_hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

uint32_t lg_hist_bucket_of(uint64_t value)
{
    if (value < LG_HIST_LINEAR_LIMIT)
        return (uint32_t)value;
    uint32_t exponent = 63u - (uint32_t)__builtin_clzll(value); /* >= 8 here */
    if (exponent > LG_HIST_MAX_EXPONENT)
        return LG_HIST_BUCKETS - 1;
    uint32_t shift = exponent - LG_HIST_SUB_BITS;
    uint32_t mantissa = (uint32_t)(value >> shift) & (LG_HIST_SUB_COUNT - 1);
    return LG_HIST_LINEAR_LIMIT + (exponent - (LG_HIST_SUB_BITS + 1)) * LG_HIST_SUB_COUNT + mantissa;
}

uint64_t lg_hist_bucket_low(uint32_t index)
{
    if (index < LG_HIST_LINEAR_LIMIT)
        return index;
    uint32_t rel = index - LG_HIST_LINEAR_LIMIT;
    uint32_t exponent = rel / LG_HIST_SUB_COUNT + LG_HIST_SUB_BITS + 1;
    uint64_t mantissa = rel % LG_HIST_SUB_COUNT;
    return (LG_HIST_SUB_COUNT + mantissa) << (exponent - LG_HIST_SUB_BITS);
}

uint64_t lg_hist_bucket_high(uint32_t index)
{
    if (index < LG_HIST_LINEAR_LIMIT)
        return index;
    uint32_t rel = index - LG_HIST_LINEAR_LIMIT;
    uint32_t exponent = rel / LG_HIST_SUB_COUNT + LG_HIST_SUB_BITS + 1;
    return lg_hist_bucket_low(index) + (UINT64_C(1) << (exponent - LG_HIST_SUB_BITS)) - 1;
}

void lg_hist_record(struct lg_hist *h, uint64_t value)
{
    h->buckets[lg_hist_bucket_of(value)]++;
    h->count++;
    h->sum += value;
    if (value < h->min)
        h->min = value;
    if (value > h->max)
        h->max = value;
}

void lg_hist_merge(struct lg_hist *into, const struct lg_hist *from)
{
    for (uint32_t i = 0; i < LG_HIST_BUCKETS; i++)
        into->buckets[i] += from->buckets[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
}

uint64_t lg_hist_percentile(const struct lg_hist *h, double percentile)
{
    if (h->count == 0)
        return 0;
    if (percentile > 100.0)
        percentile = 100.0;
    /* Rank of the wanted value, 1-based: ceil(p/100 * count), at least 1. */
    double exact = percentile / 100.0 * (double)h->count;
    uint64_t rank = (uint64_t)exact;
    if ((double)rank < exact)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t i = 0; i < LG_HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t high = lg_hist_bucket_high(i);
            return high < h->max ? high : h->max;
        }
    }
    return h->max;
}

double lg_hist_mean(const struct lg_hist *h)
{
    return h->count ? (double)h->sum / (double)h->count : 0.0;
}
