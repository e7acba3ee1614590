/* json_write.h - appending JSON tokens to a buf.
 *
 * Our encoders splice raw payload bytes (arguments, results) into JSON they
 * write around them, so they emit the surrounding tokens themselves. cJSON
 * can only print whole trees, and has no call that escapes a length-delimited
 * string, hence this one small writer. Output matches System.Text.Json's
 * relaxed escaping: non-ASCII passes through, quotes, backslashes and control
 * characters are escaped. */
#ifndef SR_JSON_WRITE_H
#define SR_JSON_WRITE_H

#include <stdbool.h>

#include "containers/buf.h"
#include "containers/span.h"

/* Appends s as a quoted, escaped JSON string. */
bool json_write_string(struct buf *b, struct span s);

/* Appends "key": (the key is written escaped; a comma first if !first). */
bool json_write_key(struct buf *b, const char *key, bool first);

#endif
