/* lg_sig.c - SignalR message builders and parsers for the load generator (Core JSON, Core
 * MessagePack, legacy 2.x hubs). See lg_sig.h. */
#include "lg_sig.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#define RS '\x1e'

static void set_text(char *dst, size_t size, const char *src, size_t len)
{
    if (size == 0)
        return;
    if (len >= size)
        len = size - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* ---- builders ---- */

size_t lg_sig_handshake(enum lg_proto proto, char *dst)
{
    const char *text = proto == LG_PROTO_MSGPACK ? "{\"protocol\":\"messagepack\",\"version\":1}\x1e"
                                                 : "{\"protocol\":\"json\",\"version\":1}\x1e";
    size_t len = strlen(text);
    memcpy(dst, text, len);
    return len;
}

size_t lg_sig_ping(enum lg_proto proto, char *dst)
{
    switch (proto) {
    case LG_PROTO_JSON:
        memcpy(dst, "{\"type\":6}\x1e", 11);
        return 11;
    case LG_PROTO_MSGPACK:
        memcpy(dst, "\x02\x91\x06", 3);
        return 3;
    default:
        return 0;
    }
}

size_t lg_sig_close(enum lg_proto proto, char *dst)
{
    switch (proto) {
    case LG_PROTO_JSON:
        memcpy(dst, "{\"type\":7}\x1e", 11);
        return 11;
    case LG_PROTO_MSGPACK:
        /* [7, nil, false] */
        memcpy(dst, "\x04\x93\x07\xc0\xc2", 5);
        return 5;
    default:
        return 0;
    }
}

struct fixed_writer {
    char *p;
    size_t len;
};

static int fixed_write(void *data, const char *buf, size_t len)
{
    struct fixed_writer *w = data;
    memcpy(w->p + w->len, buf, len);
    w->len += len;
    return 0;
}

static size_t varint_encode(uint8_t out[5], uint32_t value)
{
    size_t n = 0;
    do {
        uint8_t b = value & 0x7F;
        value >>= 7;
        if (value)
            b |= 0x80;
        out[n++] = b;
    } while (value);
    return n;
}

size_t lg_sig_invocation(enum lg_proto proto, char *dst, const char *hub, const char *target,
                         uint64_t id, const char *arg0, const char *arg, size_t arg_len)
{
    if (proto == LG_PROTO_MSGPACK) {
        /* [1, {}, "id", target, [arg]] - 5 elements, as the JS client sends without streams.
         * Packed after 5 reserved bytes, then moved up against its VarInt prefix. */
        char idtext[24];
        int idlen = snprintf(idtext, sizeof idtext, "%" PRIu64, id);
        struct fixed_writer w = {dst + 5, 0};
        msgpack_packer pk;
        msgpack_packer_init(&pk, &w, fixed_write);
        msgpack_pack_array(&pk, 5);
        msgpack_pack_int(&pk, 1);
        msgpack_pack_map(&pk, 0);
        msgpack_pack_str_with_body(&pk, idtext, (size_t)idlen);
        msgpack_pack_str_with_body(&pk, target, strlen(target));
        msgpack_pack_array(&pk, arg0 ? 2 : 1);
        if (arg0)
            msgpack_pack_str_with_body(&pk, arg0, strlen(arg0));
        msgpack_pack_str_with_body(&pk, arg, arg_len);
        uint8_t prefix[5];
        size_t plen = varint_encode(prefix, (uint32_t)w.len);
        memmove(dst + plen, dst + 5, w.len);
        memcpy(dst, prefix, plen);
        return plen + w.len;
    }
    size_t n;
    if (proto == LG_PROTO_LEGACY)
        n = (size_t)sprintf(dst, "{\"H\":\"%s\",\"M\":\"%s\",\"A\":[\"", hub, target);
    else
        n = (size_t)sprintf(dst, "{\"type\":1,\"invocationId\":\"%" PRIu64 "\",\"target\":\"%s\",\"arguments\":[\"",
                            id, target);
    if (arg0)
        n += (size_t)sprintf(dst + n, "%s\",\"", arg0);
    memcpy(dst + n, arg, arg_len);
    n += arg_len;
    if (proto == LG_PROTO_LEGACY)
        n += (size_t)sprintf(dst + n, "\"],\"I\":\"%" PRIu64 "\"}", id);
    else {
        memcpy(dst + n, "\"]}\x1e", 4);
        n += 4;
    }
    return n;
}

/* ---- record splitting ---- */

long lg_sig_split_json(const char *p, size_t n)
{
    const char *rs = memchr(p, RS, n);
    return rs ? (long)(rs - p) : -1;
}

int lg_sig_split_varint(const uint8_t *p, size_t n, size_t *hdr, size_t *body)
{
    uint32_t value = 0;
    for (size_t i = 0; i < 5; i++) {
        if (i >= n)
            return 0;
        uint8_t b = p[i];
        if (i == 4 && (b & 0xF8))
            return -1; /* over 2 GB, or a continuation bit on the 5th byte */
        value |= (uint32_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            *hdr = i + 1;
            *body = value;
            return n - (i + 1) >= value ? 1 : 0;
        }
    }
    return -1;
}

/* ---- small value helpers ---- */

/* Our invocation ids are decimal numbers; anything else is not ours. */
static int parse_decimal(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 19)
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 1;
}

