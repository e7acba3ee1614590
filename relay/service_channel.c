/* service_channel.c - a hub channel that is a connection id on an app's server connection (see service_channel.h). */
#include "relay/service_channel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub/service_hub.h"
#include "protocol/core_peek.h"
#include "protocol/service_msg.h"
#include "relay/clock.h"
#include "relay/log.h"
#include "relay/service.h"

enum channel_state {
    CHANNEL_NEW,     /* opened; begin not called yet */
    CHANNEL_OPENING, /* OpenConnection sent; the app's handshake answer not yet here */
    CHANNEL_OPEN,    /* the answer went up; traffic flows */
};

/* What OpenConnection needs, from open() until begin(): one allocation for
 * the arrays, one for the bytes. */
struct channel_open {
    struct svc_claim *claims;
    size_t claim_count;
    struct svc_header *headers;
    struct span *header_values; /* one value per header */
    size_t header_count;
    struct span query;
    struct span user_id;        /* asrs.s.uid */
    struct span sticky_server;  /* asrs.s.sn */
    bool sticky_required;       /* asrs.s.ssticky = Required */
    char *bytes;
};

/* Why a channel ends on the next loop turn (defer_end): one byte in the record, the text in
 * refusal_texts. */
enum channel_refusal {
    REFUSAL_NONE,
    REFUSAL_NO_SERVER,
    REFUSAL_BEGIN_TWICE,
    REFUSAL_ID_TAKEN,
    REFUSAL_NOT_ADDED,
    REFUSAL_NOT_OPENED,
    REFUSAL_OUT_OF_MEMORY,
};
static const char *const refusal_texts[] = {
    [REFUSAL_NONE] = NULL,
    [REFUSAL_NO_SERVER] = "no app server is connected to this hub",
    [REFUSAL_BEGIN_TWICE] = "begin called twice",
    [REFUSAL_ID_TAKEN] = "the connection id is already connected",
    [REFUSAL_NOT_ADDED] = "the relay could not add the client",
    [REFUSAL_NOT_OPENED] = "the relay could not open the connection to the app",
    [REFUSAL_OUT_OF_MEMORY] = "The relay ran out of memory.",
};

/* One per service-mode client, held as long as the client: its small fields
 * share one word (248 bytes on x86-64, from the service's pool). */
struct service_channel {
    struct hub_channel base;
    struct service_hub *hub;
    struct svc_client client;        /* in hub->model while in_model; client.server->owner is its uplink */
    uint8_t state;                   /* enum channel_state */
    uint8_t refusal;                 /* enum channel_refusal: REFUSAL_NONE, or refused on the next loop turn */
    bool in_model;
    bool paused;                     /* the owner paused delivery */
    bool binary;                     /* MessagePack client */
    bool has_open;                   /* u is `open` (from open until begin), else `alive` */
    struct list_node full_link;      /* in server->full_channels after a HUB_SEND_FULL */
    struct msg_queue *held;          /* for the client: before the handshake answer, or while paused;
                                        allocated on first use, freed once emptied (NULL: none) */
    struct list_node defer_link;     /* in hub->deferred: a refusal, or flushing `held`, from the loop */
    /* One word for two things a channel never holds at once: no message goes up before begin
     * has put the client in the model, and begin lets `open` go before it returns. */
    union {
        struct channel_open *open;   /* what OpenConnection needs, until begin (has_open) */
        bool *alive;                 /* while passing messages up: cleared if the owner closes meanwhile */
    } u;
    /* The client's connection id is client.conn.id, from open on (svc_hub_add_client
     * keeps it: see service_begin). */
};

#define CH_ID(ch) ((ch)->client.conn.id)

static const struct hub_channel_class service_class;

void service_channel_pool_init(struct pool *p)
{
    _Static_assert(_Alignof(struct service_channel) <= 8, "a pool's records are 8-aligned");
    pool_init(p, sizeof(struct service_channel));
}

