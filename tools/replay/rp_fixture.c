/* rp_fixture.c - reading a fixture for a replay (see rp_fixture.h; port of replay.mjs
 * parseFixture, splitEventStreams and ExpectedStream). */
#include "rp_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "rp_core.h"
#include "rp_json.h"
#include "rp_text.h"

#define NONE ((size_t)-1)

char *rp_read_file(const char *path, char **err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *err = rp_fmt("%s: %s", path, strerror(errno));
        return NULL;
    }
    struct rp_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rp_buf_add(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        rp_buf_free(&b);
        *err = rp_fmt("%s: read error", path);
        return NULL;
    }
    if (!b.p)
        rp_buf_add(&b, "", 0);
    return b.p;
}

const char *rp_ev_str(const struct rp_event *e, const char *name)
{
    const cJSON *v = e->j ? cJSON_GetObjectItemCaseSensitive(e->j, name) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *rp_ev_header(const struct rp_event *e, const char *name)
{
    const cJSON *h = e->j ? cJSON_GetObjectItemCaseSensitive(e->j, "headers") : NULL;
    const cJSON *v = cJSON_IsObject(h) ? cJSON_GetObjectItemCaseSensitive(h, name) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int int_member(const cJSON *j, const char *name, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    return cJSON_IsNumber(v) ? (int)v->valuedouble : dflt;
}

static struct rp_event *push_event(struct rp_fixture *fx, size_t at)
{
    if (fx->n == fx->cap) {
        fx->cap = fx->cap ? fx->cap * 2 : 64;
        fx->ev = rp_xrealloc(fx->ev, fx->cap * sizeof *fx->ev);
    }
    memmove(fx->ev + at + 1, fx->ev + at, (fx->n - at) * sizeof *fx->ev);
    fx->n++;
    memset(&fx->ev[at], 0, sizeof fx->ev[at]);
    return &fx->ev[at];
}

static int type_of(const char *t)
{
    static const struct { const char *name; int type; } T[] = {
        {"http-request", EV_HTTP_REQ}, {"http-response", EV_HTTP_RESP}, {"ws-open", EV_WS_OPEN},
        {"ws-accepted", EV_WS_ACCEPTED}, {"ws-refused", EV_WS_REFUSED}, {"ws-frame", EV_WS_FRAME},
        {"ws-close", EV_WS_CLOSE},
    };
    for (size_t i = 0; t && i < sizeof T / sizeof T[0]; i++)
        if (strcmp(T[i].name, t) == 0)
            return T[i].type;
    return EV_OTHER;
}

/* Inserts a synthesized event after every event of the same time or earlier. */
static struct rp_event *insert_at_time(struct rp_fixture *fx, int64_t t)
{
    size_t k = 0;
    while (k < fx->n && !(fx->ev[k].has_t && fx->ev[k].t > t))
        k++;
    struct rp_event *e = push_event(fx, k);
    e->has_t = 1;
    e->t = t;
    return e;
}

static int64_t t_of(const cJSON *j, const char *name, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

/* A Core event stream: events end at a blank line (CR LF or LF), comments (":") and events
 * without data left out, the data lines of an event joined; each event's records are compared as
 * a WebSocket's (rp_core.h), so the data is kept whole here. */
static void split_core_stream(struct rp_fixture *fx, const cJSON *j, int id, int line)
{
    const cJSON *chunks = cJSON_GetObjectItemCaseSensitive(j, "chunks");
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(j, "body");
    struct rp_buf pending = {0};
    int index = 0;
    int single = !cJSON_IsArray(chunks);
    for (const cJSON *piece = single ? NULL : chunks->child; single || piece; piece = piece->next) {
        const cJSON *data = single ? body : cJSON_GetObjectItemCaseSensitive(piece, "data");
        int64_t t = single ? t_of(j, "t", 0) : t_of(piece, "t", 0);
        for (const char *c = cJSON_IsString(data) ? data->valuestring : ""; *c; c++)
            if (*c != '\r')
                rp_buf_add(&pending, c, 1);
        char *end;
        while (pending.p && (end = strstr(pending.p, "\n\n")) != NULL) {
            struct rp_buf ev = {0};
            for (char *l = pending.p; l < end;) {
                char *nl = memchr(l, '\n', (size_t)(end - l));
                size_t len = nl ? (size_t)(nl - l) : (size_t)(end - l);
                if (len >= 5 && strncmp(l, "data:", 5) == 0) {
                    size_t skip = len > 5 && l[5] == ' ' ? 6 : 5;
                    if (ev.p)
                        rp_buf_add(&ev, "\n", 1);
                    rp_buf_add(&ev, l + skip, len - skip);
                }
                l += len + 1;
            }
            if (ev.p) {
                struct rp_event *e = insert_at_time(fx, t);
                e->type = EV_SSE;
                e->id = id;
                e->line = line;
                e->index = index++;
                e->data = ev.p;
                e->server = 1;
            }
            rp_buf_consume(&pending, (size_t)(end - pending.p) + 2);
        }
        if (single)
            break;
    }
    rp_buf_free(&pending);
}

/* Server-Sent Events responses: each recorded data line (keep-alives left out) becomes an EV_SSE
 * entry at the time its chunk came; a response the client cut gets an EV_HTTP_CUT at its tEnd. */
static void split_event_streams(struct rp_fixture *fx)
{
    size_t nlines = fx->n;
    const cJSON **resp = rp_xmalloc((nlines + 1) * sizeof *resp);
    size_t nresp = 0;
    for (size_t i = 0; i < nlines; i++)
        if (fx->ev[i].type == EV_HTTP_RESP)
            resp[nresp++] = fx->ev[i].j;
    for (size_t r = 0; r < nresp; r++) {
        const cJSON *j = resp[r];
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "headers");
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(h, "content-type");
        if (!cJSON_IsString(ct) || strcmp(ct->valuestring, "text/event-stream") != 0)
            continue;
        int id = int_member(j, "id", 0), line = 0;
        for (size_t i = 0; i < fx->n; i++)
            if (fx->ev[i].j == j)
                line = fx->ev[i].line;
        /* The stream's head: the client went on once it came (a Core client posts its handshake
         * only then), so the replay waits for it too. */
        struct rp_event *head = insert_at_time(fx, t_of(j, "t", 0));
        head->type = EV_HTTP_HEAD;
        head->id = id;
        head->line = line;
        head->server = 1;
        if (fx->door_core) {
            split_core_stream(fx, j, id, line);
            continue;
        }
        const cJSON *chunks = cJSON_GetObjectItemCaseSensitive(j, "chunks");
        const cJSON *body = cJSON_GetObjectItemCaseSensitive(j, "body");
        struct rp_buf pending = {0};
        int index = 0;
        const cJSON *piece = cJSON_IsArray(chunks) ? chunks->child : NULL;
        int single = !cJSON_IsArray(chunks);
        while (single || piece) {
            const cJSON *data = single ? body : cJSON_GetObjectItemCaseSensitive(piece, "data");
            int64_t t = single ? t_of(j, "t", 0) : t_of(piece, "t", 0);
            if (cJSON_IsString(data))
                rp_buf_adds(&pending, data->valuestring);
            char *end;
            while (pending.p && (end = strstr(pending.p, "\n\n")) != NULL) {
                size_t len = (size_t)(end - pending.p);
                const char *d = pending.p;
                if (len >= 6 && strncmp(d, "data: ", 6) == 0) {
                    d += 6;
                    len -= 6;
                }
                if (!(len == 2 && strncmp(d, "{}", 2) == 0)) {
                    char *text = rp_strndup(d, len);
                    struct rp_event *e = insert_at_time(fx, t);
                    e->type = EV_SSE;
                    e->id = id;
                    e->line = line;
                    e->index = index++;
                    e->data = text;
                    e->server = 1;
                }
                rp_buf_consume(&pending, (size_t)(end - pending.p) + 2);
            }
            if (single)
                break;
            piece = piece->next;
        }
        rp_buf_free(&pending);
    }
    for (size_t r = 0; r < nresp; r++) {
        const cJSON *cut = cJSON_GetObjectItemCaseSensitive(resp[r], "cut");
        if (!cJSON_IsString(cut) || strcmp(cut->valuestring, "client") != 0)
            continue;
        int line = 0;
        for (size_t i = 0; i < fx->n; i++)
            if (fx->ev[i].j == resp[r])
                line = fx->ev[i].line;
        struct rp_event *e = insert_at_time(fx, t_of(resp[r], "tEnd", t_of(resp[r], "t", 0)));
        e->type = EV_HTTP_CUT;
        e->id = int_member(resp[r], "id", 0);
        e->line = line;
    }
    free(resp);
}

struct rp_stream *rp_fixture_stream(struct rp_fixture *fx, int ws)
{
    for (size_t i = 0; i < fx->nstreams; i++)
        if (fx->streams[i].ws == ws)
            return &fx->streams[i];
    fx->streams = rp_xrealloc(fx->streams, (fx->nstreams + 1) * sizeof *fx->streams);
    struct rp_stream *s = &fx->streams[fx->nstreams++];
    memset(s, 0, sizeof *s);
    s->ws = ws;
    s->open_ev = s->close_ev = NONE;
    return s;
}

static void add_item(struct rp_stream *s, int element, const cJSON *value, const char *text, const char *binary,
                     struct rp_frame *f)
{
    if (s->nitems == s->capitems) {
        s->capitems = s->capitems ? s->capitems * 2 : 16;
        s->items = rp_xrealloc(s->items, s->capitems * sizeof *s->items);
    }
    s->items[s->nitems++] = (struct rp_item){element, value, text, binary, f};
}

/* MessagePack records cannot hold placeholders (a capture keeps binary frames as they were), so
 * the ids a server mints in them (22 characters of base64url, as connection ids are) are turned
 * into placeholders here: one <backendId:N> per distinct recorded value, N from 1001 on, bound
 * and checked as any placeholder is. */
static int is_minted_id(const char *v)
{
    if (strlen(v) != 22 || v[0] == '<')
        return 0;
    for (const char *p = v; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

void rp_fixture_mask_minted(struct rp_fixture *fx, cJSON *v)
{
    if (cJSON_IsString(v) && is_minted_id(v->valuestring)) {
        int k = 0;
        for (size_t i = 0; i < fx->nminted && !k; i++)
            if (strcmp(fx->minted[i], v->valuestring) == 0)
                k = (int)i + 1;
        if (!k) {
            fx->minted = rp_xrealloc(fx->minted, (fx->nminted + 1) * sizeof *fx->minted);
            fx->minted[fx->nminted++] = rp_strdup(v->valuestring);
            k = (int)fx->nminted;
        }
        char *ph = rp_fmt("<backendId:%d>", 1000 + k);
        cJSON_SetValuestring(v, ph);
        free(ph);
    }
    for (cJSON *c = v->child; c; c = c->next)
        rp_fixture_mask_minted(fx, c);
}

/* A Core frame: each record an item (ping records left out), a binary frame's MessagePack
 * records decoded. A frame that cannot be decoded expects itself byte for byte. */
static void core_frame(struct rp_fixture *fx, struct rp_stream *s, struct rp_frame *f, const char *text,
                       const char *binary)
{
    f->parsed = cJSON_CreateArray();
    if (binary) {
        size_t n = strlen(binary);
        unsigned char *raw = rp_xmalloc(n / 4 * 3 + 3);
        int len = EVP_DecodeBlock(raw, (const unsigned char *)binary, (int)n);
        for (size_t i = n; len > 0 && i > 0 && binary[i - 1] == '='; i--)
            len--;
        char *err = NULL;
        /* The handshake answer starts the stream's first records (a long poll may answer empty first). */
        if (len < 0 || rp_core_binary_records(raw, (size_t)len, s->nitems == 0, f->parsed, &err) < 0) {
            free(err);
            add_item(s, 0, NULL, NULL, binary, f);
            free(raw);
            return;
        }
        free(raw);
        rp_fixture_mask_minted(fx, f->parsed);
    } else if (text) {
        rp_core_text_records(text, strlen(text), f->parsed);
    }
    for (const cJSON *w = f->parsed->child; w; w = w->next) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(w, "v");
        if (v && rp_core_is_ping(v))
            continue;
        if (v)
            add_item(s, 0, v, NULL, NULL, f);
        else
            add_item(s, 0, NULL, cJSON_GetObjectItemCaseSensitive(w, "t")->valuestring, NULL, f);
    }
}

/* f, the server frame of event e, joins its stream's expected frames. */
static void append_frame(struct rp_stream *s, struct rp_event *e, struct rp_frame *f)
{
    if (s->nframes == s->capframes) {
        s->capframes = s->capframes ? s->capframes * 2 : 16;
        s->frames = rp_xrealloc(s->frames, s->capframes * sizeof *s->frames);
    }
    s->frames[s->nframes++] = f;
    e->frame = f;
    e->done = f->done;
}

/* What a recorded s2c frame expects (ExpectedStream.addFrame). */
static void add_frame(struct rp_fixture *fx, size_t evi)
{
    struct rp_event *e = &fx->ev[evi];
    struct rp_stream *s = rp_fixture_stream(fx, e->ws);
    struct rp_frame *f = calloc(1, sizeof *f);
    if (!f)
        abort();
    f->ev = evi;
    f->start = s->nitems;
    const char *binary = rp_ev_str(e, "binary");
    const char *text = rp_ev_str(e, "text");
    if (fx->door_core) {
        core_frame(fx, s, f, text, binary);
    } else if (binary) {
        add_item(s, 0, NULL, NULL, binary, f);
    } else if (text) {
        f->parsed = rp_json_parse(text);
        if (!f->parsed) {
            add_item(s, 0, NULL, text, NULL, f);
        } else if (rp_json_is_keepalive(f->parsed)) {
            f->keepalive = 1;
        } else if (rp_json_is_persistent(f->parsed)) {
            f->head = cJSON_CreateObject();
            for (const cJSON *c = f->parsed->child; c; c = c->next)
                if (strcmp(c->string, "M") != 0 && strcmp(c->string, "C") != 0)
                    cJSON_AddItemToObject(f->head, c->string, cJSON_Duplicate(c, 1));
            f->special = f->head->child != NULL;
            f->cursor = cJSON_GetObjectItemCaseSensitive(f->parsed, "C");
            for (const cJSON *m = cJSON_GetObjectItemCaseSensitive(f->parsed, "M")->child; m; m = m->next)
                add_item(s, 1, m, NULL, NULL, f);
            f->persistent = 1;
        } else {
            add_item(s, 0, f->parsed, NULL, NULL, f);
        }
    }
    f->end = s->nitems;
    /* Keep-alives come as time allows; an empty plain frame says nothing either. */
    if (f->keepalive || (f->persistent && f->start == f->end && !f->special) || (fx->door_core && f->start == f->end))
        f->done = 1;
    append_frame(s, e, f);
}

/* A Core event stream's event: its records expected on the stream's own sequence (ws -id). */
static void add_core_event(struct rp_fixture *fx, size_t evi)
{
    struct rp_event *e = &fx->ev[evi];
    struct rp_stream *s = rp_fixture_stream(fx, -e->id);
    struct rp_frame *f = calloc(1, sizeof *f);
    if (!f)
        abort();
    f->ev = evi;
    f->start = s->nitems;
    core_frame(fx, s, f, e->data, NULL);
    f->end = s->nitems;
    f->done = f->start == f->end;
    append_frame(s, e, f);
}

/* Core long polling: a GET of the connection's path with its id= (not the negotiate, not an event
 * stream) is a poll; returns its connection's poll stream (RP_POLL_WS - i), 0 when it is none. */
static int poll_id_ws(struct rp_fixture *fx, const char *raw, int create);

static int core_poll_ws(struct rp_fixture *fx, const struct rp_event *req)
{
    const char *method = rp_ev_str(req, "method"), *path = rp_ev_str(req, "path"), *raw = rp_ev_str(req, "rawQuery");
    const char *accept = rp_ev_header(req, "accept");
    size_t pl = path ? strlen(path) : 0;
    if (!fx->door_core || !method || strcmp(method, "GET") != 0 || !raw || (accept && strstr(accept, "text/event-stream")) ||
        (pl >= 10 && strcmp(path + pl - 10, "/negotiate") == 0))
        return 0;
    for (size_t i = 0; i < fx->n; i++) {
        const char *ct = fx->ev[i].type == EV_HTTP_RESP && fx->ev[i].id == req->id ? rp_ev_header(&fx->ev[i], "content-type") : NULL;
        if (ct && strcmp(ct, "text/event-stream") == 0)
            return 0;
    }
    return poll_id_ws(fx, raw, 1);
}

/* The poll stream of the connection named by a query's id= (created when `create`), 0 when none. */
static int poll_id_ws(struct rp_fixture *fx, const char *raw, int create)
{
    const char *id = NULL;
    for (const char *p = raw; p && !id; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL)
        if (strncmp(p, "id=", 3) == 0)
            id = p + 3;
    if (!id)
        return 0;
    size_t n = strcspn(id, "&");
    for (size_t i = 0; i < fx->npoll_ids; i++)
        if (strlen(fx->poll_ids[i]) == n && strncmp(fx->poll_ids[i], id, n) == 0)
            return RP_POLL_WS - (int)i;
    if (!create)
        return 0;
    fx->poll_ids = rp_xrealloc(fx->poll_ids, (fx->npoll_ids + 1) * sizeof *fx->poll_ids);
    fx->poll_ids[fx->npoll_ids++] = rp_strndup(id, n);
    return RP_POLL_WS - (int)(fx->npoll_ids - 1);
}

/* A Core poll's recorded answer: a 200's records join its connection's poll stream (an empty one
 * expects nothing), a 204 (the end) is marked as the stream's; any other status stays an answer of
 * its own. */
static void add_poll_answer(struct rp_fixture *fx, size_t evi)
{
    struct rp_event *e = &fx->ev[evi];
    int ws = 0, status = int_member(e->j, "status", -1);
    for (size_t i = 0; i < evi && !ws; i++)
        if (fx->ev[i].type == EV_HTTP_REQ && fx->ev[i].id == e->id)
            ws = fx->ev[i].poll_ws;
    if (!ws || (status != 200 && status != 204) || e->done)
        return;
    e->poll_ws = ws;
    struct rp_stream *s = rp_fixture_stream(fx, ws);
    if (status == 204)
        return;
    const char *b64 = rp_ev_str(e, "bodyBase64"), *body = rp_ev_str(e, "body");
    s->binary |= b64 != NULL;
    struct rp_frame *f = calloc(1, sizeof *f);
    if (!f)
        abort();
    f->ev = evi;
    f->start = s->nitems;
    core_frame(fx, s, f, b64 ? NULL : body ? body : "", b64);
    f->end = s->nitems;
    /* An empty answer expects nothing, but the first poll's is the transport's start: the client
     * went on once it came, so the replay waits for it (rp_poll.c marks it on the first answer). */
    f->done = f->start == f->end && s->nframes > 0;
    append_frame(s, e, f);
}

static int check_session(const cJSON *session, const char *name, struct rp_fixture *fx, char **err)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(session, "type");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(session, "format");
    int version = int_member(session, "version", -1);
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "session") != 0 || !cJSON_IsString(format) ||
        (strcmp(format->valuestring, "signalr-legacy-capture") != 0 && strcmp(format->valuestring, "signalr-capture") != 0)) {
        *err = rp_fmt("%s: the first line is not a signalr-legacy-capture or signalr-capture session line", name);
        return -1;
    }
    int v2 = strcmp(format->valuestring, "signalr-capture") == 0;
    if (version != (v2 ? 2 : 1)) {
        *err = rp_fmt("%s: format version %d, this replayer reads %s version %d", name, version, format->valuestring,
                      v2 ? 2 : 1);
        return -1;
    }
    const cJSON *door = cJSON_GetObjectItemCaseSensitive(session, "door");
    fx->door_core = v2 && cJSON_IsString(door) && strcmp(door->valuestring, "core") == 0;
    return 0;
}

