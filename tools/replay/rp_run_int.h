/* rp_run_int.h - what rp_run.c (the schedule and the client's actions) and rp_answer.c (the
 * server's side: responses, event streams, WebSocket frames and closes) share about a run. */
#ifndef RP_RUN_INT_H
#define RP_RUN_INT_H

#include "rp_run.h"

#define RP_NONE ((size_t)-1)
/* How long a client close waits for the server's side of the closing handshake. */
#define RP_CLOSE_WAIT_MS 2000
/* At most this head start for a request the server holds over the next client action. */
#define RP_HELD_SETTLE_MS 100

struct rp_ws_state {
    struct rp_run *r;
    struct rp_stream *stream;
    struct rp_conn *c;
    size_t pos;               /* next expected item */
    size_t special_index;     /* next frame with head fields */
    size_t frames_seen;       /* Core: server frames so far (the first carries the handshake answer) */
    size_t answer_ev;         /* the recorded ws-accepted / ws-refused, RP_NONE when none */
    int exists, client_closed, closed;
    int close_raced;          /* Core: the server closed after its Close record, the recording has the client close */
    int close_answered;       /* Core: the server's Close record answered the client's, past the recording */
    struct rp_req *poll;      /* Core long polling: the poll out now (one at a time), else NULL */
    int ended;                /* Core long polling: a poll was answered 204 (the connection is over) */
};

struct rp_req {
    struct rp_run *r;
    size_t req_ev;            /* its http-request event */
    size_t resp_ev;           /* the recorded http-response, RP_NONE when none */
    struct rp_conn *c;
    int sse;                  /* the recording has events of this stream */
    struct rp_buf pending;    /* stream text not yet split into events */
    int next;                 /* next recorded event of the stream */
    cJSON *held;              /* stream: messages of a recorded frame that came in pieces, or carried */
    char *held_cursor;        /* stream: the live C after carried messages, NULL when none */
    cJSON *again;             /* long poll sent again: the messages so far (array), else NULL */
    struct rp_ws_state *lp;   /* Core long polling: the poll stream this poll's answer feeds, else NULL */
};

/* Records the first difference (formatted). */
void rp_fail(struct rp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A different answer: keep_going notes it and returns 0 (the caller takes the answer as given);
 * otherwise the run fails and 1 is returned. */
int rp_differ(struct rp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes a reason string from a comparison (NULL: nothing) and fails with "prefix: why"; under
 * keep_going the difference is noted and 0 returned, as with rp_differ. */
int rp_fail_why(struct rp_run *r, char *why, const char *prefix);
/* One server answer compared: counted, and its latency recorded in load mode. */
void rp_answered(struct rp_run *r);
/* The recorded http-response of http id, RP_NONE when none. */
size_t rp_response_of(struct rp_run *r, int id);
/* Sends the request of event evi; `again`: a long poll's continuation (messages so far). */
void rp_send_request(struct rp_run *r, size_t evi, cJSON *again, const char *cursor);
/* Compares a recorded body with the server's text (or its parsed, rebuilt value when given). */
char *rp_compare_body(struct rp_run *r, const char *expected, const char *actual, const cJSON *actual_value,
                      int ordered, int negotiate);

/* Core: the records of a frame (or an event stream's event) against the stream's next ones. */
void rp_match_core_records(struct rp_ws_state *st, const char *data, size_t n, int binary);

/* rp_carry.c: legacy answers with more messages than recorded. The M count of a recorded
 * PersistentResponse with nothing but C and M, else -1. */
int rp_carry_count(const char *want);
/* got (its M holds more than k): keeps its first k messages and loses its C (*cursor, caller
 * frees); returns the rest (an array, caller owns). */
cJSON *rp_carry_split(cJSON *got, int k, char **cursor);
/* A recorded answer's text without its C (caller frees). */
char *rp_carry_strip_cursor(const char *want);
/* A frame of the first k carried messages; with *cursor as its C when it takes the last one (then
 * *carry and *cursor are freed and NULL). */
cJSON *rp_carry_take(cJSON **carry, int k, char **cursor);
/* Compares recorded event e's answer text with a frame of carried messages; 1 when alike. */
int rp_carry_compare(struct rp_run *r, const struct rp_event *e, const char *want, const cJSON *frame,
                     const char *what);
/* A poll's messages beyond its recorded answer, for the next polls of its connection. */
void rp_carry_keep(struct rp_run *r, size_t req_ev, cJSON *rest, char *cursor);
/* A recorded poll about to be sent: 1 when its answer was all carried (compared, not sent); else
 * *again and *cursor are set when part of it was (sent from that cursor, the answer joined). */
int rp_carry_poll(struct rp_run *r, size_t evi, cJSON **again, char **cursor);
/* Carried messages nobody took are a difference; the carry is emptied. */
void rp_carry_finish(struct rp_run *r);
/* 1 when the client has sent the /abort of request req_ev's connection (an /abort before the next
 * client action, with the same connectionToken): a real client polls no more after it. */
int rp_legacy_aborted(const struct rp_run *r, size_t req_ev);

/* ab (rp_resync.c): every server event before k not come in time is reported and given up (its
 * stream moved past it), so the side goes on. */
void rp_give_up(struct rp_run *r, size_t k);
/* The state of stream `ws` (a WebSocket, -id an event stream, RP_POLL_WS - i a poll stream). */
struct rp_ws_state *rp_ws_state_of(struct rp_run *r, int ws);
/* Core long polling (rp_poll.c): may a poll of stream st go out now? 0 while another is out (the
 * recorded poll is then served by that one) or after the end. */
int rp_poll_may_send(const struct rp_ws_state *st);
/* A poll's answer against the poll stream: records against the stream's next ones, an empty 200
 * a keep-alive, a 204 the end, any other status a difference. resp_ev: the recorded answer of the
 * poll sent (RP_NONE: none). Returns 1 when records are still expected before the next client
 * action, so the poll is to be sent again. */
int rp_poll_answer(struct rp_ws_state *st, size_t resp_ev, int status, const char *content_type, const char *body,
                   size_t n);
/* on_end of a Core poll: rp_poll_answer, and the poll sent again when it says so. */
void rp_poll_end(struct rp_req *q, struct rp_conn *c);

extern const struct rp_conn_handler rp_http_handler;
extern const struct rp_conn_handler rp_ws_handler;

#endif