struct service_channel *service_channel_of(struct svc_client *client)
{
    return list_container_of(client, struct service_channel, client);
}

static struct loop *loop_of(const struct service_channel *ch)
{
    return ch->hub->service->loop;
}

/* The server connection the client is bound to, while it is in the model (else NULL). */
static struct service_uplink *uplink_of(const struct service_channel *ch)
{
    return ch->in_model ? ch->client.server->owner : NULL;
}

static bool held_empty(const struct service_channel *ch)
{
    return !ch->held || msg_queue_is_empty(ch->held);
}

static void held_free(struct service_channel *ch)
{
    if (!ch->held)
        return;
    msg_queue_clear(ch->held);
    free(ch->held);
    ch->held = NULL;
}

/* ------------------------------------------------------------------ model */

static void leave_model(struct service_channel *ch)
{
    if (!ch->in_model)
        return;
    svc_hub_remove_client(&ch->hub->model, &ch->client);
    ch->hub->clients_by_protocol[ch->client.protocol]--;
    ch->in_model = false;
    service_invocations_client_gone(ch->hub, span_from_cstr(CH_ID(ch)));
}

static void unlink_full(struct service_channel *ch)
{
    if (list_is_linked(&ch->full_link))
        list_unlink(&ch->full_link);
}

static void open_free(struct channel_open *o)
{
    if (!o)
        return;
    free(o->claims);
    free(o->bytes);
    free(o);
}

static void channel_free(struct service_channel *ch)
{
    if (!ch->has_open && ch->u.alive)
        *ch->u.alive = false;
    if (list_is_linked(&ch->defer_link))
        list_unlink(&ch->defer_link);
    unlink_full(ch);
    leave_model(ch);
    held_free(ch);
    if (ch->has_open)
        open_free(ch->u.open);
    pool_free(&ch->hub->service->channels, ch);
}

/* Tells the app the client is gone: CloseConnection with the error ("" = none). */
static void send_close_connection(struct service_channel *ch, const char *error)
{
    struct service_uplink *server = uplink_of(ch);
    if (!server || loop_of(ch)->destroying)
        return;
    struct buf out;
    buf_init(&out);
    if (svc_encode_close_connection(&out, span_from_cstr(CH_ID(ch)), error ? span_from_cstr(error) : SPAN_LIT(""),
                                    NULL) == PROTO_OK)
        server->write(server, &out);
    buf_free(&out);
}

/* The end the relay decides (slow client, out of memory): the app hears
 * CloseConnection, the owner `closed`, the channel is freed. */
static void end_by_relay(struct service_channel *ch, const char *why)
{
    bool was_open = ch->state == CHANNEL_OPEN;
    send_close_connection(ch, why);
    leave_model(ch);
    hub_channel_report_end(&ch->base, was_open, why);
    channel_free(ch);
}

/* --------------------------------------------------------------- to client */

/* Passes one message up (the owner may close the channel meanwhile).
 * False if the channel is gone. */
static bool deliver(struct service_channel *ch, struct wsmsg *m)
{
    bool alive = true, *outer = ch->u.alive;
    ch->u.alive = &alive;
    loop_of(ch)->stats.messages_to_clients++;
    loop_of(ch)->stats.bytes_to_clients += m->len;
    hub_channel_deliver(&ch->base, m);
    if (!alive) {
        if (outer)
            *outer = false;
        return false;
    }
    ch->u.alive = outer;
    return true;
}

static bool deliver_bytes(struct service_channel *ch, struct span payload, unsigned kinds)
{
    struct wsmsg *m = wsmsg_copy(payload.ptr, payload.len, ch->binary);
    if (m)
        m->hub_kinds = kinds;
    if (!m) {
        loop_of(ch)->stats.out_of_memory_closes++;
        log_conn_warn(CH_ID(ch), ch->hub->key, "service: out of memory for a message to the client; closing it");
        end_by_relay(ch, "The relay ran out of memory.");
        return false;
    }
    return deliver(ch, m);
}