/* Broadcast payloads written by the generator start with "t=<microseconds>;". */
static int parse_stamp(const char *s, size_t len, uint64_t *out)
{
    if (len < 3 || s[0] != 't' || s[1] != '=')
        return 0;
    size_t end = 2;
    while (end < len && isdigit((unsigned char)s[end]))
        end++;
    return parse_decimal(s + 2, end - 2, out);
}

/* The server->client methods the generator counts as fan-out deliveries: "broadcast"(t=...)
 * and "groupMessage"(group, t=...) of the test hubs' SendToGroup. */
static int is_fanout_target(const char *s, size_t len)
{
    return (len == 9 && strncasecmp(s, "broadcast", 9) == 0) || (len == 12 && strncasecmp(s, "groupMessage", 12) == 0);
}

static void event_init(struct lg_sig_event *ev, enum lg_sig_kind kind)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
}

static void report_bad(lg_sig_event_fn fn, void *ctx, const char *why)
{
    struct lg_sig_event ev;
    event_init(&ev, LG_SIG_BAD);
    set_text(ev.text, sizeof ev.text, why, strlen(why));
    fn(ctx, &ev);
}

/* ---- Core JSON ---- */

int lg_sig_parse_handshake(const char *rec, size_t len, char *text, size_t text_size)
{
    cJSON *root = cJSON_ParseWithLength(rec, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        set_text(text, text_size, "handshake response is not a JSON object", 39);
        return -1;
    }
    int rc = 0;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (err) {
        const char *msg = cJSON_IsString(err) ? err->valuestring : "(non-string error)";
        set_text(text, text_size, msg, strlen(msg));
        rc = -1;
    } else if (cJSON_GetObjectItemCaseSensitive(root, "type")) {
        set_text(text, text_size, "expected a handshake response, got a hub message", 48);
        rc = -1;
    }
    cJSON_Delete(root);
    return rc;
}

static void id_from_json(const cJSON *item, struct lg_sig_event *ev)
{
    if (cJSON_IsString(item))
        ev->id_ok = parse_decimal(item->valuestring, strlen(item->valuestring), &ev->id);
    else if (cJSON_IsNumber(item) && item->valuedouble >= 0) {
        ev->id = (uint64_t)item->valuedouble;
        ev->id_ok = 1;
    }
}

