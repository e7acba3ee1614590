/* backend_conn.h - what both kinds of backend connection share: the backends of the relay
 * (local source addresses, the resolver, the instances of each hub), and the start of one
 * lws client connection: pick an instance, resolve its host name off the loop, connect lws to
 * the numeric address, bound the wait for the backend's answer.
 *
 * relay/backend.c builds negotiate requests and WebSocket links on top: each embeds a
 * struct backend_conn first and gives it a struct backend_conn_kind, through which this file
 * reports a failure that happens outside any call of the owner (a lookup that fails, the
 * deadline) and frees the object.
 *
 * Which instance (relay/backend_pool.h): a connection given a pin (struct backend_pin, what
 * an earlier negotiate used) goes to that instance and address; any other goes to the usable
 * instance with the fewest connections, and a negotiate whose instance refuses it tries the
 * next usable one (backend_conn_retry) before the owner hears of a failure. */
#ifndef SR_BACKEND_CONN_H
#define SR_BACKEND_CONN_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/timer_wheel.h"
#include "relay/backend_pool.h"
#include "relay/backend_probe.h"
#include "relay/config.h"
#include "relay/http.h"
#include "relay/loop.h"
#include "relay/resolver.h"
#include "relay/wsi_role.h"

/* lws 4.1.6 writes a client request's line ("POST <path> HTTP/1.1") into 2048
 * bytes and cuts what does not fit: the backend would read a cut request. A
 * longer one is refused instead. */
#define BACKEND_MAX_REQUEST_LINE 2000

/* The relay's client side toward backends: the loop its connections run on
 * and the local addresses they bind to in turn (--backend-source). */
struct backends {
    struct loop *loop;
    char **sources;
    unsigned source_count;
    /* Negotiate requests and links take the addresses in turn, each kind on its
     * own count: one count for both would give every link the same address
     * whenever the count of addresses is even (each link follows a negotiate). */
    unsigned source_next_negotiate;
    unsigned source_next_link;
    /* Backend host names are resolved here, off the loop, and cached; NULL
     * on lws' own poll() loop, where lws resolves them (blocking). */
    struct resolver *resolver;
    struct backend_pools pools;  /* each hub's instances */
    struct backend_probes probes; /* TCP connects to them, --probe-interval */
};

/* Parses the configured source addresses and makes each hub's pool. False when out of memory. */
bool backends_init(struct backends *b, struct loop *loop);
/* A reloaded configuration (loop->cfg already points at it): hubs added, removed, re-pointed.
 * An instance no longer configured drains: no new connection goes there, and its backend
 * links are ended after --drain-timeout (their clients hear an error that allows
 * reconnecting) unless they end first. False when out of memory. */
bool backends_apply_config(struct backends *b);
/* Once the loop has its lws context: creates the resolver (--dns-servers,
 * --resolv-conf). False after logging why. */
bool backends_start_resolver(struct backends *b);
/* Destroys the resolver: connections still waiting for a name fail ("the
 * resolver is shutting down") and their owners hear it. Before the lws
 * context goes (the owners' reactions still need it). */
void backends_stop_resolver(struct backends *b);
void backends_free(struct backends *b);

/* Where a backend connection went: the instance (its id, relay/backend_pool.h) and the
 * numeric address ("" when lws resolved the name itself). A negotiate's pin sends the
 * WebSocket that follows it to the same backend process. */
struct backend_pin {
    uint32_t instance;              /* 0: none */
    char addr[INET6_ADDRSTRLEN];
};

/* A backend token carried with its pin, "INSTANCE ADDRESS\tTOKEN" (what the relay's negotiate
 * leaves for the client's WebSocket: struct hub_channel_client.negotiated_token). */
char *backend_pin_join(const struct backend_pin *pin, const char *token);
/* Splits what backend_pin_join made: fills *pin (instance 0 when s carries none) and
 * returns the token part of s. */
const char *backend_pin_split(const char *s, struct backend_pin *pin);

/* What a backend request carries from the client. Strings are copied. */
struct backend_params {
    const struct hub_route *route;
    const char *query;          /* "name=value&..." already encoded, or "" */
    const struct header_list *headers; /* the client's headers to pass on (copied) */
    const char *forwarded_for;  /* value for X-Forwarded-For, or NULL */
    /* 0, or: the request fails ("the backend did not answer within N s")
     * unless the negotiate is answered / the WebSocket is open by then,
     * counting the name lookup. */
    unsigned timeout_ms;
    const struct backend_pin *pin; /* NULL: any instance */
};

