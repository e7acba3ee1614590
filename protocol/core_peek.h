/* core_peek.h - which kinds of hub message a buffer of whole Core messages holds.
 *
 * The proxy forwards Core traffic byte for byte, but it must still notice a
 * few things: the client's first Ping (which arms the client timeout) and the
 * backend's Close (so the relay does not add a second one). The ASP.NET Core
 * server writes `type` first ({"type":7,...} / [7,...]), so for its messages
 * a glance at the first bytes says the kind; anything else (clients write
 * `type` last) is decoded fully. */
#ifndef SR_CORE_PEEK_H
#define SR_CORE_PEEK_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/hub_msg.h"
#include "protocol/proto_status.h"

/* Bit (1u << kind) for each message kind found. */
#define CORE_KIND_BIT(kind) (1u << (unsigned)(kind))

/* data holds whole JSON records (each ending in 0x1E) or whole VarInt-framed
 * MessagePack messages. Sets *kinds to the union of their kind bits
 * (unknown types set no bit). Returns PROTO_OK, or the error of the first
 * malformed message (a trailing partial message is PROTO_INCOMPLETE). */
enum proto_status core_peek_kinds(int binary, const char *data, size_t len, unsigned *kinds,
                                  struct proto_error *err);

/* The first whole message of data (as above): its framed length (*consumed,
 * with the 0x1E or the VarInt prefix), its kind (HUB_MSG_NONE for a type
 * this relay does not know) and, for Ack and Sequence, its sequenceId (0
 * otherwise). Stateful reconnect counts and filters messages one by one with it. */
enum proto_status core_peek_next(int binary, const char *data, size_t len, size_t *consumed,
                                 enum hub_msg_kind *kind, int64_t *sequence_id, struct proto_error *err);

#endif
