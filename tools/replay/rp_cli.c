/* rp_cli.c - signalr-replay's modes (see rp_cli.h):
 *   check  each fixture played against one server, one after another, the differences printed
 *   ab     each fixture played against server A, then server B, each going on past differences
 *          from the recording; every event where A's answer is not B's (rp_ab.c)
 *   load   N copies of every fixture at once at F times the recorded pace; throughput and latency
 *          percentiles as the load generator reports them (lg_hist, lg_hist_report) */
#include "rp_cli.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg_hist_report.h"
#include "rp_ab.h"
#include "rp_json.h"
#include "rp_mask.h"
#include "rp_run.h"
#include "rp_text.h"

static const char USAGE[] =
    "usage: signalr-replay check --target URL [options] FIXTURE...\n"
    "       signalr-replay ab --a URL --b URL [options] FIXTURE...\n"
    "       signalr-replay load --target URL [--copies N] [--speed F] [options] FIXTURE...\n"
    "       signalr-replay mask --reference [--negotiate] < JSON-LINES\n"
    "\n"
    "Plays captured SignalR sessions (docs/FIXTURES.md: fixtures/legacy/*.jsonl, files written by\n"
    "signalr-relay --capture) against a server: the client's side is sent in file order with this\n"
    "run's tokens, cursors and ids put in for the placeholders, the server's side is compared event\n"
    "by event (JSON by value, numbers exact, keep-alives and batching left out).\n"
    "\n"
    "  check   each fixture against --target, one after another; every difference is printed as\n"
    "          fixture, event (line of the file) and expected vs got; exit 1 on any difference\n"
    "  ab      each fixture against --a, then against --b (one after another: a broadcast of one\n"
    "          would reach the other's connections); the recording is only the script of the\n"
    "          client's actions: a side whose answer differs from it goes on, and the two sides'\n"
    "          answers are compared with each other event by event (placeholders bound per side,\n"
    "          keep-alives and batching left out). A side goes on past a structural difference:\n"
    "          an answer or frame not come within --timeout is reported and given up, a record\n"
    "          or frame beyond the recording reported and skipped. DIFF lists every event\n"
    "          where A's answer is not B's (\"as recorded\", the difference, or \"not reached\"\n"
    "          when a side stopped where it could not go on: its socket closed, refused or\n"
    "          failed, its long-polling connection ended, a placeholder it must send never\n"
    "          bound); exit 1 when any\n"
    "  load    --copies N copies of every fixture at once at --speed F times the recorded pace;\n"
    "          one JSON line on stdout (sessions, answers/s, latency_us percentiles: from a client\n"
    "          action to each answer compared after it), a summary on stderr; exit 1 when a\n"
    "          session did not replay as recorded. A hub call that is not a recorded message\n"
    "          there is taken for another copy's broadcast and left out (foreign_pushes)\n"
    "  mask    prints each JSON line of stdin as --reference compares it (the masked values as\n"
    "          \"<any>\"; --negotiate: a negotiate body), to check the masks against\n"
    "          tests/legacy/capture/reference-mask.mjs\n"
    "\n"
    "options:\n"
    "  --target URL     the server's origin, http://HOST:PORT (loopback: 127.0.0.0/8, localhost);\n"
    "                   requests go to the recorded paths (/signalr/...)\n"
    "  --a URL, --b URL the two servers of ab\n"
    "  --reference      the fixtures were recorded against the real ASP.NET SignalR 2.x server\n"
    "                   (fixtures/legacy/reference): mask the differences listed in\n"
    "                   tests/legacy-ref/README.md (rows 1-4) and nothing else\n"
    "  --authorization V  send V (e.g. \"Bearer TOKEN\") as the Authorization header where the\n"
    "                   recording has one (it is always masked as <authorization>); a bearer\n"
    "                   token also stands for <accessToken> (a service-mode capture's access_token)\n"
    "  --pace F         keep F times the recorded pauses between client actions (check, ab;\n"
    "                   default 0: as fast as the answers come)\n"
    "  --copies N       load: copies of each fixture played at once (default 10)\n"
    "  --speed F        load: F times the recorded pace (default 1; 0: as fast as answers come)\n"
    "  --timeout MS     how long to wait for each recorded server event (default 10000)\n"
    "  --grace MS       after the last event, how long an extra frame is watched for (default 300)\n"
    "  --verbose        on stderr: each difference as it happens, and per fixture the frames\n"
    "                   received, keep-alives left out, Core polls sent again and recorded polls\n"
    "                   served by the poll out, and the placeholders' values in this run\n"
    "  --help           this text\n"
    "\n"
    "exit status: 0 no difference, 1 a difference, 2 bad usage or an unreadable fixture\n";

