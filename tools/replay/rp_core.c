/* rp_core.c - Core SignalR records for the replay (see rp_core.h). */
#include "rp_core.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>
#include <openssl/evp.h>

#include "rp_json.h"
#include "rp_text.h"

static void add_wrapped(cJSON *out, const char *key, cJSON *item)
{
    cJSON *w = cJSON_CreateObject();
    cJSON_AddItemToObject(w, key, item);
    cJSON_AddItemToArray(out, w);
}

int rp_core_text_records(const char *text, size_t n, cJSON *out)
{
    int count = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && text[i] != 0x1e)
            continue;
        if (i > start || (i < n && text[i] == 0x1e)) {
            char *rec = rp_strndup(text + start, i - start);
            cJSON *v = rp_json_parse(rec);
            if (v)
                add_wrapped(out, "v", v);
            else if (i > start)
                add_wrapped(out, "t", cJSON_CreateString(rec));
            count += v || i > start;
            free(rec);
        }
        start = i + 1;
    }
    return count;
}

static cJSON *number_text(const char *text)
{
    cJSON *v = cJSON_CreateNumber(strtod(text, NULL));
    v->valuestring = rp_strdup(text);
    return v;
}

static cJSON *from_msgpack(const msgpack_object *o)
{
    char buf[64];
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        return cJSON_CreateNull();
    case MSGPACK_OBJECT_BOOLEAN:
        return cJSON_CreateBool(o->via.boolean);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(buf, sizeof buf, "%" PRIu64, o->via.u64);
        return number_text(buf);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        snprintf(buf, sizeof buf, "%" PRId64, o->via.i64);
        return number_text(buf);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        snprintf(buf, sizeof buf, "%.17g", o->via.f64);
        return number_text(buf);
    case MSGPACK_OBJECT_STR: {
        char *s = rp_strndup(o->via.str.ptr, o->via.str.size);
        cJSON *v = cJSON_CreateString(s);
        free(s);
        return v;
    }
    case MSGPACK_OBJECT_BIN:
    case MSGPACK_OBJECT_EXT: {
        const char *p = o->type == MSGPACK_OBJECT_BIN ? o->via.bin.ptr : o->via.ext.ptr;
        size_t n = o->type == MSGPACK_OBJECT_BIN ? o->via.bin.size : o->via.ext.size;
        char *b64 = rp_xmalloc(4 * ((n + 2) / 3) + 1);
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)p, (int)n);
        cJSON *v = cJSON_CreateString(b64);
        free(b64);
        return v;
    }
    case MSGPACK_OBJECT_ARRAY: {
        cJSON *a = cJSON_CreateArray();
        for (uint32_t i = 0; i < o->via.array.size; i++)
            cJSON_AddItemToArray(a, from_msgpack(&o->via.array.ptr[i]));
        return a;
    }
    case MSGPACK_OBJECT_MAP: {
        cJSON *m = cJSON_CreateObject();
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object *k = &o->via.map.ptr[i].key;
            char *key;
            if (k->type == MSGPACK_OBJECT_STR) {
                key = rp_strndup(k->via.str.ptr, k->via.str.size);
            } else {
                cJSON *kv = from_msgpack(k);
                key = rp_json_show(kv, 200);
                cJSON_Delete(kv);
            }
            cJSON_AddItemToObject(m, key, from_msgpack(&o->via.map.ptr[i].val));
            free(key);
        }
        return m;
    }
    }
    return cJSON_CreateNull();
}

int rp_core_binary_records(const unsigned char *p, size_t n, int first, cJSON *out, char **err)
{
    int count = 0;
    size_t i = 0;
    /* The handshake answer: JSON ended by 0x1e, sent in the transport's format (in a binary frame,
     * maybe with the first MessagePack records after it). */
    const unsigned char *rs = first && n && p[0] == '{' ? memchr(p, 0x1e, n) : NULL;
    if (rs) {
        char *hs = rp_strndup((const char *)p, (size_t)(rs - p));
        cJSON *v = rp_json_parse(hs);
        free(hs);
        if (v) {
            add_wrapped(out, "v", v);
            count++;
            i = (size_t)(rs - p) + 1;
        }
    }
    while (i < n) {
        uint64_t len = 0;
        int shift = 0;
        for (;;) {
            if (i >= n || shift > 28) {
                *err = rp_strdup("a MessagePack record with a bad length prefix");
                return -1;
            }
            unsigned char b = p[i++];
            len |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
            if (!(b & 0x80))
                break;
        }
        if (len > n - i) {
            *err = rp_fmt("a MessagePack record of %" PRIu64 " bytes with %zu left in the frame", len, n - i);
            return -1;
        }
        msgpack_unpacked u;
        msgpack_unpacked_init(&u);
        size_t off = 0;
        msgpack_unpack_return rc = msgpack_unpack_next(&u, (const char *)p + i, (size_t)len, &off);
        if (rc != MSGPACK_UNPACK_SUCCESS || off != len) {
            msgpack_unpacked_destroy(&u);
            *err = rp_strdup("a record that is not one MessagePack value");
            return -1;
        }
        add_wrapped(out, "v", from_msgpack(&u.data));
        msgpack_unpacked_destroy(&u);
        i += (size_t)len;
        count++;
    }
    return count;
}

int rp_core_is_ping(const cJSON *v)
{
    if (cJSON_IsObject(v)) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "type");
        return cJSON_IsNumber(t) && t->valuedouble == 6 && cJSON_GetArraySize(v) == 1;
    }
    return cJSON_IsArray(v) && cJSON_IsNumber(v->child) && v->child->valuedouble == 6;
}
