/* legacy_invocation.h - a legacy client's hub invocation, decoded into a hub_msg.
 *
 *   {"H":"chathub","M":"Send","A":["bob","hi"],"I":0}          jQuery (I a number)
 *   {"I":"0","H":"ChatHub","M":"Send","A":["bob","hi"]}        .NET (I a string)
 *   {"A":["bob","hi"],"H":"ChatHub","I":"0","M":"Send"}        C++ (cpprest sorts keys)
 *   ... ,"S":{"name":"bob"}                                     with round-tripped hub state
 *
 * The original server binds these with Json.NET (HubRequestParser), so the
 * same rules hold here: member names match exactly or, failing that, in any
 * case ("h" is H); unknown members are ignored; A may be absent or null (no
 * arguments); I may be a string or a number and is a string to the server;
 * S, when present, is an object whose JSON is at most 4096 characters. We
 * are stricter in three places, each because a looser reading could only
 * confuse: a member given twice is refused (Json.NET keeps the last),
 * H and M must be non-empty strings, and the nesting is bounded (below).
 *
 * The result is a HUB_MSG_INVOCATION: hub, target, invocation_id (the id's
 * text: a string unescaped, a number exactly as written; absent when I is
 * absent or null, i.e. fire and forget), args (the raw A array, or
 * PAYLOAD_NONE when absent: encode as []), state (the raw S object, or
 * PAYLOAD_NONE). Spans borrow from the input unless they had escapes. */
#ifndef SR_LEGACY_INVOCATION_H
#define SR_LEGACY_INVOCATION_H

#include <stddef.h>

#include "protocol/hub_msg.h"
#include "protocol/proto_status.h"

/* HubRequestParser refuses state whose JSON is longer than this (in UTF-16
 * characters of its compact form). */
#define LEGACY_STATE_MAX_CHARS 4096
/* The state is re-read with Json.NET MaxDepth 20 (JsonUtility). */
#define LEGACY_STATE_MAX_DEPTH 20
/* Arrays/objects on any path, the invocation object included. 64 is what
 * System.Text.Json accepts by default, so anything we pass to an ASP.NET
 * Core backend as `arguments` cannot fail there for depth (Json.NET 13,
 * which current 2.4 servers run on, defaults to 64 as well). */
#define LEGACY_INVOCATION_MAX_DEPTH 64

/* Decodes (data, len) into *msg, which it initialises first (release any
 * previous contents before calling). Whatever the result, the caller
 * releases msg with hub_msg_release. On failure msg keeps the fields decoded
 * so far, so a relay that got the invocation id may answer with an error
 * result. Errors:
 *   PROTO_ERR_SYNTAX    not JSON, truncated, trailing bytes, a control character
 *                       (tab/CR/LF only between tokens), a byte >= 0x80 or
 *                       a BOM between tokens (json_strict_check_text)
 *   PROTO_ERR_TYPE      not an object; H/M not strings; A not an array;
 *                       I not a string or number; S not an object
 *   PROTO_ERR_MISSING   no H or no M
 *   PROTO_ERR_VALUE     empty H or M, \u0000 in H/M/I or in any member name,
 *                       a member given twice
 *   PROTO_ERR_TOO_LARGE S longer than LEGACY_STATE_MAX_CHARS
 *   PROTO_ERR_TOO_DEEP  nesting beyond LEGACY_INVOCATION_MAX_DEPTH or, in S,
 *                       LEGACY_STATE_MAX_DEPTH
 *   PROTO_ERR_UTF8      text not valid UTF-8
 *   PROTO_ERR_NOMEM */
enum proto_status legacy_invocation_decode(const char *data, size_t len, struct hub_msg *msg,
                                           struct proto_error *err);

#endif
