/* lg_ws.h - the client side of RFC 6455 framing, and nothing else: encoding masked client
 * frames, decoding the header of (unmasked) server frames, and the Sec-WebSocket-Key /
 * Sec-WebSocket-Accept pair of the opening handshake. */
#ifndef LG_WS_H
#define LG_WS_H

#include <stddef.h>
#include <stdint.h>

enum {
    LG_WS_CONT = 0x0,
    LG_WS_TEXT = 0x1,
    LG_WS_BINARY = 0x2,
    LG_WS_CLOSE = 0x8,
    LG_WS_PING = 0x9,
    LG_WS_PONG = 0xA,
};

#define LG_WS_MAX_CLIENT_HEADER 14 /* 2 + 8 (64-bit length) + 4 (mask) */

/* Length of the header of a client frame carrying `payload_len` bytes. */
size_t lg_ws_client_header_len(uint64_t payload_len);

/* Writes header + masked payload to `dst` (room: header_len + payload_len). `payload` may be
 * dst + header_len (masking in place). Returns the frame's total length. */
size_t lg_ws_encode_client(uint8_t *dst, int opcode, const uint8_t *payload, size_t payload_len,
                           uint32_t mask_key);

struct lg_ws_frame {
    int fin;
    int opcode;
    size_t header_len;
    uint64_t payload_len;
};

/* Decodes a server frame header from (p, n). Returns 1 and fills `out` when the header is
 * complete, 0 when more bytes are needed, -1 on a protocol violation (`*detail` says which). */
int lg_ws_decode_server_header(const uint8_t *p, size_t n, struct lg_ws_frame *out,
                               const char **detail);

/* 16 random bytes in base64: 24 characters plus NUL into key_out[25]. */
void lg_ws_make_key(const uint8_t random16[16], char key_out[25]);
/* base64(SHA-1(key + GUID)): 28 characters plus NUL into accept_out[29]. */
void lg_ws_accept_for_key(const char *key, char accept_out[29]);

#endif
