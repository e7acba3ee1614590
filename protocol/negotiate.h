/* negotiate.h - ASP.NET Core SignalR negotiate (POST {hub}/negotiate).
 *
 * Server side (what the relay answers its Core clients), after
 * HttpConnectionDispatcher.ProcessNegotiate and NegotiateProtocol.WriteResponse:
 *   negotiate_parse_version   the negotiateVersion query value -> 0 or 1, or the
 *                             server's error text;
 *   negotiate_query_bool      .NET bool.TryParse, for useStatefulReconnect;
 *   negotiate_encode_response the success body, in the server's property order;
 *   negotiate_encode_error    {"error":"..."} (sent with HTTP 200).
 *
 * Client side (the relay's backend links), after NegotiateProtocol.ParseResponse:
 *   negotiate_decode_response a response body -> struct negotiate_response.
 *
 * Bodies carry no 0x1E; they are whole HTTP bodies. */
#ifndef SR_NEGOTIATE_H
#define SR_NEGOTIATE_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"
#include "protocol/proto_status.h"
#include "containers/span.h"

/* Transport bits, the values of .NET's HttpTransportType. */
#define NEGOTIATE_TRANSPORT_WEBSOCKETS 1u
#define NEGOTIATE_TRANSPORT_SSE 2u
#define NEGOTIATE_TRANSPORT_LONG_POLLING 4u
#define NEGOTIATE_TRANSPORT_ALL 7u

/* Transfer-format bits, the values of .NET's TransferFormat. */
#define NEGOTIATE_FORMAT_BINARY 1u
#define NEGOTIATE_FORMAT_TEXT 2u

/* The highest negotiate version an ASP.NET Core server speaks. */
#define NEGOTIATE_MAX_VERSION 1

/* ---- server side --------------------------------------------------------- */

/* value: the URL-decoded negotiateVersion query value (SPAN_NONE when the
 * parameter is absent; several values joined with ',' as .NET's StringValues
 * does). min_version: HttpConnectionDispatcherOptions.MinimumProtocolVersion
 * (default 0).
 *   absent             -> 0 (error if min_version > 0)
 *   not an int32 (.NET int.TryParse: surrounding white space and a sign allowed)
 *                      -> "The client requested a non-integer protocol version."
 *   below min_version  -> "The client requested version 'N', but the server does not support this version."
 *   above 1            -> 1
 * PROTO_OK: *version set. PROTO_ERR_VALUE: the server's error text was
 * appended to error_text (answer it with negotiate_encode_error). */
enum proto_status negotiate_parse_version(struct span value, int min_version, int *version,
                                          struct buf *error_text, struct proto_error *err);

/* .NET bool.TryParse(value) && value: "true" in any case, surrounding white
 * space allowed. Absent or anything else is false. */
bool negotiate_query_bool(struct span value);

struct negotiate_reply {
    int version;                  /* negotiate_parse_version's answer: 0 or 1 */
    bool use_stateful_reconnect;  /* the client asked AND the server allows it */
    struct span url;              /* redirect: written when non-empty */
    struct span access_token;     /* written when non-empty */
    struct span connection_id;    /* written when non-empty */
    struct span connection_token; /* written when version > 0 and non-empty */
    unsigned transports;          /* NEGOTIATE_TRANSPORT_* bits to offer */
};

/* Appends the success body: useStatefulReconnect (only when true),
 * negotiateVersion, url, accessToken, connectionId, connectionToken, then
 * availableTransports (always, possibly []) in the order WebSockets
 * ["Text","Binary"], ServerSentEvents ["Text"], LongPolling ["Text","Binary"].
 * On failure out->len is restored. */
enum proto_status negotiate_encode_response(const struct negotiate_reply *reply, struct buf *out,
                                            struct proto_error *err);

/* Appends {"error":"<text>"}. On failure out->len is restored. */
enum proto_status negotiate_encode_error(struct span text, struct buf *out,
                                         struct proto_error *err);

/* ---- client side --------------------------------------------------------- */

/* More entries than this in availableTransports is PROTO_ERR_TOO_LARGE (a
 * stock server lists at most 3). */
#define NEGOTIATE_MAX_TRANSPORTS 8

struct negotiate_offer {
    struct span name;    /* as written, e.g. "WebSockets" */
    unsigned transport;  /* its NEGOTIATE_TRANSPORT_* bit; 0 for a name we do not know */
    unsigned formats;    /* NEGOTIATE_FORMAT_* bits; unknown format names are ignored */
};

/* Every string is a copy in `strings`, one allocation owned by the response
 * (so the HTTP body may be freed at once); negotiate_response_release frees it.
 * Absent strings have ptr NULL. */
struct negotiate_response {
    struct span error;            /* set: the server refused; nothing else is meaningful */
    struct span url;              /* set: redirect (negotiate again there) */
    struct span access_token;     /* with url: the bearer token to use from now on */
    struct span connection_id;
    struct span connection_token; /* required when version > 0 */
    int version;                  /* negotiateVersion; absent or null = 0 */
    bool use_stateful_reconnect;  /* reject it if you did not ask for it */
    bool has_transports;          /* availableTransports was present */
    size_t transport_count;
    struct negotiate_offer transports[NEGOTIATE_MAX_TRANSPORTS];
    char *strings;
    size_t strings_used;
    size_t strings_cap;
};

/* Decodes a negotiate response body. PROTO_OK covers three shapes, check in
 * this order: `error` set (fail with that text), `url` set (redirect), else a
 * connection (connectionId, connectionToken when version > 0, and
 * availableTransports are then guaranteed present). A `ProtocolVersion`
 * property (a classic ASP.NET SignalR server) is PROTO_ERR_VALUE with detail
 * NEGOTIATE_TEXT_LEGACY_SERVER. On failure nothing needs releasing. */
enum proto_status negotiate_decode_response(const char *body, size_t len,
                                            struct negotiate_response *out,
                                            struct proto_error *err);
void negotiate_response_release(struct negotiate_response *resp);

#define NEGOTIATE_TEXT_LEGACY_SERVER                                                          \
    "Detected a connection attempt to an ASP.NET SignalR Server. This client only supports " \
    "connecting to an ASP.NET Core SignalR Server. See https://aka.ms/signalr-core-differences " \
    "for details."

#endif