struct cli {
    const char *mode;
    const char *target, *a, *b;
    struct rp_opts o;
    int copies;
    double speed;
    char **files;
    int nfiles;
};

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "signalr-replay: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(signalr-replay --help lists the options)\n");
    return 2;
}

static int number_arg(const char *name, const char *v, double lo, double hi, double *out)
{
    char *end;
    double d = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || d < lo || d > hi) {
        fprintf(stderr, "signalr-replay: %s needs a number from %g to %g, got %s\n", name, lo, hi, v ? v : "nothing");
        return -1;
    }
    *out = d;
    return 0;
}

static int parse(int argc, char **argv, struct cli *c)
{
    memset(c, 0, sizeof *c);
    c->o.timeout_ms = 10000;
    c->o.grace_ms = 300;
    c->copies = 10;
    c->speed = 1;
    c->files = calloc((size_t)argc, sizeof *c->files);
    if (argc < 2)
        return usage_error("%s", "a mode is needed: check, ab or load");
    c->mode = argv[1];
    if (strcmp(c->mode, "check") != 0 && strcmp(c->mode, "ab") != 0 && strcmp(c->mode, "load") != 0)
        return usage_error("unknown mode %s (check, ab or load)", c->mode);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        if (strcmp(a, "--target") == 0 || strcmp(a, "--a") == 0 || strcmp(a, "--b") == 0) {
            if (!v)
                return usage_error("%s needs a URL", a);
            *(strcmp(a, "--target") == 0 ? &c->target : strcmp(a, "--a") == 0 ? &c->a : &c->b) = v;
            i++;
        } else if (strcmp(a, "--authorization") == 0) {
            if (!v || !*v)
                return usage_error("%s", "--authorization needs a value (e.g. \"Bearer TOKEN\")");
            c->o.authorization = v;
            i++;
        } else if (strcmp(a, "--reference") == 0) {
            c->o.reference = 1;
        } else if (strcmp(a, "--verbose") == 0) {
            c->o.verbose = 1;
        } else if (strcmp(a, "--pace") == 0 || strcmp(a, "--speed") == 0) {
            if (number_arg(a, v, 0, 1e6, &d) < 0)
                return 2;
            if (a[2] == 'p')
                c->o.pace = d;
            else
                c->speed = d;
            i++;
        } else if (strcmp(a, "--timeout") == 0 || strcmp(a, "--grace") == 0) {
            if (number_arg(a, v, a[2] == 't' ? 1 : 0, 3600000, &d) < 0)
                return 2;
            *(a[2] == 't' ? &c->o.timeout_ms : &c->o.grace_ms) = (int)d;
            i++;
        } else if (strcmp(a, "--copies") == 0) {
            if (number_arg(a, v, 1, 100000, &d) < 0)
                return 2;
            c->copies = (int)d;
            i++;
        } else if (a[0] == '-' && a[1] == '-') {
            return usage_error("unknown option %s", a);
        } else {
            c->files[c->nfiles++] = argv[i];
        }
    }
    if (strcmp(c->mode, "ab") == 0 ? !c->a || !c->b : !c->target)
        return usage_error("%s", strcmp(c->mode, "ab") == 0 ? "ab needs --a URL and --b URL" : "--target URL is needed");
    if (c->nfiles == 0)
        return usage_error("%s", "no fixture given");
    return 0;
}

