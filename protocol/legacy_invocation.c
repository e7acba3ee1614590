/* legacy_invocation.c - decoding {"H","M","A","I","S"} client invocations (see legacy_invocation.h). */
#include "protocol/legacy_invocation.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "protocol/json_scan.h"
#include "protocol/json_strict.h"

enum member_bit {
    MEMBER_H = 1 << 0,
    MEMBER_M = 1 << 1,
    MEMBER_A = 1 << 2,
    MEMBER_I = 1 << 3,
    MEMBER_S = 1 << 4,
};

/* Json.NET's GetClosestMatchProperty: exact name, else any case. Our
 * names are single letters, so that is "this letter in either case". */
static enum member_bit member_of(const char *key)
{
    if (key[0] == '\0' || key[1] != '\0')
        return 0;
    switch (key[0]) {
    case 'H': case 'h': return MEMBER_H;
    case 'M': case 'm': return MEMBER_M;
    case 'A': case 'a': return MEMBER_A;
    case 'I': case 'i': return MEMBER_I;
    case 'S': case 's': return MEMBER_S;
    }
    return 0;
}

/* Length of the state's compact JSON in UTF-16 code units, the unit of
 * .NET's string.Length that HubRequestParser compares with 4096. cJSON's
 * compact printing stands in for Json.NET's; both escape only quotes,
 * backslashes and control characters. */
static enum proto_status state_length(const cJSON *state, size_t *units, struct proto_error *err)
{
    char *compact = cJSON_PrintUnformatted(state);
    if (!compact)
        return proto_fail(err, PROTO_ERR_NOMEM, "out of memory measuring hub state");
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)compact; *p; p++) {
        if ((*p & 0xC0) == 0x80)
            continue;             /* continuation byte */
        n += (*p >= 0xF0) ? 2 : 1; /* 4-byte sequences are surrogate pairs */
    }
    cJSON_free(compact);
    *units = n;
    return PROTO_OK;
}

/* True if no path in raw, a value cJSON accepted, has more than max_levels
 * arrays/objects (raw itself counts when it is one). The whole text passed
 * json_strict_check_text already, so only the depth can fail here. */
static bool nests_within(struct span raw, int max_levels)
{
    return json_strict_check_text(raw.ptr, raw.len, max_levels, NULL) == PROTO_OK;
}

static enum proto_status take_name(const struct json_member *m, struct hub_msg *msg,
                                   struct span *out, const char *missing, const char *not_string,
                                   const char *empty, struct proto_error *err)
{
    if (cJSON_IsNull(m->value))
        return proto_fail(err, PROTO_ERR_MISSING, missing);
    if (!cJSON_IsString(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, not_string);
    enum proto_status st = json_member_string(m, msg, out, err);
    if (st == PROTO_OK && out->len == 0)
        return proto_fail(err, PROTO_ERR_VALUE, empty);
    return st;
}

static enum proto_status take_args(const struct json_member *m, struct hub_msg *msg,
                                   struct proto_error *err)
{
    if (cJSON_IsNull(m->value))
        return PROTO_OK; /* HubRequestParser: null args = no args */
    if (!cJSON_IsArray(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, "arguments (A) must be an array");
    msg->args = json_member_payload(m);
    return PROTO_OK;
}

static enum proto_status take_id(const struct json_member *m, struct hub_msg *msg,
                                 struct proto_error *err)
{
    if (cJSON_IsNull(m->value))
        return PROTO_OK;
    if (cJSON_IsNumber(m->value)) {
        msg->invocation_id = m->raw; /* the number's text as the client wrote it */
        return PROTO_OK;
    }
    if (!cJSON_IsString(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, "invocation id (I) must be a string or a number");
    return json_member_string(m, msg, &msg->invocation_id, err);
}

static enum proto_status take_state(const struct json_member *m, struct hub_msg *msg,
                                    struct proto_error *err)
{
    if (cJSON_IsNull(m->value))
        return PROTO_OK;
    if (!cJSON_IsObject(m->value))
        return proto_fail(err, PROTO_ERR_TYPE, "hub state (S) must be an object");
    if (!nests_within(m->raw, LEGACY_STATE_MAX_DEPTH))
        return proto_fail(err, PROTO_ERR_TOO_DEEP, "hub state (S) nests too deeply");
    size_t units = 0;
    enum proto_status st = state_length(m->value, &units, err);
    if (st != PROTO_OK)
        return st;
    if (units > LEGACY_STATE_MAX_CHARS)
        return proto_fail(err, PROTO_ERR_TOO_LARGE, "State has exceeded the maximum length of 4096 bytes.");
    msg->state = json_member_payload(m);
    return PROTO_OK;
}

static enum proto_status take_member(const struct json_member *m, enum member_bit which,
                                     struct hub_msg *msg, struct proto_error *err)
{
    switch (which) {
    case MEMBER_H:
        return take_name(m, msg, &msg->hub, "no hub name (H)", "hub name (H) must be a string",
                         "hub name (H) is empty", err);
    case MEMBER_M:
        return take_name(m, msg, &msg->target, "no method name (M)",
                         "method name (M) must be a string", "method name (M) is empty", err);
    case MEMBER_A: return take_args(m, msg, err);
    case MEMBER_I: return take_id(m, msg, err);
    case MEMBER_S: return take_state(m, msg, err);
    }
    return PROTO_OK;
}

enum proto_status legacy_invocation_decode(const char *data, size_t len, struct hub_msg *msg,
                                           struct proto_error *err)
{
    struct json_object_iter it;
    struct json_member m;
    unsigned seen = 0;

    hub_msg_init(msg);
    /* Bytes and UTF-8 first, but depth per member once cJSON has read it, so
     * that an id read before a too-deep member survives (see the header) and
     * a bomb past cJSON's own limit stays a syntax error. */
    enum proto_status st = json_strict_check_text(data, len, INT_MAX, err);
    if (st == PROTO_OK)
        st = json_object_begin(&it, data, len, err);
    while (st == PROTO_OK && (st = json_object_next(&it, &m, err)) == PROTO_OK) {
        enum member_bit which = member_of(m.key);
        if (!nests_within(m.raw, LEGACY_INVOCATION_MAX_DEPTH - 1))
            st = proto_fail(err, PROTO_ERR_TOO_DEEP, "invocation nests too deeply");
        else if (which & seen)
            st = proto_fail(err, PROTO_ERR_VALUE, "invocation member given twice");
        else
            st = take_member(&m, which, msg, err);
        seen |= which;
        json_member_release(&m);
    }
    if (st != PROTO_INCOMPLETE) /* anything but a cleanly ended object */
        return st;
    if (!span_is_set(msg->hub))
        return proto_fail(err, PROTO_ERR_MISSING, "no hub name (H)");
    if (!span_is_set(msg->target))
        return proto_fail(err, PROTO_ERR_MISSING, "no method name (M)");
    msg->kind = HUB_MSG_INVOCATION;
    return PROTO_OK;
}
