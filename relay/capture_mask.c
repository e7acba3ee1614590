/* capture_mask.c - placeholders of one capture file (see capture_mask.h). */
#include "relay/capture_mask.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Secret values shorter than this are replaced only where they stand (a
 * blind search for a short value would hit unrelated text). */
#define MASK_SECRET_MIN_LEN 8

struct mask_name {
    struct dict_entry entry;   /* by_value */
    struct mask_name *next;    /* order of first use */
    bool secret;
    bool listed;               /* in the end line's list (a credential's placeholder is listed as fixed) */
    char placeholder[48];
    size_t len;
    char value[];
};

struct mask_shared_id {
    struct dict_entry entry;          /* shared->ids */
    struct mask_shared_id *next;      /* owner->owned */
    unsigned k;
    char value[];
};

static const char *const family_names[MASK_FAMILY_COUNT] = {
    "connectionToken", "connectionId", "accessToken", "cursor", "groupsToken", "backendId",
};

void mask_table_init(struct mask_table *t, const uint8_t seed[DICT_SEED_LEN])
{
    memset(t, 0, sizeof *t);
    dict_init(&t->by_value, seed);
    t->tail = &t->head;
}

void mask_shared_init(struct mask_shared *s, const uint8_t seed[DICT_SEED_LEN])
{
    dict_init(&s->ids, seed);
    s->next = 0;
}

void mask_shared_free(struct mask_shared *s)
{
    dict_free(&s->ids);
}

void mask_table_share(struct mask_table *t, struct mask_shared *shared)
{
    t->shared = shared;
}

/* The relay-wide number of a backend id (a new one on first sight, owned by t), 0 when out of memory. */
static unsigned shared_number(struct mask_table *t, const char *value, size_t len)
{
    struct dict_entry *e = dict_find(&t->shared->ids, span_make(value, len));
    if (e)
        return list_container_of(e, struct mask_shared_id, entry)->k;
    struct mask_shared_id *id = malloc(sizeof *id + len + 1);
    if (!id)
        return 0;
    memcpy(id->value, value, len);
    id->value[len] = '\0';
    id->k = t->shared->next + 1;
    if (dict_insert(&t->shared->ids, &id->entry, span_make(id->value, len)) != DICT_OK) {
        free(id);
        return 0;
    }
    t->shared->next++;
    id->next = t->owned;
    t->owned = id;
    return id->k;
}

void mask_table_free(struct mask_table *t)
{
    while (t->owned) {
        struct mask_shared_id *id = t->owned;
        t->owned = id->next;
        dict_remove(&t->shared->ids, &id->entry);
        free(id);
    }
    struct mask_name *n = t->head;
    while (n) {
        struct mask_name *next = n->next;
        dict_remove(&t->by_value, &n->entry);
        free(n);
        n = next;
    }
    dict_free(&t->by_value);
    t->head = NULL;
    t->tail = &t->head;
}

const char *mask_lookup(struct mask_table *t, const char *value, size_t len)
{
    struct dict_entry *e = dict_find(&t->by_value, span_make(value, len));
    return e ? list_container_of(e, struct mask_name, entry)->placeholder : NULL;
}

static void name_placeholder(struct mask_name *n, enum mask_family family, unsigned k)
{
    if (family == MASK_CURSOR || family == MASK_GROUPS_TOKEN) /* connection 1: one connection per file */
        snprintf(n->placeholder, sizeof n->placeholder, "<%s:1.%u>", family_names[family], k);
    else if (family == MASK_BACKEND_ID)
        snprintf(n->placeholder, sizeof n->placeholder, "<backendId:%u>", k);
    else if (k == 1)
        snprintf(n->placeholder, sizeof n->placeholder, "<%s>", family_names[family]);
    else
        snprintf(n->placeholder, sizeof n->placeholder, "<%s#%u>", family_names[family], k);
}

const char *mask_name_for(struct mask_table *t, enum mask_family family, const char *value, size_t len, bool secret)
{
    struct dict_entry *e = dict_find(&t->by_value, span_make(value, len));
    if (e) {
        struct mask_name *known = list_container_of(e, struct mask_name, entry);
        if (!known->listed) { /* a bearer token seen in Authorization, now where an access token stands */
            name_placeholder(known, family, ++t->counts[family]);
            known->listed = true;
        }
        return known->placeholder;
    }
    struct mask_name *n = malloc(sizeof *n + len + 1);
    if (!n)
        return NULL;
    unsigned k = ++t->counts[family];
    if (family == MASK_BACKEND_ID && t->shared && (k = shared_number(t, value, len)) == 0) {
        t->counts[family]--;
        free(n);
        return NULL;
    }
    name_placeholder(n, family, k);
    n->secret = secret && len >= MASK_SECRET_MIN_LEN;
    n->listed = true;
    n->len = len;
    memcpy(n->value, value, len);
    n->value[len] = '\0';
    n->next = NULL;
    if (dict_insert(&t->by_value, &n->entry, span_make(n->value, len)) != DICT_OK) {
        t->counts[family]--;
        free(n);
        return NULL;
    }
    *t->tail = n;
    t->tail = &n->next;
    return n->placeholder;
}

