/* rp_mask.h - replaying a session recorded against the REAL server (ASP.NET SignalR 2.4.1,
 * tests/legacy-ref) against the relay: the differences listed in tests/legacy-ref/README.md's
 * table (rows 1-4) and README.md's by-design ones are masked, nothing else (port of
 * tests/legacy/capture/reference-mask.mjs, which stays the list's reference):
 *   row 1       the connection id a hub sees: welcome's argument, WhoAmI's connectionId
 *   rows 2-3    cursor and token formats (placeholders anyway; cursors may be shared: rp_bind.h)
 *   row 4       negotiate TryWebSockets
 *   by design   WhoAmI's forwardedFor and transport
 * Error texts, the hub name of server calls and error answers' Content-Type are compared: the relay
 * answers them as the real server does. A masked value becomes RP_JSON_ANY, which matches anything. */
#ifndef RP_MASK_H
#define RP_MASK_H

#include <cjson/cJSON.h>

/* Masks the JSON body of a recorded server answer in place. */
void rp_mask_reference_json(cJSON *value, int negotiate);
/* 1 when the recorded header `name` of an answer with `status` is not compared. */
int rp_mask_reference_header(int status, const char *name);

#endif
