/* lg_sig.h - the SignalR messages a load-generating client sends and reads, for the three
 * dialects it speaks: ASP.NET Core JSON, ASP.NET Core MessagePack, and legacy ASP.NET SignalR 2.x
 * hubs over WebSockets. Builders write complete application messages (with the JSON record
 * separator or the MessagePack VarInt prefix); parsers reduce what the server sends to the few
 * facts the generator counts (which invocation completed, with or without error; a "broadcast"
 * delivery and its timestamp; pings, closes, the legacy init frame). Parsing uses cJSON and
 * msgpack-c; nothing here touches a socket or a clock. */
#ifndef LG_SIG_H
#define LG_SIG_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

enum lg_proto { LG_PROTO_JSON, LG_PROTO_MSGPACK, LG_PROTO_LEGACY };

enum lg_sig_kind {
    LG_SIG_COMPLETION,    /* answer to one of our invocations (id, is_error) */
    LG_SIG_BROADCAST,     /* server->client "broadcast" or "groupMessage" (ts when parsable) */
    LG_SIG_INVOCATION,    /* any other server->client invocation (e.g. "welcome") */
    LG_SIG_PING,          /* Core ping */
    LG_SIG_CLOSE,         /* Core close message (text = its error, if any) */
    LG_SIG_KEEPALIVE,     /* legacy {} */
    LG_SIG_INIT,          /* legacy init frame ("S":1) */
    LG_SIG_OTHER,         /* well-formed, nothing to count */
    LG_SIG_BAD,           /* malformed: text says why */
};

struct lg_sig_event {
    enum lg_sig_kind kind;
    int id_ok;            /* invocation id was one of ours: a decimal number */
    uint64_t id;
    int is_error;         /* completion carried an error */
    int ts_ok;            /* broadcast argument began with "t=<digits>" */
    uint64_t ts;
    char text[120];       /* error text or what was malformed, truncated */
};

typedef void (*lg_sig_event_fn)(void *ctx, const struct lg_sig_event *ev);

#define LG_SIG_OVERHEAD 256 /* room a builder needs beyond the argument's length */

/* Builders. Each returns the number of bytes written to dst. */
size_t lg_sig_handshake(enum lg_proto proto, char *dst);
size_t lg_sig_ping(enum lg_proto proto, char *dst);         /* 0 for legacy (no client ping) */
size_t lg_sig_close(enum lg_proto proto, char *dst);        /* 0 for legacy (it uses /abort) */
/* An invocation of `target` with one string argument (two when arg0 is not NULL: arg0, arg) and
 * invocation id `id`. Legacy writes {"H":hub,"M":target,"A":[arg],"I":"id"}. Neither argument
 * may need JSON escaping. */
size_t lg_sig_invocation(enum lg_proto proto, char *dst, const char *hub, const char *target,
                         uint64_t id, const char *arg0, const char *arg, size_t arg_len);

/* Record splitting for the Core stream. JSON: returns the length of the record before the next
 * 0x1E (the record + separator occupy len+1 bytes), or -1 when none is complete yet. */
long lg_sig_split_json(const char *p, size_t n);
/* MessagePack: returns 1 with the VarInt length in *hdr and the body length in *body when a whole
 * frame is there, 0 when more bytes are needed, -1 on a bad VarInt. */
int lg_sig_split_varint(const uint8_t *p, size_t n, size_t *hdr, size_t *body);

/* Core handshake response (one JSON record, no separator): 0 = accepted, -1 = error (text). */
int lg_sig_parse_handshake(const char *rec, size_t len, char *text, size_t text_size);

/* Parsers of one message; each reports 0..n events through fn. */
void lg_sig_parse_core_json(const char *rec, size_t len, lg_sig_event_fn fn, void *ctx);
void lg_sig_parse_core_msgpack(const uint8_t *body, size_t len, msgpack_zone *zone,
                               lg_sig_event_fn fn, void *ctx);
void lg_sig_parse_legacy(const char *doc, size_t len, lg_sig_event_fn fn, void *ctx);

/* Negotiate and start responses. The token is returned malloc'd (caller frees). 0 or -1 + text. */
int lg_sig_parse_core_negotiate(const char *body, size_t len, char **token, char *text,
                                size_t text_size);
int lg_sig_parse_legacy_negotiate(const char *body, size_t len, char **token, char *text,
                                  size_t text_size);
int lg_sig_parse_legacy_start(const char *body, size_t len, char *text, size_t text_size);

#endif