/* The server's origin: http://HOST:PORT without a path. */
static int target_opts(const char *url, const struct rp_opts *base, struct rp_opts *o)
{
    *o = *base;
    const char *detail = "";
    if (lg_url_parse(url, &o->target, &detail) < 0) {
        fprintf(stderr, "signalr-replay: bad URL %s: %s\n", url, detail);
        return -1;
    }
    if (o->target.path[0]) {
        fprintf(stderr, "signalr-replay: %s: give the server's origin (http://HOST:PORT); the fixtures carry the paths\n",
                url);
        return -1;
    }
    if (o->target.port == 80)
        snprintf(o->origin, sizeof o->origin, "http://%s", o->target.host);
    else
        snprintf(o->origin, sizeof o->origin, "http://%s:%u", o->target.host, o->target.port);
    return 0;
}

struct result {
    int ok;               /* -1: the fixture could not be read */
    char *failure;
    char **diffs;         /* keep_going: every difference, placeholders put back */
    size_t ndiffs;
    long long ms;
    struct rp_stats stats;
};

/* Replays one fixture on a loop of its own. */
static struct result replay_one(const char *file, const struct rp_opts *o)
{
    struct result res = {-1, NULL, NULL, 0, 0, {0}};
    char *err = NULL;
    char *text = rp_read_file(file, &err);
    struct rp_run r;
    struct rp_loop loop = {0};
    if (!text || rp_run_init(&r, text, file, o, &loop, &err) < 0) {
        fprintf(stderr, "signalr-replay: %s\n", err ? err : file);
        free(err);
        if (text)
            rp_run_free(&r);
        free(text);
        return res;
    }
    free(text);
    struct rp_run *one = &r;
    rp_run_all(&one, 1, &loop);
    res.ok = r.failure == NULL;
    res.failure = r.failure ? (o->keep_going ? rp_run_unbind(&r, r.failure) : rp_strdup(r.failure)) : NULL;
    res.ndiffs = r.ndiffs;
    res.diffs = r.ndiffs ? rp_xmalloc(r.ndiffs * sizeof *res.diffs) : NULL;
    for (size_t i = 0; i < r.ndiffs; i++)
        res.diffs[i] = rp_run_unbind(&r, r.diffs[i]);
    res.ms = (long long)r.ms;
    res.stats = r.stats;
    if (o->verbose) {
        fprintf(stderr,
                "%s: %u frames received, %u keep-alives left out, %u frames after a client close, %u polls sent again, "
                "%u recorded polls served by the poll out\n",
                file, r.stats.frames_received, r.stats.keepalives_ignored, r.stats.after_close_ignored,
                r.stats.polls_again, r.stats.polls_joined);
        for (size_t i = 0; i < r.b.n; i++)
            fprintf(stderr, "  %s = %s\n", r.b.v[i].placeholder, r.b.v[i].value);
    }
    rp_run_free(&r);
    rp_loop_free(&loop);
    return res;
}

static void print_result(const char *tag, const char *file, const struct result *res)
{
    const struct rp_stats *s = &res->stats;
    printf("%s%s %s (%lld ms; %u requests, %u sockets, %u frames sent, %u answers compared)\n", tag,
           res->ok ? "ok  " : "FAIL", file, res->ms, s->requests, s->upgrades, s->frames_sent, s->items_compared);
    if (!res->ok)
        printf("     %s%s\n", tag[0] ? "  " : "", res->failure);
    fflush(stdout);
}

static void result_free(struct result *res)
{
    free(res->failure);
    for (size_t i = 0; i < res->ndiffs; i++)
        free(res->diffs[i]);
    free(res->diffs);
}

