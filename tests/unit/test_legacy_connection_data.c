/* test_legacy_connection_data.c - the connectionData hub list.
 *
 * Inputs are the spellings of legacy-signalr.md 3.3, 10.1 and 10.8 (jQuery
 * [{"name":"chathub"}], .NET and C++ [{"Name":"ChatHub"}]) and the rules of
 * HubDispatcher.AuthorizeRequest (Json.NET binding, case-insensitive
 * duplicate check, "Duplicate Hub names found."). */
#include <stdlib.h>

#include "check.h"
#include "protocol/legacy_connection_data.h"

static enum proto_status decode(const char *text, struct legacy_hub_list *list,
                                struct proto_error *err)
{
    return legacy_connection_data_decode(text, strlen(text), list, err);
}

static void test_client_spellings(void)
{
    struct legacy_hub_list list;
    struct proto_error err = { 0 };

    /* jQuery (the URL-decoded form of CD in section 10). */
    const char *jquery = "[{\"name\":\"chathub\"}]";
    CHECK_EQ_INT(decode(jquery, &list, &err), PROTO_OK);
    CHECK_EQ_INT(list.count, 1);
    CHECK_BYTES(list.names[0].ptr, list.names[0].len, "chathub");
    CHECK(list.names[0].ptr > jquery && list.names[0].ptr < jquery + strlen(jquery)); /* zero-copy */
    CHECK(list.owned[0] == NULL);
    legacy_hub_list_release(&list);

    /* .NET and C++: "Name", declared case, kept as spelled. */
    CHECK_EQ_INT(decode("[{\"Name\":\"ChatHub\"}]", &list, &err), PROTO_OK);
    CHECK_EQ_INT(list.count, 1);
    CHECK_BYTES(list.names[0].ptr, list.names[0].len, "ChatHub");
    CHECK_EQ_INT(legacy_hub_list_find(&list, SPAN_LIT("chathub")), 0);
    CHECK_EQ_INT(legacy_hub_list_find(&list, SPAN_LIT("CHATHUB")), 0);
    CHECK_EQ_INT(legacy_hub_list_find(&list, SPAN_LIT("chat")), -1);
    legacy_hub_list_release(&list);

    /* Several hubs, order kept; other properties ignored; any key case. */
    CHECK_EQ_INT(decode(" [ {\"name\":\"chathub\"} , {\"x\":1,\"NAME\":\"StatusHub\",\"y\":[{}]},"
                        "{\"nAmE\":\"Sec\\u00e9\"} ] ", &list, &err), PROTO_OK);
    CHECK_EQ_INT(list.count, 3);
    CHECK_BYTES(list.names[0].ptr, list.names[0].len, "chathub");
    CHECK_BYTES(list.names[1].ptr, list.names[1].len, "StatusHub");
    CHECK_BYTES(list.names[2].ptr, list.names[2].len, "Sec\xc3\xa9"); /* unescaped copy */
    CHECK(list.owned[2] != NULL && list.owned[2] == list.names[2].ptr);
    legacy_hub_list_release(&list);
    legacy_hub_list_release(&list); /* twice is harmless */

    /* No hubs: empty, blank, [], null. */
    const char *none[] = { "", "  ", "[]", " [ ] ", "null" };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        CHECK_EQ_INT(decode(none[i], &list, &err), PROTO_OK);
        CHECK_EQ_INT(list.count, 0);
        legacy_hub_list_release(&list);
    }
}

static void check_fails(const char *text, enum proto_status expected, const char *detail)
{
    struct legacy_hub_list list;
    struct proto_error err = { 0 };
    enum proto_status st = decode(text, &list, &err);
    CHECK_EQ_INT(st, expected);
    CHECK(err.detail != NULL);
    if (detail && err.detail)
        CHECK(strcmp(err.detail, detail) == 0);
    legacy_hub_list_release(&list);
}

