/* legacy_link.c - one legacy connection's link to one hub (see legacy_link.h). */
#include "relay/legacy_link.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "containers/buf.h"
#include "protocol/core_json.h"
#include "protocol/handshake.h"
#include "protocol/legacy_frame.h"
#include "protocol/legacy_translate.h"
#include "relay/log.h"
#include "relay/wsmsg.h"

#define STREAMING_MISUSE_HEAD "The client attempted to invoke the streaming '"
#define STREAMING_MISUSE_TAIL "' method with a non-streaming invocation."
#define CLIENT_RESULTS_UNSUPPORTED "Client results are not supported: the client is a legacy ASP.NET SignalR client."
#define OUT_OF_MEMORY_TEXT "The relay ran out of memory."
/* The Core protocol and version a legacy link speaks to its hub. */
#define LINK_PROTOCOL HUB_PROTOCOL_JSON
#define LINK_PROTOCOL_VERSION 1

/* One legacy invocation awaiting its Core completion. */
struct legacy_call {
    struct list_node node;
    uint64_t core_id;
    char *legacy_id;
    char *hub;        /* the hub as the client wrote it in this invocation, for error texts */
    char *target;
    struct buf args;  /* kept for a re-invocation as a stream */
    bool streaming;
};

static const struct hub_channel_ops link_channel_ops;

/* ------------------------------------------------- streaming methods cache */

void legacy_hub_free(struct legacy_hub *hub)
{
    for (size_t i = 0; i < hub->streaming_count; i++)
        free(hub->streaming_methods[i]);
    hub->streaming_count = 0;
    buf_free(&hub->last_record);
    replay_text_unref(hub->last_element);
    hub->last_element = NULL;
}

static bool hub_is_streaming(const struct legacy_hub *hub, const char *method)
{
    for (size_t i = 0; i < hub->streaming_count; i++)
        if (strcasecmp(hub->streaming_methods[i], method) == 0)
            return true;
    return false;
}

static void hub_mark_streaming(struct legacy_hub *hub, const char *method)
{
    if (hub_is_streaming(hub, method) || hub->streaming_count >= LEGACY_HUB_MAX_STREAMING_METHODS)
        return;
    char *copy = strdup(method);
    if (copy) {
        hub->streaming_methods[hub->streaming_count++] = copy;
        log_info("legacy: hub %s method %s is a stream; legacy calls to it now get progress messages",
                 hub->endpoint->name, method);
    }
}

/* ---------------------------------------------------------------- calls */

static void call_free(struct legacy_call *c)
{
    list_unlink(&c->node);
    free(c->legacy_id);
    free(c->hub);
    free(c->target);
    buf_free(&c->args);
    free(c);
}

static struct legacy_call *call_find(struct legacy_link *l, struct span core_id)
{
    char text[24];
    if (core_id.len == 0 || core_id.len >= sizeof text)
        return NULL;
    memcpy(text, core_id.ptr, core_id.len);
    text[core_id.len] = '\0';
    char *end;
    unsigned long long id = strtoull(text, &end, 10);
    if (*end)
        return NULL;
    for (struct list_node *n = l->calls.next; n != &l->calls; n = n->next) {
        struct legacy_call *c = list_container_of(n, struct legacy_call, node);
        if (c->core_id == id)
            return c;
    }
    return NULL;
}

bool legacy_result_error(struct buf *out, const char *legacy_id, const char *text)
{
    struct legacy_hub_result res = { .id = span_from_cstr(legacy_id), .error = span_from_cstr(text) };
    return legacy_hub_result_encode(out, &res, NULL) == PROTO_OK;
}

static void reply_error(struct legacy_link *l, const char *legacy_id, const char *text)
{
    struct buf out;
    buf_init(&out);
    if (legacy_result_error(&out, legacy_id, text))
        l->ops->reply(l->owner, out.data, out.len);
    buf_free(&out);
}

/* ------------------------------------------------------------- to the hub */

static void link_send(struct legacy_link *l, struct wsmsg *m)
{
    if (!l->channel) {
        if (l->awaiting_identity) /* sent in order once the channel opens */
            msg_queue_push(&l->held, m);
        else
            wsmsg_free(m);
        return;
    }
    if (hub_channel_send(l->channel, m) == HUB_SEND_FULL)
        l->full = true;
}