/* A credential the client sent: its value stands for placeholder wherever it appears. */
static void add_credential(struct mask_table *t, const char *value, size_t len, const char *placeholder)
{
    while (len && (*value == ' ' || *value == '\t'))
        value++, len--;
    while (len && (value[len - 1] == ' ' || value[len - 1] == '\t'))
        len--;
    if (len < MASK_SECRET_MIN_LEN || mask_lookup(t, value, len))
        return;
    struct mask_name *n = malloc(sizeof *n + len + 1);
    if (!n)
        return;
    snprintf(n->placeholder, sizeof n->placeholder, "%s", placeholder);
    n->secret = true;
    n->listed = false;
    n->len = len;
    memcpy(n->value, value, len);
    n->value[len] = '\0';
    n->next = NULL;
    if (dict_insert(&t->by_value, &n->entry, span_make(n->value, len)) != DICT_OK) {
        free(n);
        return;
    }
    *t->tail = n;
    t->tail = &n->next;
}

void mask_learn_credential(struct mask_table *t, enum mask_fixed which, const char *value, size_t len)
{
    const char *placeholder = mask_fixed(t, which);
    add_credential(t, value, len, placeholder);
    if (which == MASK_AUTHORIZATION) { /* "Bearer <token>": the token alone too */
        const char *sp = memchr(value, ' ', len);
        if (sp)
            add_credential(t, sp + 1, len - (size_t)(sp + 1 - value), placeholder);
    } else if (which == MASK_COOKIE) { /* "a=1; b=2": each value too */
        const char *p = value, *end = value + len;
        while (p < end) {
            const char *semi = memchr(p, ';', (size_t)(end - p));
            const char *stop = semi ? semi : end;
            const char *eq = memchr(p, '=', (size_t)(stop - p));
            if (eq)
                add_credential(t, eq + 1, (size_t)(stop - eq - 1), placeholder);
            p = semi ? semi + 1 : end;
        }
    }
}

const char *mask_fixed(struct mask_table *t, enum mask_fixed which)
{
    t->fixed_used |= which;
    switch (which) {
    case MASK_AUTHORIZATION: return "<authorization>";
    case MASK_COOKIE: return "<cookie>";
    case MASK_ORIGIN: return "<origin>";
    case MASK_TIMESTAMP: return "<timestamp>";
    case MASK_TID: return "<tid>";
    case MASK_NO_CACHE: return "<noCache>";
    }
    return "<?>";
}

/* The earliest occurrence of any secret value in text[0, len), or NULL. */
static const struct mask_name *first_secret(const struct mask_table *t, const char *text, size_t len, size_t *at)
{
    const struct mask_name *best = NULL;
    size_t best_at = len;
    for (const struct mask_name *n = t->head; n; n = n->next) {
        if (!n->secret || n->len > len)
            continue;
        const char *hit = memmem(text, best_at < len ? best_at + n->len : len, n->value, n->len);
        if (hit && (size_t)(hit - text) < best_at) {
            best_at = (size_t)(hit - text);
            best = n;
        }
    }
    *at = best_at;
    return best;
}