static int run_check(struct cli *c)
{
    struct rp_opts o;
    if (target_opts(c->target, &c->o, &o) < 0)
        return 2;
    int failed = 0, unreadable = 0;
    for (int i = 0; i < c->nfiles; i++) {
        struct result res = replay_one(c->files[i], &o);
        if (res.ok < 0) {
            unreadable++;
            continue;
        }
        print_result("", c->files[i], &res);
        failed += !res.ok;
        result_free(&res);
    }
    printf("replay: %d passed, %d failed%s\n", c->nfiles - failed - unreadable, failed + unreadable,
           unreadable ? " (some fixtures could not be read)" : "");
    return unreadable ? 2 : failed ? 1 : 0;
}

static int run_ab(struct cli *c)
{
    struct rp_opts oa, ob;
    if (target_opts(c->a, &c->o, &oa) < 0 || target_opts(c->b, &c->o, &ob) < 0)
        return 2;
    oa.keep_going = ob.keep_going = 1;
    int differ = 0, unreadable = 0;
    for (int i = 0; i < c->nfiles; i++) {
        struct result ra = replay_one(c->files[i], &oa);
        if (ra.ok < 0) {
            unreadable++;
            continue;
        }
        struct result rb = replay_one(c->files[i], &ob);
        struct rp_ab_side sa = {c->a, ra.diffs, ra.ndiffs, ra.failure};
        struct rp_ab_side sb = {c->b, rb.diffs, rb.ndiffs, rb.failure};
        differ += rp_ab_report(stdout, c->files[i], &sa, &sb) > 0;
        result_free(&ra);
        result_free(&rb);
    }
    printf("ab: %d same, %d differ%s\n", c->nfiles - differ - unreadable, differ,
           unreadable ? " (some fixtures could not be read)" : "");
    return unreadable ? 2 : differ ? 1 : 0;
}