static void classify(struct rp_event *e)
{
    const char *dir = rp_ev_str(e, "dir"), *by = rp_ev_str(e, "by");
    e->c2s = dir && strcmp(dir, "c2s") == 0;
    e->by_client = by && strcmp(by, "client") == 0;
    e->server = e->type == EV_HTTP_RESP || e->type == EV_SSE || e->type == EV_WS_ACCEPTED ||
                e->type == EV_WS_REFUSED || (e->type == EV_WS_FRAME && !e->c2s) ||
                (e->type == EV_WS_CLOSE && !e->by_client);
}

int rp_fixture_parse(const char *text, const char *name, struct rp_fixture *fx, char **err)
{
    memset(fx, 0, sizeof *fx);
    fx->name = rp_strdup(name);
    size_t cap = 0;
    int lineno = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *line = rp_strndup(p, len);
        p += len + (nl ? 1 : 0);
        int blank = strspn(line, " \t\r") == len;
        if (blank) {
            free(line);
            continue;
        }
        lineno++;
        cJSON *j = rp_json_parse(line);
        free(line);
        if (!j) {
            *err = rp_fmt("%s:%d: not JSON", name, lineno);
            return -1;
        }
        if (fx->nlines == cap)
            fx->lines = rp_xrealloc(fx->lines, (cap = cap ? cap * 2 : 64) * sizeof *fx->lines);
        fx->lines[fx->nlines++] = j;
    }
    if (fx->nlines == 0 || check_session(fx->lines[0], name, fx, err) < 0) {
        if (fx->nlines == 0)
            *err = rp_fmt("%s: empty file", name);
        return -1;
    }
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(fx->lines[fx->nlines - 1], "type");
    if (fx->nlines < 2 || !cJSON_IsString(last) || strcmp(last->valuestring, "end") != 0) {
        *err = rp_fmt("%s: no end line (a truncated capture)", name);
        return -1;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fx->lines[fx->nlines - 1], "truncated"))) {
        *err = rp_fmt("%s: a truncated capture (it reached --capture-max-file): the rest of the session is not "
                      "in it", name);
        return -1;
    }
    for (size_t i = 1; i + 1 < fx->nlines; i++) {
        const cJSON *j = fx->lines[i];
        const char *bodyless = NULL;
        for (const char *const *k = (const char *const[]){"body", "text", "binary", NULL}; *k && !bodyless; k++) {
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, *k);
            if (cJSON_IsString(b) && strncmp(b->valuestring, "<body:", 6) == 0 && strstr(b->valuestring, " bytes>"))
                bodyless = b->valuestring;
        }
        if (bodyless) {
            *err = rp_fmt("%s:%zu: recorded without bodies (%s, --capture-bodies none): it cannot be replayed", name,
                          i + 1, bodyless);
            return -1;
        }
        struct rp_event *e = push_event(fx, fx->n);
        e->j = j;
        e->line = (int)i + 1;
        e->type = type_of(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "type")));
        e->id = int_member(j, "id", 0);
        e->ws = int_member(j, "ws", 0);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "t");
        e->has_t = cJSON_IsNumber(t);
        e->t = e->has_t ? (int64_t)t->valuedouble : 0;
    }
    split_event_streams(fx);
    for (size_t i = 0; i < fx->n; i++) {
        struct rp_event *e = &fx->ev[i];
        if (e->type == EV_SSE || e->type == EV_HTTP_CUT || e->type == EV_HTTP_HEAD) {
            e->server = e->type != EV_HTTP_CUT;
            if (e->type == EV_SSE && fx->door_core)
                add_core_event(fx, i);
            continue;
        }
        classify(e);
        if (e->type == EV_HTTP_REQ) {
            e->poll_ws = core_poll_ws(fx, e);
            const char *method = rp_ev_str(e, "method");
            if (fx->door_core && method && strcmp(method, "DELETE") == 0)
                e->deletes_ws = poll_id_ws(fx, rp_ev_str(e, "rawQuery"), 0);
        } else if (e->type == EV_HTTP_RESP) {
            const char *cut = rp_ev_str(e, "cut");
            /* Nothing to compare against an error; a cut stream is compared event by event. */
            if (cJSON_GetObjectItemCaseSensitive(e->j, "error") || (cut && strcmp(cut, "client") == 0))
                e->done = 1;
            add_poll_answer(fx, i);
        } else if (e->type == EV_WS_OPEN) {
            rp_fixture_stream(fx, e->ws)->open_ev = i;
        } else if (e->type == EV_WS_FRAME && !e->c2s) {
            add_frame(fx, i);
        } else if (e->type == EV_WS_CLOSE && !e->by_client) {
            rp_fixture_stream(fx, e->ws)->close_ev = i;
        }
    }
    return 0;
}

