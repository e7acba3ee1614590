/* capture.c - the recorder behind --capture: its capture files, from first line to end line (see capture.h).
 *
 * Three tables, loop thread only:
 *   - files (struct capture_file): one per recorded client connection, with
 *     its placeholders (relay/capture_mask.c), the lines not yet handed to
 *     the writer, and a reference count: each request or socket recording
 *     into it, the session living on it, and the "grace" a negotiate gives it
 *     until a session starts or --negotiate-timeout passes. At zero the end
 *     line is written and the file closed.
 *   - conns (struct capture_conn), by wsi: what a client connection is
 *     recording now (an HTTP request and its answer, or a WebSocket).
 *   - tokens (struct capture_token), by token: which file a request naming a
 *     connection token (Core id=, legacy connectionToken=) belongs to.
 * Lines go to the file's buffer; a buffer is handed to the writer thread
 * (relay/capture_writer.c) when it passes CAPTURE_FLUSH_BYTES, once a second,
 * and when the file ends. The writer's queue is bounded: when it is full the
 * capture of that connection is dropped (counted), the traffic never waits. */
#include "relay/capture.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "relay/capture_file.h"
#include "relay/clock.h"
#include "relay/log.h"

#define CAPTURE_FLUSH_BYTES (64u << 10)
#define CAPTURE_QUEUE_BYTES (16u << 20) /* the writer's queue: beyond it, captures are dropped */
#define CAPTURE_TICK_MS 1000

/* ------------------------------------------------------------ files */

static double next_fraction(struct capture *cap)
{
    cap->rng ^= cap->rng << 13; /* xorshift64 */
    cap->rng ^= cap->rng >> 7;
    cap->rng ^= cap->rng << 17;
    return (double)(cap->rng >> 11) * (1.0 / 9007199254740992.0);
}

static void drop_file(struct capture_file *f, const char *why)
{
    struct capture *cap = f->cap;
    f->ended = true;
    buf_free(&f->pending);
    cap->loop->stats.capture_dropped++;
    log_limited(&cap->drop_log, LOG_WARN, "capture: a capture was dropped (%s); its file stays incomplete", why);
}

static void hand_over(struct capture_file *f)
{
    if (!f->pending.len || !f->out.sink)
        return;
    if (!capture_writer_append(f->cap->writer, &f->out, f->pending.data, f->pending.len)) {
        drop_file(f, "the writer's queue is full");
        return;
    }
    f->cap->dir_bytes += f->pending.len;
    buf_reset(&f->pending);
}

uint64_t capfile_time(const struct capture_file *f)
{
    return clock_now_ms() - f->t0;
}

static void write_end(struct capture_file *f, bool truncated);

/* Appends one line (and frees obj). Past --capture-max-file the file ends, truncated. */
void capfile_emit(struct capture_file *f, cJSON *obj)
{
    if (f->ended) {
        cJSON_Delete(obj);
        return;
    }
    /* Most lines fit the scratch buffer (cJSON wants 5 bytes to spare); longer ones are allocated. */
    char *scratch = f->cap->line, *line = scratch;
    if (!cJSON_PrintPreallocated(obj, scratch, (int)sizeof f->cap->line, false))
        line = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    if (!line) {
        drop_file(f, "out of memory");
        return;
    }
    size_t n = strlen(line);
    if (f->bytes + n + 1 > f->cap->loop->cfg->capture_max_file_bytes) {
        if (line != scratch)
            free(line);
        f->cap->loop->stats.capture_truncated++;
        write_end(f, true);
        return;
    }
    if (!buf_append(&f->pending, line, n) || !buf_append_byte(&f->pending, '\n'))
        drop_file(f, "out of memory");
    else
        f->bytes += n + 1;
    if (line != scratch)
        free(line);
    if (!f->ended && f->pending.len >= CAPTURE_FLUSH_BYTES)
        hand_over(f);
}

cJSON *capfile_event(struct capture_file *f, const char *type)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    return o;
}

/* An integer member, printed here: cJSON prints every number as a double and reads it back
 * (snprintf and sscanf per number), the largest cost of a line. */
void capfile_add_uint(cJSON *o, const char *key, uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)value);
    cJSON_AddRawToObject(o, key, text);
}

