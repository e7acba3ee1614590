/* config_capture.c - the --capture-* settings: their defaults and how their values are read (see config.h). */
#include "relay/config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void config_capture_defaults(struct relay_config *cfg)
{
    cfg->capture_sample = 1;
    cfg->capture_max_file_bytes = 16u << 20;
    cfg->capture_max_dir_bytes = (size_t)1 << 30;
}

/* A size in bytes with an optional K, M or G, between min and max. */
static enum config_result parse_bytes(const char *flag, const char *value, size_t *out, unsigned long long min,
                                      unsigned long long max, const char *range, char *err, size_t err_len)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(value, &end, 10);
    if (errno || end == value || value[0] == '-')
        return config_fail(err, err_len, "%s wants a size in bytes (optionally with K, M or G), got '%s'", flag, value);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (*end || n > (max >> shift) || (n << shift) < min)
        return config_fail(err, err_len, "%s wants a size between %s, got '%s'", flag, range, value);
    *out = (size_t)(n << shift);
    return CONFIG_OK;
}

enum config_result config_capture_setting(struct relay_config *cfg, const char *name, const char *value, char *err,
                                          size_t err_len)
{
    if (strcmp(name, "capture-bodies") == 0) {
        if (strcmp(value, "all") != 0 && strcmp(value, "none") != 0)
            return config_fail(err, err_len, "--capture-bodies wants all or none, got '%s'", value);
        cfg->capture_no_bodies = strcmp(value, "none") == 0;
        return CONFIG_OK;
    }
    if (strcmp(name, "capture-sample") == 0) {
        char *end;
        errno = 0;
        double rate = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(rate) || rate < 0 || rate > 1)
            return config_fail(err, err_len, "--capture-sample wants a fraction from 0 to 1 (0.1: one new connection in ten), got '%s'", value);
        cfg->capture_sample = rate;
        return CONFIG_OK;
    }
    if (strcmp(name, "capture-max-file") == 0)
        return parse_bytes("--capture-max-file", value, &cfg->capture_max_file_bytes, 4096, 1ull << 31,
                           "4K and 2048M", err, err_len);
    return parse_bytes("--capture-max-dir", value, &cfg->capture_max_dir_bytes, 4096, 1ull << 50,
                       "4K and 1048576G", err, err_len);
}
