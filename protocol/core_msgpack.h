/* core_msgpack.h - the ASP.NET Core SignalR MessagePack hub protocol.
 *
 * Framing (BinaryMessageParser/Formatter): every message is a VarInt length
 * (unsigned LEB128, 1-5 bytes, at most 0x7FFFFFFF) followed by exactly that
 * many bytes of MessagePack. The body is one array whose first element is the
 * message type (MessagePackHubProtocolWorker):
 *
 *   1 Invocation        [1, headers, id|nil, target, arguments, streamIds?]
 *   4 StreamInvocation  [4, headers, id, target, arguments, streamIds?]
 *   2 StreamItem        [2, headers, id, item]
 *   3 Completion        [3, headers, id, kind, result?]  kind 1 error, 2 void, 3 result
 *   5 CancelInvocation  [5, headers, id]
 *   6 Ping              [6]
 *   7 Close             [7, error|nil, allowReconnect?]
 *   8 Ack / 9 Sequence  [8|9, sequenceId]
 *
 * Decoding is zero copy: target, ids and error texts are spans into the body,
 * arguments, item, result, headers and stream ids are the raw MessagePack
 * bytes of their element (PAYLOAD_MSGPACK). The body is first checked by
 * msgpack_check (hostile counts, depth), then the top-level array header is
 * read here and every element is parsed by msgpack-c (msgpack_unpack), which
 * reports where the element ended.
 *
 * Leniency follows the .NET server: extra array elements beyond those a type
 * uses are ignored (that is how 5- and 6-element invocations coexist),
 * integers may use any MessagePack width, headers may repeat a key (the
 * backend rejects that, we do not look). Bytes after the top-level array are
 * rejected. Encoding writes exactly what the .NET server writes. */
#ifndef SR_CORE_MSGPACK_H
#define SR_CORE_MSGPACK_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"
#include "protocol/hub_msg.h"
#include "protocol/proto_status.h"
#include "containers/span.h"

/* Largest length a VarInt prefix may carry ("Messages over 2GB ..."). */
#define CORE_BINARY_MAX_LENGTH 0x7FFFFFFFu

/* Finds the next frame at the start of (data, len). On PROTO_OK *frame is the
 * body (without prefix) and *consumed the prefix plus body length. Returns
 * PROTO_INCOMPLETE while the prefix or body is not complete, PROTO_ERR_TOO_LARGE
 * for a prefix over 2 GB or a body longer than max_frame (reported as soon as
 * the prefix is complete, without waiting for the body). A zero-length frame
 * is returned as such; core_msgpack_decode rejects its empty body. */
enum proto_status core_binary_next_frame(const char *data, size_t len, size_t max_frame,
                                         struct span *frame, size_t *consumed,
                                         struct proto_error *err);

/* Appends the VarInt prefix for a body of len bytes (false if len is over
 * CORE_BINARY_MAX_LENGTH or memory runs out; out is unchanged then). */
bool core_binary_write_length(struct buf *out, size_t len);

/* Decodes one message body (without its prefix) into *out, which borrows
 * from body: keep body alive while out is used. out owns nothing, but
 * calling hub_msg_release on it is harmless. PROTO_UNKNOWN_TYPE for a
 * well-formed message of a type other than 1-9 (skip it). */
enum proto_status core_msgpack_decode(const char *body, size_t len, struct hub_msg *out,
                                      struct proto_error *err);

/* Appends prefix + body for msg, as the .NET server writes it. Every payload
 * used must be PAYLOAD_MSGPACK (or NONE): a JSON payload fails with
 * PROTO_ERR_VALUE (convert it first, see convert.h). On any failure out->len
 * is restored. */
enum proto_status core_msgpack_encode(const struct hub_msg *msg, struct buf *out,
                                      struct proto_error *err);

#endif