void rp_fixture_free(struct rp_fixture *fx)
{
    for (size_t i = 0; i < fx->n; i++)
        free(fx->ev[i].data);
    free(fx->ev);
    for (size_t s = 0; s < fx->nstreams; s++) {
        for (size_t f = 0; f < fx->streams[s].nframes; f++) {
            cJSON_Delete(fx->streams[s].frames[f]->parsed);
            cJSON_Delete(fx->streams[s].frames[f]->head);
            free(fx->streams[s].frames[f]);
        }
        free(fx->streams[s].frames);
        free(fx->streams[s].items);
    }
    free(fx->streams);
    for (size_t i = 0; i < fx->nlines; i++)
        cJSON_Delete(fx->lines[i]);
    free(fx->lines);
    for (size_t i = 0; i < fx->nminted; i++)
        free(fx->minted[i]);
    free(fx->minted);
    for (size_t i = 0; i < fx->npoll_ids; i++)
        free(fx->poll_ids[i]);
    free(fx->poll_ids);
    free(fx->name);
    memset(fx, 0, sizeof *fx);
}

static const char *or_q(const char *s)
{
    return s ? s : "?";
}

char *rp_describe(const struct rp_event *e)
{
    const char *s;
    char status[32];
    switch (e->type) {
    case EV_HTTP_REQ:
        return rp_fmt("line %d: %s %s", e->line, or_q(rp_ev_str(e, "method")), or_q(rp_ev_str(e, "path")));
    case EV_HTTP_RESP: {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(e->j, "status");
        if (cJSON_IsNumber(st))
            snprintf(status, sizeof status, "%d", (int)st->valuedouble);
        else
            snprintf(status, sizeof status, "%.20s", or_q(rp_ev_str(e, "error")));
        return rp_fmt("line %d: response %d (%s)", e->line, e->id, status);
    }
    case EV_SSE:
        return rp_fmt("line %d: event %d of stream %d: data: %.120s", e->line, e->index + 1, e->id, e->data);
    case EV_WS_OPEN:
        return rp_fmt("line %d: WebSocket %d %s", e->line, e->ws, or_q(rp_ev_str(e, "path")));
    case EV_WS_FRAME:
        s = rp_ev_str(e, "text");
        return rp_fmt("line %d: ws %d %s %.120s", e->line, e->ws, e->c2s ? "c2s" : "s2c", s ? s : "<binary>");
    case EV_HTTP_CUT:
        return rp_fmt("line %d: the client closes its request %d", e->line, e->id);
    case EV_HTTP_HEAD:
        return rp_fmt("line %d: the head of event stream %d", e->line, e->id);
    case EV_WS_ACCEPTED:
        return rp_fmt("line %d: ws-accepted ws %d", e->line, e->ws);
    case EV_WS_REFUSED:
        return rp_fmt("line %d: ws-refused ws %d", e->line, e->ws);
    case EV_WS_CLOSE:
        return rp_fmt("line %d: ws-close ws %d", e->line, e->ws);
    default:
        return rp_fmt("line %d: %s", e->line, or_q(rp_ev_str(e, "type")));
    }
}
