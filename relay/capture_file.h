/* capture_file.h - the recorder's tables, shared by relay/capture.c (files, their ends, the
 * writer) and relay/capture_events.c (what each hook writes). Loop thread only; see capture.c's
 * first comment for who holds what. Not for other modules. */
#ifndef SR_CAPTURE_FILE_H
#define SR_CAPTURE_FILE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "containers/buf.h"
#include "containers/dict.h"
#include "containers/list.h"
#include "containers/timer_wheel.h"
#include "relay/loop.h"
#include "relay/capture_mask.h"
#include "relay/capture_writer.h"
#include "relay/log.h"

struct capture_file {
    struct list_node link;       /* cap->files */
    struct capture *cap;
    bool legacy;                 /* the legacy door (else Core) */
    unsigned refs;
    bool grace;                  /* a negotiate holds it until grace_until or a session */
    uint64_t grace_until;
    uint64_t t0;                 /* the first event: times are relative to it */
    struct capture_writer_file out;
    bool ended;                  /* end line written, or dropped: nothing more is recorded */
    struct buf pending;          /* lines not yet handed to the writer */
    uint64_t bytes;              /* handed over and pending */
    unsigned next_http, next_ws;
    struct mask_table names;
    struct capture_token *tokens;
};

struct capture_token {
    struct dict_entry entry;     /* cap->tokens */
    struct capture_token *next;  /* file->tokens */
    struct capture_file *file;
    char value[];
};

struct capture_conn {
    struct dict_entry entry;     /* cap->conns, keyed by the wsi pointer's bytes */
    struct lws *wsi;
    struct capture_file *file;
    bool ws;
    unsigned id;                 /* http id or ws number */
    bool negotiate;              /* its answer names the connection's tokens */
    cJSON *request;              /* not yet written (its body is still coming) */
    cJSON *response;             /* a stream not yet ended */
    struct buf body;             /* the request body, then the stream's body */
    cJSON *chunks;               /* the stream's pieces (owned by response) */
    size_t stream_bytes;         /* their data so far: a stream is held in memory until it ends */
    bool closed;                 /* ws-close written */
};

struct capture {
    struct loop *loop;
    char *dir;
    uint64_t dir_bytes;          /* in the directory at start, plus everything handed over since */
    struct capture_writer *writer;
    struct dict conns, tokens;
    struct list_node files;
    struct timer_entry tick;
    uint64_t seq, rng;
    uint64_t epoch_ms;           /* the Unix time (ms) when clock_now_ms() read mono_ms: each */
    uint64_t mono_ms;            /* file's "start" is on this one clock, so files can be merged */
    struct log_limit skip_log, drop_log;
    uint8_t seed[DICT_SEED_LEN];
    char line[8192];             /* capfile_emit prints a line here when it fits */
    struct buf scratch;          /* capture_events.c: a body being masked */
    struct mask_shared backend_ids; /* every file's backend ids, one number each */
};

static inline struct capture *capture_of_wsi(struct lws *wsi)
{
    return wsi ? loop_of_wsi(wsi)->capture : NULL;
}

/* A new file for a new client connection, holding one reference; NULL when not sampled, the
 * directory is over its cap or the writer's queue is full. */
struct capture_file *capfile_new(struct capture *cap, bool legacy, const char *label);
/* Lets go of one reference; the last one writes the end line and closes the file. */
void capfile_release(struct capture_file *f);
/* A line: capfile_event starts it, capfile_emit appends it (and frees it; past
 * --capture-max-file the file ends, truncated). */
cJSON *capfile_event(struct capture_file *f, const char *type);
void capfile_add_time(cJSON *o, const struct capture_file *f);
void capfile_add_uint(cJSON *o, const char *key, uint64_t value);
uint64_t capfile_time(const struct capture_file *f);
void capfile_emit(struct capture_file *f, cJSON *obj);
/* Requests naming token (Core id=, legacy connectionToken=) belong to the file ctx. */
void capfile_register_token(void *ctx, const char *token);
struct capture_file *capfile_of_token(struct capture *cap, const char *token, size_t len);
/* capture_events.c: every connection still recording ends (shutdown). */
void capture_conns_end_all(struct capture *cap);

#endif
