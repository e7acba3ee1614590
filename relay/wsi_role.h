/* wsi_role.h - what a wsi's opaque user data points at.
 *
 * The relay's HTTP/WebSocket callback serves several kinds of request on the
 * same lws protocol; each kind's state struct starts with this tag so the
 * callback can tell them apart. lws also sends every wsi's WSI_DESTROY, the
 * backend client connections' included, to that first protocol, so the
 * backend structs carry a tag too. */
#ifndef SR_WSI_ROLE_H
#define SR_WSI_ROLE_H

enum wsi_role {
    WSI_ROLE_NONE = 0,
    WSI_ROLE_NEGOTIATION,  /* struct negotiation: a Core negotiate awaiting the backend */
    WSI_ROLE_CORE_SESSION, /* struct core_session: a Core client WebSocket */
    WSI_ROLE_LEGACY_SESSION, /* struct legacy_session: a legacy client's WebSocket channel */
    WSI_ROLE_LEGACY_START, /* struct legacy_start_wait: a legacy /start awaiting backend links */
    WSI_ROLE_LEGACY_REQUEST, /* struct legacy_request: a legacy HTTP request read whole, maybe answered later */
    WSI_ROLE_BACKEND_NEGOTIATE, /* struct backend_negotiate (backend.c) */
    WSI_ROLE_BACKEND_LINK,      /* struct backend_link (backend.c) */
    WSI_ROLE_SERVICE_SERVER,    /* struct service_server: an app's server connection (service mode) */
    WSI_ROLE_CORE_HTTP,         /* struct core_http_request: a Core SSE stream or long poll */
    WSI_ROLE_CORE_POST,         /* struct core_http_post: a Core SSE/long-polling POST */
};

#endif
