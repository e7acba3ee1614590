/* legacy_request.h - a legacy HTTP request read whole and, maybe, answered later.
 *
 * The HTTP transports of the legacy protocol (serverSentEvents, longPolling)
 * put what the client says in form bodies (/send's data=, jQuery's poll
 * messageId=) and get some answers late: a /send is answered with its hub
 * result when the hub sends it, a long poll when a message arrives or its
 * time is up. A legacy_request is such a request: the wsi's opaque user data
 * while its body is read (bounded by --max-message-size), and while it waits
 * for its answer on behalf of an owner (a legacy session), which it tells if
 * the client leaves first. The answer is written from the request's own
 * HTTP_WRITEABLE callback; then the request is freed.
 *
 * It knows nothing of sessions: the owner keeps it on its own list and
 * unlinks it when it answers it or is told the client left. */
#ifndef SR_LEGACY_REQUEST_H
#define SR_LEGACY_REQUEST_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/list.h"
#include "containers/timer_wheel.h"
#include "relay/config.h"
#include "relay/http.h"
#include "relay/wsi_role.h"

#define LEGACY_REQUEST_ID_MAX 128

struct legacy_request;
struct loop;

/* The client left while its request waited: the owner unlinks it (and must not touch it after). */
typedef void (*legacy_request_gone_fn)(void *owner, struct legacy_request *r);

struct legacy_request {
    enum wsi_role role;                 /* WSI_ROLE_LEGACY_REQUEST */
    struct lws *wsi;
    const struct relay_config *cfg;
    char *suffix;                       /* owned until served (freed once it waits): the path after the endpoint, which command */
    struct buf body;                    /* the request body as received; freed once it waits (read by then) */
    bool body_too_large;
    bool dispatched;                    /* served already (lws may report a body end for an empty body too) */

    /* While waiting for its answer. */
    struct list_node link;              /* on the owner's list */
    void *owner;
    legacy_request_gone_fn gone;
    char *legacy_id;                    /* owned, /send only: the invocation whose result answers it (shorter than
                                           LEGACY_REQUEST_ID_MAX); NULL for a long poll, which holds no copy */
    uint64_t cursor;                    /* a long poll: the client's cursor */
    bool held;                          /* /send: answer ready, held until the client has what came before it */
    uint64_t release_at;                /* with it: the owner's mark the client must have reached */

    struct http_answer_ctx reply;         /* captured when it starts waiting: its headers are given back */
    bool detached;

    /* The request's one timer: a held long poll's keep-alive (legacy_request_keep_alive), or
     * the owner's own deadline for it (a held /send); cancelled when it is answered or freed. */
    struct timer_entry timer;
    struct loop *loop;
    unsigned keepalive_ms;
    const char *stream_type;            /* static: the Content-Type of the answer whose head goes out early */
    bool space_due;                     /* a space waits for HTTP_WRITEABLE */
    bool streaming;                     /* the head and spaces are out: the answer is the rest of the body */

    /* The answer, once known. */
    bool answered;
    unsigned status;
    const char *content_type;           /* static */
    struct buf answer;
};

/* A request for suffix (copied) on wsi, set as the wsi's opaque user data. NULL when out of memory. */
struct legacy_request *legacy_request_new(const struct relay_config *cfg, struct lws *wsi, const char *suffix);
/* LWS_CALLBACK_HTTP_BODY: a piece of the body. Past --max-message-size the
 * rest is dropped and body_too_large set. */
void legacy_request_body(struct legacy_request *r, const void *in, size_t len);
/* Detaches the request from its wsi and frees it (an answer written at once). */
void legacy_request_free(struct legacy_request *r);
/* The request waits for owner to answer it. What only serving it needed
 * (its suffix, its body, its header table) is freed: an idle long-polling
 * client holds its request for up to --legacy-poll-timeout. */
void legacy_request_wait(struct legacy_request *r, void *owner, legacy_request_gone_fn gone);
/* Answers a waiting request (copied; written on its next HTTP_WRITEABLE).
 * The owner has already unlinked it. False when out of memory: the request
 * then gets a 500. */
bool legacy_request_answer(struct legacy_request *r, unsigned status, const char *content_type, const char *data,
                           size_t len);
/* Stores the answer without writing it yet (the owner holds the request
 * until legacy_request_release). False when out of memory (then a 500). */
bool legacy_request_prepare(struct legacy_request *r, unsigned status, const char *content_type, const char *data,
                            size_t len);
/* A waiting request that the original keeps alive as it holds it (a long
 * poll): if it is still unanswered after interval_ms, the 200 head (no
 * length, content_type) and a space go out, then a space every interval_ms,
 * so that proxies and clients see a live response; the answer, when it
 * comes, is the rest of the body (clients read JSON after the spaces), and
 * the connection closes after it. */
void legacy_request_keep_alive(struct legacy_request *r, struct loop *loop, unsigned interval_ms,
                               const char *content_type);
/* Writes a prepared answer on the request's next HTTP_WRITEABLE. */
void legacy_request_release(struct legacy_request *r);
/* LWS_CALLBACK_HTTP_WRITEABLE: writes the answer if there is one. Returns the lws callback result. */
int legacy_request_writeable(struct legacy_request *r, struct lws *wsi);
/* The request's connection closed: the owner is told, the request freed. */
void legacy_request_closed(struct legacy_request *r);

#endif
