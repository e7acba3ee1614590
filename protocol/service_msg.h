/* service_msg.h - the Azure SignalR service protocol between an ASP.NET Core
 * app (Microsoft.Azure.SignalR 1.34.0, "the SDK") and the relay standing in
 * for the service (specs/service-protocol.md, its appendix wins).
 *
 * Framing: a server connection's WebSocket carries a byte stream (message
 * boundaries mean nothing; the SDK sends 4096-byte fragments) of
 *   varint length (LEB128, 1-5 bytes, at most 2^31-1) + one MessagePack array
 * whose element 0 is the message type. The same framing as Core MessagePack,
 * so core_binary_next_frame does the varint; struct svc_framer turns chunks
 * of the stream into whole message bodies.
 *
 * Decoding is zero copy: strings and binary payloads are spans into the
 * body, and the variable-length parts (id lists, the protocol -> payload map,
 * claims, headers, a ping's strings) are kept as the raw MessagePack bytes of
 * that element (struct svc_list), walked later with svc_list_iter: decoding
 * allocates nothing but msgpack-c's zone for one element, which
 * msgpack_check bounds before msgpack-c sees a byte. Every list element is
 * checked while decoding (type, UTF-8), so the iterators cannot fail.
 *
 * Leniency follows the SDK's readers: extra trailing elements are ignored,
 * optional trailing elements (ext, 13's user exclusions, ...) may be absent,
 * integers may use any width, nil is accepted where the SDK writes a string
 * that may be null and, for id lists, as an empty list. Unknown message types
 * (and the Management SDK ones the relay does not implement) decode to
 * PROTO_UNKNOWN_TYPE: skip them. Bytes after the top-level array are an
 * error (a frame is exactly one message).
 *
 * Encoding writes prefix + body, in the element counts the SDK accepts
 * (appendix B). svc_msg_encode writes any message svc_msg_decode produces
 * (lists are spliced back as their raw bytes); the svc_encode_* helpers
 * build the messages the relay sends from plain arguments. */
#ifndef SR_SERVICE_MSG_H
#define SR_SERVICE_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/span.h"
#include "protocol/proto_status.h"

enum svc_msg_type {
    SVC_NONE = 0,
    SVC_HANDSHAKE_REQUEST = 1,       /* S->R [1, version, connType, target, migrationLevel, ext, allowStatefulReconnects] */
    SVC_HANDSHAKE_RESPONSE = 2,      /* R->S [2, error|nil, ext, connectionId] */
    SVC_PING = 3,                    /* both [3, k1, v1, ...] */
    SVC_OPEN_CONNECTION = 4,         /* R->S [4, connId, claims, headers, query, ext{3:protocol}] */
    SVC_CLOSE_CONNECTION = 5,        /* both [5, connId, error|nil, headers, ext] */
    SVC_CONNECTION_DATA = 6,         /* both [6, connId, payload:bin, ext] */
    SVC_MULTI_CONNECTION_DATA = 7,   /* S->R [7, connIds, payloads, ext] */
    SVC_USER_DATA = 8,               /* S->R [8, userId, payloads, ext] */
    SVC_MULTI_USER_DATA = 9,         /* S->R [9, userIds, payloads, ext] */
    SVC_BROADCAST_DATA = 10,         /* S->R [10, excludedConnIds, payloads, ext] */
    SVC_JOIN_GROUP = 11,             /* S->R [11, connId, group, ext] */
    SVC_LEAVE_GROUP = 12,            /* S->R [12, connId, group|nil, ext] */
    SVC_GROUP_BROADCAST_DATA = 13,   /* S->R [13, group, excludedConnIds, payloads, ext, excludedUserIds, callerUserId] */
    SVC_MULTI_GROUP_BROADCAST_DATA = 14, /* S->R [14, groups, payloads, ext] */
    SVC_SERVICE_ERROR = 15,          /* R->S [15, error] (no ext) */
    SVC_JOIN_GROUP_WITH_ACK = 18,    /* S->R [18, connId, group, ackId, ext] */
    SVC_LEAVE_GROUP_WITH_ACK = 19,   /* S->R [19, connId, group|nil, ackId, ext] */
    SVC_ACK = 20,                    /* R->S [20, ackId, status, message, ext, payload?] */
    SVC_CLIENT_INVOCATION = 34,      /* both [34, invocationId, connId, callerServerId, payloads, ext] */
    SVC_CLIENT_COMPLETION = 35,      /* both [35, invocationId, connId, callerServerId, protocol, payload:bin, ext] */
    SVC_ERROR_COMPLETION = 36,       /* both [36, invocationId, connId, callerServerId, error, ext] */
};

/* Ack statuses (appendix A.10): never send anything but 1 or 2 for 18/19. */
enum svc_ack_status {
    SVC_ACK_OK = 1,
    SVC_ACK_NOT_FOUND = 2,
    SVC_ACK_TIMEOUT = 3,
    SVC_ACK_INTERNAL_ERROR = 4,
    SVC_ACK_FORBIDDEN = 5,
};

