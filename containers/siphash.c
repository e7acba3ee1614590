/* siphash.c - SipHash-2-4 (Aumasson & Bernstein, 2012), 64-bit and 128-bit output.
 *
 * Written from the paper's description: four 64-bit state words initialised
 * from the key and the constants "somepseudorandomlygeneratedbytes", two
 * SipRounds per 8-byte message word, the last word carrying the message
 * length in its top byte, then 0xff folded into v2 and four SipRounds. The
 * 128-bit variant (the reference implementation's, same rounds) folds 0xee
 * into v1 at the start and into v2 before finalising, and takes its second
 * word after folding 0xdd into v1 and four more SipRounds. */
#include "containers/siphash.h"

#include <string.h>

static inline uint64_t rotl64(uint64_t x, unsigned b)
{
    return (x << b) | (x >> (64 - b));
}

/* Little-endian load that works on any host and any alignment. */
static inline uint64_t load_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

struct sip_state {
    uint64_t v0, v1, v2, v3;
};

static inline void sip_round(struct sip_state *s)
{
    s->v0 += s->v1;
    s->v1 = rotl64(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = rotl64(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = rotl64(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = rotl64(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = rotl64(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = rotl64(s->v2, 32);
}

static inline void sip_compress(struct sip_state *s, uint64_t m)
{
    s->v3 ^= m;
    sip_round(s);
    sip_round(s);
    s->v0 ^= m;
}

/* The message words of (data, len), the last one carrying the length: shared by both widths. */
static void sip_absorb(struct sip_state *s, const uint8_t *in, size_t len)
{
    size_t whole = len & ~(size_t)7;
    for (size_t i = 0; i < whole; i += 8)
        sip_compress(s, load_le64(in + i));

    /* Last word: the 0..7 remaining bytes, zero padded, length mod 256 on top. */
    uint8_t tail[8] = { 0 };
    if (len > whole)
        memcpy(tail, in + whole, len - whole);
    tail[7] = (uint8_t)len;
    sip_compress(s, load_le64(tail));
}

static struct sip_state sip_init(const uint8_t key[SIPHASH_KEY_LEN])
{
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    struct sip_state s = {
        .v0 = k0 ^ UINT64_C(0x736f6d6570736575),
        .v1 = k1 ^ UINT64_C(0x646f72616e646f6d),
        .v2 = k0 ^ UINT64_C(0x6c7967656e657261),
        .v3 = k1 ^ UINT64_C(0x7465646279746573),
    };
    return s;
}

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data, size_t len)
{
    struct sip_state s = sip_init(key);
    sip_absorb(&s, data, len);
    s.v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        sip_round(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

void siphash24_128(const uint8_t key[SIPHASH_KEY_LEN], const void *data, size_t len, uint64_t out[2])
{
    struct sip_state s = sip_init(key);
    s.v1 ^= 0xee;
    sip_absorb(&s, data, len);
    s.v2 ^= 0xee;
    for (int i = 0; i < 4; i++)
        sip_round(&s);
    out[0] = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
    s.v1 ^= 0xdd;
    for (int i = 0; i < 4; i++)
        sip_round(&s);
    out[1] = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
