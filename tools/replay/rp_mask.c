/* rp_mask.c - the reference fixtures' masks (see rp_mask.h). */
#include "rp_mask.h"

#include <ctype.h>
#include <string.h>

#include "rp_json.h"

static void set_any(cJSON *obj, const char *key)
{
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(RP_JSON_ANY));
}

static int method_is_welcome(const cJSON *m)
{
    if (!cJSON_IsString(m))
        return 0;
    const char *s = m->valuestring;
    const char *w = "welcome";
    for (; *s && *w; s++, w++)
        if (tolower((unsigned char)*s) != *w)
            return 0;
    return !*s && !*w;
}

static void mask_element(cJSON *m)
{
    if (!cJSON_IsObject(m))
        return;
    if (cJSON_GetObjectItemCaseSensitive(m, "H") && cJSON_GetObjectItemCaseSensitive(m, "M") &&
        cJSON_GetObjectItemCaseSensitive(m, "A")) { /* a server->client call (row 1) */
        if (method_is_welcome(cJSON_GetObjectItemCaseSensitive(m, "M")))
            set_any(m, "A");
    }
}

void rp_mask_reference_json(cJSON *value, int negotiate)
{
    if (!cJSON_IsObject(value))
        return;
    if (negotiate)
        set_any(value, "TryWebSockets"); /* row 4 */
    cJSON *r = cJSON_GetObjectItemCaseSensitive(value, "R");
    if (cJSON_IsObject(r) && cJSON_GetObjectItemCaseSensitive(r, "connectionId")) { /* WhoAmI */
        set_any(r, "connectionId");
        set_any(r, "forwardedFor");
        set_any(r, "transport");
    }
    cJSON *m = cJSON_GetObjectItemCaseSensitive(value, "M");
    if (cJSON_IsArray(m))
        for (cJSON *e = m->child; e; e = e->next)
            mask_element(e);
}

/* Nothing: error answers have no Content-Type at either server (tests/legacy-ref/README.md). */
int rp_mask_reference_header(int status, const char *name)
{
    (void)status;
    (void)name;
    return 0;
}
