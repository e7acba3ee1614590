/* demo.h - the /demo page: the static files of --demo-dir served under /demo/.
 *
 * GET only; the content type from the file's extension; "/demo", "/demo/" and
 * any path ending in '/' serve that directory's index.html (no listings).
 * lws has already percent-decoded the path (an encoded slash is a slash) and
 * resolved its "." and ".." segments, so such a path cannot climb out; what is
 * still odd after that (a '%', a backslash, a control byte, a "." or ".."
 * segment) is refused (400), and a file whose real path (symbolic links
 * followed) is not inside the directory is not found (404). Files are read
 * whole per request (the demo's are small; over DEMO_FILE_MAX is refused).
 * Without --demo-dir, /demo answers 404 with a text saying how to turn it on. */
#ifndef SR_DEMO_H
#define SR_DEMO_H

#include <libwebsockets.h>
#include <stdbool.h>

#include "relay/http.h"

struct relay_config;

#define DEMO_FILE_MAX (4u << 20)

/* Whether path is "/demo" or under "/demo/". */
bool demo_route(const char *path);

/* Answers one request for path (demo_route was true). Returns what the lws
 * callback should return. */
int demo_http(const struct relay_config *cfg, struct lws *wsi, const char *path, enum http_method method);

#endif
