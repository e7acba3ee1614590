/* rp_core.h - ASP.NET Core SignalR records as a replay compares them (the capture/replay
 * contract, docs/FIXTURES.md): a text frame (or body) is JSON records each ended by 0x1e; a binary
 * frame is MessagePack records each prefixed by its length (a base-128 varint), decoded into the
 * same JSON values (integers keep their exact text, binary payloads become base64 strings, map keys
 * strings) so both protocols compare by value. Ping records (type 6) are told apart. */
#ifndef RP_CORE_H
#define RP_CORE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Appends one wrapper object per record to `out` (a cJSON array): {"v": value} for a JSON record
 * (or a decoded MessagePack one), {"t": "text"} for a text record that is not JSON. Returns the
 * number of records, or -1 (and *err, caller frees) for a malformed binary frame. */
int rp_core_text_records(const char *text, size_t n, cJSON *out);
/* `first`: the socket's first server frame, which starts with the handshake answer (JSON ended
 * by 0x1e) also in a MessagePack session, maybe followed by MessagePack records. */
int rp_core_binary_records(const unsigned char *p, size_t n, int first, cJSON *out, char **err);
/* A ping record: {"type":6} in JSON, [6] in MessagePack. */
int rp_core_is_ping(const cJSON *value);

#endif
