/* rp_json.c - JSON with exact numbers and the value comparison of a replay (see rp_json.h; port
 * of replay.mjs parseJson / matchJson). */
#include "rp_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_text.h"

/* ---- numbers as written: cJSON parses; this walks the same text for the number literals, in
 * document order, and hands them to the number nodes in the same (pre-)order. */

struct numtexts {
    const char *text;
    size_t pos;
};

static int next_number(struct numtexts *nt, const char **start, size_t *len)
{
    const char *t = nt->text;
    size_t i = nt->pos;
    while (t[i]) {
        if (t[i] == '"') {
            for (i++; t[i] && t[i] != '"'; i++)
                if (t[i] == '\\' && t[i + 1])
                    i++;
            if (t[i])
                i++;
            continue;
        }
        if (t[i] == '-' || (t[i] >= '0' && t[i] <= '9')) {
            size_t j = i;
            while (t[j] && strchr("-+.eE0123456789", t[j]))
                j++;
            *start = t + i;
            *len = j - i;
            nt->pos = j;
            return 1;
        }
        i++;
    }
    nt->pos = i;
    return 0;
}

static int attach_numbers(cJSON *v, struct numtexts *nt)
{
    if (cJSON_IsNumber(v)) {
        const char *s;
        size_t n;
        if (!next_number(nt, &s, &n))
            return -1;
        v->valuestring = rp_strndup(s, n);
        return 0;
    }
    for (cJSON *c = v->child; c; c = c->next)
        if (attach_numbers(c, nt) < 0)
            return -1;
    return 0;
}

static void drop_numbers(cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        free(v->valuestring);
        v->valuestring = NULL;
    }
    for (cJSON *c = v->child; c; c = c->next)
        drop_numbers(c);
}

cJSON *rp_json_parse(const char *text)
{
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithOpts(text, &end, 1);
    if (!v)
        return NULL;
    struct numtexts nt = {text, 0};
    if (attach_numbers(v, &nt) < 0)
        drop_numbers(v); /* cannot happen for text cJSON accepted; doubles then */
    return v;
}

const char *rp_json_number_text(const cJSON *v, char buf[32])
{
    if (v->valuestring)
        return v->valuestring;
    snprintf(buf, 32, "%.17g", v->valuedouble);
    return buf;
}

static void numbers_raw(cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        if (!v->valuestring) {
            char buf[32];
            v->valuestring = rp_strdup(rp_json_number_text(v, buf));
        }
        v->type = cJSON_Raw;
    }
    for (cJSON *c = v->child; c; c = c->next)
        numbers_raw(c);
}

char *rp_json_show(const cJSON *v, size_t max)
{
    cJSON *copy = cJSON_Duplicate(v, 1);
    if (!copy)
        return rp_strdup("?");
    numbers_raw(copy);
    char *text = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    if (!text)
        return rp_strdup("?");
    if (strlen(text) > max) {
        char *cut = rp_fmt("%.*s...", (int)max, text);
        free(text);
        return cut;
    }
    return text;
}

const char *rp_json_type(const cJSON *v)
{
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsObject(v))
        return "object";
    if (cJSON_IsArray(v))
        return "array";
    if (cJSON_IsNumber(v))
        return "number";
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsBool(v))
        return "boolean";
    return "?";
}

static int is_integer_text(const char *s)
{
    if (*s == '-')
        s++;
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

int rp_json_number_equal(const cJSON *a, const cJSON *b)
{
    char ba[32], bb[32];
    const char *ta = rp_json_number_text(a, ba), *tb = rp_json_number_text(b, bb);
    if (is_integer_text(ta) && is_integer_text(tb)) {
        if (strcmp(ta, "-0") == 0)
            ta = "0";
        if (strcmp(tb, "-0") == 0)
            tb = "0";
        return strcmp(ta, tb) == 0;
    }
    return strtod(ta, NULL) == strtod(tb, NULL);
}

int rp_json_is_keepalive(const cJSON *v)
{
    return cJSON_IsObject(v) && v->child == NULL;
}

int rp_json_is_persistent(const cJSON *v)
{
    return cJSON_IsObject(v) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "M"));
}

char *rp_json_match_string(const char *expected, const cJSON *actual, struct rp_bindings *b)
{
    if (!cJSON_IsString(actual)) {
        char *qe = rp_quote(expected, 300), *sa = rp_json_show(actual, 300);
        char *why = rp_fmt("expected a string %s, got %s", qe, sa);
        free(qe);
        free(sa);
        return why;
    }
    return rp_match_text(expected, actual->valuestring, b);
}

