/* test_siphash.c - SipHash-2-4 against the reference vectors and OpenSSL.
 *
 * The 64 expected tags are the reference implementation's vectors_sip64
 * (github.com/veorq/SipHash, vectors.h): key 00 01 .. 0f, message
 * 00 01 .. (n-1) for n = 0..63, tag as 8 little-endian bytes. Vector 15 is
 * the worked example of the SipHash paper's appendix A: a129ca6149be45e5.
 * Beyond them, random keys and messages are checked against OpenSSL's
 * independent SipHash (EVP_MAC "SIPHASH", 8-byte output, default 2-4 rounds).
 * The 128-bit variant: the reference's vectors_sip128[0] (same key, empty
 * message) and OpenSSL's 16-byte output. */
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "containers/siphash.h"

static const char *const reference_tags[64] = {
    "310e0edd47db6f72", /* 0 */
    "fd67dc93c539f874", /* 1 */
    "5a4fa9d909806c0d", /* 2 */
    "2d7efbd796666785", /* 3 */
    "b7877127e09427cf", /* 4 */
    "8da699cd64557618", /* 5 */
    "cee3fe586e46c9cb", /* 6 */
    "37d1018bf50002ab", /* 7 */
    "6224939a79f5f593", /* 8 */
    "b0e4a90bdf82009e", /* 9 */
    "f3b9dd94c5bb5d7a", /* 10 */
    "a7ad6b22462fb3f4", /* 11 */
    "fbe50e86bc8f1e75", /* 12 */
    "903d84c02756ea14", /* 13 */
    "eef27a8e90ca23f7", /* 14 */
    "e545be4961ca29a1", /* 15 */
    "db9bc2577fcc2a3f", /* 16 */
    "9447be2cf5e99a69", /* 17 */
    "9cd38d96f0b3c14b", /* 18 */
    "bd6179a71dc96dbb", /* 19 */
    "98eea21af25cd6be", /* 20 */
    "c7673b2eb0cbf2d0", /* 21 */
    "883ea3e395675393", /* 22 */
    "c8ce5ccd8c030ca8", /* 23 */
    "94af49f6c650adb8", /* 24 */
    "eab8858ade92e1bc", /* 25 */
    "f315bb5bb835d817", /* 26 */
    "adcf6b0763612e2f", /* 27 */
    "a5c91da7acaa4dde", /* 28 */
    "716595876650a2a6", /* 29 */
    "28ef495c53a387ad", /* 30 */
    "42c341d8fa92d832", /* 31 */
    "ce7cf2722f512771", /* 32 */
    "e37859f94623f3a7", /* 33 */
    "381205bb1ab0e012", /* 34 */
    "ae97a10fd434e015", /* 35 */
    "b4a31508beff4d31", /* 36 */
    "81396229f0907902", /* 37 */
    "4d0cf49ee5d4dcca", /* 38 */
    "5c73336a76d8bf9a", /* 39 */
    "d0a704536ba93e0e", /* 40 */
    "925958fcd6420cad", /* 41 */
    "a915c29bc8067318", /* 42 */
    "952b79f3bc0aa6d4", /* 43 */
    "f21df2e41d4535f9", /* 44 */
    "87577519048f53a9", /* 45 */
    "10a56cf5dfcd9adb", /* 46 */
    "eb75095ccd986cd0", /* 47 */
    "51a9cb9ecba312e6", /* 48 */
    "96afadfc2ce666c7", /* 49 */
    "72fe52975a4364ee", /* 50 */
    "5a1645b276d592a1", /* 51 */
    "b274cb8ebf87870a", /* 52 */
    "6f9bb4203de7b381", /* 53 */
    "eaecb2a30b22a87f", /* 54 */
    "9924a43cc1315724", /* 55 */
    "bd838d3aafbf8db7", /* 56 */
    "0b1a2a3265d51aea", /* 57 */
    "135079a3231ce660", /* 58 */
    "932b2846e4d70666", /* 59 */
    "e1915f5cb1eca46c", /* 60 */
    "f325965ca16d629f", /* 61 */
    "575ff28e60381be5", /* 62 */
    "724506eb4c328a95", /* 63 */
};

static void le64_to_hex(uint64_t v, char out[17])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++) {
        uint8_t b = (uint8_t)(v >> (8 * i));
        out[2 * i] = digits[b >> 4];
        out[2 * i + 1] = digits[b & 15];
    }
    out[16] = '\0';
}

