/* hub_status.h - results of the hub model's table operations (connections,
 * groups, users). HUB_OK and HUB_ALREADY / HUB_NOT_FOUND are outcomes, not
 * failures: joining a group twice or leaving one you are not in is a no-op,
 * as in ASP.NET Core. */
#ifndef SR_HUB_STATUS_H
#define SR_HUB_STATUS_H

enum hub_status {
    HUB_OK = 0,
    HUB_ALREADY,    /* no-op: the connection is already in that group / id taken */
    HUB_NOT_FOUND,  /* no-op: no such member, group, user or connection */
    HUB_ERR_VALUE,  /* a name or id is empty or malformed */
    HUB_ERR_STATE,  /* the object is not in the state the call needs (e.g. attached twice) */
    HUB_ERR_NOMEM,  /* allocation failed; nothing was changed */
};

static inline const char *hub_status_name(enum hub_status s)
{
    switch (s) {
    case HUB_OK: return "ok";
    case HUB_ALREADY: return "already";
    case HUB_NOT_FOUND: return "not-found";
    case HUB_ERR_VALUE: return "value";
    case HUB_ERR_STATE: return "state";
    case HUB_ERR_NOMEM: return "nomem";
    }
    return "invalid-status";
}

#endif
