/* base64url.h - unpadded base64url (RFC 4648 §5) with one spelling per value.
 *
 * The connection tokens (conn_token.c) and the service-mode JWTs
 * (service_token.c) both carry bytes as base64url without padding. The
 * encoding itself is OpenSSL's (EVP_EncodeBlock / EVP_DecodeBlock); this file
 * only maps the URL-safe alphabet, drops or restores the padding, and refuses
 * a text that is not the one encoding of its bytes (unused low bits in the
 * last character would otherwise give a second spelling of a signed value). */
#ifndef SR_HUB_BASE64URL_H
#define SR_HUB_BASE64URL_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"
#include "containers/span.h"
#include "protocol/proto_status.h"

/* True for the 64 characters of the alphabet: [A-Za-z0-9_-]. */
bool base64url_is_char(unsigned char c);

/* Appends the unpadded base64url text of n bytes to out (no NUL counted in
 * out->len, though one follows the text in the buffer). False when memory
 * runs out or n is too large for OpenSSL; out keeps its old length then. */
bool base64url_append(struct buf *out, const unsigned char *in, size_t n);

/* Appends the bytes that `text` encodes to out (a NUL follows them in the
 * buffer, not counted). PROTO_ERR_SYNTAX when text has a character outside
 * the alphabet, a length no byte count encodes to, or is not the canonical
 * spelling of its bytes; PROTO_ERR_NOMEM when memory runs out. On failure
 * out keeps its old length. */
enum proto_status base64url_decode_append(struct buf *out, struct span text);

#endif