/* ---- for relay/backend.c ------------------------------------------------- */

/* The headers a backend connection sends with its request, owned. */
struct forwarded {
    struct header_list headers;
    char *forwarded_for;
};

struct backend_conn;
struct backend_conn_kind {
    /* The owner hears `why`: the connection failed before it was of use. */
    void (*report_failure)(struct backend_conn *c, const char *why);
    /* Frees the object; no wsi refers to it. */
    void (*free)(struct backend_conn *c);
    /* Its instance was removed and --drain-timeout passed: end it, the owner hearing `why`. */
    void (*drain)(struct backend_conn *c, const char *why);
};

/* The head of both kinds of backend connection: the tag lws' opaque user
 * data is recognised by, the wsi, the headers to send, what is needed to
 * connect once the backend's host name is resolved, the deadline for the
 * backend's answer, and what happened inside lws_client_connect_via_info. */
struct backend_conn {
    enum wsi_role role;               /* WSI_ROLE_BACKEND_NEGOTIATE or WSI_ROLE_BACKEND_LINK */
    const struct backend_conn_kind *kind;
    struct loop *loop;
    struct backends *backends;
    struct lws *wsi;
    struct forwarded fwd;
    struct backend_pool *pool;        /* its hub's; NULL for a pinned connection */
    struct backend_instance *inst;    /* where it goes; counted in its active connections */
    struct list_node inst_link;       /* links: in inst->conns */
    int addr_slot;                    /* inst->addrs[] counting it, or -1 */
    const struct backend_target *target;
    struct backend_pin pin;           /* where it goes (instance, address once known) */
    bool pinned;                      /* given a pin: no other instance will do */
    uint32_t tried;                   /* pool members tried (retries) */
    unsigned addr_retries;            /* other addresses of the instance tried */
    char *rest;                       /* path after the target's: "SUFFIX?ARGS", owned */
    const char *method;               /* "POST" (negotiate) or NULL (WebSocket) */
    const char *protocol_name;
    const char *destroy_text;         /* what the owner hears if lws destroys the wsi */
    struct resolver_request dns;      /* pending while the host name is looked up */
    struct timer_entry deadline;      /* --backend-timeout, when the starter asked for one */
    unsigned timeout_ms;
    bool connecting;                  /* inside lws_client_connect_via_info */
    bool failed_while_connecting;     /* lws reported a connection error meanwhile */
    bool destroyed_while_connecting;  /* ... and destroyed the wsi too (e.g. at the descriptor limit) */
};

enum conn_start {
    CONN_STARTED,          /* connecting, or resolving the name first (no wsi yet) */
    CONN_FAILED_FREE_NOW,  /* no wsi is left: the caller frees its object */
    CONN_FAILED_LWS_FREES, /* lws still holds the wsi: its WSI_DESTROY frees the object */
};

/* Starts c (zeroed but for role and kind) toward an instance of params->route. `suffix` and
 * `first_arg` make the path after the instance's ("/negotiate", "negotiateVersion=1"). */
enum conn_start backend_conn_start(struct backend_conn *c, struct backends *b, const struct backend_params *params,
                                   const char *suffix, const char *first_arg, const char *method,
                                   const char *protocol_name);
/* After a refusal (the caller holds c, detached from its wsi): a negotiate tries the next
 * usable instance. True when that is under way (or lws holds c again); false: report and free. */
bool backend_conn_retry(struct backend_conn *c);
/* lws reports the connection over (error or close). Inside conn_start it is
 * only noted (the object stays the caller's); otherwise the wsi is detached
 * and the caller reports and frees: true. */
bool backend_conn_ended(struct backend_conn *c, struct lws *wsi);
/* lws destroys the wsi: inside conn_start the object is the caller's (false). */
bool backend_conn_destroyed(struct backend_conn *c);
/* The backend answered (negotiate status, WebSocket open): its instance is fine; no deadline. */
void backend_conn_worked(struct backend_conn *c);
/* The backend refused the connection: its instance backs off. */
void backend_conn_failed(struct backend_conn *c);
/* What every free of a connection object does first (idempotent). */
void backend_conn_release(struct backend_conn *c);
/* Adds the forwarded headers while lws builds the request. */
int backend_conn_append_headers(struct lws *wsi, const struct backend_conn *c, void *in, size_t len);
/* Frees the forwarded headers (once the request went out). */
void backend_conn_drop_headers(struct backend_conn *c);

#endif