void lg_sig_parse_core_json(const char *rec, size_t len, lg_sig_event_fn fn, void *ctx)
{
    cJSON *root = cJSON_ParseWithLength(rec, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        report_bad(fn, ctx, "hub message is not a JSON object");
        return;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
    struct lg_sig_event ev;
    if (!cJSON_IsNumber(type)) {
        cJSON_Delete(root);
        report_bad(fn, ctx, "hub message without a numeric type");
        return;
    }
    switch (type->valueint) {
    case 3: {
        event_init(&ev, LG_SIG_COMPLETION);
        id_from_json(cJSON_GetObjectItemCaseSensitive(root, "invocationId"), &ev);
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
        if (cJSON_IsString(err)) {
            ev.is_error = 1;
            set_text(ev.text, sizeof ev.text, err->valuestring, strlen(err->valuestring));
        }
        break;
    }
    case 1: {
        const cJSON *target = cJSON_GetObjectItemCaseSensitive(root, "target");
        if (cJSON_IsString(target) && is_fanout_target(target->valuestring, strlen(target->valuestring))) {
            event_init(&ev, LG_SIG_BROADCAST);
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(root, "arguments");
            const cJSON *a = cJSON_IsArray(args) ? args->child : NULL;
            for (; a && !ev.ts_ok; a = a->next)
                if (cJSON_IsString(a))
                    ev.ts_ok = parse_stamp(a->valuestring, strlen(a->valuestring), &ev.ts);
        } else {
            event_init(&ev, LG_SIG_INVOCATION);
        }
        break;
    }
    case 6:
        event_init(&ev, LG_SIG_PING);
        break;
    case 7: {
        event_init(&ev, LG_SIG_CLOSE);
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
        if (cJSON_IsString(err))
            set_text(ev.text, sizeof ev.text, err->valuestring, strlen(err->valuestring));
        break;
    }
    default:
        event_init(&ev, LG_SIG_OTHER);
        break;
    }
    cJSON_Delete(root);
    fn(ctx, &ev);
}

/* ---- Core MessagePack ---- */

static int mp_int(const msgpack_object *o, int64_t *out)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        *out = (int64_t)o->via.u64;
        return 1;
    }
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *out = o->via.i64;
        return 1;
    }
    return 0;
}

void lg_sig_parse_core_msgpack(const uint8_t *body, size_t len, msgpack_zone *zone,
                               lg_sig_event_fn fn, void *ctx)
{
    msgpack_object obj;
    size_t off = 0;
    msgpack_unpack_return rc = msgpack_unpack((const char *)body, len, &off, zone, &obj);
    struct lg_sig_event ev;
    if ((rc != MSGPACK_UNPACK_SUCCESS && rc != MSGPACK_UNPACK_EXTRA_BYTES) ||
        obj.type != MSGPACK_OBJECT_ARRAY || obj.via.array.size == 0) {
        msgpack_zone_clear(zone);
        report_bad(fn, ctx, "hub message is not a MessagePack array");
        return;
    }
    const msgpack_object *el = obj.via.array.ptr;
    uint32_t n = obj.via.array.size;
    int64_t type;
    if (!mp_int(&el[0], &type)) {
        msgpack_zone_clear(zone);
        report_bad(fn, ctx, "hub message without an integer type");
        return;
    }
    switch (type) {
    case 3: /* [3, headers, id, kind, result?] */
        event_init(&ev, LG_SIG_COMPLETION);
        if (n >= 4) {
            if (el[2].type == MSGPACK_OBJECT_STR)
                ev.id_ok = parse_decimal(el[2].via.str.ptr, el[2].via.str.size, &ev.id);
            int64_t kind;
            if (mp_int(&el[3], &kind) && kind == 1) {
                ev.is_error = 1;
                if (n >= 5 && el[4].type == MSGPACK_OBJECT_STR)
                    set_text(ev.text, sizeof ev.text, el[4].via.str.ptr, el[4].via.str.size);
            }
        }
        break;
    case 1: /* [1, headers, id, target, args, streamIds?] */
        if (n >= 5 && el[3].type == MSGPACK_OBJECT_STR &&
            is_fanout_target(el[3].via.str.ptr, el[3].via.str.size)) {
            event_init(&ev, LG_SIG_BROADCAST);
            if (el[4].type == MSGPACK_OBJECT_ARRAY)
                for (uint32_t i = 0; i < el[4].via.array.size && !ev.ts_ok; i++)
                    if (el[4].via.array.ptr[i].type == MSGPACK_OBJECT_STR)
                        ev.ts_ok = parse_stamp(el[4].via.array.ptr[i].via.str.ptr,
                                               el[4].via.array.ptr[i].via.str.size, &ev.ts);
        } else {
            event_init(&ev, LG_SIG_INVOCATION);
        }
        break;
    case 6:
        event_init(&ev, LG_SIG_PING);
        break;
    case 7: /* [7, error|nil, allowReconnect] */
        event_init(&ev, LG_SIG_CLOSE);
        if (n >= 2 && el[1].type == MSGPACK_OBJECT_STR)
            set_text(ev.text, sizeof ev.text, el[1].via.str.ptr, el[1].via.str.size);
        break;
    default:
        event_init(&ev, LG_SIG_OTHER);
        break;
    }
    msgpack_zone_clear(zone);
    fn(ctx, &ev);
}

