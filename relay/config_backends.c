/* config_backends.c - a hub's backend URLs: "URL1,URL2,..." taken apart into the route's
 * struct backend_target's (see config.h). */
#include "relay/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define STARTS_WITH_NOCASE(text, literal) (strncasecmp((text), literal, sizeof(literal) - 1) == 0)


static void backend_target_free(struct backend_target *t)
{
    free(t->url);
    free(t->host);
    free(t->path);
}

void config_backends_free(struct hub_route *h)
{
    for (size_t i = 0; i < h->target_count; i++)
        backend_target_free(&h->targets[i]);
    free(h->targets);
    h->targets = NULL;
    h->target_count = 0;
}

/* "http://host[:port]/path" (also https, ws, wss) into t. */
static enum config_result parse_backend_url(struct backend_target *h, const char *url, char *err,
                                            size_t err_len)
{
    const char *rest;
    if (!(h->url = strdup(url)))
        return config_fail(err, err_len, "out of memory");
    if (STARTS_WITH_NOCASE(url, "http://") || STARTS_WITH_NOCASE(url, "ws://")) {
        h->tls = false;
    } else if (STARTS_WITH_NOCASE(url, "https://") || STARTS_WITH_NOCASE(url, "wss://")) {
        h->tls = true;
    } else {
        return config_fail(err, err_len, "backend URL '%s' must start with http://, https://, ws:// or wss://", url);
    }
    rest = strstr(url, "://") + sizeof "://" - 1;
    size_t host_len = strcspn(rest, ":/?#");
    if (host_len == 0)
        return config_fail(err, err_len, "backend URL '%s' has no host", url);
    h->host = strndup(rest, host_len);
    rest += host_len;
    h->port = h->tls ? 443 : 80;
    if (*rest == ':') {
        char *end;
        errno = 0;
        long port = strtol(rest + 1, &end, 10);
        if (errno || end == rest + 1 || port < 1 || port > 65535)
            return config_fail(err, err_len, "backend URL '%s' has a bad port", url);
        h->port = (int)port;
        rest = end;
    }
    if (*rest == '?' || *rest == '#')
        return config_fail(err, err_len, "backend URL '%s': query strings and fragments are not supported", url);
    size_t path_len = strlen(rest);
    while (path_len > 0 && rest[path_len - 1] == '/')
        path_len--;
    if (path_len == 0)
        return config_fail(err, err_len, "backend URL '%s' has no hub path (e.g. http://127.0.0.1:5000/chat)", url);
    h->path = strndup(rest, path_len);
    return h->host && h->path ? CONFIG_OK : config_fail(err, err_len, "out of memory");
}

/* "URL1,URL2,..." (spaces around each allowed) into the route's targets. */
enum config_result config_parse_backends(struct hub_route *h, const char *list, char *err, size_t err_len)
{
    for (const char *p = list;;) {
        size_t n = strcspn(p, ",");
        while (n > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            n--;
        }
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n == 0)
            return config_fail(err, err_len, "hub '%s': empty backend URL in '%s'", h->name, list);
        struct backend_target *grown = realloc(h->targets, (h->target_count + 1) * sizeof *grown);
        char *one = strndup(p, n);
        if (!grown || !one) {
            free(one);
            if (grown)
                h->targets = grown;
            return config_fail(err, err_len, "out of memory");
        }
        h->targets = grown;
        struct backend_target *t = &h->targets[h->target_count++];
        memset(t, 0, sizeof *t);
        enum config_result r = parse_backend_url(t, one, err, err_len);
        free(one);
        if (r != CONFIG_OK)
            return r;
        for (size_t i = 0; i + 1 < h->target_count; i++)
            if (strcasecmp(h->targets[i].url, t->url) == 0)
                return config_fail(err, err_len, "hub '%s': backend URL '%s' is listed twice", h->name, t->url);
        p += strcspn(p, ",");
        if (!*p)
            return CONFIG_OK;
        p++;
    }
}