static void test_reference_vectors(void)
{
    uint8_t key[16], msg[64];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        msg[i] = (uint8_t)i;
    for (int n = 0; n < 64; n++) {
        char hex[17];
        le64_to_hex(siphash24(key, msg, (size_t)n), hex);
        CHECK_BYTES(hex, 16, reference_tags[n]);
    }
    /* The paper's example, as the integer it prints. */
    CHECK(siphash24(key, msg, 15) == UINT64_C(0xa129ca6149be45e5));
}

static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);
static uint64_t rng_next(void) { return test_rng_next(&rng_state); }

static uint64_t openssl_siphash(EVP_MAC *mac, const uint8_t key[16], const uint8_t *msg,
                                size_t len)
{
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    size_t size = 8;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
        OSSL_PARAM_construct_end(),
    };
    uint8_t out[16];
    size_t out_len = 0;
    uint64_t tag = 0;
    if (ctx && EVP_MAC_init(ctx, key, 16, params) && EVP_MAC_update(ctx, msg, len) &&
        EVP_MAC_final(ctx, out, &out_len, sizeof(out)) && out_len == 8) {
        for (int i = 0; i < 8; i++)
            tag |= (uint64_t)out[i] << (8 * i);
    } else {
        CHECK(!"OpenSSL SipHash failed");
    }
    EVP_MAC_CTX_free(ctx);
    return tag;
}

static void test_against_openssl(void)
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
    CHECK(mac != NULL);
    if (!mac)
        return;
    uint8_t key[16], buf[300 + 8];
    int mismatches = 0;
    for (int round = 0; round < 2000; round++) {
        for (int i = 0; i < 16; i++)
            key[i] = (uint8_t)rng_next();
        size_t len = (size_t)(rng_next() % 300);
        size_t offset = (size_t)(rng_next() % 8); /* unaligned input too */
        for (size_t i = 0; i < len; i++)
            buf[offset + i] = (uint8_t)rng_next();
        if (siphash24(key, buf + offset, len) != openssl_siphash(mac, key, buf + offset, len))
            mismatches++;
    }
    CHECK_EQ_INT(mismatches, 0);
    EVP_MAC_free(mac);
}

static void openssl_siphash128(EVP_MAC *mac, const uint8_t key[16], const uint8_t *msg, size_t len,
                               uint8_t out[16])
{
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    size_t size = 16, out_len = 0;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
        OSSL_PARAM_construct_end(),
    };
    if (!(ctx && EVP_MAC_init(ctx, key, 16, params) && EVP_MAC_update(ctx, msg, len) &&
          EVP_MAC_final(ctx, out, &out_len, 16) && out_len == 16))
        CHECK(!"OpenSSL SipHash-128 failed");
    EVP_MAC_CTX_free(ctx);
}

static void tag128_to_hex(const uint64_t tag[2], char out[33])
{
    le64_to_hex(tag[0], out);
    le64_to_hex(tag[1], out + 16);
}

static void test_128(void)
{
    uint8_t key[16], buf[300];
    uint64_t tag[2];
    char hex[33];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    siphash24_128(key, "", 0, tag);
    tag128_to_hex(tag, hex);
    CHECK_BYTES(hex, 32, "a3817f04ba25a8e66df67214c7550293");

    EVP_MAC *mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
    CHECK(mac != NULL);
    if (!mac)
        return;
    int mismatches = 0;
    for (int round = 0; round < 500; round++) {
        for (int i = 0; i < 16; i++)
            key[i] = (uint8_t)rng_next();
        size_t len = (size_t)(rng_next() % 300);
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)rng_next();
        uint8_t want[16];
        char want_hex[33];
        openssl_siphash128(mac, key, buf, len, want);
        for (int i = 0; i < 16; i++)
            snprintf(want_hex + 2 * i, 3, "%02x", want[i]);
        siphash24_128(key, buf, len, tag);
        tag128_to_hex(tag, hex);
        mismatches += memcmp(hex, want_hex, 32) != 0;
    }
    CHECK_EQ_INT(mismatches, 0);
    EVP_MAC_free(mac);
}

/* The key matters: one changed key bit changes the hash of the same input. */
static void test_key_sensitivity(void)
{
    uint8_t key[16] = { 0 };
    const char *name = "room-42";
    uint64_t base = siphash24(key, name, 7);
    for (int bit = 0; bit < 128; bit++) {
        key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        CHECK(siphash24(key, name, 7) != base);
        key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
}

int main(void)
{
    test_reference_vectors();
    test_against_openssl();
    test_key_sensitivity();
    test_128();
    return test_main_result("test_siphash");
}