/* Holds a message for later. False if the channel ended: the client is over
 * its bound (it does not read what the app sends it). */
static bool hold(struct service_channel *ch, struct span payload, unsigned kinds)
{
    struct wsmsg *m = wsmsg_copy(payload.ptr, payload.len, ch->binary);
    if (m)
        m->hub_kinds = kinds;
    if (!m) {
        loop_of(ch)->stats.out_of_memory_closes++;
        end_by_relay(ch, "The relay ran out of memory.");
        return false;
    }
    if (!ch->held && (ch->held = malloc(sizeof *ch->held)) != NULL)
        msg_queue_init(ch->held);
    if (!ch->held) {
        wsmsg_free(m);
        loop_of(ch)->stats.out_of_memory_closes++;
        end_by_relay(ch, "The relay ran out of memory.");
        return false;
    }
    msg_queue_push(ch->held, m);
    if (ch->held->bytes <= loop_of(ch)->cfg->max_buffered_bytes)
        return true;
    ch->hub->service->stats.slow_client_closes++;
    log_conn_info(CH_ID(ch), ch->hub->key, "service: the client does not read what the app sends (over %zu bytes held); closing it",
                  loop_of(ch)->cfg->max_buffered_bytes);
    end_by_relay(ch, "The client was too slow to read what the hub sent it.");
    return false;
}

/* Passes up what is held while the owner takes it. ops may run: call only
 * from the loop. `ignore_pause`: the end is next, everything goes now.
 * False if the channel is gone. */
static bool flush_held(struct service_channel *ch, bool ignore_pause)
{
    struct wsmsg *m;
    while ((ignore_pause || !ch->paused) && ch->base.ops && ch->held && (m = msg_queue_pop(ch->held)) != NULL)
        if (!deliver(ch, m))
            return false;
    if (held_empty(ch))
        held_free(ch);
    return true;
}

/* kinds: the payload's wsmsg.hub_kinds (0: not peeked). */
static void to_client(struct service_channel *ch, struct span payload, unsigned kinds)
{
    if (ch->state != CHANNEL_OPEN || ch->paused || !held_empty(ch)) {
        hold(ch, payload, kinds);
        return;
    }
    deliver_bytes(ch, payload, kinds);
}

/* Runs `deferred` for ch from the loop, once, on its next turn. */
static void defer(struct service_channel *ch)
{
    if (list_is_linked(&ch->defer_link))
        return;
    list_push_back(&ch->hub->deferred, &ch->defer_link);
    if (!timer_is_armed(&ch->hub->deferred_timer))
        loop_timer_schedule(loop_of(ch), &ch->hub->deferred_timer, clock_now_ms());
}

static void deferred(struct service_channel *ch)
{
    if (ch->refusal != REFUSAL_NONE) {
        end_by_relay(ch, refusal_texts[ch->refusal]);
        return;
    }
    if (ch->state == CHANNEL_OPEN)
        flush_held(ch, false);
}

/* The end, from the next loop turn (for a channel call, which may run no op):
 * refused before the app's handshake answer, closed after it; the app hears
 * CloseConnection if it knows the client. */
static void defer_end(struct service_channel *ch, enum channel_refusal why)
{
    ch->refusal = (uint8_t)why;
    defer(ch);
}

/* The hub's deferred channels, as they were when the run began: one deferred
 * again meanwhile waits for the next run, as a re-armed wheel entry does. A
 * channel freed meanwhile has left the list (channel_free). */
void service_channels_deferred(struct timer_entry *e)
{
    struct service_hub *hub = list_container_of(e, struct service_hub, deferred_timer);
    struct list_node now;
    list_init_head(&now);
    while (!list_is_empty(&hub->deferred)) {
        struct list_node *n = hub->deferred.next;
        list_unlink(n);
        list_push_back(&now, n);
    }
    while (!list_is_empty(&now)) {
        struct service_channel *ch = list_container_of(now.next, struct service_channel, defer_link);
        list_unlink(&ch->defer_link);
        deferred(ch);
    }
}