static bool is_base64url(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* Backend ids another file learned, standing alone in text (a run of exactly 22 base64url
 * characters): learned here as secrets under their relay-wide placeholder. */
static void learn_shared_ids(struct mask_table *t, const char *text, size_t len)
{
    if (!t->shared || !dict_count(&t->shared->ids))
        return;
    size_t i = 0;
    while (i < len) {
        if (!is_base64url(text[i])) {
            i++;
            continue;
        }
        size_t run = i;
        while (i < len && is_base64url(text[i]))
            i++;
        if (i - run == 22 && !mask_lookup(t, text + run, 22) && dict_find(&t->shared->ids, span_make(text + run, 22)))
            mask_name_for(t, MASK_BACKEND_ID, text + run, 22, true);
    }
}

bool mask_text(struct mask_table *t, struct buf *out, const char *text, size_t len)
{
    learn_shared_ids(t, text, len);
    for (;;) {
        size_t at;
        const struct mask_name *n = first_secret(t, text, len, &at);
        if (!n)
            return buf_append(out, text, len);
        if (!buf_append(out, text, at) || !buf_append_cstr(out, n->placeholder))
            return false;
        text += at + n->len;
        len -= at + n->len;
    }
}

/* In text, the first `"key":"value"` (the relay's frames have no spaces
 * there) gets its value replaced by placeholder; appended to out. */
static bool replace_member(struct buf *out, const char *text, size_t len, const char *key, const char *value,
                           const char *placeholder)
{
    struct buf needle;
    buf_init(&needle);
    bool ok = buf_append_byte(&needle, '"') && buf_append_cstr(&needle, key) && buf_append_cstr(&needle, "\":\"") &&
              buf_append_cstr(&needle, value) && buf_append_byte(&needle, '"');
    const char *hit = ok ? memmem(text, len, needle.data, needle.len) : NULL;
    size_t head = hit ? (size_t)(hit - text) + strlen(key) + 4 : len;
    ok = ok && buf_append(out, text, head);
    if (ok && hit)
        ok = buf_append_cstr(out, placeholder) && buf_append(out, text + head + strlen(value), len - head - strlen(value));
    buf_free(&needle);
    return ok;
}

/* Backend ids after each `after` in text: 22 characters of base64url, then a quote. */
static void learn_backend_ids(struct mask_table *t, const char *text, size_t len, const char *after)
{
    size_t k = strlen(after);
    const char *p = text, *end = text + len;
    while ((p = memmem(p, (size_t)(end - p), after, k)) != NULL) {
        p += k;
        size_t n = 0;
        while (p + n < end && n <= 22 && (isalnum((unsigned char)p[n]) || p[n] == '-' || p[n] == '_'))
            n++;
        if (n == 22 && p + n < end && p[n] == '"')
            mask_name_for(t, MASK_BACKEND_ID, p, n, true);
    }
}

bool mask_persistent(struct mask_table *t, struct buf *out, const char *text, size_t len)
{
    learn_backend_ids(t, text, len, "\"connectionId\":\"");
    learn_backend_ids(t, text, len, "\"M\":\"welcome\",\"A\":[\"");
    const char *json = text;
    size_t json_len = len;
    if (len >= 6 && memcmp(text, "data: ", 6) == 0) { /* an SSE event: one data line */
        json += 6;
        json_len -= 6;
    }
    cJSON *root = json_len && json[0] == '{' ? cJSON_ParseWithLength(json, json_len) : NULL;
    const cJSON *c = root ? cJSON_GetObjectItemCaseSensitive(root, "C") : NULL;
    const cJSON *g = root ? cJSON_GetObjectItemCaseSensitive(root, "G") : NULL;
    struct buf a, b;
    buf_init(&a);
    buf_init(&b);
    bool ok = buf_append(&a, text, len);
    if (ok && cJSON_IsString(c)) {
        const char *name = mask_name_for(t, MASK_CURSOR, c->valuestring, strlen(c->valuestring), false);
        ok = name && replace_member(&b, a.data, a.len, "C", c->valuestring, name);
        struct buf tmp = a; a = b; b = tmp;
        buf_reset(&b);
    }
    if (ok && cJSON_IsString(g)) {
        const char *name = mask_name_for(t, MASK_GROUPS_TOKEN, g->valuestring, strlen(g->valuestring), false);
        ok = name && replace_member(&b, a.data, a.len, "G", g->valuestring, name);
        struct buf tmp = a; a = b; b = tmp;
    }
    ok = ok && mask_text(t, out, a.data, a.len);
    buf_free(&a);
    buf_free(&b);
    cJSON_Delete(root);
    return ok;
}

static const struct {
    const char *field;
    enum mask_family family;
    bool token; /* a later request carries it as id= / connectionToken= */
} negotiate_fields[] = {
    { "connectionToken", MASK_CONNECTION_TOKEN, true },
    { "connectionId", MASK_CONNECTION_ID, true }, /* negotiate version 0: the id is the token */
    { "accessToken", MASK_ACCESS_TOKEN, false },
    { "ConnectionToken", MASK_CONNECTION_TOKEN, true },
    { "ConnectionId", MASK_CONNECTION_ID, false },
    { "AccessToken", MASK_ACCESS_TOKEN, false },
};

void mask_learn_negotiate(struct mask_table *t, const char *body, size_t len,
                          void (*found)(void *ctx, const char *token), void *ctx)
{
    cJSON *root = cJSON_ParseWithLength(body, len);
    for (size_t i = 0; root && i < sizeof negotiate_fields / sizeof negotiate_fields[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, negotiate_fields[i].field);
        if (!cJSON_IsString(v) || !v->valuestring[0])
            continue;
        mask_name_for(t, negotiate_fields[i].family, v->valuestring, strlen(v->valuestring), true);
        if (negotiate_fields[i].token)
            found(ctx, v->valuestring);
    }
    cJSON_Delete(root);
}

void mask_list_add(const struct mask_table *t, cJSON *array)
{
    for (const struct mask_name *n = t->head; n; n = n->next)
        if (n->listed)
            cJSON_AddItemToArray(array, cJSON_CreateString(n->placeholder));
    static const enum mask_fixed fixed[] = { MASK_AUTHORIZATION, MASK_COOKIE, MASK_ORIGIN,
                                             MASK_TIMESTAMP, MASK_TID, MASK_NO_CACHE };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (t->fixed_used & fixed[i])
            cJSON_AddItemToArray(array, cJSON_CreateString(mask_fixed((struct mask_table *)t, fixed[i])));
}