void capfile_add_time(cJSON *o, const struct capture_file *f)
{
    capfile_add_uint(o, "t", capfile_time(f));
}

/* The end line; the file records nothing more (it is closed when its last holder lets go). */
static void write_end(struct capture_file *f, bool truncated)
{
    if (f->ended)
        return;
    cJSON *o = capfile_event(f, "end");
    capfile_add_time(o, f);
    if (truncated)
        cJSON_AddBoolToObject(o, "truncated", true);
    cJSON *list = cJSON_AddArrayToObject(o, "placeholders");
    mask_list_add(&f->names, list);
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (line && buf_append_cstr(&f->pending, line) && buf_append_byte(&f->pending, '\n'))
        f->bytes += strlen(line) + 1;
    free(line);
    hand_over(f);
    f->ended = true;
}

static void forget_tokens(struct capture_file *f)
{
    while (f->tokens) {
        struct capture_token *t = f->tokens;
        f->tokens = t->next;
        dict_remove(&f->cap->tokens, &t->entry);
        free(t);
    }
}

void capfile_release(struct capture_file *f)
{
    if (--f->refs > 0)
        return;
    write_end(f, false);
    if (f->out.sink)
        capture_writer_close(f->cap->writer, &f->out);
    forget_tokens(f);
    mask_table_free(&f->names);
    buf_free(&f->pending);
    list_unlink(&f->link);
    free(f);
}

static void utc_stamp(char *out, size_t len)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char day[32];
    strftime(day, sizeof day, "%Y%m%dT%H%M%S", &tm);
    snprintf(out, len, "%s.%03ldZ", day, ts.tv_nsec / 1000000);
}

/* A new file for a new client connection, or NULL: not sampled, the
 * directory is full, or the writer's queue is. Holds one reference. */
struct capture_file *capfile_new(struct capture *cap, bool legacy, const char *label)
{
    if (next_fraction(cap) >= cap->loop->cfg->capture_sample)
        return NULL;
    if (cap->dir_bytes >= cap->loop->cfg->capture_max_dir_bytes) {
        cap->loop->stats.capture_skipped++;
        log_limited(&cap->skip_log, LOG_WARN, "capture: %s holds --capture-max-dir bytes; new connections are not recorded",
                    cap->dir);
        return NULL;
    }
    struct capture_file *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    char stamp[48], path[4096];
    utc_stamp(stamp, sizeof stamp);
    snprintf(path, sizeof path, "%s/%s-%s-%llu.jsonl", cap->dir, legacy ? "legacy" : "core", stamp,
             (unsigned long long)++cap->seq);
    if (!capture_writer_open(cap->writer, path, &f->out)) {
        free(f);
        drop_file(&(struct capture_file){ .cap = cap }, "the writer's queue is full");
        return NULL;
    }
    f->cap = cap;
    f->legacy = legacy;
    f->refs = 1;
    f->t0 = clock_now_ms();
    buf_init(&f->pending);
    mask_table_init(&f->names, cap->seed);
    mask_table_share(&f->names, &cap->backend_ids);
    list_push_back(&cap->files, &f->link);
    cap->loop->stats.capture_files++;
    cJSON *o = capfile_event(f, "session");
    cJSON_AddStringToObject(o, "format", "signalr-capture");
    capfile_add_uint(o, "version", 2);
    cJSON_AddStringToObject(o, "door", legacy ? "legacy" : "core");
    cJSON_AddStringToObject(o, "label", label);
    cJSON_AddStringToObject(o, "upstream", cap->loop->cfg->service_key_count ? "service" : "proxy");
    /* Unix ms of t=0, on one clock for all of this relay's files: start + t orders their lines. */
    capfile_add_uint(o, "start", cap->epoch_ms + (f->t0 - cap->mono_ms));
    capfile_emit(f, o);
    return f;
}

void capfile_register_token(void *ctx, const char *token)
{
    struct capture_file *f = ctx;
    size_t n = strlen(token);
    if (dict_find(&f->cap->tokens, span_make(token, n)))
        return;
    struct capture_token *t = malloc(sizeof *t + n + 1);
    if (!t)
        return;
    memcpy(t->value, token, n + 1);
    t->file = f;
    if (dict_insert(&f->cap->tokens, &t->entry, span_make(t->value, n)) != DICT_OK) {
        free(t);
        return;
    }
    t->next = f->tokens;
    f->tokens = t;
}

