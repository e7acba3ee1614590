/* capture_writer.h - the thread that writes capture files, so the loop never waits for a disk.
 *
 * The event loop hands over whole pieces of a capture file (struct capture_job:
 * open a file, append bytes, close it) through a queue bounded in bytes; a
 * small writer thread takes them in order and does the open(), write() and
 * close() calls, which may block on a slow or full disk. O_NONBLOCK means
 * nothing for regular files, so this is the way to keep the loop unblocked.
 *
 * Threads and ownership (no data races by construction):
 *   - struct capture_writer is created and freed by the loop thread; its
 *     queue, byte count, stop flag and counters are touched only with `mu`
 *     held, by either thread.
 *   - A struct capture_sink (one per file: the descriptor and the path) is
 *     allocated by the loop thread and given away in the OPEN job that
 *     carries it; from then on only the writer thread reads or writes it,
 *     and the writer frees it when it runs the CLOSE job. The loop thread
 *     keeps the pointer only as a name to put in later jobs, never
 *     dereferencing it.
 *   - A job's bytes are owned by the job: the loop thread fills them before
 *     queueing; the writer frees the job after writing it.
 * The mutex hand-over orders every loop-thread write to a job or sink
 * before the writer's reads of it (TSan-clean); nothing else is shared. */
#ifndef SR_CAPTURE_WRITER_H
#define SR_CAPTURE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct capture_writer;
struct capture_sink;
struct capture_job;

/* Starts the writer thread; queue_max bytes may wait at once. NULL when
 * out of memory or no thread could be started. */
struct capture_writer *capture_writer_start(size_t queue_max);
/* Lets the queue drain (every queued job is done), stops the thread and frees the writer. */
void capture_writer_stop(struct capture_writer *w);

/* The loop thread's handle on one file: the sink's name and the close job,
 * allocated with the open so that closing never needs memory. */
struct capture_writer_file {
    struct capture_sink *sink;
    struct capture_job *close_job;
};

/* A new file at path (created, never overwritten: O_EXCL), into *f. False
 * when out of memory or the queue is full (then nothing was queued). */
bool capture_writer_open(struct capture_writer *w, const char *path, struct capture_writer_file *f);
/* Appends len bytes (copied). False when the queue is full or out of
 * memory: nothing was queued, and the caller gives the file up (close). */
bool capture_writer_append(struct capture_writer *w, const struct capture_writer_file *f, const char *data, size_t len);
/* Closes the file after what was queued for it; *f is used up. Always
 * queued (its job was allocated at open), over the bound if need be. */
void capture_writer_close(struct capture_writer *w, struct capture_writer_file *f);

/* What the writer saw go wrong so far (read under its lock). */
struct capture_writer_stats {
    uint64_t open_failures;   /* a file could not be created */
    uint64_t write_failures;  /* a write failed: the rest of that file is lost */
};
struct capture_writer_stats capture_writer_stats(struct capture_writer *w);

#endif