static int run_load(struct cli *c)
{
    struct rp_opts o;
    if (target_opts(c->target, &c->o, &o) < 0)
        return 2;
    o.pace = c->speed > 0 ? 1.0 / c->speed : 0;
    o.foreign_pushes = 1;
    char **texts = calloc((size_t)c->nfiles, sizeof *texts);
    for (int i = 0; i < c->nfiles; i++) {
        char *err = NULL;
        texts[i] = rp_read_file(c->files[i], &err);
        if (!texts[i]) {
            fprintf(stderr, "signalr-replay: %s\n", err);
            free(err);
            for (int j = 0; j < i; j++)
                free(texts[j]);
            free(texts);
            return 2;
        }
    }
    size_t n = (size_t)c->nfiles * (size_t)c->copies;
    struct rp_run *runs = calloc(n, sizeof *runs);
    struct rp_run **ptrs = calloc(n, sizeof *ptrs);
    struct rp_loop loop = {0};
    struct lg_hist *latency = calloc(1, sizeof *latency);
    lg_hist_init(latency);
    int bad = 0;
    int64_t t0 = rp_now_us();
    for (size_t k = 0; k < n && !bad; k++) {
        char *err = NULL;
        const char *file = c->files[k % (size_t)c->nfiles];
        if (rp_run_init(&runs[k], texts[k % (size_t)c->nfiles], file, &o, &loop, &err) < 0) {
            fprintf(stderr, "signalr-replay: %s\n", err);
            free(err);
            bad = 1;
            n = k + 1;
            break;
        }
        runs[k].latency = latency;
        ptrs[k] = &runs[k];
    }
    size_t failed = 0;
    struct rp_stats sum = {0};
    if (!bad) {
        rp_run_all(ptrs, n, &loop);
        for (size_t k = 0; k < n; k++) {
            if (runs[k].failure && failed++ < 3)
                fprintf(stderr, "signalr-replay: %s: %s\n", runs[k].fx.name, runs[k].failure);
            sum.requests += runs[k].stats.requests;
            sum.upgrades += runs[k].stats.upgrades;
            sum.frames_sent += runs[k].stats.frames_sent;
            sum.items_compared += runs[k].stats.items_compared;
            sum.frames_received += runs[k].stats.frames_received;
            sum.foreign_ignored += runs[k].stats.foreign_ignored;
        }
    }
    double secs = (double)(rp_now_us() - t0) / 1e6;
    if (!bad) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "tool", "signalr-replay");
        cJSON_AddStringToObject(root, "mode", "load");
        cJSON_AddNumberToObject(root, "fixtures", c->nfiles);
        cJSON_AddNumberToObject(root, "copies", c->copies);
        cJSON_AddNumberToObject(root, "speed", c->speed);
        cJSON_AddNumberToObject(root, "sessions", (double)n);
        cJSON_AddNumberToObject(root, "sessions_failed", (double)failed);
        cJSON_AddNumberToObject(root, "duration_s", secs);
        cJSON_AddNumberToObject(root, "requests", sum.requests);
        cJSON_AddNumberToObject(root, "sockets", sum.upgrades);
        cJSON_AddNumberToObject(root, "frames_sent", sum.frames_sent);
        cJSON_AddNumberToObject(root, "frames_received", sum.frames_received);
        cJSON_AddNumberToObject(root, "foreign_pushes", sum.foreign_ignored);
        cJSON_AddNumberToObject(root, "answers", sum.items_compared);
        cJSON_AddNumberToObject(root, "answers_per_s", secs > 0 ? sum.items_compared / secs : 0);
        lg_report_add_hist(root, "latency_us", latency);
        char *line = cJSON_PrintUnformatted(root);
        printf("%s\n", line);
        free(line);
        cJSON_Delete(root);
        fprintf(stderr, "signalr-replay load: %d fixture%s x %d copies at speed %g -> %s\n", c->nfiles,
                c->nfiles == 1 ? "" : "s", c->copies, c->speed, o.origin);
        fprintf(stderr, "  sessions      %zu, failed %zu, in %.2f s\n", n, failed, secs);
        fprintf(stderr, "  answers       %u (%.0f/s), requests %u, sockets %u, frames sent %u, received %u, "
                        "other copies' pushes %u\n",
                sum.items_compared, secs > 0 ? sum.items_compared / secs : 0, sum.requests, sum.upgrades,
                sum.frames_sent, sum.frames_received, sum.foreign_ignored);
        lg_report_human_hist(stderr, "latency", latency);
    }
    for (size_t k = 0; k < n; k++)
        if (ptrs[k] || bad)
            rp_run_free(&runs[k]);
    rp_loop_free(&loop);
    for (int i = 0; i < c->nfiles; i++)
        free(texts[i]);
    free(texts);
    free(runs);
    free(ptrs);
    free(latency);
    return bad ? 2 : failed ? 1 : 0;
}

/* mask --reference [--negotiate]: stdin's JSON lines masked, one per line on stdout. */
static int run_mask(int argc, char **argv)
{
    int negotiate = 0, reference = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--negotiate") == 0)
            negotiate = 1;
        else if (strcmp(argv[i], "--reference") == 0)
            reference = 1;
        else
            return usage_error("mask: unknown argument %s", argv[i]);
    }
    if (!reference)
        return usage_error("%s", "mask needs --reference (the only masks there are)");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int bad = 0;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        cJSON *v = rp_json_parse(line);
        if (!v) {
            fprintf(stderr, "signalr-replay: mask: not JSON: %.200s\n", line);
            bad = 1;
            continue;
        }
        rp_mask_reference_json(v, negotiate);
        char *out = rp_json_show(v, (size_t)-1 / 2);
        printf("%s\n", out);
        free(out);
        cJSON_Delete(v);
    }
    free(line);
    return bad ? 2 : 0;
}

int rp_cli_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "mask") == 0)
        return run_mask(argc, argv);
    struct cli c;
    int rc = parse(argc, argv, &c);
    if (rc == 0)
        rc = strcmp(c.mode, "check") == 0 ? run_check(&c) : strcmp(c.mode, "ab") == 0 ? run_ab(&c) : run_load(&c);
    free(c.files);
    return rc;
}
