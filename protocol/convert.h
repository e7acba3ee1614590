/* convert.h - the one place where JSON and MessagePack payloads meet.
 *
 * Hub messages keep arguments, results, items, headers and stream ids as the
 * raw bytes they arrived in. When the two ends of a relay speak different
 * hub protocols, each payload is re-encoded here: JSON is parsed with cJSON
 * and packed with msgpack-c; MessagePack is checked (msgpack_check), unpacked
 * with msgpack-c, built into a cJSON tree and printed unformatted.
 *
 * The mapping and what it loses:
 *   JSON -> MessagePack
 *     null, true/false, strings, arrays, objects (keys in order) map directly.
 *     Numbers: cJSON keeps every number as a double, so an integer is exact
 *     only up to 2^53; 9007199254740993 becomes 9007199254740992. A number
 *     whose double is integral and fits int64/uint64 is packed as the smallest
 *     integer, anything else as float64 (so 1.0 and 1e3 become integers, and
 *     2^64 or more stays float64). Infinite values (1e400) are an error.
 *     Strings stay strings: a base64 string or an ISO date cannot be told
 *     apart from text, so bin and timestamps never come back.
 *     A string containing \u0000 is an error: cJSON's strings end at NUL.
 *   MessagePack -> JSON
 *     integers exactly (printed from the 64-bit value, not via double),
 *     float32/float64 as the shortest text that reads back as the same double,
 *     NaN and infinities are an error (JSON has none);
 *     bin -> base64 string with padding (System.Text.Json's byte[] form);
 *     ext -1 (timestamp) -> ISO-8601 UTC string "yyyy-mm-ddThh:mm:ss[.f]Z" with
 *     up to 9 fraction digits, trailing zeros dropped (years 0001-9999 only);
 *     any other ext type -> error;
 *     map keys: strings as they are, integers as decimal strings (the form
 *     System.Text.Json reads into Dictionary<int,...>), any other key type ->
 *     error; strings with invalid UTF-8 or a NUL byte -> error.
 *   Nesting: a payload is at most MSGPACK_PAYLOAD_MAX_DEPTH (31) containers
 *   deep in either direction, so the message that carries it stays within
 *   what msgpack-c can unpack and whatever converts one way converts back;
 *   deeper input is PROTO_ERR_TOO_DEEP. (.NET's own limit is 500.) */
#ifndef SR_CONVERT_H
#define SR_CONVERT_H

#include "containers/buf.h"
#include "protocol/hub_msg.h"
#include "protocol/proto_status.h"

/* Re-encodes one payload into `to`, appending the result to out; *converted
 * then points into out->data (valid until out is appended to again). A
 * payload that is absent or already in `to` is returned as it is, nothing is
 * appended and its bytes are not checked. On failure out->len is restored. */
enum proto_status payload_convert(struct payload in, enum payload_encoding to, struct buf *out,
                                  struct payload *converted, struct proto_error *err);

/* Fills *out with *in whose headers, args, stream_ids, item and result are all
 * in `to` (legacy hub state is left as it is: it never reaches a Core peer).
 * Converted bytes are appended to scratch; out borrows from scratch and from
 * whatever *in borrows, and owns nothing (hub_msg_release(out) is harmless,
 * release *in as usual). in's payloads must not point into scratch. On
 * failure scratch->len is restored and *out is empty. */
enum proto_status hub_msg_convert(const struct hub_msg *in, enum payload_encoding to,
                                  struct buf *scratch, struct hub_msg *out,
                                  struct proto_error *err);

#endif
