/* handshake.c - ASP.NET Core SignalR handshake request/response (see handshake.h). */
#include "protocol/handshake.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/core_json.h"
#include "protocol/json_scan.h"
#include "protocol/json_strict.h"
#include "protocol/json_write.h"

/* ---- protocols ---------------------------------------------------------- */

bool hub_protocol_from_name(struct span name, enum hub_protocol *out)
{
    if (span_eq_nocase(name, SPAN_LIT("json"))) {
        *out = HUB_PROTOCOL_JSON;
        return true;
    }
    if (span_eq_nocase(name, SPAN_LIT("messagepack"))) {
        *out = HUB_PROTOCOL_MSGPACK;
        return true;
    }
    return false;
}

const char *hub_protocol_name(enum hub_protocol protocol)
{
    return protocol == HUB_PROTOCOL_MSGPACK ? "messagepack" : "json";
}

bool hub_protocol_is_binary(enum hub_protocol protocol)
{
    return protocol == HUB_PROTOCOL_MSGPACK;
}

bool hub_protocol_version_supported(enum hub_protocol protocol, int version)
{
    (void)protocol; /* both built-in protocols share the rule */
    return version <= HUB_PROTOCOL_MAX_VERSION;
}

/* ---- shared decoding helpers -------------------------------------------- */

/* A string member's value: zero-copy into the record, or (when it had
 * escapes) a copy that replaces whatever *owned held. */
static enum proto_status member_string(const struct json_member *m, char **owned,
                                       struct span *out, struct proto_error *err)
{
    struct span s;
    enum proto_status st = json_member_string_view(m, &s, err);
    if (st != PROTO_OK)
        return st;
    if (!json_string_view_borrows_input(m, s)) { /* cJSON's NUL-terminated copy, freed with m */
        char *copy = malloc(s.len + 1);
        if (!copy)
            return proto_fail(err, PROTO_ERR_NOMEM, "out of memory copying a string");
        memcpy(copy, s.ptr, s.len + 1);
        free(*owned);
        *owned = copy;
        s.ptr = copy;
    }
    *out = s;
    return PROTO_OK;
}

/* Calls visit() for each top-level member of the record after the strictness
 * checks. visit sees each member once; the walk stops at its first error. */
/* ---- request ------------------------------------------------------------ */

struct request_walk {
    struct handshake_request *req;
    bool has_protocol;
    bool has_version;
};

static enum proto_status visit_request(void *ctx, const struct json_member *m,
                                       struct proto_error *err)
{
    struct request_walk *w = ctx;
    if (strcmp(m->key, "protocol") == 0) {
        if (!cJSON_IsString(m->value))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected 'protocol' to be of type String.");
        w->has_protocol = true;
        return member_string(m, &w->req->owned, &w->req->protocol, err);
    }
    if (strcmp(m->key, "version") == 0) {
        if (cJSON_IsNull(m->value)) { /* ReadAsInt32: null is "no version" */
            w->has_version = false;
            return PROTO_OK;
        }
        if (!cJSON_IsNumber(m->value))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected 'version' to be of type Number.");
        long long v;
        enum proto_status st = json_strict_integer(m->raw, INT32_MIN, INT32_MAX, &v, err);
        if (st != PROTO_OK)
            return proto_fail(err, st, "'version' must be a 32-bit integer literal");
        w->has_version = true;
        w->req->version = (int)v;
    }
    return PROTO_OK;
}

enum proto_status handshake_decode_request(const char *record, size_t len,
                                           struct handshake_request *out,
                                           struct proto_error *err)
{
    memset(out, 0, sizeof *out);
    struct request_walk w = { out, false, false };
    enum proto_status st = json_object_walk(record, len, JSON_STRICT_MAX_DEPTH, visit_request, &w, err);
    if (st == PROTO_OK && !w.has_protocol)
        st = proto_fail(err, PROTO_ERR_MISSING, "Missing required property 'protocol'.");
    if (st == PROTO_OK && !w.has_version)
        st = proto_fail(err, PROTO_ERR_MISSING, "Missing required property 'version'.");
    if (st != PROTO_OK)
        handshake_request_release(out);
    return st;
}

