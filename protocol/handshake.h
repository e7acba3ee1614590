/* handshake.h - the ASP.NET Core SignalR handshake (HandshakeProtocol.cs).
 *
 * The first record in each direction, always JSON + 0x1E, even when the hub
 * protocol is MessagePack. Frame it with core_text_next_record, then:
 *
 *   client -> server  {"protocol":"json","version":1}
 *   server -> client  {}  or  {"error":"<text>"}
 *
 * Decoders take one record without its separator. Which protocols and
 * versions are acceptable is the caller's decision; hub_protocol_* give the
 * ASP.NET Core defaults, and handshake_text_* produce the server's exact
 * error texts for the response.
 *
 * Ownership: a decoded protocol name or error text points into the record
 * (keep it alive) unless it had escapes, in which case it is copied into
 * `owned`; call the matching *_release when done. */
#ifndef SR_HANDSHAKE_H
#define SR_HANDSHAKE_H

#include <stdbool.h>

#include "containers/buf.h"
#include "protocol/proto_status.h"
#include "containers/span.h"

enum hub_protocol {
    HUB_PROTOCOL_JSON,
    HUB_PROTOCOL_MSGPACK,
};

/* The server's JsonHubProtocol and MessagePackHubProtocol are version 2 (since
 * .NET 8) and accept any version <= 2 (IsVersionSupported). */
#define HUB_PROTOCOL_MAX_VERSION 2

/* "json" / "messagepack", matched ASCII case-insensitively as the server's
 * protocol resolver does. False for any other name. */
bool hub_protocol_from_name(struct span name, enum hub_protocol *out);
/* The canonical name: "json" or "messagepack". */
const char *hub_protocol_name(enum hub_protocol protocol);
/* True for MessagePack, which needs the Binary transfer format (so not SSE). */
bool hub_protocol_is_binary(enum hub_protocol protocol);
/* The server's rule: version <= HUB_PROTOCOL_MAX_VERSION. */
bool hub_protocol_version_supported(enum hub_protocol protocol, int version);

/* ---- request ------------------------------------------------------------ */

struct handshake_request {
    struct span protocol; /* as the client wrote it, e.g. "json" */
    int version;
    char *owned;          /* backing store of protocol when it was unescaped */
};

/* `protocol` (a string) and `version` (a 32-bit integer literal: 1.0 fails as
 * in .NET; null counts as absent) are required; other properties are ignored.
 * Any failure is what the server answers with "An unexpected error occurred
 * during connection handshake.". On failure nothing needs releasing. */
enum proto_status handshake_decode_request(const char *record, size_t len,
                                           struct handshake_request *out,
                                           struct proto_error *err);
void handshake_request_release(struct handshake_request *req);

/* Appends {"protocol":"<name>","version":N} + 0x1E (the clients' order). */
enum proto_status handshake_encode_request(struct span protocol, int version, struct buf *out,
                                           struct proto_error *err);

/* ---- response ----------------------------------------------------------- */

struct handshake_response {
    struct span error; /* absent (ptr NULL) = success; present, even empty, = failure */
    char *owned;
};

/* `{}` (unknown properties ignored) is success; `error` must be a string; a
 * `type` property anywhere means this is a hub message, not a handshake
 * response: PROTO_ERR_VALUE "Expected a handshake response from the server.". */
enum proto_status handshake_decode_response(const char *record, size_t len,
                                            struct handshake_response *out,
                                            struct proto_error *err);
void handshake_response_release(struct handshake_response *resp);

/* Appends `{}` + 0x1E when error is absent or empty, else {"error":"..."} + 0x1E. */
enum proto_status handshake_encode_response(struct span error, struct buf *out,
                                            struct proto_error *err);

/* ---- the server's error texts -------------------------------------------
 * Plain text (not JSON) appended to out, ready for handshake_encode_response.
 * False when out of memory; out is then unchanged. */

#define HANDSHAKE_TEXT_CANCELED "Handshake was canceled."
#define HANDSHAKE_TEXT_UNEXPECTED "An unexpected error occurred during connection handshake."

/* "The protocol '<protocol>' is not supported." */
bool handshake_text_protocol_unsupported(struct buf *out, struct span protocol);
/* "The server does not support version <N> of the '<protocol>' protocol."
 * (protocol as the client wrote it). */
bool handshake_text_version_unsupported(struct buf *out, struct span protocol, int version);
/* "Cannot use the 'messagepack' protocol on the current transport. The
 * transport does not support 'Binary' transfer format." */
bool handshake_text_transfer_format(struct buf *out, enum hub_protocol protocol);

#endif