void service_channel_data(struct service_channel *ch, struct span payload, int data_type)
{
    if (ch->state == CHANNEL_OPENING && (data_type == SVC_DATA_HANDSHAKE || data_type == SVC_DATA_NONE)) {
        /* The app's answer to the client's handshake: it goes first, what came before it follows. */
        ch->state = CHANNEL_OPEN;
        bool alive = true, *outer = ch->u.alive;
        ch->u.alive = &alive;
        hub_channel_report_opened(&ch->base, CH_ID(ch));
        if (!alive) {
            if (outer)
                *outer = false;
            return;
        }
        ch->u.alive = outer;
        if (!ch->base.ops || !deliver_bytes(ch, payload, 0))
            return;
        flush_held(ch, false);
        return;
    }
    to_client(ch, payload, 0);
}

/* The payload's kinds, peeked on its first recipient of the send. */
static unsigned peeked_kinds(struct service_fanout_peek *peek, struct span payload, bool binary)
{
    size_t i = 0;
    while (i < 2 && peek->seen[i].ptr && (peek->seen[i].ptr != payload.ptr || peek->seen[i].len != payload.len))
        i++;
    if (i < 2 && peek->seen[i].ptr)
        return peek->seen[i].kinds;
    unsigned kinds = 0;
    bool ok = core_peek_kinds(binary, payload.ptr, payload.len, &kinds, NULL) == PROTO_OK;
    if (i < 2) {
        peek->seen[i].ptr = payload.ptr;
        peek->seen[i].len = payload.len;
        peek->seen[i].kinds = ok ? WSMSG_KINDS_KNOWN | kinds : 0;
    }
    return ok ? WSMSG_KINDS_KNOWN | kinds : 0;
}

void service_channel_fanout(struct service_channel *ch, struct span payload, struct service_fanout_peek *peek)
{
    to_client(ch, payload, peek && payload.ptr ? peeked_kinds(peek, payload, ch->binary) : 0);
}

void service_channel_app_closed(struct service_channel *ch, struct span error)
{
    leave_model(ch); /* the app forgot the client: nothing more to tell it */
    bool was_open = ch->state == CHANNEL_OPEN;
    char why[300];
    const char *reason = NULL;
    if (error.ptr && error.len > 0) {
        snprintf(why, sizeof why, "%.*s", (int)(error.len < 250 ? error.len : 250), error.ptr);
        reason = why;
    }
    if (was_open && !flush_held(ch, true)) /* what the app sent before closing reaches the client first */
        return;
    hub_channel_report_end(&ch->base, was_open, was_open ? reason : (reason ? reason : "the app closed the connection"));
    channel_free(ch);
}

void service_channel_server_lost(struct service_channel *ch, const char *why)
{
    ch->in_model = false; /* the model removed it with its server connection */
    ch->hub->clients_by_protocol[ch->client.protocol]--;
    service_invocations_client_gone(ch->hub, span_from_cstr(CH_ID(ch)));
    unlink_full(ch);
    if (loop_of(ch)->destroying)
        return; /* lws is closing every socket: the owner's own end frees the channel */
    bool was_open = ch->state == CHANNEL_OPEN;
    if (was_open && !flush_held(ch, true)) /* e.g. the Close messages a stopping app sent before it went */
        return;
    hub_channel_report_end(&ch->base, was_open, why);
    channel_free(ch);
}

void service_channels_drained(struct list_node *full_channels)
{
    while (!list_is_empty(full_channels)) {
        struct service_channel *ch = list_container_of(full_channels->next, struct service_channel, full_link);
        list_unlink(&ch->full_link);
        hub_channel_report_drained(&ch->base);
    }
}