void handshake_request_release(struct handshake_request *req)
{
    free(req->owned);
    memset(req, 0, sizeof *req);
}

enum proto_status handshake_encode_request(struct span protocol, int version, struct buf *out,
                                           struct proto_error *err)
{
    size_t start = out->len;
    if (buf_append_byte(out, '{') && json_write_key(out, "protocol", true) &&
        json_write_string(out, protocol) && json_write_key(out, "version", false) &&
        buf_append_i64(out, version) && buf_append_byte(out, '}') &&
        buf_append_byte(out, CORE_RECORD_SEPARATOR))
        return PROTO_OK;
    out->len = start;
    return proto_fail(err, PROTO_ERR_NOMEM, "out of memory encoding a handshake request");
}

/* ---- response ----------------------------------------------------------- */

static enum proto_status visit_response(void *ctx, const struct json_member *m,
                                        struct proto_error *err)
{
    struct handshake_response *resp = ctx;
    if (strcmp(m->key, "type") == 0)
        return proto_fail(err, PROTO_ERR_VALUE, "Expected a handshake response from the server.");
    if (strcmp(m->key, "error") == 0) {
        if (!cJSON_IsString(m->value))
            return proto_fail(err, PROTO_ERR_TYPE, "Expected 'error' to be of type String.");
        return member_string(m, &resp->owned, &resp->error, err);
    }
    return PROTO_OK;
}

enum proto_status handshake_decode_response(const char *record, size_t len,
                                            struct handshake_response *out,
                                            struct proto_error *err)
{
    memset(out, 0, sizeof *out);
    enum proto_status st = json_object_walk(record, len, JSON_STRICT_MAX_DEPTH, visit_response, out, err);
    if (st != PROTO_OK)
        handshake_response_release(out);
    return st;
}

void handshake_response_release(struct handshake_response *resp)
{
    free(resp->owned);
    memset(resp, 0, sizeof *resp);
}

enum proto_status handshake_encode_response(struct span error, struct buf *out,
                                            struct proto_error *err)
{
    size_t start = out->len;
    bool ok = buf_append_byte(out, '{');
    if (ok && !span_is_empty(error)) /* the server writes `error` only when non-empty */
        ok = json_write_key(out, "error", true) && json_write_string(out, error);
    if (ok && buf_append_byte(out, '}') && buf_append_byte(out, CORE_RECORD_SEPARATOR))
        return PROTO_OK;
    out->len = start;
    return proto_fail(err, PROTO_ERR_NOMEM, "out of memory encoding a handshake response");
}

/* ---- error texts -------------------------------------------------------- */

/* Each appends the whole text or, when out of memory, nothing. */
static bool text_done(struct buf *out, size_t start, bool ok)
{
    if (!ok)
        out->len = start;
    return ok;
}

bool handshake_text_protocol_unsupported(struct buf *out, struct span protocol)
{
    size_t start = out->len;
    return text_done(out, start,
                     buf_append_cstr(out, "The protocol '") && buf_append_span(out, protocol) &&
                         buf_append_cstr(out, "' is not supported."));
}

bool handshake_text_version_unsupported(struct buf *out, struct span protocol, int version)
{
    size_t start = out->len;
    return text_done(out, start,
                     buf_append_cstr(out, "The server does not support version ") &&
                         buf_append_i64(out, version) && buf_append_cstr(out, " of the '") &&
                         buf_append_span(out, protocol) && buf_append_cstr(out, "' protocol."));
}

bool handshake_text_transfer_format(struct buf *out, enum hub_protocol protocol)
{
    size_t start = out->len;
    return text_done(out, start,
                     buf_append_cstr(out, "Cannot use the '") &&
                         buf_append_cstr(out, hub_protocol_name(protocol)) &&
                         buf_append_cstr(out, "' protocol on the current transport. The "
                                              "transport does not support '") &&
                         buf_append_cstr(out, hub_protocol_is_binary(protocol) ? "Binary" : "Text") &&
                         buf_append_cstr(out, "' transfer format."));
}
