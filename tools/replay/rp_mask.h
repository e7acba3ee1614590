/* rp_mask.h - replaying a session recorded against the REAL server (ASP.NET SignalR 2.4.1,
 * tests/legacy-ref) against the relay: the differences listed in tests/legacy-ref/README.md's
 * table (rows 12-19, 22) and README.md's by-design ones are masked, nothing else (port of
 * tests/legacy/capture/reference-mask.mjs, which stays the list's reference):
 *   rows 12-14  a non-HubException error text
 *   row 15      the hub name of a server->client call
 *   row 16      the connection id a hub sees: welcome's argument, WhoAmI's connectionId
 *   rows 17-18  cursor and token formats (placeholders anyway; cursors may be shared: rp_bind.h)
 *   row 19      negotiate TryWebSockets
 *   row 22      the Content-Type of error answers
 *   by design   WhoAmI's forwardedFor and transport
 * A masked value becomes RP_JSON_ANY, which matches anything. */
#ifndef RP_MASK_H
#define RP_MASK_H

#include <cjson/cJSON.h>

/* Masks the JSON body of a recorded server answer in place. */
void rp_mask_reference_json(cJSON *value, int negotiate);
/* 1 when the recorded header `name` of an answer with `status` is not compared. */
int rp_mask_reference_header(int status, const char *name);

#endif