/* ------------------------------------------------------------------ open */

static size_t header_entries(const struct header_list *headers, size_t *bytes)
{
    size_t n = 0;
    const char *p = headers ? headers->pairs.data : NULL, *end = p ? p + headers->pairs.len : NULL;
    while (p && p < end) {
        const char *value = p + strlen(p) + 1;
        *bytes += strlen(p) + strlen(value) + 2;
        n++;
        p = value + strlen(value) + 1;
    }
    return n;
}

/* Copies what OpenConnection will say about the client. */
static struct channel_open *open_copy(const struct hub_channel_client *client)
{
    size_t bytes = 0;
    size_t header_count = header_entries(client->headers, &bytes) + 1; /* + X-Forwarded-For */
    for (size_t i = 0; i < client->claim_count; i++)
        bytes += strlen(client->claims[i].type) + strlen(client->claims[i].value) + 2;
    const char *query = client->query ? client->query : "";
    const char *xff = client->forwarded_for ? client->forwarded_for : "";
    bytes += strlen(query) + strlen(xff) + 2;

    struct channel_open *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    size_t arrays = client->claim_count * sizeof *o->claims + header_count * (sizeof *o->headers + sizeof *o->header_values);
    o->claims = malloc(arrays ? arrays : 1);
    o->bytes = malloc(bytes ? bytes : 1);
    if (!o->claims || !o->bytes) {
        open_free(o);
        return NULL;
    }
    o->headers = (struct svc_header *)(o->claims + client->claim_count);
    o->header_values = (struct span *)(o->headers + header_count);
    char *w = o->bytes;
#define COPY(dst, src)                      \
    do {                                    \
        size_t n_ = strlen(src);            \
        memcpy(w, (src), n_ + 1);           \
        (dst) = span_make(w, n_);           \
        w += n_ + 1;                        \
    } while (0)
    for (size_t i = 0; i < client->claim_count; i++) {
        struct svc_claim *c = &o->claims[o->claim_count++];
        COPY(c->type, client->claims[i].type);
        COPY(c->value, client->claims[i].value);
        if (span_eq_cstr(c->type, "asrs.s.uid"))
            o->user_id = c->value;
        else if (span_eq_cstr(c->type, "asrs.s.sn"))
            o->sticky_server = c->value;
        else if (span_eq_cstr(c->type, "asrs.s.ssticky"))
            o->sticky_required = span_eq_nocase(c->value, SPAN_LIT("Required"));
    }
    const char *p = client->headers ? client->headers->pairs.data : NULL;
    const char *end = p ? p + client->headers->pairs.len : NULL;
    while (p && p < end) {
        const char *value = p + strlen(p) + 1;
        /* "name:" as lws spells it; the client's token stays with the relay. */
        if (strcmp(p, "authorization:") != 0) {
            struct svc_header *h = &o->headers[o->header_count];
            COPY(h->name, p);
            h->name.len--; /* the colon */
            COPY(o->header_values[o->header_count], value);
            h->values = &o->header_values[o->header_count];
            h->value_count = 1;
            o->header_count++;
        }
        p = value + strlen(value) + 1;
    }
    if (xff[0]) {
        struct svc_header *h = &o->headers[o->header_count];
        h->name = SPAN_LIT("X-Forwarded-For");
        COPY(o->header_values[o->header_count], xff);
        h->values = &o->header_values[o->header_count];
        h->value_count = 1;
        o->header_count++;
    }
    COPY(o->query, query);
#undef COPY
    return o;
}

