/* core_json.h - the ASP.NET Core SignalR JSON hub protocol.
 *
 * Three pieces, mirroring dotnet/aspnetcore (TextMessageParser/Formatter and
 * JsonHubProtocol):
 *
 *   core_text_next_record  splits a byte stream into records ending in 0x1E.
 *                          The handshake uses the same framing.
 *   core_json_decode       one record (RS excluded) -> struct hub_msg, with the
 *                          server parser's tolerance: any property order,
 *                          unknown properties skipped, duplicate properties
 *                          last-wins, every known property type-checked
 *                          whatever the message type.
 *   core_json_encode       struct hub_msg -> one record + RS, in the exact
 *                          property order the ASP.NET Core server writes.
 *
 * Arguments, items, results, headers and stream ids stay raw JSON bytes
 * (PAYLOAD_JSON spans into the record); target, invocation id and error text
 * are spans too, copied only when they contained escapes (see hub_msg.h for
 * ownership: keep the record alive, call hub_msg_release when done).
 *
 * Where we knowingly differ from JsonHubProtocol.ParseMessage:
 *   - bytes after the closing brace are refused (the server stops reading at
 *     the brace and ignores them);
 *   - a string containing the escape \u0000 is refused where it is a name, id
 *     or error text (cJSON would cut it short), and so is a property *name*
 *     containing it anywhere in the record (the server would skip
 *     "type\u0000x" as an unknown property; cJSON would read it as "type");
 *   - cJSON is laxer than System.Text.Json about number syntax inside payloads
 *     ("01", "1."); such payloads pass through raw and the backend rejects them.
 *   - an unknown `type` is reported as PROTO_UNKNOWN_TYPE after the whole
 *     record was checked, like the server (which then drops the message).
 */
#ifndef SR_CORE_JSON_H
#define SR_CORE_JSON_H

#include <stddef.h>

#include "containers/buf.h"
#include "protocol/hub_msg.h"
#include "protocol/proto_status.h"
#include "containers/span.h"

#define CORE_RECORD_SEPARATOR '\x1e'

/* Finds the next record in (data, len). On PROTO_OK, *record is the bytes
 * before the first 0x1E (possibly empty) and *consumed counts them plus the
 * separator. PROTO_INCOMPLETE: no separator yet and at most max_record bytes
 * buffered, wait for more. PROTO_ERR_TOO_LARGE: the record is longer than
 * max_record bytes, or more than max_record bytes arrived without a separator.
 * Pass SIZE_MAX for no limit.
 *
 * Note: ASP.NET Core's MaximumReceiveMessageSize M counts the separator too
 * (the parser only sees an M-byte window), so to mirror it pass M - 1. */
enum proto_status core_text_next_record(const char *data, size_t len, size_t max_record,
                                        struct span *record, size_t *consumed,
                                        struct proto_error *err);

/* Decodes one record (without its 0x1E). *out is initialised by this call
 * (release anything it held before). On PROTO_OK the caller must
 * hub_msg_release(out); on any other status *out is already released.
 * PROTO_UNKNOWN_TYPE: a well-formed message of a type we do not know (the
 * server drops those); the caller skips it. */
enum proto_status core_json_decode(const char *record, size_t len, struct hub_msg *out,
                                   struct proto_error *err);

/* Appends msg as one JSON record plus 0x1E to out, in the server's order:
 * `type`, `headers` (types 1-5, only when a non-empty object), `invocationId`
 * (only when non-empty), then per type:
 *   1/4 Invocation/StreamInvocation  target, arguments (`[]` if absent), streamIds (if present)
 *   2 StreamItem                     item (`null` if absent)
 *   3 Completion                     error, or result (`null` if absent), or neither:
 *                                    msg->completion decides; COMPLETION_NONE means
 *                                    "error if set, else result if set, else void"
 *   5 CancelInvocation               -
 *   6 Ping                           -
 *   7 Close                          error (if set, even empty), allowReconnect (only when true)
 *   8/9 Ack/Sequence                 sequenceId
 * A payload with empty bytes counts as absent. Fails with PROTO_ERR_VALUE for a
 * MessagePack payload ("payload is MessagePack; convert it first") or a kind
 * outside 1-9, and PROTO_ERR_MISSING when a field the receiver requires is
 * missing (target; invocation id for types 2-5). On failure out->len is
 * restored to what it was. */
enum proto_status core_json_encode(const struct hub_msg *msg, struct buf *out,
                                   struct proto_error *err);

#endif
