/* legacy_cursor.h - the relay's message cursor for legacy clients (C / messageId).
 *
 * Legacy clients treat the cursor as opaque and echo it on /reconnect. Ours is
 * "<instance>-<seq>": the relay process's random 32-bit instance id and the
 * connection's message sequence number, both in lower-case hex. The instance
 * id makes a cursor from an earlier relay process (or another relay behind the
 * same load balancer) recognisable instead of being misread as a position. */
#ifndef SR_LEGACY_CURSOR_H
#define SR_LEGACY_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/span.h"

#define LEGACY_CURSOR_MAX 32 /* 8 + 1 + 16 hex digits + NUL fit */

/* Writes the cursor and a NUL into out; returns its length. */
size_t legacy_cursor_format(char out[LEGACY_CURSOR_MAX], uint32_t instance, uint64_t seq);

/* Reads a cursor written by legacy_cursor_format. False for anything else
 * (another server's cursor, garbage, overflow). */
bool legacy_cursor_parse(struct span text, uint32_t *instance, uint64_t *seq);

#endif
