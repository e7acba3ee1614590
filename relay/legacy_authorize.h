/* legacy_authorize.h - legacy negotiate asking each listed hub's backend whether the client may use it.
 *
 * The original server runs hub authorization ([Authorize]) on every request
 * that names hubs, negotiate included: a hub the user may not use is answered
 * 401 (anonymous) or 403 (authenticated), empty, before any connection
 * exists, and the clients stop there. The relay does not know which hubs
 * need authorization; their backends do. So a legacy negotiate, in proxy
 * mode, makes one Core negotiate per hub in connectionData to that hub's
 * backend (backend_negotiate_start, the client's Authorization/Cookie and
 * query forwarded, as for a Core client), all at once, off the loop:
 *  - every backend answers 2xx: the client gets the negotiate answer
 *    prepared before the check;
 *  - one answers 401 or 403: the client gets that status, empty, as from the
 *    original (the other checks are cancelled);
 *  - one cannot be reached or answers anything else: 502 naming the hub;
 *  - one has not answered in --backend-timeout: 504 naming the hub.
 * The backend connections these negotiates create are never used: a Core
 * server forgets a negotiated connection nobody connects to (ASP.NET Core:
 * after its disconnect timeout, 15 s by default).
 *
 * The request waits as a legacy_request (its headers captured, then given
 * back to lws); the check is its owner and frees itself when it answered or
 * the client left. */
#ifndef SR_LEGACY_AUTHORIZE_H
#define SR_LEGACY_AUTHORIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/span.h"
#include "relay/legacy_request.h"

struct backends;
struct loop;

enum legacy_authorize_result {
    LEGACY_AUTHORIZE_NOTHING,  /* no hub to ask (none listed, or none with a backend): answer at once */
    LEGACY_AUTHORIZE_STARTED,  /* the request waits: the check answers it */
    LEGACY_AUTHORIZE_FAILED,   /* could not be started: r was answered with an error (out of memory, query too long) */
};

/* Starts the check of hubs (as the client named them) for the negotiate
 * request r, whose answer (200 and the negotiate body) is already prepared
 * with legacy_request_prepare. The request's headers and query must still
 * be readable. r is the check's from STARTED on. */
enum legacy_authorize_result legacy_authorize_start(struct loop *loop, struct backends *backends,
                                                    struct legacy_request *r, const struct span *hubs,
                                                    size_t hub_count);

#endif