/* ---- legacy ---- */

static void legacy_messages(const cJSON *list, lg_sig_event_fn fn, void *ctx)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        struct lg_sig_event ev;
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(item, "M");
        if (cJSON_IsString(method) && is_fanout_target(method->valuestring, strlen(method->valuestring))) {
            event_init(&ev, LG_SIG_BROADCAST);
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(item, "A");
            const cJSON *a = cJSON_IsArray(args) ? args->child : NULL;
            for (; a && !ev.ts_ok; a = a->next)
                if (cJSON_IsString(a))
                    ev.ts_ok = parse_stamp(a->valuestring, strlen(a->valuestring), &ev.ts);
        } else {
            event_init(&ev, LG_SIG_INVOCATION);
        }
        fn(ctx, &ev);
    }
}

void lg_sig_parse_legacy(const char *doc, size_t len, lg_sig_event_fn fn, void *ctx)
{
    cJSON *root = cJSON_ParseWithLength(doc, len);
    struct lg_sig_event ev;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        report_bad(fn, ctx, "legacy frame is not a JSON object");
        return;
    }
    if (root->child == NULL) {
        event_init(&ev, LG_SIG_KEEPALIVE);
        fn(ctx, &ev);
        cJSON_Delete(root);
        return;
    }
    const cJSON *inv = cJSON_GetObjectItemCaseSensitive(root, "I");
    if (inv) {
        /* A hub result, or progress ("P|n"), which has nothing to count. */
        if (cJSON_IsString(inv) && strncmp(inv->valuestring, "P|", 2) == 0) {
            event_init(&ev, LG_SIG_OTHER);
        } else {
            event_init(&ev, LG_SIG_COMPLETION);
            id_from_json(inv, &ev);
            const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "E");
            if (err) {
                ev.is_error = 1;
                if (cJSON_IsString(err))
                    set_text(ev.text, sizeof ev.text, err->valuestring, strlen(err->valuestring));
            }
        }
        fn(ctx, &ev);
        cJSON_Delete(root);
        return;
    }
    const cJSON *global_error = cJSON_GetObjectItemCaseSensitive(root, "E");
    if (cJSON_IsString(global_error)) {
        event_init(&ev, LG_SIG_CLOSE);
        set_text(ev.text, sizeof ev.text, global_error->valuestring, strlen(global_error->valuestring));
        fn(ctx, &ev);
        cJSON_Delete(root);
        return;
    }
    const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(root, "C");
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "M");
    if (!cJSON_IsArray(msgs)) {
        event_init(&ev, LG_SIG_OTHER);
        fn(ctx, &ev);
        cJSON_Delete(root);
        return;
    }
    const cJSON *init = cJSON_GetObjectItemCaseSensitive(root, "S");
    if (cJSON_IsNumber(init) && init->valueint == 1 && cJSON_IsString(cursor) &&
        cursor->valuestring[0] != '\0') {
        event_init(&ev, LG_SIG_INIT);
        fn(ctx, &ev);
    }
    legacy_messages(msgs, fn, ctx);
    cJSON_Delete(root);
}

