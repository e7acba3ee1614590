/* test_msgpack_check.c - the structural guard in front of msgpack-c, and the
 * msgpack-c behaviour it is sized for. */
#include <msgpack.h>
#include <msgpack/unpack_define.h>
#include <stdlib.h>

#include "check.h"
#include "protocol/msgpack_check.h"

/* n nested arrays of one element each around a nil: 91 91 ... c0 */
static size_t nested_arrays(char *out, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        out[i] = (char)0x91;
    out[n] = (char)0xc0;
    return n + 1;
}

/* The premise: msgpack-c unpacks 32 nested containers and refuses the 33rd
 * (even an empty one) with an error, so MSGPACK_MAX_DEPTH must be 32. */
static void test_msgpack_c_depth_premise(void)
{
    char data[64];
    msgpack_unpacked u;
    size_t off;

    msgpack_unpacked_init(&u);
    off = 0;
    size_t n = nested_arrays(data, 32);
    CHECK_EQ_INT(msgpack_unpack_next(&u, data, n, &off), MSGPACK_UNPACK_SUCCESS);
    CHECK_EQ_INT(off, n);

    off = 0;
    n = nested_arrays(data, 33);
    CHECK(msgpack_unpack_next(&u, data, n, &off) < 0);

    /* 32 one-element arrays around an empty array: the empty one is the 33rd. */
    for (int i = 0; i < 32; i++)
        data[i] = (char)0x91;
    data[32] = (char)0x90;
    off = 0;
    CHECK(msgpack_unpack_next(&u, data, 33, &off) < 0);
    msgpack_unpacked_destroy(&u);
    CHECK_EQ_INT(MSGPACK_MAX_DEPTH, MSGPACK_EMBED_STACK_SIZE);
}

static void test_depth(void)
{
    char data[64];
    size_t vlen = 0;
    struct proto_error err = { 0 };

    size_t n = nested_arrays(data, 32);
    CHECK_EQ_INT(msgpack_check_value(data, n, MSGPACK_MAX_DEPTH, &vlen, &err), PROTO_OK);
    CHECK_EQ_INT(vlen, n);
    n = nested_arrays(data, 33);
    CHECK_EQ_INT(msgpack_check_value(data, n, MSGPACK_MAX_DEPTH, &vlen, &err), PROTO_ERR_TOO_DEEP);
    /* a larger request is capped at what msgpack-c can do */
    CHECK_EQ_INT(msgpack_check_value(data, n, 1000, &vlen, &err), PROTO_ERR_TOO_DEEP);
    n = nested_arrays(data, 3);
    CHECK_EQ_INT(msgpack_check_value(data, n, 3, &vlen, &err), PROTO_OK);
    CHECK_EQ_INT(msgpack_check_value(data, n, 2, &vlen, &err), PROTO_ERR_TOO_DEEP);

    /* Depth is nesting, not the number of containers: [[1],[2],[3]] is 2 deep. */
    const char siblings[] = "\x93\x91\x01\x91\x02\x91\x03";
    CHECK_EQ_INT(msgpack_check_value(siblings, 7, 2, &vlen, &err), PROTO_OK);
    CHECK_EQ_INT(vlen, 7);
    /* maps nest too: {"a": {"b": [1]}} */
    const char maps[] = "\x81\xa1" "a" "\x81\xa1" "b" "\x91\x01";
    CHECK_EQ_INT(msgpack_check_value(maps, 8, 3, &vlen, &err), PROTO_OK);
    CHECK_EQ_INT(msgpack_check_value(maps, 8, 2, &vlen, &err), PROTO_ERR_TOO_DEEP);
}