/* HandshakeRequest connection types. */
enum svc_conn_type { SVC_CONN_DEFAULT = 0, SVC_CONN_ON_DEMAND = 1, SVC_CONN_WEAK = 2 };

/* ext key 5 of ConnectionData. */
enum svc_data_type {
    SVC_DATA_NONE = 0, /* key absent */
    SVC_DATA_HANDSHAKE = 1,
    SVC_DATA_INVOCATION = 2,
    SVC_DATA_OTHER = 3,
    SVC_DATA_CLOSE = 4,
};

/* The extension map ("ext", int keys). Unknown keys are skipped on decode
 * and not written back. */
struct svc_ext {
    bool has_tracing_id;   /* key 1 */
    uint64_t tracing_id;
    bool has_ttl;          /* key 2, seconds */
    int32_t ttl;
    struct span protocol;  /* key 3; absent = ptr NULL */
    struct span filter;    /* key 4 */
    int32_t data_type;     /* key 5 (enum svc_data_type); 0 = absent */
    bool has_partial;      /* key 6 */
    bool partial;
};

/* A variable-length element kept as its raw MessagePack bytes (header
 * included): an array of str|nil, a map str -> bin (payloads), str -> str
 * (claims, keys may repeat) or str -> [str] (headers); for a Ping, the
 * strings after the type. Absent: raw.ptr NULL, count 0. */
enum svc_list_kind { SVC_LIST_STRINGS, SVC_LIST_PAYLOADS, SVC_LIST_CLAIMS, SVC_LIST_HEADERS };

struct svc_list {
    struct span raw;
    uint32_t count;        /* elements, or map entries */
    enum svc_list_kind kind;
    bool bare;             /* Ping: raw holds count strings with no array header */
};

/* Walks a decoded list. For STRINGS each step yields key (an absent span
 * for a nil element); PAYLOADS yield key = protocol name, value = the bytes;
 * CLAIMS key = type, value = value; HEADERS key = name and value = the raw
 * array of values (walk it with svc_list_of_values). */
struct svc_list_iter {
    const char *p, *end;
    uint32_t left;
    enum svc_list_kind kind;
};

void svc_list_iter_begin(struct svc_list_iter *it, const struct svc_list *list);
bool svc_list_iter_next(struct svc_list_iter *it, struct span *key, struct span *value);
/* A header's values (the value span a HEADERS step yielded) as a STRINGS list. */
struct svc_list svc_list_of_values(struct span raw_values);

/* The payload for a recipient's protocol: keys match ASCII case-insensitively
 * (the SDK writes "json", "messagepack"). False if the map has none. */
bool svc_payloads_find(const struct svc_list *payloads, struct span protocol, struct span *bytes);

/* One decoded message; every span borrows from the decoded body. Only the
 * fields of its type are set, the others are zero / absent. */
struct svc_msg {
    enum svc_msg_type type;
    uint32_t elements;          /* array length as received */

    /* 1 HandshakeRequest */
    int32_t version;
    int32_t conn_type;          /* enum svc_conn_type */
    struct span target;
    int32_t migration_level;
    bool allow_stateful_reconnect;

    struct span connection_id;  /* 2 (optional), 4, 5, 6, 11, 12, 18, 19, 34-36 */
    struct span error;          /* 2, 5, 15, 36 (absent = nil) */
    struct span user_id;        /* 8 */
    struct span group;          /* 11, 12, 13, 18, 19 (absent = nil: leave all groups) */
    struct span payload;        /* 6, 35 (bin), 20 (optional 6th element) */
    struct svc_list ids;        /* 7 connIds, 9 userIds, 10/13 excluded connIds, 14 groups, 3 strings */
    struct svc_list excluded_users; /* 13 */
    struct span caller_user_id; /* 13 */
    struct svc_list payloads;   /* 7, 8, 9, 10, 13, 14, 34 */
    struct svc_list claims;     /* 4 */
    struct svc_list headers;    /* 4, 5 */
    struct span query;          /* 4 */
    int64_t ack_id;             /* 18, 19, 20 */
    int32_t ack_status;         /* 20 */
    struct span ack_message;    /* 20 */
    struct span invocation_id;  /* 34-36 */
    struct span caller_server_id; /* 34-36 */
    struct span protocol;       /* 35 */
    bool has_ext;               /* the ext element was present */
    struct svc_ext ext;
};

/* Decodes one body (without its varint prefix) into *out, which borrows from
 * body. PROTO_UNKNOWN_TYPE for a well-formed array of another type (skip it);
 * on any other failure *out is zeroed and *err says why. */
enum proto_status svc_msg_decode(const char *body, size_t len, struct svc_msg *out,
                                 struct proto_error *err);