/* A message that cannot be built is never dropped quietly: the link fails
 * (see end_if_out_of_memory) and the client hears why. */
static bool link_send_json(struct legacy_link *l, const struct hub_msg *msg)
{
    struct buf out;
    buf_init(&out);
    bool ok = core_json_encode(msg, &out, NULL) == PROTO_OK;
    struct wsmsg *m = ok ? wsmsg_copy(out.data, out.len, false) : NULL;
    buf_free(&out);
    if (m) {
        link_send(l, m);
        return true;
    }
    if (!l->out_of_memory)
        l->hub->loop->stats.out_of_memory_closes++;
    l->out_of_memory = true;
    return false;
}

static void link_failed(struct legacy_link *l, const char *why);

/* At the end of every entry point: a message could not be built meanwhile. */
static void end_if_out_of_memory(struct legacy_link *l)
{
    if (l->out_of_memory && l->state != LEGACY_LINK_FAILED)
        link_failed(l, "the relay ran out of memory");
}

static bool send_call(struct legacy_link *l, struct legacy_call *c)
{
    char id[24];
    c->core_id = l->next_id++;
    snprintf(id, sizeof id, "%llu", (unsigned long long)c->core_id);
    struct hub_msg msg;
    hub_msg_init(&msg);
    msg.kind = c->streaming ? HUB_MSG_STREAM_INVOCATION : HUB_MSG_INVOCATION;
    msg.invocation_id = span_from_cstr(id);
    msg.target = span_from_cstr(c->target);
    if (c->args.len)
        msg.args = (struct payload){ PAYLOAD_JSON, buf_span(&c->args) };
    return link_send_json(l, &msg);
}

void legacy_link_invoke(struct legacy_link *l, const char *legacy_id, const struct hub_msg *msg)
{
    if (l->state == LEGACY_LINK_FAILED) {
        if (legacy_id[0])
            reply_error(l, legacy_id, l->failure);
        return;
    }
    if (!legacy_id[0]) {
        /* No I: fire and forget, as a Core invocation without an id. */
        struct hub_msg fire;
        hub_msg_init(&fire);
        fire.kind = HUB_MSG_INVOCATION;
        fire.target = msg->target;
        fire.args = msg->args;
        link_send_json(l, &fire);
        end_if_out_of_memory(l);
        return;
    }
    struct legacy_call *c = calloc(1, sizeof *c);
    if (!c) {
        reply_error(l, legacy_id, OUT_OF_MEMORY_TEXT);
        return;
    }
    buf_init(&c->args);
    list_push_back(&l->calls, &c->node);
    c->legacy_id = strdup(legacy_id);
    c->hub = strndup(msg->hub.ptr ? msg->hub.ptr : "", msg->hub.len);
    c->target = strndup(msg->target.ptr ? msg->target.ptr : "", msg->target.len);
    if (!c->legacy_id || !c->hub || !c->target ||
        (msg->args.encoding == PAYLOAD_JSON && !buf_append_span(&c->args, msg->args.bytes))) {
        reply_error(l, legacy_id, OUT_OF_MEMORY_TEXT);
        call_free(c);
        return;
    }
    c->streaming = hub_is_streaming(l->hub, c->target);
    if (!send_call(l, c)) {
        reply_error(l, legacy_id, OUT_OF_MEMORY_TEXT);
        call_free(c);
    }
    end_if_out_of_memory(l);
}

/* ------------------------------------------------------------ lifecycle */

static void fail_calls(struct legacy_link *l, const char *text)
{
    while (!list_is_empty(&l->calls)) {
        struct legacy_call *c = list_container_of(l->calls.next, struct legacy_call, node);
        reply_error(l, c->legacy_id, text);
        call_free(c);
    }
}

void legacy_link_close(struct legacy_link *l)
{
    if (l->channel)
        hub_channel_close(l->channel, NULL);
    l->channel = NULL;
}

void legacy_link_free(struct legacy_link *l)
{
    legacy_link_close(l);
    msg_queue_clear(&l->held);
    while (!list_is_empty(&l->calls))
        call_free(list_container_of(l->calls.next, struct legacy_call, node));
    free(l);
}

