/* rp_carry.c - legacy long polls and event streams answered with more messages than recorded: a
 * server answers a poll (or writes an event) with every message ready at that moment, so a live
 * server may put the next recorded answer's messages into this one. The recorded answer is then
 * compared with as many messages as it has (its C left out: the live C is past them), and the
 * rest is carried to the next recorded answers of the same connection: a next poll whose recorded
 * messages are all carried is not sent but compared with them (the last one carried gets the live
 * C), one partly carried is sent from the live C and its answer joined after them; an event
 * stream compares its next recorded events with them before any further live event. Only
 * answers with nothing but C and M take part (head fields must come where recorded); messages
 * carried where the recording has no such answer are a difference. */
#include "rp_run_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rp_json.h"

int rp_carry_count(const char *want)
{
    cJSON *v = want ? rp_json_parse(want) : NULL;
    int n = -1;
    if (cJSON_IsObject(v) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "M"))) {
        n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(v, "M"));
        for (const cJSON *c = v->child; c; c = c->next)
            if (strcmp(c->string, "M") != 0 && strcmp(c->string, "C") != 0)
                n = -1;
    }
    cJSON_Delete(v);
    return n;
}

cJSON *rp_carry_split(cJSON *got, int k, char **cursor)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(got, "M"), *rest = cJSON_CreateArray();
    while (cJSON_GetArraySize(m) > k)
        cJSON_AddItemToArray(rest, cJSON_DetachItemFromArray(m, k));
    cJSON *c = cJSON_DetachItemFromObjectCaseSensitive(got, "C");
    *cursor = cJSON_IsString(c) ? rp_strdup(c->valuestring) : NULL;
    cJSON_Delete(c);
    return rest;
}

char *rp_carry_strip_cursor(const char *want)
{
    cJSON *v = rp_json_parse(want);
    cJSON_DeleteItemFromObjectCaseSensitive(v, "C");
    char *s = rp_json_show(v, (size_t)-1 / 2);
    cJSON_Delete(v);
    return s;
}

cJSON *rp_carry_take(cJSON **carry, int k, char **cursor)
{
    cJSON *frame = cJSON_CreateObject(), *m = cJSON_CreateArray();
    for (int i = 0; i < k && cJSON_GetArraySize(*carry) > 0; i++)
        cJSON_AddItemToArray(m, cJSON_DetachItemFromArray(*carry, 0));
    if (cJSON_GetArraySize(*carry) == 0) { /* the last carried message: the live C is after it */
        cJSON_Delete(*carry);
        *carry = NULL;
        if (*cursor)
            cJSON_AddStringToObject(frame, "C", *cursor);
        free(*cursor);
        *cursor = NULL;
    }
    cJSON_AddItemToObject(frame, "M", m);
    return frame;
}

/* Compares a recorded answer (text) with a frame built of carried messages; 1 when alike. */
int rp_carry_compare(struct rp_run *r, const struct rp_event *e, const char *want, const cJSON *frame,
                     const char *what)
{
    char *expected = cJSON_GetObjectItemCaseSensitive(frame, "C") ? rp_strdup(want) : rp_carry_strip_cursor(want);
    char *d = rp_describe(e), *prefix = rp_fmt("%s: %s", d, what);
    int stop = rp_fail_why(r, rp_compare_body(r, expected, "", frame, 0, 0), prefix);
    free(expected);
    free(prefix);
    free(d);
    return !stop && !r->failure;
}

/* The connectionToken=... of a request's recorded query (the placeholder), NULL when none. */
static char *token_of(const struct rp_event *req)
{
    const char *raw = rp_ev_str(req, "rawQuery"), *t = raw ? strstr(raw, "connectionToken=") : NULL;
    return t ? rp_strndup(t, strcspn(t, "&")) : NULL;
}

static int is_legacy_poll(const struct rp_event *req)
{
    const char *path = rp_ev_str(req, "path"), *raw = rp_ev_str(req, "rawQuery");
    size_t n = path ? strlen(path) : 0;
    if (n < 5 || strcmp(path + n - 5, "/poll") != 0 || !raw)
        return 0;
    for (const char *p = raw; *p; p++)
        if (strncasecmp(p, "transport=longPolling", 21) == 0)
            return 1;
    return 0;
}

int rp_legacy_aborted(const struct rp_run *r, size_t req_ev)
{
    char *token = token_of(&r->fx.ev[req_ev]);
    int aborted = 0;
    for (size_t i = 0; token && !aborted && i < r->k && i < r->fx.n; i++) {
        const struct rp_event *e = &r->fx.ev[i];
        const char *path = e->type == EV_HTTP_REQ ? rp_ev_str(e, "path") : NULL;
        size_t n = path ? strlen(path) : 0;
        if (n < 6 || strcmp(path + n - 6, "/abort") != 0)
            continue;
        char *other = token_of(e);
        aborted = other && strcmp(other, token) == 0;
        free(other);
    }
    free(token);
    return aborted;
}

void rp_carry_keep(struct rp_run *r, size_t req_ev, cJSON *rest, char *cursor)
{
    char *token = token_of(&r->fx.ev[req_ev]);
    if (r->carry && token && r->carry_token && strcmp(token, r->carry_token) == 0) {
        for (cJSON *m; (m = cJSON_DetachItemFromArray(rest, 0)) != NULL;)
            cJSON_AddItemToArray(r->carry, m);
        cJSON_Delete(rest);
        free(r->carry_cursor);
        free(token);
    } else {
        rp_carry_finish(r);
        r->carry = rest;
        free(r->carry_token);
        r->carry_token = token;
    }
    r->carry_cursor = cursor;
}

int rp_carry_poll(struct rp_run *r, size_t evi, cJSON **again, char **cursor)
{
    const struct rp_event *req = &r->fx.ev[evi];
    char *token = r->carry ? token_of(req) : NULL;
    int ours = token && r->carry_token && strcmp(token, r->carry_token) == 0 && is_legacy_poll(req);
    free(token);
    if (!ours)
        return 0;
    size_t resp = rp_response_of(r, req->id);
    const char *want = resp != RP_NONE ? rp_ev_str(&r->fx.ev[resp], "body") : NULL;
    const cJSON *st = resp != RP_NONE ? cJSON_GetObjectItemCaseSensitive(r->fx.ev[resp].j, "status") : NULL;
    int k = cJSON_IsNumber(st) && st->valuedouble == 200 ? rp_carry_count(want) : -1;
    if (k <= 0) {
        rp_carry_finish(r);
        return 0;
    }
    if (cJSON_GetArraySize(r->carry) < k) { /* partly carried: sent from the live C, joined after them */
        *again = r->carry;
        *cursor = r->carry_cursor;
        r->carry = NULL;
        r->carry_cursor = NULL;
        return 0;
    }
    cJSON *frame = rp_carry_take(&r->carry, k, &r->carry_cursor);
    if (rp_carry_compare(r, &r->fx.ev[resp], want, frame, "body (the previous poll's answer had it)")) {
        rp_answered(r);
        r->fx.ev[resp].done = 1;
    }
    cJSON_Delete(frame);
    return 1;
}

void rp_carry_finish(struct rp_run *r)
{
    if (r->carry && cJSON_GetArraySize(r->carry) > 0) {
        char *shown = rp_json_show(r->carry, 300);
        rp_differ(r, "long polling: %d message(s) the server sent beyond the recorded answers: %s",
                  cJSON_GetArraySize(r->carry), shown);
        free(shown);
    }
    cJSON_Delete(r->carry);
    r->carry = NULL;
    free(r->carry_cursor);
    r->carry_cursor = NULL;
}
