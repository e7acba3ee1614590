/* lg_ws.c - RFC 6455 client framing and the handshake key (OpenSSL SHA-1 and base64). */
#include "lg_ws.h"

#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

size_t lg_ws_client_header_len(uint64_t payload_len)
{
    if (payload_len < 126)
        return 2 + 4;
    if (payload_len <= 0xFFFF)
        return 4 + 4;
    return 10 + 4;
}

size_t lg_ws_encode_client(uint8_t *dst, int opcode, const uint8_t *payload, size_t payload_len,
                           uint32_t mask_key)
{
    size_t hlen = lg_ws_client_header_len(payload_len);
    /* Payload first (it may already sit at dst + hlen), then the header in front of it. */
    if (payload != dst + hlen)
        memmove(dst + hlen, payload, payload_len);

    uint8_t mask[4] = {(uint8_t)(mask_key >> 24), (uint8_t)(mask_key >> 16), (uint8_t)(mask_key >> 8),
                       (uint8_t)mask_key};
    uint8_t *body = dst + hlen;
    for (size_t i = 0; i < payload_len; i++)
        body[i] ^= mask[i & 3];

    dst[0] = (uint8_t)(0x80 | (opcode & 0x0F));
    size_t pos;
    if (payload_len < 126) {
        dst[1] = (uint8_t)(0x80 | payload_len);
        pos = 2;
    } else if (payload_len <= 0xFFFF) {
        dst[1] = 0x80 | 126;
        dst[2] = (uint8_t)(payload_len >> 8);
        dst[3] = (uint8_t)payload_len;
        pos = 4;
    } else {
        dst[1] = 0x80 | 127;
        for (int i = 0; i < 8; i++)
            dst[2 + i] = (uint8_t)((uint64_t)payload_len >> (56 - 8 * i));
        pos = 10;
    }
    memcpy(dst + pos, mask, 4);
    return hlen + payload_len;
}

int lg_ws_decode_server_header(const uint8_t *p, size_t n, struct lg_ws_frame *out,
                               const char **detail)
{
    if (n < 2)
        return 0;
    if (p[0] & 0x70) {
        *detail = "reserved bits set (no extension was negotiated)";
        return -1;
    }
    if (p[1] & 0x80) {
        *detail = "server frame is masked";
        return -1;
    }
    out->fin = (p[0] & 0x80) != 0;
    out->opcode = p[0] & 0x0F;
    uint64_t len = p[1] & 0x7F;
    size_t pos = 2;
    if (len == 126) {
        if (n < 4)
            return 0;
        len = ((uint64_t)p[2] << 8) | p[3];
        pos = 4;
    } else if (len == 127) {
        if (n < 10)
            return 0;
        len = 0;
        for (int i = 0; i < 8; i++)
            len = (len << 8) | p[2 + i];
        if (len >> 63) {
            *detail = "64-bit length with the top bit set";
            return -1;
        }
        pos = 10;
    }
    switch (out->opcode) {
    case LG_WS_CONT: case LG_WS_TEXT: case LG_WS_BINARY:
        break;
    case LG_WS_CLOSE: case LG_WS_PING: case LG_WS_PONG:
        if (!out->fin || len > 125) {
            *detail = "fragmented or oversized control frame";
            return -1;
        }
        break;
    default:
        *detail = "unknown opcode";
        return -1;
    }
    out->header_len = pos;
    out->payload_len = len;
    return 1;
}

void lg_ws_make_key(const uint8_t random16[16], char key_out[25])
{
    EVP_EncodeBlock((unsigned char *)key_out, random16, 16);
}

void lg_ws_accept_for_key(const char *key, char accept_out[29])
{
    unsigned char digest[SHA_DIGEST_LENGTH];
    char joined[64 + sizeof ws_guid];
    size_t klen = strlen(key);
    if (klen > 64)
        klen = 64;
    memcpy(joined, key, klen);
    memcpy(joined + klen, ws_guid, sizeof ws_guid - 1);
    SHA1((const unsigned char *)joined, klen + sizeof ws_guid - 1, digest);
    EVP_EncodeBlock((unsigned char *)accept_out, digest, SHA_DIGEST_LENGTH);
}