void legacy_link_pause(struct legacy_link *l, bool paused)
{
    if (l->channel)
        hub_channel_pause(l->channel, paused);
}

/* A link that never opened says it could not connect; one that was open says it lost the hub.
 * A /start failing on it answers 504 when the backend did not answer within --backend-timeout,
 * 500 when the relay ran out of memory, else 502. */
static void set_failure(struct legacy_link *l, const char *why)
{
    bool never_opened = l->state == LEGACY_LINK_OPENING;
    l->state = LEGACY_LINK_FAILED;
    l->failure_status = why && strstr(why, "out of memory") ? 500 : hub_channel_refusal_status(why);
    snprintf(l->failure, sizeof l->failure, "The relay %s the backend hub '%s'%s%s",
             never_opened ? "could not connect to" : "lost its connection to", l->hub->endpoint->name,
             why ? ": " : ".", why ? why : "");
}

static void link_failed(struct legacy_link *l, const char *why)
{
    set_failure(l, why);
    log_info("legacy: backend link for hub %s failed: %s", l->hub->endpoint->name, why ? why : "closed");
    legacy_link_close(l);
    fail_calls(l, l->failure);
    l->ops->changed(l->owner, l);
}

static struct legacy_link *link_new(struct legacy_hub *hub, struct span spelled, bool listed,
                                    const struct legacy_link_ops *ops, void *owner)
{
    struct legacy_link *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->hub = hub;
    l->ops = ops;
    l->owner = owner;
    l->listed = listed;
    snprintf(l->hub_as_spelled, sizeof l->hub_as_spelled, "%.*s", (int)spelled.len, spelled.ptr);
    list_init_head(&l->calls);
    msg_queue_init(&l->held);
    l->state = LEGACY_LINK_OPENING;
    return l;
}

/* Opens the channel and sends the handshake, then what was held. False when the link failed
 * (its failure set; calls are the caller's to fail). */
static bool link_begin(struct legacy_link *l, const struct hub_channel_client *client)
{
    const char *why = NULL;
    l->channel = hub_channel_open(l->hub->endpoint, client, &link_channel_ops, l, &why);
    if (!l->channel) {
        set_failure(l, why);
        return false;
    }
    /* The relay speaks Core JSON to the hub on the client's behalf: its handshake from the encoder. */
    struct buf hs;
    buf_init(&hs);
    struct wsmsg *m = handshake_encode_request(span_from_cstr(hub_protocol_name(LINK_PROTOCOL)), LINK_PROTOCOL_VERSION,
                                               &hs, NULL) == PROTO_OK
                          ? wsmsg_copy(hs.data, hs.len, false)
                          : NULL;
    buf_free(&hs);
    if (!m) {
        legacy_link_close(l);
        set_failure(l, "out of memory");
        return false;
    }
    if (hub_channel_begin(l->channel, LINK_PROTOCOL, m) == HUB_SEND_FULL)
        l->full = true;
    struct wsmsg *held;
    while (l->channel && (held = msg_queue_pop(&l->held)) != NULL)
        link_send(l, held);
    return true;
}

struct legacy_link *legacy_link_open(struct legacy_hub *hub, const struct hub_channel_client *client,
                                     struct span spelled, bool listed, const struct legacy_link_ops *ops, void *owner)
{
    struct legacy_link *l = link_new(hub, spelled, listed, ops, owner);
    if (l)
        link_begin(l, client);
    return l;
}

struct legacy_link *legacy_link_open_later(struct legacy_hub *hub, struct span spelled,
                                           const struct legacy_link_ops *ops, void *owner)
{
    struct legacy_link *l = link_new(hub, spelled, false, ops, owner);
    if (l)
        l->awaiting_identity = true;
    return l;
}

void legacy_link_connect(struct legacy_link *l, const struct hub_channel_client *client)
{
    if (!l->awaiting_identity)
        return;
    l->awaiting_identity = false;
    if (!link_begin(l, client)) {
        msg_queue_clear(&l->held);
        log_info("legacy: link for hub %s failed: %s", l->hub->endpoint->name, l->failure);
        fail_calls(l, l->failure);
        l->ops->changed(l->owner, l);
    }
}

