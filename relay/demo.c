/* demo.c - the /demo page: static files of --demo-dir under /demo/ (see demo.h). */
#include "relay/demo.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relay/config.h"

bool demo_route(const char *path)
{
    return strncmp(path, "/demo", 5) == 0 && (path[5] == '\0' || path[5] == '/');
}

static const char *content_type(const char *name)
{
    static const struct { const char *ext, *type; } types[] = {
        { ".html", "text/html; charset=utf-8" },  { ".js", "text/javascript; charset=utf-8" },
        { ".mjs", "text/javascript; charset=utf-8" }, { ".css", "text/css; charset=utf-8" },
        { ".json", "application/json" },          { ".map", "application/json" },
        { ".svg", "image/svg+xml" },              { ".png", "image/png" },
        { ".ico", "image/x-icon" },               { ".txt", "text/plain; charset=utf-8" },
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

/* The part after "/demo/" names a file inside the directory by its segments
 * only: no "..", no ".", no empty segment, no backslash, no control byte, and
 * no '%' left over from an encoded slash or byte lws did not decode. */
static bool relative_path_is_plain(const char *rel)
{
    if (strpbrk(rel, "\\%"))
        return false;
    for (const char *seg = rel;;) {
        size_t n = strcspn(seg, "/");
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return false;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)seg[i] < 0x20 || seg[i] == 0x7f)
                return false;
        if (!seg[n])
            return true;
        seg += n + 1;
    }
}

/* Reads the regular file at path (at most DEMO_FILE_MAX bytes) into a new
 * buffer the caller frees. NULL when it cannot. */
static char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0)
        return NULL;
    char *data = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= DEMO_FILE_MAX &&
        (data = malloc((size_t)st.st_size + 1))) {
        ssize_t got = read(fd, data, (size_t)st.st_size);
        if (got != st.st_size) {
            free(data);
            data = NULL;
        }
        *len = (size_t)st.st_size;
    }
    close(fd);
    return data;
}

/* The real path of rel inside dir, or NULL when it is missing or its real
 * path (symbolic links followed) leaves dir. Owned by the caller. */
static char *resolve_inside(const char *dir, const char *rel)
{
    char *root = realpath(dir, NULL);
    size_t root_len = root ? strlen(root) : 0;
    size_t want = root_len + strlen(rel) + 2;
    char *joined = root ? malloc(want) : NULL;
    char *real = NULL;
    if (joined) {
        snprintf(joined, want, "%s/%s", root, rel);
        real = realpath(joined, NULL);
    }
    if (real && !(strncmp(real, root, root_len) == 0 && real[root_len] == '/')) {
        free(real);
        real = NULL;
    }
    free(joined);
    free(root);
    return real;
}

int demo_http(const struct relay_config *cfg, struct lws *wsi, const char *path, enum http_method method)
{
    if (!cfg->demo_dir)
        return http_respond_text(cfg, wsi, 404,
                                 "The demo page is off. Start the relay with --demo-dir DIR to serve DIR's files here "
                                 "(scripts/run.sh without arguments serves the repository's demo/ at /demo/).");
    if (method != HTTP_GET)
        return http_respond_text(cfg, wsi, 405, "The demo page answers GET only.");
    char rel[1024];
    size_t n = (size_t)snprintf(rel, sizeof rel, "%s", path[5] == '/' ? path + 6 : "");
    if (n == 0 || (n < sizeof rel && rel[n - 1] == '/')) /* a directory: its index.html */
        n += (size_t)snprintf(rel + n, sizeof rel - n, "index.html");
    if (n >= sizeof rel || !relative_path_is_plain(rel))
        return http_respond_text(cfg, wsi, 400, "Bad demo file path.");
    char *real = resolve_inside(cfg->demo_dir, rel);
    size_t len = 0;
    char *data = real ? read_file(real, &len) : NULL;
    int rc = data ? http_respond(cfg, wsi, 200, content_type(real), data, len)
                  : http_respond_text(cfg, wsi, 404, "No such demo file.");
    free(data);
    free(real);
    return rc;
}