/* ---- negotiate / start ---- */

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

int lg_sig_parse_core_negotiate(const char *body, size_t len, char **token, char *text,
                                size_t text_size)
{
    *token = NULL;
    cJSON *root = cJSON_ParseWithLength(body, len);
    const char *fail = NULL;
    if (!cJSON_IsObject(root))
        fail = "negotiate response is not a JSON object";
    else if (cJSON_GetObjectItemCaseSensitive(root, "ProtocolVersion"))
        fail = "the target is a legacy ASP.NET SignalR server (use --protocol legacy)";
    else {
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
        if (cJSON_IsString(err)) {
            set_text(text, text_size, err->valuestring, strlen(err->valuestring));
            cJSON_Delete(root);
            return -1;
        }
        if (cJSON_GetObjectItemCaseSensitive(root, "url"))
            fail = "negotiate redirect (url) is not supported by the load generator";
        else {
            const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "negotiateVersion");
            int v1 = cJSON_IsNumber(version) && version->valueint >= 1;
            const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, v1 ? "connectionToken" : "connectionId");
            if (!cJSON_IsString(tok) || tok->valuestring[0] == '\0')
                fail = v1 ? "negotiate response without connectionToken"
                          : "negotiate response without connectionId";
            else if (!(*token = dup_string(tok->valuestring)))
                fail = "out of memory";
        }
    }
    cJSON_Delete(root);
    if (fail) {
        set_text(text, text_size, fail, strlen(fail));
        return -1;
    }
    return 0;
}

int lg_sig_parse_legacy_negotiate(const char *body, size_t len, char **token, char *text,
                                  size_t text_size)
{
    *token = NULL;
    cJSON *root = cJSON_ParseWithLength(body, len);
    const char *fail = NULL;
    if (!cJSON_IsObject(root))
        fail = "legacy negotiate response is not a JSON object";
    else if (cJSON_GetObjectItemCaseSensitive(root, "availableTransports") ||
             cJSON_GetObjectItemCaseSensitive(root, "negotiateVersion"))
        fail = "the target is an ASP.NET Core SignalR endpoint, not legacy SignalR";
    else {
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "Error");
        const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "ConnectionToken");
        const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "ProtocolVersion");
        const cJSON *tryws = cJSON_GetObjectItemCaseSensitive(root, "TryWebSockets");
        if (cJSON_IsString(err)) {
            set_text(text, text_size, err->valuestring, strlen(err->valuestring));
            cJSON_Delete(root);
            return -1;
        }
        if (!cJSON_IsString(ver) || (strcmp(ver->valuestring, "1.5") != 0 &&
                                     strcmp(ver->valuestring, "2.0") != 0 &&
                                     strcmp(ver->valuestring, "2.1") != 0))
            fail = "legacy negotiate: ProtocolVersion missing or not 1.5/2.0/2.1";
        else if (cJSON_IsFalse(tryws))
            fail = "legacy negotiate: TryWebSockets is false (only webSockets is supported)";
        else if (!cJSON_IsString(tok) || tok->valuestring[0] == '\0')
            fail = "legacy negotiate response without ConnectionToken";
        else if (!(*token = dup_string(tok->valuestring)))
            fail = "out of memory";
    }
    cJSON_Delete(root);
    if (fail) {
        set_text(text, text_size, fail, strlen(fail));
        return -1;
    }
    return 0;
}

int lg_sig_parse_legacy_start(const char *body, size_t len, char *text, size_t text_size)
{
    cJSON *root = cJSON_ParseWithLength(body, len);
    const cJSON *resp = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "Response") : NULL;
    int ok = cJSON_IsString(resp) && strcmp(resp->valuestring, "started") == 0;
    cJSON_Delete(root);
    if (!ok) {
        set_text(text, text_size, "legacy /start did not answer {\"Response\":\"started\"}", 51);
        return -1;
    }
    return 0;
}