struct hub_channel *service_channel_open(struct hub_endpoint *ep, const struct hub_channel_client *client,
                                         const struct hub_channel_ops *ops, void *owner, const char **why)
{
    struct service_hub *hub = list_container_of(ep, struct service_hub, endpoint);
    if (!client->connection_id || strlen(client->connection_id) != HUB_CONN_ID_LEN) {
        *why = "the client has no connection id";
        return NULL;
    }
    if (!service_hub_accepting(hub)) {
        *why = "no app server is connected to this hub";
        return NULL;
    }
    struct service_channel *ch = pool_alloc(&hub->service->channels);
    if (!ch || !(ch->u.open = open_copy(client))) {
        pool_free(&hub->service->channels, ch);
        *why = "the relay ran out of memory";
        return NULL;
    }
    hub_channel_init(&ch->base, &service_class, ops, owner);
    ch->hub = hub;
    ch->state = CHANNEL_NEW;
    ch->has_open = true;
    list_init_node(&ch->full_link);
    list_init_node(&ch->defer_link);
    memcpy(CH_ID(ch), client->connection_id, HUB_CONN_ID_LEN + 1);
    return &ch->base;
}

/* ---------------------------------------------------------------- to app */

/* After a write toward the app: FULL when the shared queue is over the mark. */
static enum hub_send_result queue_state(struct service_channel *ch)
{
    struct service_uplink *server = uplink_of(ch);
    if (server->queued(server) <= loop_of(ch)->cfg->max_buffered_bytes)
        return HUB_SEND_OK;
    if (!list_is_linked(&ch->full_link))
        list_push_back(&server->full_channels, &ch->full_link);
    return HUB_SEND_FULL;
}

static enum hub_send_result service_begin(struct hub_channel *base, enum hub_protocol protocol, struct wsmsg *handshake)
{
    struct service_channel *ch = (struct service_channel *)base;
    struct channel_open *o = ch->has_open ? ch->u.open : NULL;
    enum svc_protocol p = protocol == HUB_PROTOCOL_MSGPACK ? SVC_PROTOCOL_MESSAGEPACK : SVC_PROTOCOL_JSON;
    ch->binary = p == SVC_PROTOCOL_MESSAGEPACK;
    struct svc_server_conn *sc = o ? svc_hub_pick_server(&ch->hub->model, o->sticky_server, o->sticky_required) : NULL;
    if (!sc) {
        wsmsg_free(handshake);
        defer_end(ch, o ? REFUSAL_NO_SERVER : REFUSAL_BEGIN_TWICE);
        return HUB_SEND_CLOSED;
    }
    char id[HUB_CONN_ID_LEN + 1]; /* add_client clears the record it copies the id into */
    memcpy(id, CH_ID(ch), sizeof id);
    enum hub_status st = svc_hub_add_client(&ch->hub->model, &ch->client, span_make(id, HUB_CONN_ID_LEN), p, o->user_id, sc);
    memcpy(CH_ID(ch), id, sizeof id);
    if (st != HUB_OK) {
        wsmsg_free(handshake);
        defer_end(ch, st == HUB_ALREADY ? REFUSAL_ID_TAKEN : REFUSAL_NOT_ADDED);
        return HUB_SEND_CLOSED;
    }
    ch->in_model = true;
    ch->hub->clients_by_protocol[p]++;
    struct buf out;
    buf_init(&out);
    struct proto_error err = { 0 };
    bool ok = svc_encode_open_connection(&out, span_from_cstr(CH_ID(ch)), o->claims, o->claim_count, o->headers,
                                         o->header_count, o->query, span_from_cstr(svc_protocol_name(p)), &err) == PROTO_OK &&
              svc_encode_connection_data(&out, span_from_cstr(CH_ID(ch)), span_make((const char *)handshake->payload, handshake->len),
                                         false, &err) == PROTO_OK &&
              uplink_of(ch)->write(uplink_of(ch), &out);
    buf_free(&out);
    wsmsg_free(handshake);
    open_free(o);
    ch->has_open = false;
    ch->u.alive = NULL;
    if (!ok) {
        log_conn_warn(CH_ID(ch), ch->hub->key, "service: OpenConnection could not be sent: %s",
                 err.detail[0] ? err.detail : "the server connection is closing");
        defer_end(ch, REFUSAL_NOT_OPENED);
        return HUB_SEND_CLOSED;
    }
    ch->state = CHANNEL_OPENING;
    ch->hub->service->stats.clients_opened++;
    return queue_state(ch);
}

