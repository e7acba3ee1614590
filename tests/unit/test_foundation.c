/* test_foundation.c - span, buf, json_scan and json_write basics. */
#include "containers/buf.h"
#include "check.h"
#include "protocol/hub_msg.h"
#include "protocol/json_scan.h"
#include "protocol/json_write.h"
#include "containers/span.h"

static void test_span(void)
{
    CHECK(span_eq_nocase(SPAN_LIT("ChatHub"), SPAN_LIT("chathub")));
    CHECK(!span_eq_nocase(SPAN_LIT("ChatHub"), SPAN_LIT("chathu")));
    CHECK(utf8_is_valid("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
    CHECK(!utf8_is_valid("\xc0\xaf", 2));         /* overlong */
    CHECK(!utf8_is_valid("\xed\xa0\x80", 3));     /* surrogate */
    CHECK(!utf8_is_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    CHECK(!utf8_is_valid("\xe2\x82", 2));         /* truncated */
}

static void test_json_write(void)
{
    struct buf b;
    buf_init(&b);
    CHECK(json_write_string(&b, SPAN_LIT("a\"b\\c\n\x01\xc3\xa9")));
    CHECK_BYTES(b.data, b.len, "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"");
    buf_free(&b);
}

static void test_json_scan(void)
{
    const char *text = " {\"target\":\"Se\\u006ed\", \"arguments\" : [1, {\"a\":[]}] ,\"n\":null} ";
    struct json_object_iter it;
    struct json_member m;
    struct hub_msg msg;
    hub_msg_init(&msg);
    CHECK_EQ_INT(json_object_begin(&it, text, strlen(text), NULL), PROTO_OK);
    CHECK_EQ_INT(json_object_next(&it, &m, NULL), PROTO_OK);
    CHECK(strcmp(m.key, "target") == 0);
    struct span s;
    CHECK_EQ_INT(json_member_string(&m, &msg, &s, NULL), PROTO_OK);
    CHECK_BYTES(s.ptr, s.len, "Send");
    json_member_release(&m);
    CHECK_EQ_INT(json_object_next(&it, &m, NULL), PROTO_OK);
    CHECK_BYTES(m.raw.ptr, m.raw.len, "[1, {\"a\":[]}]");
    json_member_release(&m);
    CHECK_EQ_INT(json_object_next(&it, &m, NULL), PROTO_OK);
    CHECK(cJSON_IsNull(m.value));
    json_member_release(&m);
    CHECK_EQ_INT(json_object_next(&it, &m, NULL), PROTO_INCOMPLETE);
    hub_msg_release(&msg);

    struct proto_error err = { 0 };
    const char *bad[] = { "", "[]", "{\"a\":}", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":1} x", "{\"a\":1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        enum proto_status st = json_object_begin(&it, bad[i], strlen(bad[i]), &err);
        while (st == PROTO_OK) {
            st = json_object_next(&it, &m, &err);
            if (st == PROTO_OK)
                json_member_release(&m);
        }
        CHECK(proto_status_is_error(st));
    }
}

int main(void)
{
    test_span();
    test_json_write();
    test_json_scan();
    return test_main_result("test_foundation");
}
