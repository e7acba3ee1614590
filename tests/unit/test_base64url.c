/* test_base64url.c - unpadded, canonical base64url (hub/base64url.h).
 *
 * Expected texts are RFC 4648's test vectors (section 10) in the URL-safe
 * alphabet without padding, written out here, not produced by the code. */
#include <string.h>

#include "check.h"
#include "hub/base64url.h"

static void check_encode(const char *bytes, const char *expected)
{
    struct buf out;
    buf_init(&out);
    CHECK(base64url_append(&out, (const unsigned char *)bytes, strlen(bytes)));
    CHECK_EQ_INT(out.len, strlen(expected));
    CHECK(out.len == strlen(expected) && memcmp(out.data, expected, out.len) == 0);
    buf_free(&out);
}

static void check_decode(const char *text, const char *expected)
{
    struct buf out;
    buf_init(&out);
    CHECK_EQ_INT(base64url_decode_append(&out, span_make(text, strlen(text))), PROTO_OK);
    CHECK_EQ_INT(out.len, strlen(expected));
    CHECK(out.len == strlen(expected) && memcmp(out.data, expected, out.len) == 0);
    buf_free(&out);
}

static void check_refused(const char *text)
{
    struct buf out;
    buf_init(&out);
    CHECK(buf_append_cstr(&out, "kept"));
    CHECK_EQ_INT(base64url_decode_append(&out, span_make(text, strlen(text))), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(out.len, 4); /* what was there before stays, nothing is added */
    buf_free(&out);
}

static void test_rfc4648_vectors(void)
{
    static const char *const pairs[][2] = {
        {"", ""},         {"f", "Zg"},          {"fo", "Zm8"},        {"foo", "Zm9v"},
        {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        check_encode(pairs[i][0], pairs[i][1]);
        check_decode(pairs[i][1], pairs[i][0]);
    }
}

/* The two characters where base64url differs from base64: 0xfb 0xff -> "-_8". */
static void test_url_alphabet(void)
{
    check_encode("\xfb\xff", "-_8");
    check_decode("-_8", "\xfb\xff");
    check_refused("+/8"); /* the standard alphabet's spelling is not accepted */
}

static void test_refusals(void)
{
    check_refused("Zm9vYg=="); /* padding */
    check_refused("Z");        /* a length no byte count encodes to */
    check_refused("Zm9vY");
    check_refused("Zm9 v");
    check_refused("Zh");  /* "f" is "Zg": the unused low bits of "h" are set */
    check_refused("Zm9"); /* "fo" is "Zm8" */
}

static void test_appends(void)
{
    struct buf out;
    buf_init(&out);
    CHECK(buf_append_cstr(&out, "x."));
    CHECK(base64url_append(&out, (const unsigned char *)"foo", 3));
    CHECK(out.len == 6 && memcmp(out.data, "x.Zm9v", 6) == 0);
    CHECK_EQ_INT(base64url_decode_append(&out, span_make("Zm8", 3)), PROTO_OK);
    CHECK(out.len == 8 && memcmp(out.data, "x.Zm9vfo", 8) == 0 && out.data[8] == '\0');
    buf_free(&out);
}

int main(void)
{
    test_rfc4648_vectors();
    test_url_alphabet();
    test_refusals();
    test_appends();
    return test_main_result("test_base64url");
}
