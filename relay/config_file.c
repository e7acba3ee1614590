/* config_file.c - the JSON configuration file (--config FILE): its keys are the flag names, each
 * applied through config_apply_setting as the command line's are; an error names the file's line
 * (see config.h). */
#include "relay/config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers/buf.h"

static char *read_whole_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *data = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (1u << 24)) { /* a config file over 16 MiB is a mistake */
                free(data);
                fclose(f);
                return NULL;
            }
            char *grown = realloc(data, cap);
            if (!grown) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = grown;
        }
        got = fread(data + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    data[n] = '\0'; /* n < cap: the loop grows the buffer before it can fill up */
    *len = n;
    return data;
}

/* A "hubs" member NAME: URL or NAME: [URL, ...] is the flag --hub NAME=URL[,URL...]. */
static enum config_result add_hub_member(struct relay_config *cfg, const cJSON *h, const char *path, char *err,
                                         size_t err_len)
{
    if (strchr(h->string, '='))
        return config_fail(err, err_len, "%s: hub name \"%s\" has an '='", path, h->string);
    if (!cJSON_IsString(h) && (!cJSON_IsArray(h) || cJSON_GetArraySize(h) == 0))
        return config_fail(err, err_len, "%s: hub \"%s\" must map to a URL string or a non-empty list of them", path,
                    h->string);
    struct buf spec; /* the list form is the comma form */
    buf_init(&spec);
    bool ok = buf_append_cstr(&spec, h->string) && buf_append_byte(&spec, '=');
    if (cJSON_IsString(h)) {
        ok = ok && buf_append_cstr(&spec, h->valuestring);
    } else {
        const cJSON *u;
        size_t first = spec.len;
        cJSON_ArrayForEach(u, h) {
            if (!cJSON_IsString(u) || strchr(u->valuestring, ',')) {
                buf_free(&spec);
                return config_fail(err, err_len, "%s: hub \"%s\": each backend must be a URL string", path, h->string);
            }
            ok = ok && (spec.len == first || buf_append_byte(&spec, ',')) && buf_append_cstr(&spec, u->valuestring);
        }
    }
    enum config_result r = ok && buf_append_byte(&spec, '\0') ? config_apply_setting(cfg, "hub", spec.data, err, err_len)
                                                              : config_fail(err, err_len, "out of memory");
    buf_free(&spec);
    return r;
}

static enum config_result add_cors_member(struct relay_config *cfg, const cJSON *o, const char *path, char *err,
                                          size_t err_len)
{
    if (!cJSON_IsString(o))
        return config_fail(err, err_len, "%s: \"cors-origins\" must hold strings", path);
    return config_apply_setting(cfg, "cors-origin", o->valuestring, err, err_len);
}

static enum config_result add_service_key_member(struct relay_config *cfg, const cJSON *k, const char *path, char *err,
                                                 size_t err_len)
{
    if (!cJSON_IsString(k))
        return config_fail(err, err_len, "%s: \"service-keys\" must hold strings", path);
    return config_apply_setting(cfg, "service-key", k->valuestring, err, err_len);
}

/* Each member of a JSON object or array through add, stopping at the first error. */
static enum config_result add_members(struct relay_config *cfg, const cJSON *item, const char *path,
                                      enum config_result (*add)(struct relay_config *, const cJSON *, const char *,
                                                                char *, size_t),
                                      char *err, size_t err_len)
{
    const cJSON *member;
    cJSON_ArrayForEach(member, item) {
        if (add(cfg, member, path, err, err_len) != CONFIG_OK)
            return CONFIG_ERROR;
    }
    return CONFIG_OK;
}

/* Config-file keys are the flag names; hubs is an object NAME -> URL and
 * corsOrigins an array, the rest strings or numbers. */
