/* lg_http.h - the little HTTP/1.1 the load generator needs as a client: parsing the target
 * URL, percent-encoding query values, and parsing response heads and bodies (Content-Length,
 * chunked, or delimited by the server closing). Requests are formatted by the caller. */
#ifndef LG_HTTP_H
#define LG_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct lg_url {
    uint32_t ip;          /* IPv4, host byte order */
    uint16_t port;
    char host[64];        /* as written, for the Host header */
    char path[256];       /* path part, without a trailing '/'; "" when none */
};

/* Parses http://HOST[:PORT][/PATH] (ws:// is accepted as a synonym). HOST is an IPv4 literal or
 * "localhost". Only loopback targets (127.0.0.0/8) are accepted. Returns 0, or -1 with *detail. */
int lg_url_parse(const char *text, struct lg_url *out, const char **detail);

/* Percent-encodes `src` (everything except unreserved characters) into dst (room: 3*len+1).
 * Returns the encoded length. */
size_t lg_url_encode(char *dst, const char *src, size_t len);

struct lg_http_resp {
    int status;
    int64_t content_length;  /* -1 when absent */
    int chunked;
    char ws_accept[32];      /* Sec-WebSocket-Accept, "" when absent */
    int upgrade_websocket;   /* Upgrade: websocket present */
};

/* Parses a response head from (p, n). Returns the head length (including the blank line) when
 * complete, 0 when more bytes are needed, -1 when malformed (*detail says why). */
long lg_http_parse_head(const char *p, size_t n, struct lg_http_resp *out, const char **detail);

/* Decides whether the body that follows a head is complete. `eof` says the server closed.
 * On 1 (complete), (*body, *body_len) is the body; a chunked body is decoded in place. Returns
 * 0 when more bytes are needed, -1 when the body is malformed. */
int lg_http_body(const struct lg_http_resp *resp, char *p, size_t n, int eof, char **body,
                 size_t *body_len, const char **detail);

/* Copies the value of header `name` (case-insensitive) of the response head (p, head_len) into
 * out (room: cap, truncated, NUL-terminated). Returns 1 when present, 0 when not. */
int lg_http_header(const char *p, size_t head_len, const char *name, char *out, size_t cap);

/* Decodes a chunked body as it arrives, piece by piece (a streamed response such as Server-Sent
 * Events): lg_http_dechunk takes the next n bytes and writes the data they complete to out (room:
 * n); *out_len says how much. Returns 1 when the last chunk has been seen, 0 for more, -1 bad. */
struct lg_dechunk {
    int state;
    uint64_t left;        /* data bytes left in the current chunk */
};
void lg_dechunk_init(struct lg_dechunk *d);
int lg_http_dechunk(struct lg_dechunk *d, const char *in, size_t n, char *out, size_t *out_len);

#endif