static enum hub_send_result service_send(struct hub_channel *base, struct wsmsg *msg)
{
    struct service_channel *ch = (struct service_channel *)base;
    struct service_uplink *server = uplink_of(ch);
    if (ch->state == CHANNEL_NEW || !server || ch->refusal != REFUSAL_NONE) {
        wsmsg_free(msg);
        return HUB_SEND_CLOSED;
    }
    struct buf out;
    buf_init(&out);
    size_t len = msg->len;
    bool encoded = svc_encode_connection_data(&out, span_from_cstr(CH_ID(ch)), span_make((const char *)msg->payload, msg->len),
                                              false, NULL) == PROTO_OK;
    bool written = encoded && server->write(server, &out);
    buf_free(&out);
    wsmsg_free(msg);
    if (!encoded) { /* out of memory: the client ends with a reason, no message goes missing unsaid */
        loop_of(ch)->stats.out_of_memory_closes++;
        defer_end(ch, REFUSAL_OUT_OF_MEMORY);
        return HUB_SEND_CLOSED;
    }
    if (!written) /* the server connection is closing (or ran out of memory): its end reaches this channel */
        return HUB_SEND_OK;
    loop_of(ch)->stats.messages_to_backend++;
    loop_of(ch)->stats.bytes_to_backend += len;
    return queue_state(ch);
}

static void service_pause(struct hub_channel *base, bool paused)
{
    struct service_channel *ch = (struct service_channel *)base;
    ch->paused = paused;
    if (!paused && !held_empty(ch) && ch->state == CHANNEL_OPEN && ch->refusal == REFUSAL_NONE)
        defer(ch);
}

static void service_close(struct hub_channel *base, const char *error)
{
    struct service_channel *ch = (struct service_channel *)base;
    ch->base.ops = NULL;
    if (ch->in_model)
        send_close_connection(ch, error);
    channel_free(ch);
}

static const char *service_id(const struct hub_channel *base)
{
    return CH_ID((const struct service_channel *)base);
}

static const struct hub_channel_class service_class = {
    service_begin, service_send, service_pause, service_close, service_id,
};

/* ------------------------------------------------------- named endpoint */

static struct hub_channel *named_open(struct hub_endpoint *base, const struct hub_channel_client *client,
                                      const struct hub_channel_ops *ops, void *owner, const char **why)
{
    struct service_named_endpoint *ep = (struct service_named_endpoint *)base;
    if (!client->claims) { /* a legacy client's identity comes from the app's negotiate, per hub */
        *why = "the app's negotiate has not said who the client is for this hub (a legacy client reaches a "
               "service-mode hub only through --app-negotiate HUB=URL)";
        return NULL;
    }
    struct service_hub *hub = service_hub_find(ep->service, span_from_cstr(ep->key[0] ? ep->key : base->name));
    if (!hub) {
        *why = "no app server has connected this hub";
        return NULL;
    }
    return service_channel_open(&hub->endpoint, client, ops, owner, why);
}

bool service_named_endpoint_init(struct service_named_endpoint *ep, struct service *svc, const char *name)
{
    memset(ep, 0, sizeof *ep);
    ep->service = svc;
    ep->base.open = named_open;
    ep->base.name = strdup(name);
    return ep->base.name != NULL;
}

void service_named_endpoint_free(struct service_named_endpoint *ep)
{
    free((char *)ep->base.name);
    ep->base.name = NULL;
}

void service_named_endpoint_learn(struct service_named_endpoint *ep, struct span key)
{
    if (key.len > 0 && key.len <= SERVICE_HUB_KEY_MAX)
        snprintf(ep->key, sizeof ep->key, "%.*s", (int)key.len, key.ptr);
}
