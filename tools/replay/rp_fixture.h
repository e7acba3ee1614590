/* rp_fixture.h - a fixture (docs/FIXTURES.md) as a replay reads it: its events in file order,
 * each event stream's recorded `data:` lines placed in the timeline where their chunk came
 * (sse-event) and a client cut of a response at its tEnd (http-cut), and per WebSocket what the
 * server is expected to send: the sequence of items (each element of a PersistentResponse's M,
 * each standalone frame) and the recorded frames over it. Parsed once per replay: the run's
 * progress (done flags) lives here too. */
#ifndef RP_FIXTURE_H
#define RP_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

enum rp_ev_type {
    EV_OTHER,
    EV_HTTP_REQ,
    EV_HTTP_RESP,
    EV_SSE,        /* one recorded event of an event stream (not a line of the file) */
    EV_HTTP_CUT,   /* the client cuts response `id` here (not a line of the file) */
    EV_HTTP_HEAD,  /* the head of event stream `id` came (not a line of the file) */
    EV_WS_OPEN,
    EV_WS_ACCEPTED,
    EV_WS_REFUSED,
    EV_WS_FRAME,
    EV_WS_CLOSE,
};

struct rp_frame;

struct rp_event {
    int type;
    int line;            /* line number in the file */
    int id;              /* http id */
    int ws;              /* WebSocket number */
    int has_t;
    int64_t t;
    const cJSON *j;      /* the line (NULL for EV_SSE / EV_HTTP_CUT) */
    int c2s;             /* ws-frame dir */
    int by_client;       /* ws-close by */
    char *data;          /* EV_SSE: the data line's text */
    int index;           /* EV_SSE: its number in the stream */
    int server;          /* the server's side: waited for and compared */
    int done;
    struct rp_frame *frame; /* s2c ws-frame, Core poll answer: what it expects */
    int poll_ws;         /* Core long polling (request and its 200/204 answer): the poll stream, else 0 */
    int deletes_ws;      /* Core long polling: a DELETE of the connection whose poll stream this is */
};

struct rp_item {
    int element;          /* an element of M (else a standalone frame) */
    const cJSON *value;   /* JSON value, or NULL */
    const char *text;     /* a frame that is not JSON */
    const char *binary;   /* base64 of a binary frame */
    struct rp_frame *frame;
};

struct rp_frame {
    size_t ev;            /* index of its ws-frame event */
    size_t start, end;    /* [start, end) item positions */
    cJSON *parsed;        /* the frame's JSON (owned) */
    cJSON *head;          /* members other than C and M of a PersistentResponse (owned), or NULL */
    const cJSON *cursor;  /* its C, or NULL */
    int persistent, special, keepalive;
    int head_matched, cursor_bound, done;
};

struct rp_stream {
    int ws;
    struct rp_item *items;
    size_t nitems, capitems;
    struct rp_frame **frames;
    size_t nframes, capframes;
    size_t open_ev;       /* its ws-open event, (size_t)-1 when none */
    size_t close_ev;      /* the server's ws-close, (size_t)-1 when the server did not close first */
    int binary;           /* Core long polling: the answers are MessagePack (recorded as bodyBase64) */
};

struct rp_fixture {
    char *name;
    int door_core;        /* v2 files with "door":"core" */
    cJSON **lines;        /* every line parsed (owned) */
    size_t nlines;
    struct rp_event *ev;
    size_t n, cap;
    struct rp_stream *streams;
    size_t nstreams;
    char **minted;        /* Core: ids recorded in MessagePack records, <backendId:1001>... */
    size_t nminted;
    char **poll_ids;      /* Core long polling: the recorded id= of each poll stream (ws RP_POLL_WS - i) */
    size_t npoll_ids;
};

/* Core long polling: the polls of one connection (the same recorded id=) are one stream of
 * records, whatever the batching; its number is RP_POLL_WS - i (event streams are -id). */
#define RP_POLL_WS (-1000000)

/* Reads a whole file into a new string (NULL and *err on failure). */
char *rp_read_file(const char *path, char **err);
/* Parses fixture text. 0, or -1 with *err (caller frees). */
int rp_fixture_parse(const char *text, const char *name, struct rp_fixture *fx, char **err);
void rp_fixture_free(struct rp_fixture *fx);

struct rp_stream *rp_fixture_stream(struct rp_fixture *fx, int ws);
/* Core: the ids a server minted inside recorded MessagePack records (22 base64url characters),
 * which a capture cannot mask, become <backendId:1001>, <backendId:1002>, ... in place. */
void rp_fixture_mask_minted(struct rp_fixture *fx, cJSON *v);
/* A short description of an event for messages ("line 7: ws 1 s2c {...}"). Caller frees. */
char *rp_describe(const struct rp_event *e);
/* String member of the event's line, or NULL. */
const char *rp_ev_str(const struct rp_event *e, const char *name);
/* Header of the event's line (lower-case name), or NULL. */
const char *rp_ev_header(const struct rp_event *e, const char *name);

#endif