struct capture_file *capfile_of_token(struct capture *cap, const char *token, size_t len)
{
    struct dict_entry *e = dict_find(&cap->tokens, span_make(token, len));
    struct capture_file *f = e ? list_container_of(e, struct capture_token, entry)->file : NULL;
    return f && !f->ended ? f : NULL;
}

static void tick(struct timer_entry *e)
{
    struct capture *cap = list_container_of(e, struct capture, tick);
    uint64_t now = clock_now_ms();
    struct list_node *n = cap->files.next;
    while (n != &cap->files) {
        struct capture_file *f = list_container_of(n, struct capture_file, link);
        n = n->next;
        if (!f->ended)
            hand_over(f);
        if (f->grace && now >= f->grace_until) {
            f->grace = false;
            capfile_release(f);
        }
    }
    loop_timer_schedule(cap->loop, &cap->tick, now + CAPTURE_TICK_MS);
}
/* ------------------------------------------------------------ lifecycle */

static uint64_t directory_bytes(const char *dir)
{
    uint64_t total = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            total += (uint64_t)st.st_size;
    }
    if (d)
        closedir(d);
    return total;
}

struct capture *capture_new(struct loop *loop, const char *dir, char *err, size_t err_len)
{
    struct stat st;
    const struct relay_config *cfg = loop->cfg;
    errno = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
        snprintf(err, err_len, "--capture: %s is not a directory the relay can write to (%s)", dir,
                 errno ? strerror(errno) : "not a directory");
        return NULL;
    }
    struct capture *cap = calloc(1, sizeof *cap);
    if (!cap || !(cap->dir = strdup(dir)) || RAND_bytes(cap->seed, sizeof cap->seed) != 1 ||
        RAND_bytes((unsigned char *)&cap->rng, sizeof cap->rng) != 1 ||
        !(cap->writer = capture_writer_start(CAPTURE_QUEUE_BYTES))) {
        if (cap)
            free(cap->dir);
        free(cap);
        snprintf(err, err_len, "--capture: out of memory or randomness, or no writer thread");
        return NULL;
    }
    cap->rng |= 1; /* xorshift never leaves 0 */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cap->mono_ms = clock_now_ms();
    cap->epoch_ms = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
    cap->loop = loop;
    cap->dir_bytes = directory_bytes(cap->dir);
    cap->skip_log.interval_ms = 60000;
    cap->drop_log.interval_ms = 60000;
    dict_init(&cap->conns, cap->seed);
    dict_init(&cap->tokens, cap->seed);
    mask_shared_init(&cap->backend_ids, cap->seed);
    list_init_head(&cap->files);
    timer_entry_init(&cap->tick, tick);
    loop_timer_schedule(loop, &cap->tick, clock_now_ms() + CAPTURE_TICK_MS);
    log_info("capture: recording %s of new client connections into %s (%s)",
             cfg->capture_sample >= 1 ? "all" : "a sample", cap->dir,
             cfg->capture_no_bodies ? "bodies as sizes" : "with bodies");
    return cap;
}

void capture_free(struct capture *cap)
{
    if (!cap)
        return;
    timer_cancel(&cap->tick);
    capture_conns_end_all(cap);
    while (!list_is_empty(&cap->files)) { /* sessions and graces still holding files */
        struct capture_file *f = list_container_of(cap->files.next, struct capture_file, link);
        f->refs = 1;
        capfile_release(f);
    }
    struct capture_writer_stats ws = capture_writer_stats(cap->writer);
    capture_writer_stop(cap->writer);
    if (ws.open_failures || ws.write_failures)
        log_warn("capture: %llu files could not be created, %llu could not be written whole",
                 (unsigned long long)ws.open_failures, (unsigned long long)ws.write_failures);
    dict_free(&cap->conns);
    dict_free(&cap->tokens);
    mask_shared_free(&cap->backend_ids); /* after the files, which forget their ids in it */
    buf_free(&cap->scratch);
    free(cap->dir);
    free(cap);
}