static enum config_result apply_json_member(struct relay_config *cfg, const cJSON *item,
                                            const char *path, char *err, size_t err_len)
{
    const char *key = item->string;
    if (strcmp(key, "hubs") == 0)
        return cJSON_IsObject(item) ? add_members(cfg, item, path, add_hub_member, err, err_len)
                                    : config_fail(err, err_len, "%s: \"hubs\" must be an object of NAME: URL", path);
    if (strcmp(key, "cors-origins") == 0)
        return cJSON_IsArray(item) ? add_members(cfg, item, path, add_cors_member, err, err_len)
                                   : config_fail(err, err_len, "%s: \"cors-origins\" must be an array of strings", path);
    if (strcmp(key, "service-keys") == 0)
        return cJSON_IsArray(item) ? add_members(cfg, item, path, add_service_key_member, err, err_len)
                                   : config_fail(err, err_len, "%s: \"service-keys\" must be an array of strings", path);
    if (strcmp(key, "config") == 0 || strcmp(key, "hub") == 0 || strcmp(key, "cors-origin") == 0)
        return config_fail(err, err_len, "%s: key \"%s\" is not allowed in a config file", path, key);
    char number[64];
    const char *value;
    if (cJSON_IsString(item)) {
        value = item->valuestring;
    } else if (cJSON_IsNumber(item)) {
        snprintf(number, sizeof number, "%.17g", item->valuedouble);
        value = number;
    } else {
        return config_fail(err, err_len, "%s: \"%s\" must be a string or a number", path, key);
    }
    if (config_apply_setting(cfg, key, value, err, err_len) != CONFIG_OK) {
        char inner[256];
        snprintf(inner, sizeof inner, "%s", err);
        return config_fail(err, err_len, "%s: %s", path, inner);
    }
    return CONFIG_OK;
}

/* The line (from 1) of text[offset]. */
static unsigned line_at(const char *text, size_t offset)
{
    unsigned line = 1;
    for (size_t i = 0; i < offset && text[i]; i++)
        line += text[i] == '\n';
    return line;
}

/* Where "key" first appears in text from `from` on, or SIZE_MAX. */
static size_t key_offset(const char *text, size_t from, const char *key)
{
    char quoted[300];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *at = strstr(text + from, quoted);
    return at ? (size_t)(at - text) : SIZE_MAX;
}

/* Puts "line N: " before err: the line of the member that failed (or of the member of it the
 * error names, for "hubs" and the other objects). */
static void name_the_line(const char *text, const cJSON *item, char *err, size_t err_len)
{
    size_t at = key_offset(text, 0, item->string);
    if (at == SIZE_MAX)
        return;
    const cJSON *child;
    cJSON_ArrayForEach(child, item) {
        char q1[300], q2[300];
        snprintf(q1, sizeof q1, "\"%s\"", child->string ? child->string : "");
        snprintf(q2, sizeof q2, "'%s'", child->string ? child->string : "");
        size_t child_at = child->string ? key_offset(text, at, child->string) : SIZE_MAX;
        if (child_at != SIZE_MAX && (strstr(err, q1) || strstr(err, q2))) {
            at = child_at;
            break;
        }
    }
    char copy[512];
    snprintf(copy, sizeof copy, "%s", err);
    snprintf(err, err_len, "line %u: %s", line_at(text, at), copy);
}

enum config_result config_load_file(struct relay_config *cfg, const char *path, char *err,
                                    size_t err_len)
{
    size_t len = 0;
    char *text = read_whole_file(path, &len);
    if (!text)
        return config_fail(err, err_len, "cannot read config file '%s': %s", path, strerror(errno ? errno : EIO));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root || !cJSON_IsObject(root)) {
        size_t offset = end && end >= text ? (size_t)(end - text) : 0;
        cJSON_Delete(root);
        enum config_result r = config_fail(err, err_len, "config file '%s' is not a JSON object (error near byte %zu, line %u)",
                                    path, offset, line_at(text, offset));
        free(text);
        return r;
    }
    enum config_result result = CONFIG_OK;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if ((result = apply_json_member(cfg, item, path, err, err_len)) != CONFIG_OK) {
            name_the_line(text, item, err, err_len);
            break;
        }
    }
    cJSON_Delete(root);
    free(text);
    return result;
}