void legacy_link_refuse(struct legacy_link *l, const char *why)
{
    if (!l->awaiting_identity)
        return;
    l->awaiting_identity = false;
    msg_queue_clear(&l->held);
    link_failed(l, why);
}

/* ------------------------------------------------------------- from the hub */

/* A translation worth keeping for the next recipient: a fan-out's payload, not a huge one. */
#define SHARED_TRANSLATION_MAX (64u * 1024u)

static bool translation_cached(const struct legacy_hub *hub, struct span record)
{
    return hub->last_element && hub->last_record.len == record.len && record.len > 0 &&
           memcmp(hub->last_record.data, record.ptr, record.len) == 0;
}

static void translation_keep(struct legacy_hub *hub, struct span record, struct replay_text *element)
{
    buf_reset(&hub->last_record);
    replay_text_unref(hub->last_element);
    hub->last_element = NULL;
    if (record.len > SHARED_TRANSLATION_MAX || !buf_append_span(&hub->last_record, record))
        buf_reset(&hub->last_record); /* nothing kept: the next one is translated again */
    else
        hub->last_element = replay_text_ref(element);
}

/* An element for the client, in a text of its own; out of memory fails the link (never dropped
 * quietly). NULL then. */
static struct replay_text *element_text(struct legacy_link *l, const struct buf *out)
{
    struct replay_text *t = replay_text_new(out->data, out->len);
    if (!t) {
        if (!l->out_of_memory)
            l->hub->loop->stats.out_of_memory_closes++;
        l->out_of_memory = true;
    }
    return t;
}

static void handle_core_invocation(struct legacy_link *l, struct hub_msg *msg, struct span record)
{
    if (span_is_set(msg->invocation_id) && msg->invocation_id.len > 0) {
        /* The backend awaits a client result a legacy client cannot give: answer at once. */
        struct hub_msg reply;
        hub_msg_init(&reply);
        reply.kind = HUB_MSG_COMPLETION;
        reply.invocation_id = msg->invocation_id;
        reply.completion = COMPLETION_ERROR;
        reply.error = SPAN_LIT(CLIENT_RESULTS_UNSUPPORTED);
        link_send_json(l, &reply);
        return;
    }
    if (!l->listed)
        return; /* not subscribed: the original would not deliver it either */
    struct buf out;
    buf_init(&out);
    /* H is the hub's own name, as a 2.x server writes its hub's name whatever
     * the client's spelling: here the name it is configured under. */
    struct replay_text *element = NULL;
    if (legacy_translate_invocation(&out, msg, span_from_cstr(l->hub->endpoint->name), NULL) == PROTO_OK &&
        (element = element_text(l, &out)) != NULL) {
        translation_keep(l->hub, record, element);
        l->ops->push(l->owner, element);
    }
    replay_text_unref(element);
    buf_free(&out);
}

static bool is_streaming_misuse(struct span error)
{
    size_t head = sizeof STREAMING_MISUSE_HEAD - 1, tail = sizeof STREAMING_MISUSE_TAIL - 1;
    return error.len > head + tail && memcmp(error.ptr, STREAMING_MISUSE_HEAD, head) == 0 &&
           memcmp(error.ptr + error.len - tail, STREAMING_MISUSE_TAIL, tail) == 0;
}

static void handle_core_completion(struct legacy_link *l, struct hub_msg *msg)
{
    struct legacy_call *c = call_find(l, msg->invocation_id);
    if (!c)
        return;
    if (msg->completion == COMPLETION_ERROR && !c->streaming && is_streaming_misuse(msg->error)) {
        hub_mark_streaming(l->hub, c->target);
        c->streaming = true;
        send_call(l, c);
        return;
    }
    msg->invocation_id = span_from_cstr(c->legacy_id);
    struct buf out, text;
    buf_init(&out);
    buf_init(&text);
    /* Core's generic failure texts become the one text a 2.x server writes for them. */
    if (msg->completion == COMPLETION_ERROR && legacy_core_generic_failure(msg->error)) {
        if (legacy_invocation_failure_text(&text, span_from_cstr(c->hub), span_from_cstr(c->target)))
            msg->error = buf_span(&text);
    }
    if (legacy_translate_completion(&out, msg, NULL) == PROTO_OK)
        l->ops->reply(l->owner, out.data, out.len);
    buf_free(&out);
    buf_free(&text);
    call_free(c);
}

