/* legacy_negotiate.h - the legacy SignalR 2.x negotiate answer.
 *
 * Two things live here: resolving the client's `clientProtocol` the way the
 * original server's ProtocolResolver does (parse as System.Version, clamp to
 * [1.2, 2.0], 1.2 when missing or unparseable), and writing the ten-field
 * negotiate object in the order the original writes it. The echoed
 * ProtocolVersion matters: the C++ client accepts only the exact string
 * "1.4", jQuery only "1.5", "2.0" or "2.1". We never write
 * `availableTransports`: 2.x clients take it as a sign of an ASP.NET Core
 * server and give up. */
#ifndef SR_LEGACY_NEGOTIATE_H
#define SR_LEGACY_NEGOTIATE_H

#include <stdbool.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/span.h"

/* A System.Version: 2 to 4 components, -1 for the absent ones. */
struct legacy_protocol_version {
    int major, minor, build, revision;
};

/* Longest rendering: four 10-digit components, three dots, a NUL. */
#define LEGACY_PROTOCOL_TEXT_MAX 48

/* The clamped protocol for a `clientProtocol` query value (already
 * URL-decoded; SPAN_NONE when the parameter is absent). Never fails. */
struct legacy_protocol_version legacy_protocol_resolve(struct span client_protocol);

/* Protocol 1.4 and later: OnConnected runs at /start, /connect sends the
 * init frame. Every 2.4-era client and the C++ client qualify. */
bool legacy_protocol_delayed_start(struct legacy_protocol_version v);

/* Writes v as System.Version.ToString() does ("2.0", "1.4"; a third and
 * fourth component only when the client sent them and the value was not
 * clamped) into out (cap >= LEGACY_PROTOCOL_TEXT_MAX); returns the length. */
size_t legacy_protocol_format(struct legacy_protocol_version v, char *out, size_t cap);

/* Everything the negotiate body says. Durations are in milliseconds and are
 * written in seconds the way Json.NET writes doubles (20000 -> 20.0). */
struct legacy_negotiate {
    struct span url;                  /* external path of the endpoint, e.g. "/signalr" */
    struct span connection_token;
    struct span connection_id;
    uint32_t keep_alive_timeout_ms;   /* 2 x KeepAlive; 0 = keep-alive disabled -> null */
    uint32_t disconnect_timeout_ms;
    uint32_t connection_timeout_ms;
    bool try_websockets;
    struct legacy_protocol_version protocol; /* from legacy_protocol_resolve */
    uint32_t transport_connect_timeout_ms;
    uint32_t long_poll_delay_ms;
};

/* Appends the negotiate JSON object to out. False only when out of memory,
 * in which case out is left as it was. */
bool legacy_negotiate_encode(struct buf *out, const struct legacy_negotiate *n);

#endif