static void test_value_lengths(void)
{
    struct {
        const char *bytes;
        size_t len;
    } ok[] = {
        { "\x00", 1 },                       /* fixint */
        { "\xe0", 1 },                       /* negative fixint */
        { "\xc0", 1 }, { "\xc2", 1 }, { "\xc3", 1 },
        { "\xcc\xff", 2 }, { "\xcd\x01\x00", 3 }, { "\xce\0\0\0\1", 5 },
        { "\xcf\0\0\0\0\0\0\0\1", 9 }, { "\xd0\x80", 2 }, { "\xd3\x80\0\0\0\0\0\0\0", 9 },
        { "\xca\x3f\xc0\0\0", 5 }, { "\xcb\x3f\xf8\0\0\0\0\0\0", 9 },
        { "\xa3" "abc", 4 }, { "\xd9\x03" "abc", 5 }, { "\xda\x00\x03" "abc", 6 },
        { "\xdb\0\0\0\3" "abc", 8 },
        { "\xc4\x02\x01\x02", 4 }, { "\xc5\x00\x01\x01", 4 }, { "\xc6\0\0\0\1\1", 6 },
        { "\xd4\x01\x00", 3 }, { "\xd6\xff\0\0\0\0", 6 }, { "\xd8\x05" "0123456789abcdef", 18 },
        { "\xc7\x00\x05", 3 }, { "\xc7\x02\x05\x01\x02", 5 }, { "\xc8\x00\x01\x05\x01", 5 },
        { "\xc9\0\0\0\1\x05\x01", 7 },
        { "\x92\x01\x02", 3 }, { "\xdc\x00\x02\x01\x02", 5 }, { "\xdd\0\0\0\2\1\2", 7 },
        { "\x81\x01\x02", 3 }, { "\xde\x00\x01\x01\x02", 5 }, { "\xdf\0\0\0\1\1\2", 7 },
        { "\x90", 1 }, { "\x80", 1 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t vlen = 0;
        CHECK_EQ_INT(msgpack_check_value(ok[i].bytes, ok[i].len, MSGPACK_MAX_DEPTH, &vlen, NULL),
                     PROTO_OK);
        CHECK_EQ_INT(vlen, ok[i].len);
        /* every strict prefix is truncated */
        for (size_t cut = 0; cut < ok[i].len; cut++)
            CHECK_EQ_INT(msgpack_check_value(ok[i].bytes, cut, MSGPACK_MAX_DEPTH, &vlen, NULL),
                         PROTO_ERR_SYNTAX);
    }
    /* Only the first value is measured; what follows is the caller's business. */
    size_t vlen = 0;
    CHECK_EQ_INT(msgpack_check_value("\x01\x02", 2, MSGPACK_MAX_DEPTH, &vlen, NULL), PROTO_OK);
    CHECK_EQ_INT(vlen, 1);
}

static void test_hostile(void)
{
    struct proto_error err = { 0 };
    size_t vlen;
    /* array 32 claiming 2^32-1 elements: msgpack-c would ask for ~100 GB */
    CHECK_EQ_INT(msgpack_check_value("\xdd\xff\xff\xff\xff\x00", 6, MSGPACK_MAX_DEPTH, &vlen, &err),
                 PROTO_ERR_SYNTAX);
    /* refused at the header, not after walking what is there */
    CHECK(err.detail && strstr(err.detail, "more elements than bytes remain"));
    /* map 32 claiming 2^31 entries, 2 bytes per entry are needed */
    CHECK_EQ_INT(msgpack_check_value("\xdf\x80\0\0\0\1\2", 7, MSGPACK_MAX_DEPTH, &vlen, &err),
                 PROTO_ERR_SYNTAX);
    /* a map of 2 entries needs 4 values: 3 bytes are not enough */
    CHECK_EQ_INT(msgpack_check_value("\x82\x01\x02\x03", 4, MSGPACK_MAX_DEPTH, &vlen, &err),
                 PROTO_ERR_SYNTAX);
    /* an inner array lying about its count */
    CHECK_EQ_INT(msgpack_check_value("\x92\x01\xdc\xff\xff\x01", 6, MSGPACK_MAX_DEPTH, &vlen, &err),
                 PROTO_ERR_SYNTAX);
    /* lengths past the end: str32, bin32, ext32 (msgpack-c computes 0xffffffff + 1 = 0) */
    CHECK_EQ_INT(msgpack_check_value("\xdb\x7f\xff\xff\xff" "ab", 7, MSGPACK_MAX_DEPTH, &vlen, &err),
                 PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(msgpack_check_value("\xc6\xff\xff\xff\xff" "ab", 7, MSGPACK_MAX_DEPTH, &vlen, &err),
                 PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(msgpack_check_value("\xc9\xff\xff\xff\xff\x01", 6, MSGPACK_MAX_DEPTH, &vlen, &err),
                 PROTO_ERR_SYNTAX);
    /* the reserved byte */
    CHECK_EQ_INT(msgpack_check_value("\xc1", 1, MSGPACK_MAX_DEPTH, &vlen, &err), PROTO_ERR_SYNTAX);
    CHECK_EQ_INT(msgpack_check_value("\x91\xc1", 2, MSGPACK_MAX_DEPTH, &vlen, &err), PROTO_ERR_SYNTAX);
    /* nothing at all */
    CHECK_EQ_INT(msgpack_check_value("", 0, MSGPACK_MAX_DEPTH, &vlen, &err), PROTO_ERR_SYNTAX);

    /* A deep bomb far past the limit is refused without recursion. */
    size_t n = 100000;
    char *bomb = malloc(n);
    for (size_t i = 0; i < n; i++)
        bomb[i] = (char)0x91;
    CHECK_EQ_INT(msgpack_check_value(bomb, n, MSGPACK_MAX_DEPTH, &vlen, &err), PROTO_ERR_TOO_DEEP);
    free(bomb);
}

int main(void)
{
    test_msgpack_c_depth_premise();
    test_depth();
    test_value_lengths();
    test_hostile();
    return test_main_result("test_msgpack_check");
}
