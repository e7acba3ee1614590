/* siphash.h - SipHash-2-4 with a caller-supplied 128-bit key, 64-bit or 128-bit tags.
 *
 * The hash of every table whose keys come from outside (group names and
 * user ids from clients and backends, connection ids echoed back by clients).
 * With a secret random key an attacker cannot precompute names that collide,
 * so no bucket chain can be made long on purpose (hash flooding).
 *
 * Why 2-4 and not 1-3: 2-4 is the variant the SipHash paper makes its security
 * claim for and publishes test vectors for (OpenSSL implements the same
 * function, so tests can cross-check it). Our keys are short (22-byte
 * connection ids, group names of a few dozen bytes): 2-4 costs two extra
 * rounds per 8 bytes plus one extra finalization round over 1-3, a few
 * nanoseconds, which is small beside the cache miss of the bucket it selects.
 *
 * OpenSSL's EVP_MAC SipHash would do the same work but costs an allocation
 * and several indirect calls per hash; a hash table hashes on every lookup,
 * so this small function is ours. */
#ifndef SR_SIPHASH_H
#define SR_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_LEN 16

/* The 64-bit SipHash-2-4 of (data, len) under key, which is read as two
 * little-endian 64-bit words, as in the paper. */
uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data, size_t len);

/* The 128-bit SipHash-2-4 of (data, len) under key: out[0] is the tag's first
 * 8 bytes read little-endian, out[1] the last 8. For a digest that stands in
 * for a key (containers/expiring_keys.h), where 64 bits would leave a
 * collision among many live keys merely unlikely. */
void siphash24_128(const uint8_t key[SIPHASH_KEY_LEN], const void *data, size_t len, uint64_t out[2]);

#endif
