/* test_request_head.c - the count of libwebsockets header-table fragments a request head needs, and
 * the bound of what lws keeps of it (relay/request_head.c), which decide a 431 before lws would close
 * the connection silently. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "relay/request_head.h"

static size_t fields(const char *head)
{
    return request_head_fields(head, strlen(head));
}

int main(void)
{
    /* The path; Host and Connection are known to lws; X-Custom is not (it takes no fragment). */
    CHECK_EQ_INT(fields("GET /chat HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Custom: 1\r\n\r\n"), 3);
    /* Any case; a repeated known header counts each time. */
    CHECK_EQ_INT(fields("GET / HTTP/1.1\r\nhOsT: x\r\nCookie: a\r\nCookie: b\r\n\r\n"), 4);
    /* The first query argument shares the path's count, each further one (after & or ;) adds one. */
    CHECK_EQ_INT(fields("GET /p?a=1 HTTP/1.1\r\n\r\n"), 1);
    CHECK_EQ_INT(fields("GET /p?a=1&b=2;c=3 HTTP/1.1\r\n\r\n"), 3);
    /* Bare line feeds, as lws reads them too. */
    CHECK_EQ_INT(fields("GET /p?a&b HTTP/1.1\nHost: x\n\n"), 3);
    /* A header name that only starts like a known one is not one. */
    CHECK_EQ_INT(fields("GET / HTTP/1.1\r\nHostname: x\r\nCookies: y\r\n\r\n"), 1);
    /* No request line end: nothing to count. */
    CHECK_EQ_INT(fields("GET / HTTP/1.1"), 0);

    /* What lws 4.1.6 was measured to hold: 90 arguments with Host and Connection (92 counted),
     * 91 known headers with Host (92); one more of either is past the relay's bound of 92. */
    char head[4096];
    size_t n = (size_t)snprintf(head, sizeof head, "GET /signalr/ping?a0=1");
    for (int i = 1; i < 90; i++)
        n += (size_t)snprintf(head + n, sizeof head - n, "&a%d=1", i);
    n += (size_t)snprintf(head + n, sizeof head - n, " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    CHECK_EQ_INT(request_head_fields(head, n), 92);

    /* What lws keeps of a head, at most: every line (without its line end) and 8 bytes, as it keeps
     * a header it does not know by name; the blank line that ends the head counts too. */
    const char *small = "GET / HTTP/1.1\r\nzz:1\r\nzz:1\n\r\n";
    CHECK_EQ_INT(request_head_stored(small, strlen(small)), (14 + 8) + 2 * (4 + 8) + 8);
    return test_main_result("test_request_head");
}
