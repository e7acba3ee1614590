/* legacy_translate.h - ASP.NET Core hub messages rewritten for a legacy 2.x client.
 *
 * In proxy mode a legacy client's calls reach an unmodified ASP.NET Core hub
 * and the hub's answers come back as Core messages (decoded into hub_msg,
 * payloads JSON). These functions turn each into the legacy JSON a 2.x
 * client understands:
 *
 *   Core Completion (result)      -> hub result {"R":...,"I":"n"}; result null -> {"I":"n"}
 *   Core Completion (void)        -> {"I":"n"} (a stream's end, or a void method)
 *   Core Completion (error)       -> {"I":"n","E":"<text>"}, or for a HubException
 *                                    {"I":"n","H":true,"E":"<its message>"}
 *   Core Invocation (server call) -> M element {"H":"<hub>","M":"<target>","A":[...]}
 *   Core StreamItem               -> progress element {"I":"P|n","P":{"I":"n","D":<item>}}
 *
 * The other direction needs nothing here: a decoded legacy invocation is
 * already a hub_msg that the Core encoders take as it is.
 *
 * Each function appends one complete JSON value to out (a result goes on the
 * WebSocket or into the /send body; elements go into a PersistentResponse's
 * M, see legacy_frame.h) and leaves out untouched when it fails. */
#ifndef SR_LEGACY_TRANSLATE_H
#define SR_LEGACY_TRANSLATE_H

#include "containers/buf.h"
#include "protocol/hub_msg.h"
#include "protocol/proto_status.h"
#include "containers/span.h"

/* A HUB_MSG_COMPLETION with an invocation id -> a legacy hub result.
 * An ASP.NET Core server reports a HubException thrown by the hub as
 *   "An unexpected error occurred invoking '<M>' on the server. HubException: <msg>"
 *   "An error occurred on the server while streaming results. HubException: <msg>"
 * (ErrorMessageHelper.BuildErrorMessage); those become E=<msg> with "H":true,
 * which is what a 2.x server sends for a HubException, so the jQuery and
 * .NET clients raise a HubException again. Every other error text passes
 * through unchanged as a plain E. A HubException subclass is named by its
 * own type and so passes through as plain text too. */
enum proto_status legacy_translate_completion(struct buf *out, const struct hub_msg *completion,
                                              struct proto_error *err);

/* A server->client HUB_MSG_INVOCATION -> one M element, written with the hub
 * name the caller gives (hub_as_spelled; the relay gives the configured name). Core
 * headers are dropped. A legacy client cannot return a value, so an
 * invocation id (a Core "client result" request) is not written: the caller
 * must answer the backend itself. */
enum proto_status legacy_translate_invocation(struct buf *out, const struct hub_msg *invocation,
                                              struct span hub_as_spelled,
                                              struct proto_error *err);

/* A HUB_MSG_STREAM_ITEM -> a progress element for its invocation id. */
enum proto_status legacy_translate_stream_item(struct buf *out, const struct hub_msg *item,
                                               struct proto_error *err);

/* If error is one of the HubException texts above, points *message at the
 * HubException's own message (inside error) and returns true. */
bool legacy_core_hub_exception_message(struct span error, struct span *message);

/* Core's texts for a call that failed other than by a HubException the hub
 * threw, as an ASP.NET Core hub without detailed errors writes them:
 *   "An unexpected error occurred invoking '<M>' on the server."   the method threw
 *   "Failed to invoke '<M>' due to an error on the server."        arguments not bound,
 *       or with " HubException: Method does not exist."            no such method
 *   "An error occurred on the server while streaming results."     a stream threw
 * A 2.x server answers every one of these cases with one text, written by
 * legacy_invocation_failure_text; true when error is one of them. */
bool legacy_core_generic_failure(struct span error);

/* Appends "There was an error invoking Hub method '<hub>.<method>'." (the
 * 2.x server's Error_HubInvocationFailed, hub and method as the client wrote
 * them in the invocation). False (out unchanged) when out of memory. */
bool legacy_invocation_failure_text(struct buf *out, struct span hub, struct span method);

#endif