static void test_errors(void)
{
    check_fails("[{\"name\":\"chathub\"},{\"Name\":\"ChatHub\"}]", PROTO_ERR_VALUE,
                "Duplicate Hub names found.");
    check_fails("[{\"name\":\"a\"},{\"name\":\"A\"}]", PROTO_ERR_VALUE, "Duplicate Hub names found.");
    check_fails("[{\"name\":\"a\",\"Name\":\"b\"}]", PROTO_ERR_VALUE, NULL);
    check_fails("[{\"hub\":\"chathub\"}]", PROTO_ERR_MISSING, NULL);
    check_fails("[{}]", PROTO_ERR_MISSING, NULL);
    check_fails("[{\"name\":\"\"}]", PROTO_ERR_VALUE, NULL);
    check_fails("[{\"name\":\"chat\\u0000hub\"}]", PROTO_ERR_VALUE, NULL);
    check_fails("[{\"name\\u0000x\":\"chathub\"}]", PROTO_ERR_VALUE, NULL); /* not "name" */
    check_fails("[{\"name\":null}]", PROTO_ERR_TYPE, NULL);
    check_fails("[{\"name\":42}]", PROTO_ERR_TYPE, NULL);
    check_fails("[\"chathub\"]", PROTO_ERR_TYPE, NULL);
    check_fails("[null]", PROTO_ERR_TYPE, NULL);
    check_fails("{\"name\":\"chathub\"}", PROTO_ERR_TYPE, NULL);
    check_fails("\"chathub\"", PROTO_ERR_TYPE, NULL);
    /* Not JSON, truncated, trailing bytes, bad separators. */
    check_fails("chathub", PROTO_ERR_SYNTAX, NULL);
    check_fails("[{\"name\":\"chathub\"}", PROTO_ERR_SYNTAX, NULL);
    check_fails("[{\"name\":\"chathub\"", PROTO_ERR_SYNTAX, NULL);
    check_fails("[{\"name\":\"chathub\"}]x", PROTO_ERR_SYNTAX, NULL);
    check_fails("[{\"name\":\"a\"},]", PROTO_ERR_SYNTAX, NULL);
    check_fails("[,{\"name\":\"a\"}]", PROTO_ERR_SYNTAX, NULL);
    check_fails("[{\"name\":\"a\"} {\"name\":\"b\"}]", PROTO_ERR_SYNTAX, NULL);
    check_fails("[", PROTO_ERR_SYNTAX, NULL);
    /* Bytes: invalid UTF-8, raw control characters. */
    check_fails("[{\"name\":\"chat\xff\"}]", PROTO_ERR_UTF8, NULL);
    check_fails("[{\"name\":\"chat\xc0\xaf\"}]", PROTO_ERR_UTF8, NULL);
    check_fails("[{\"name\":\"chat\x01hub\"}]", PROTO_ERR_SYNTAX, NULL);
    check_fails("[{\"name\":\"chat\thub\"}]", PROTO_ERR_SYNTAX, NULL);
    check_fails("[\xef\xbb\xbf{\"name\":\"chathub\"}]", PROTO_ERR_SYNTAX, NULL);
}

static void test_limits(void)
{
    struct legacy_hub_list list;
    struct proto_error err = { 0 };
    char text[4096];
    size_t n = 0;
    text[n++] = '[';
    for (int i = 0; i < LEGACY_MAX_HUBS + 1; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s{\"name\":\"hub%d\"}", i ? "," : "", i);
    text[n++] = ']';

    /* The last entry is the one over the limit: LEGACY_MAX_HUBS still fit. */
    size_t at_limit = (size_t)(strstr(text, ",{\"name\":\"hub32\"}") - text);
    char exact[4096];
    memcpy(exact, text, at_limit);
    exact[at_limit] = ']';
    CHECK_EQ_INT(legacy_connection_data_decode(exact, at_limit + 1, &list, &err), PROTO_OK);
    CHECK_EQ_INT(list.count, LEGACY_MAX_HUBS);
    legacy_hub_list_release(&list);

    CHECK_EQ_INT(legacy_connection_data_decode(text, n, &list, &err), PROTO_ERR_TOO_LARGE);
    legacy_hub_list_release(&list);

    /* A nesting bomb inside an ignored property is still parsed (and bounded)
     * by cJSON without harm. */
    char bomb[5000];
    size_t b = 0;
    b += (size_t)snprintf(bomb, sizeof bomb, "[{\"name\":\"a\",\"x\":");
    for (int i = 0; i < 2000; i++)
        bomb[b++] = '[';
    bomb[b++] = '}';
    bomb[b++] = ']';
    CHECK_EQ_INT(legacy_connection_data_decode(bomb, b, &list, &err), PROTO_ERR_SYNTAX);
    legacy_hub_list_release(&list);

    /* Every prefix of a valid list that is not itself complete fails cleanly. */
    const char *full = "[{\"name\":\"chathub\"},{\"Name\":\"St\\u0061tus\"}]";
    for (size_t len = 1; len < strlen(full); len++) {
        enum proto_status st = legacy_connection_data_decode(full, len, &list, &err);
        CHECK(proto_status_is_error(st));
        legacy_hub_list_release(&list);
    }
}

int main(void)
{
    test_client_spellings();
    test_errors();
    test_limits();
    return test_main_result("test_legacy_connection_data");
}