static void handle_core_stream_item(struct legacy_link *l, struct hub_msg *msg)
{
    struct legacy_call *c = call_find(l, msg->invocation_id);
    if (!c)
        return;
    msg->invocation_id = span_from_cstr(c->legacy_id);
    struct buf out;
    buf_init(&out);
    struct replay_text *element = NULL;
    if (legacy_translate_stream_item(&out, msg, NULL) == PROTO_OK && (element = element_text(l, &out)) != NULL)
        l->ops->push(l->owner, element);
    replay_text_unref(element);
    buf_free(&out);
}

/* The hub's answer to the link's handshake. False when the link failed. */
static bool handle_handshake_answer(struct legacy_link *l, struct span record)
{
    struct handshake_response resp;
    if (handshake_decode_response(record.ptr, record.len, &resp, NULL) != PROTO_OK) {
        link_failed(l, "the backend's handshake answer could not be read");
        return false;
    }
    if (span_is_set(resp.error)) {
        char why[200];
        snprintf(why, sizeof why, "handshake refused: %.*s", (int)resp.error.len, resp.error.ptr);
        handshake_response_release(&resp);
        link_failed(l, why);
        return false;
    }
    handshake_response_release(&resp);
    l->state = LEGACY_LINK_READY;
    l->ops->changed(l->owner, l);
    return true;
}

/* Returns false when the link ended. */
static bool handle_core_record(struct legacy_link *l, struct span record)
{
    if (l->state == LEGACY_LINK_OPENING)
        return handle_handshake_answer(l, record);
    if (l->listed && translation_cached(l->hub, record)) { /* the same send, for another recipient */
        l->hub->loop->stats.legacy_shared_translations++;
        l->ops->push(l->owner, l->hub->last_element);
        return true;
    }
    struct hub_msg msg;
    hub_msg_init(&msg);
    enum proto_status st = core_json_decode(record.ptr, record.len, &msg, NULL);
    bool alive = true;
    if (st == PROTO_OK) {
        switch (msg.kind) {
        case HUB_MSG_INVOCATION: handle_core_invocation(l, &msg, record); break;
        case HUB_MSG_COMPLETION: handle_core_completion(l, &msg); break;
        case HUB_MSG_STREAM_ITEM: handle_core_stream_item(l, &msg); break;
        case HUB_MSG_CLOSE: {
            char why[300];
            snprintf(why, sizeof why, "the backend closed the connection%s%.*s", span_is_set(msg.error) ? ": " : "",
                     (int)msg.error.len, msg.error.ptr ? msg.error.ptr : "");
            link_failed(l, why);
            alive = false;
            break;
        }
        default: break; /* pings and anything else need nothing from us */
        }
    } else if (st != PROTO_UNKNOWN_TYPE) {
        l->hub->loop->stats.protocol_errors++;
    }
    hub_msg_release(&msg);
    return alive;
}

static void channel_message(void *owner, struct wsmsg *m)
{
    struct legacy_link *l = owner;
    const char *data = (const char *)m->payload;
    size_t len = m->len;
    /* l->channel is NULL once the link failed or its connection ended meanwhile. */
    while (len > 0 && l->channel) {
        struct span record;
        size_t consumed;
        if (core_text_next_record(data, len, SIZE_MAX, &record, &consumed, NULL) != PROTO_OK)
            break; /* the backend sends whole records; a tail without RS is dropped */
        if (!handle_core_record(l, record))
            break;
        data += consumed;
        len -= consumed;
    }
    wsmsg_free(m);
    end_if_out_of_memory(l);
}

static void channel_ended(void *owner, const char *why)
{
    struct legacy_link *l = owner;
    l->channel = NULL;
    if (l->state != LEGACY_LINK_FAILED)
        link_failed(l, why ? why : "the backend closed the connection");
}

static void channel_drained(void *owner)
{
    struct legacy_link *l = owner;
    l->full = false;
    l->ops->drained(l->owner);
}

static const struct hub_channel_ops link_channel_ops = {
    .message = channel_message,
    .drained = channel_drained,
    .refused = channel_ended,
    .closed = channel_ended,
};
