/* test_legacy_hubs_js.c - the generated hub proxy script of GET /signalr/hubs (relay/legacy_hubs_js.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "relay/legacy_hubs_js.h"

static bool contains(const struct buf *b, const char *text)
{
    char *copy = strndup(b->data ? b->data : "", b->len);
    bool found = copy && strstr(copy, text) != NULL;
    if (!found)
        fprintf(stderr, "script lacks: %s\n", text);
    free(copy);
    return found;
}

static void test_script(void)
{
    struct legacy_hubs_js_hub hubs[] = {
        { "ChatHub", NULL },
        { "status", "Echo,GetStatus" },
    };
    struct buf b;
    buf_init(&b);
    CHECK(legacy_hubs_js(&b, "/signalr", hubs, 2));
    /* camel-cased keys and proxy names, as the original's; a Proxy where no methods are configured */
    CHECK(contains(&b, "proxies['chatHub'] = this.createHubProxy('chatHub');"));
    CHECK(contains(&b, "proxies['chatHub'].client = { };"));
    CHECK(contains(&b, "proxies['chatHub'].server = anyMethod(proxies['chatHub']);"));
    /* listed methods: camel-cased functions invoking the configured name */
    CHECK(contains(&b, "            echo: function () {\n"
                       "                return proxies['status'].invoke.apply(proxies['status'], $.merge([\"Echo\"], $.makeArray(arguments)));\n"
                       "            },\n"));
    CHECK(contains(&b, "            getStatus: function () {"));
    CHECK(contains(&b, "$.merge([\"GetStatus\"], $.makeArray(arguments)));\n            }\n        };\n"));
    CHECK(contains(&b, "signalR.hub = $.hubConnection(\"/signalr\", { useDefaultPath: false });"));
    CHECK(contains(&b, "$.extend(signalR, signalR.hub.createHubProxies());"));
    CHECK(contains(&b, "}(window.jQuery, window));\n"));

    /* Names config.c would refuse, or an endpoint with a quote: nothing written. */
    size_t before = b.len;
    struct legacy_hubs_js_hub quote[] = { { "a'b", NULL } };
    CHECK(!legacy_hubs_js(&b, "/signalr", quote, 1));
    struct legacy_hubs_js_hub method[] = { { "chat", "Send,1x" } };
    CHECK(!legacy_hubs_js(&b, "/signalr", method, 1));
    struct legacy_hubs_js_hub empty[] = { { "chat", "Send," } };
    CHECK(!legacy_hubs_js(&b, "/signalr", empty, 1));
    CHECK(!legacy_hubs_js(&b, "/sig\"nalr", hubs, 1));
    CHECK_EQ_INT(b.len, before);
    buf_free(&b);
}

int main(void)
{
    test_script();
    return test_main_result("test_legacy_hubs_js");
}