/* Keys of `o` that `other` lacks, as a JSON array text. */
static char *keys_missing(const cJSON *o, const cJSON *other)
{
    cJSON *list = cJSON_CreateArray();
    for (const cJSON *c = o->child; c; c = c->next)
        if (!cJSON_GetObjectItemCaseSensitive(other, c->string))
            cJSON_AddItemToArray(list, cJSON_CreateString(c->string));
    char *text = cJSON_GetArraySize(list) ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    return text;
}

static char *key_list(const cJSON *o)
{
    cJSON *list = cJSON_CreateArray();
    for (const cJSON *c = o->child; c; c = c->next)
        cJSON_AddItemToArray(list, cJSON_CreateString(c->string));
    char *text = cJSON_PrintUnformatted(list);
    cJSON_Delete(list);
    return text;
}

static char *match_object(const cJSON *e, const cJSON *a, struct rp_bindings *b, int ordered, const char *path)
{
    char *missing = keys_missing(e, a), *extra = keys_missing(a, e);
    if (missing || extra) {
        char *sa = rp_json_show(a, 300);
        char *why = rp_fmt("%s: members differ (missing %s, unexpected %s) in %s", path, missing ? missing : "[]",
                           extra ? extra : "[]", sa);
        free(sa);
        free(missing);
        free(extra);
        return why;
    }
    if (ordered) {
        char *want = key_list(e), *got = key_list(a);
        char *why = strcmp(want, got) == 0 ? NULL : rp_fmt("%s: member order %s, recorded %s", path, got, want);
        free(want);
        free(got);
        if (why)
            return why;
    }
    for (const cJSON *c = e->child; c; c = c->next) {
        char *sub = rp_fmt("%s.%s", path, c->string);
        char *why = rp_json_match(c, cJSON_GetObjectItemCaseSensitive(a, c->string), b, 0, sub);
        free(sub);
        if (why)
            return why;
    }
    return NULL;
}

char *rp_json_match(const cJSON *e, const cJSON *a, struct rp_bindings *b, int ordered, const char *path)
{
    if (cJSON_IsString(e) && strcmp(e->valuestring, RP_JSON_ANY) == 0)
        return NULL;
    if (strcmp(rp_json_type(e), rp_json_type(a)) != 0) {
        char *se = rp_json_show(e, 300), *sa = rp_json_show(a, 300);
        char *why = rp_fmt("%s: expected %s %s, got %s %s", path, rp_json_type(e), se, rp_json_type(a), sa);
        free(se);
        free(sa);
        return why;
    }
    if (cJSON_IsString(e)) {
        char *why = rp_match_text(e->valuestring, a->valuestring, b);
        if (!why)
            return NULL;
        char *out = rp_fmt("%s: %s", path, why);
        free(why);
        return out;
    }
    if (cJSON_IsNumber(e)) {
        if (rp_json_number_equal(e, a))
            return NULL;
        char be[32], ba[32];
        return rp_fmt("%s: expected %s, got %s", path, rp_json_number_text(e, be), rp_json_number_text(a, ba));
    }
    if (cJSON_IsArray(e)) {
        int ne = cJSON_GetArraySize(e), na = cJSON_GetArraySize(a);
        if (ne != na) {
            char *se = rp_json_show(e, 300), *sa = rp_json_show(a, 300);
            char *why = rp_fmt("%s: expected %d elements %s, got %d %s", path, ne, se, na, sa);
            free(se);
            free(sa);
            return why;
        }
        int k = 0;
        for (const cJSON *x = e->child, *y = a->child; x && y; x = x->next, y = y->next, k++) {
            char *sub = rp_fmt("%s[%d]", path, k);
            char *why = rp_json_match(x, y, b, 0, sub);
            free(sub);
            if (why)
                return why;
        }
        return NULL;
    }
    if (cJSON_IsObject(e))
        return match_object(e, a, b, ordered, path);
    if (cJSON_IsBool(e) && cJSON_IsTrue(e) != cJSON_IsTrue(a)) {
        char *se = rp_json_show(e, 300), *sa = rp_json_show(a, 300);
        char *why = rp_fmt("%s: expected %s, got %s", path, se, sa);
        free(se);
        free(sa);
        return why;
    }
    return NULL;
}