/* Appends prefix + body for any message svc_msg_decode can produce (the
 * relay's own messages included), re-encoding what decode read: decode ->
 * encode -> decode gives equal fields. Lists are written back from their raw
 * bytes. On failure out is unchanged. */
enum proto_status svc_msg_encode(const struct svc_msg *msg, struct buf *out,
                                 struct proto_error *err);

/* Ping helpers: the value of key (the first pair with that key), if any. */
bool svc_ping_get(const struct svc_msg *ping, const char *key, struct span *value);

/* ---- the messages the relay sends, from plain arguments ------------------ */

/* One claim of OpenConnection; the same type may appear several times. */
struct svc_claim {
    struct span type;
    struct span value;
};

/* One request header of OpenConnection with its values (written as an array). */
struct svc_header {
    struct span name;
    const struct span *values;
    size_t value_count;
};

/* [2, error|nil, {}, connectionId]: success when error is absent. */
enum proto_status svc_encode_handshake_response(struct buf *out, struct span error,
                                                struct span connection_id, struct proto_error *err);

/* [3] for n == 0 (keep-alive), else [3, s0, s1, ...] (key/value pairs such as
 * "shutdown", "finack"). */
enum proto_status svc_encode_ping(struct buf *out, const struct span *strings, size_t n,
                                  struct proto_error *err);

/* [4, connId, claims, headers, query, {3: protocol}]. The query gets a
 * leading '?' if it is non-empty and lacks one; protocol must be non-empty
 * (the SDK hangs the client without it). */
enum proto_status svc_encode_open_connection(struct buf *out, struct span connection_id,
                                             const struct svc_claim *claims, size_t claim_count,
                                             const struct svc_header *headers, size_t header_count,
                                             struct span query, struct span protocol,
                                             struct proto_error *err);

/* [5, connId, error|nil, {}, {}]: the relay's "client gone". The SDK's own
 * form uses "" for no error (appendix A.5); pass SPAN_LIT("") for that. */
enum proto_status svc_encode_close_connection(struct buf *out, struct span connection_id,
                                              struct span error, struct proto_error *err);

/* [6, connId, bin, {}] or with {6: true} when partial. */
enum proto_status svc_encode_connection_data(struct buf *out, struct span connection_id,
                                             struct span payload, bool partial,
                                             struct proto_error *err);

/* [20, ackId, status, message, {}] (message absent -> ""). */
enum proto_status svc_encode_ack(struct buf *out, int64_t ack_id, int32_t status,
                                 struct span message, struct proto_error *err);

/* [15, error]. */
enum proto_status svc_encode_service_error(struct buf *out, struct span error,
                                           struct proto_error *err);

/* ---- the incremental framer ------------------------------------------------ */

/* Turns the bytes of a server connection, in whatever chunks they come, into
 * whole message bodies. Bodies that lie entirely inside a pushed chunk are
 * returned in place; only a message split across chunks is copied (into
 * `pending`, which is freed again as soon as it drains, so an idle
 * connection holds no buffer). A declared length over max_message fails as
 * soon as the prefix is complete; after any error the framer keeps returning
 * it (the connection is to be closed). */
struct svc_framer {
    struct buf pending;      /* an incomplete message: prefix + the body bytes so far */
    bool pending_done;       /* pending holds the message last returned: drop it first */
    const char *in;          /* the chunk being pushed (borrowed) */
    size_t in_len, in_pos;
    size_t max_message;      /* largest body accepted */
    struct proto_error error; /* status PROTO_OK until a failure */
};

void svc_framer_init(struct svc_framer *f, size_t max_message);
void svc_framer_free(struct svc_framer *f);

/* Hands the next chunk of the stream to the framer; call svc_framer_next
 * until it stops returning PROTO_OK before pushing another. The chunk is
 * borrowed until then. */
void svc_framer_push(struct svc_framer *f, const char *data, size_t len);

/* The next whole body: PROTO_OK with *body valid until the next call to
 * svc_framer_next or svc_framer_push (or free); PROTO_INCOMPLETE when the
 * pushed chunk is used up (its unused tail has been copied: the caller may
 * drop the chunk); PROTO_ERR_TOO_LARGE / PROTO_ERR_NOMEM, sticky. */
enum proto_status svc_framer_next(struct svc_framer *f, struct span *body, struct proto_error *err);

/* What the framer has not taken yet of the chunk it borrows: after a
 * PROTO_OK, the rest of the stream a caller that stops there must keep (and
 * push again later) itself; empty once svc_framer_next said PROTO_INCOMPLETE. */
static inline struct span svc_framer_unread(const struct svc_framer *f)
{
    return f->in ? span_make(f->in + f->in_pos, f->in_len - f->in_pos) : span_make(NULL, 0);
}

/* Bytes held for an incomplete message (for limits and metrics). */
static inline size_t svc_framer_buffered(const struct svc_framer *f)
{
    return f->pending_done ? 0 : f->pending.len;
}

#endif
