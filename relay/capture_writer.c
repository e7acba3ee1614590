/* capture_writer.c - the capture files' writer thread and its bounded queue (see capture_writer.h). */
#include "relay/capture_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "relay/log.h"

enum job_kind { JOB_OPEN, JOB_APPEND, JOB_CLOSE };

struct capture_sink {
    int fd;           /* -1 until opened, or after a failure */
    char path[];
};

struct capture_job {
    struct capture_job *next;
    enum job_kind kind;
    struct capture_sink *sink;
    size_t len;
    char data[];
};

struct capture_writer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* With mu held: */
    struct capture_job *head, *tail;
    size_t queued;        /* bytes of the queued jobs' data */
    size_t queue_max;
    bool stop;
    struct capture_writer_stats stats;
};

static void write_all(struct capture_writer *w, struct capture_sink *sink, const char *p, size_t n)
{
    while (n > 0 && sink->fd >= 0) {
        ssize_t k = write(sink->fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            log_warn("capture: writing %s failed: %s; the rest of this capture is lost", sink->path, strerror(errno));
            close(sink->fd);
            sink->fd = -1;
            pthread_mutex_lock(&w->mu);
            w->stats.write_failures++;
            pthread_mutex_unlock(&w->mu);
            return;
        }
        p += k;
        n -= (size_t)k;
    }
}

/* Runs one job on the writer thread (without the lock). */
static void run_job(struct capture_writer *w, struct capture_job *job)
{
    struct capture_sink *sink = job->sink;
    switch (job->kind) {
    case JOB_OPEN:
        sink->fd = open(sink->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
        if (sink->fd < 0) {
            log_warn("capture: cannot create %s: %s", sink->path, strerror(errno));
            pthread_mutex_lock(&w->mu);
            w->stats.open_failures++;
            pthread_mutex_unlock(&w->mu);
        }
        break;
    case JOB_APPEND:
        write_all(w, sink, job->data, job->len);
        break;
    case JOB_CLOSE:
        if (sink->fd >= 0)
            close(sink->fd);
        free(sink);
        break;
    }
}

static void *writer_main(void *arg)
{
    struct capture_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        struct capture_job *job = w->head;
        if (!job)
            break; /* stopping, and the queue is empty */
        w->head = job->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        run_job(w, job);
        pthread_mutex_lock(&w->mu);
        w->queued -= job->len;
        free(job);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct capture_writer *capture_writer_start(size_t queue_max)
{
    struct capture_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->queue_max = queue_max;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

void capture_writer_stop(struct capture_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Queues job unless its bytes do not fit (and force is off). */
static bool enqueue(struct capture_writer *w, struct capture_job *job, bool force)
{
    pthread_mutex_lock(&w->mu);
    bool fits = force || w->queued + job->len <= w->queue_max;
    if (fits) {
        job->next = NULL;
        if (w->tail)
            w->tail->next = job;
        else
            w->head = job;
        w->tail = job;
        w->queued += job->len;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return fits;
}

static struct capture_job *job_new(enum job_kind kind, struct capture_sink *sink, const char *data, size_t len)
{
    struct capture_job *job = malloc(sizeof *job + len);
    if (!job)
        return NULL;
    job->kind = kind;
    job->sink = sink;
    job->len = len;
    if (len)
        memcpy(job->data, data, len);
    return job;
}

bool capture_writer_open(struct capture_writer *w, const char *path, struct capture_writer_file *f)
{
    size_t n = strlen(path) + 1;
    struct capture_sink *sink = malloc(sizeof *sink + n);
    struct capture_job *open_job = sink ? job_new(JOB_OPEN, sink, NULL, 0) : NULL;
    struct capture_job *close_job = open_job ? job_new(JOB_CLOSE, sink, NULL, 0) : NULL;
    if (!close_job) {
        free(open_job);
        free(sink);
        return false;
    }
    sink->fd = -1;
    memcpy(sink->path, path, n);
    if (!enqueue(w, open_job, false)) {
        free(close_job);
        free(open_job);
        free(sink);
        return false;
    }
    f->sink = sink;
    f->close_job = close_job;
    return true;
}

bool capture_writer_append(struct capture_writer *w, const struct capture_writer_file *f, const char *data, size_t len)
{
    struct capture_job *job = job_new(JOB_APPEND, f->sink, data, len);
    if (!job)
        return false;
    if (!enqueue(w, job, false)) {
        free(job);
        return false;
    }
    return true;
}

void capture_writer_close(struct capture_writer *w, struct capture_writer_file *f)
{
    enqueue(w, f->close_job, true);
    f->close_job = NULL;
    f->sink = NULL;
}

struct capture_writer_stats capture_writer_stats(struct capture_writer *w)
{
    pthread_mutex_lock(&w->mu);
    struct capture_writer_stats s = w->stats;
    pthread_mutex_unlock(&w->mu);
    return s;
}
