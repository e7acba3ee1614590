/* capture_events.c - what each capture hook writes: requests, answers, streams, WebSocket frames (see capture.h). */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "relay/capture.h"
#include "relay/capture_file.h"
#include "relay/capture_request.h"
#include "relay/clock.h"

static struct capture_conn *conn_find(struct capture *cap, struct lws *wsi)
{
    struct dict_entry *e = dict_find(&cap->conns, span_make((const char *)&wsi, sizeof wsi));
    return e ? list_container_of(e, struct capture_conn, entry) : NULL;
}

/* A body as recorded: masked text, its size only (--capture-bodies none, unless always: a
 * negotiate answer), or base64 when it is not text. */
static void add_body(cJSON *o, struct capture_file *f, const char *key, const char *data, size_t len, bool always,
                     bool persistent)
{
    struct buf *scratch = &f->cap->scratch, b = *scratch; /* reused: no allocation per frame */
    buf_reset(&b);
    char size[64];
    if (!always && f->cap->loop->cfg->capture_no_bodies) {
        snprintf(size, sizeof size, "<body:%zu bytes>", len);
        cJSON_AddStringToObject(o, key, size);
    } else if (!utf8_is_valid(data, len) || memchr(data, '\0', len)) {
        if (buf_reserve(&b, 4 * (len / 3) + 5)) {
            int n = EVP_EncodeBlock((unsigned char *)b.data, (const unsigned char *)data, (int)len);
            b.data[n] = '\0';
            cJSON_AddStringToObject(o, strcmp(key, "body") == 0 ? "bodyBase64" : "binary", b.data);
        }
    } else if ((persistent ? mask_persistent(&f->names, &b, data, len) : mask_text(&f->names, &b, data, len)) &&
               buf_append_byte(&b, '\0')) {
        cJSON_AddStringToObject(o, key, b.data);
    }
    if (b.cap > (1u << 20)) /* kept for the next frame, unless a large body grew it */
        buf_free(&b);
    *scratch = b;
}

static void emit_request(struct capture_conn *c)
{
    if (!c->request)
        return;
    cJSON *o = c->request;
    c->request = NULL;
    capfile_add_time(o, c->file);
    struct buf form;
    buf_init(&form);
    /* A form's pairs are masked one by one; its body is their masked encoding. */
    if (!c->file->cap->loop->cfg->capture_no_bodies && capture_form(o, &c->file->names, c->file->legacy, c->body.data, c->body.len, &form) &&
        buf_append_byte(&form, '\0'))
        cJSON_AddStringToObject(o, "body", form.data);
    else
        add_body(o, c->file, "body", c->body.data ? c->body.data : "", c->body.len, false, false);
    buf_free(&form);
    buf_reset(&c->body);
    capfile_emit(c->file, o);
}

static void emit_response(struct capture_conn *c, const char *cut)
{
    cJSON *o = c->response;
    c->response = NULL;
    c->chunks = NULL;
    capfile_add_uint(o, "tEnd", capfile_time(c->file));
    if (cut)
        cJSON_AddStringToObject(o, "cut", cut);
    buf_reset(&c->body); /* the body is the pieces joined (each kept once, in chunks, until now) */
    const cJSON *piece;
    cJSON_ArrayForEach(piece, cJSON_GetObjectItemCaseSensitive(o, "chunks"))
        buf_append_cstr(&c->body, cJSON_GetObjectItemCaseSensitive(piece, "data")->valuestring);
    if (c->body.len && !c->file->cap->loop->cfg->capture_no_bodies && buf_append_byte(&c->body, '\0'))
        cJSON_AddStringToObject(o, "body", c->body.data);
    buf_reset(&c->body);
    c->stream_bytes = 0;
    capfile_emit(c->file, o);
}

/* The connection stops recording (its answer ended, or it is gone). */
static void conn_finish(struct capture_conn *c)
{
    if (c->request)
        emit_request(c);
    if (c->response)
        emit_response(c, "client");
    if (c->ws && !c->closed) {
        cJSON *o = capfile_event(c->file, "ws-close");
        capfile_add_uint(o, "ws", c->id);
        capfile_add_time(o, c->file);
        cJSON_AddStringToObject(o, "by", "client");
        capfile_add_uint(o, "code", 1006);
        cJSON_AddStringToObject(o, "reason", "");
        capfile_emit(c->file, o);
    }
    buf_free(&c->body);
    capfile_release(c->file);
    free(c);
}

static void conn_end(struct capture *cap, struct capture_conn *c)
{
    dict_remove(&cap->conns, &c->entry);
    conn_finish(c);
}

static struct capture_conn *conn_start(struct capture *cap, struct lws *wsi, struct capture_file *f, bool ws)
{
    struct capture_conn *old = conn_find(cap, wsi);
    if (old)
        conn_end(cap, old);
    struct capture_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->wsi = wsi;
    c->file = f;
    c->ws = ws;
    c->id = ws ? ++f->next_ws : ++f->next_http;
    buf_init(&c->body);
    if (dict_insert(&cap->conns, &c->entry, span_make((const char *)&c->wsi, sizeof c->wsi)) != DICT_OK) {
        free(c);
        return NULL;
    }
    f->refs++;
    return c;
}

static bool ends_with_nocase(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* The file a request of door on wsi records into: a new one for a negotiate
 * (or, with new_without_token, a request naming no token), else the one its
 * token names. NULL: not recorded. */
static struct capture_file *file_for(struct capture *cap, struct lws *wsi, enum capture_door door, const char *path,
                                     bool new_without_token, bool *negotiate)
{
    *negotiate = ends_with_nocase(path, "/negotiate") || ends_with_nocase(path, "/negotiate/");
    if (*negotiate) {
        struct capture_file *f = capfile_new(cap, door == CAPTURE_LEGACY, path);
        if (f) {
            f->grace = true; /* the reference file_new gave: until a session or the negotiate's time is up */
            f->grace_until = clock_now_ms() + cap->loop->cfg->negotiate_ttl_ms;
        }
        return f;
    }
    struct buf token;
    buf_init(&token);
    capture_query_value(wsi, door == CAPTURE_CORE ? "id" : "connectionToken", &token);
    struct capture_file *f = token.len ? capfile_of_token(cap, token.data, token.len) : NULL;
    bool fresh = !token.len && new_without_token;
    buf_free(&token);
    if (fresh && (f = capfile_new(cap, door == CAPTURE_LEGACY, path)) != NULL)
        f->refs--; /* the connection's reference will hold it */
    return f;
}

void capture_http_request(struct lws *wsi, enum capture_door door)
{
    struct capture *cap = capture_of_wsi(wsi);
    if (!cap)
        return;
    struct capture_conn *old = conn_find(cap, wsi);
    if (old) /* keep-alive: the connection's last request */
        conn_end(cap, old);
    char path[2048];
    const char *method = capture_request_line(wsi, path, sizeof path);
    if (strcmp(method, "OPTIONS") == 0)
        return; /* a CORS preflight names no connection (and is no negotiate) */
    bool negotiate;
    struct capture_file *f = file_for(cap, wsi, door, path, false, &negotiate);
    struct capture_conn *c = f ? conn_start(cap, wsi, f, false) : NULL;
    if (f && f->refs == 0) { /* not held (conn_start failed) */
        f->refs = 1;
        capfile_release(f);
    }
    if (!c)
        return;
    c->negotiate = negotiate;
    cJSON *o = capfile_event(f, "http-request");
    capfile_add_uint(o, "id", c->id);
    cJSON_AddStringToObject(o, "method", method);
    capture_describe_request(o, wsi, &f->names, path);
    c->request = o;
    if (!capture_request_has_body(wsi, method))
        emit_request(c);
}

void capture_http_body(struct lws *wsi, const void *in, size_t len)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (c && c->request && c->body.len + len <= cap->loop->cfg->capture_max_file_bytes)
        buf_append(&c->body, in, len);
}

void capture_http_body_done(struct lws *wsi)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (c && c->request)
        emit_request(c);
}

static void add_response_head(cJSON *o, unsigned status, const char *content_type, bool stream)
{
    capfile_add_uint(o, "status", status);
    cJSON *h = cJSON_AddObjectToObject(o, "headers");
    if (content_type)
        cJSON_AddStringToObject(h, "content-type", content_type);
    cJSON_AddStringToObject(h, "cache-control", stream ? "no-cache,no-store" : "no-cache");
    cJSON_AddStringToObject(h, "x-content-type-options", "nosniff");
}

void capture_http_response(struct lws *wsi, unsigned status, const char *content_type, const char *body, size_t len)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (!c)
        return;
    struct capture_file *f = c->file;
    if (c->ws) {
        cJSON *o = capfile_event(f, "ws-refused");
        capfile_add_uint(o, "ws", c->id);
        capfile_add_time(o, f);
        capfile_add_uint(o, "status", status);
        add_body(o, f, "body", body, len, false, false);
        capfile_emit(f, o);
        c->closed = true;
        return;
    }
    emit_request(c); /* if it was answered before its body ended */
    if (c->negotiate && status == 200)
        mask_learn_negotiate(&f->names, body, len, capfile_register_token, f);
    cJSON *o = capfile_event(f, "http-response");
    capfile_add_uint(o, "id", c->id);
    capfile_add_time(o, f);
    capfile_add_uint(o, "tEnd", capfile_time(f));
    add_response_head(o, status, content_type, false);
    add_body(o, f, "body", body, len, c->negotiate, f->legacy);
    capfile_emit(f, o);
    conn_end(cap, c);
}

void capture_http_stream(struct lws *wsi, unsigned status, const char *content_type)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (!c || c->ws || c->response)
        return;
    emit_request(c);
    cJSON *o = capfile_event(c->file, "http-response");
    capfile_add_uint(o, "id", c->id);
    capfile_add_time(o, c->file);
    add_response_head(o, status, content_type, !c->file->legacy);
    c->chunks = cJSON_AddArrayToObject(o, "chunks");
    c->response = o;
    buf_reset(&c->body);
}

void capture_http_chunk(struct lws *wsi, const void *data, size_t len)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (!c || !c->response || !len)
        return;
    cJSON *chunk = cJSON_CreateObject();
    capfile_add_time(chunk, c->file);
    add_body(chunk, c->file, "data", data, len, false, c->file->legacy);
    cJSON *piece = cJSON_GetObjectItemCaseSensitive(chunk, "data");
    if (!cJSON_IsString(piece)) { /* out of memory: the piece is left out */
        cJSON_Delete(chunk);
        return;
    }
    c->stream_bytes += strlen(piece->valuestring);
    cJSON_AddItemToArray(c->chunks, chunk);
    if (c->file->bytes + 2 * c->stream_bytes > cap->loop->cfg->capture_max_file_bytes)
        emit_response(c, NULL); /* over the file's cap: written as far as it came, and the file ends */
}

void capture_http_stream_end(struct lws *wsi)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (c && c->response)
        emit_response(c, NULL);
}

/* ------------------------------------------------------------ WebSockets */

void capture_ws_open(struct lws *wsi, enum capture_door door)
{
    struct capture *cap = capture_of_wsi(wsi);
    if (!cap)
        return;
    char path[2048];
    capture_request_line(wsi, path, sizeof path);
    bool negotiate;
    struct capture_file *f = file_for(cap, wsi, door, path, door == CAPTURE_CORE, &negotiate);
    bool fresh = f && f->refs == 0;
    struct capture_conn *c = f ? conn_start(cap, wsi, f, true) : NULL;
    if (fresh && !c) {
        f->refs = 1;
        capfile_release(f);
    }
    if (!c)
        return;
    cJSON *o = capfile_event(f, "ws-open");
    capfile_add_uint(o, "ws", c->id);
    capfile_add_time(o, f);
    capture_describe_request(o, wsi, &f->names, path);
    capfile_emit(f, o);
}

void capture_ws_accepted(struct lws *wsi)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (!c || !c->ws)
        return;
    cJSON *o = capfile_event(c->file, "ws-accepted");
    capfile_add_uint(o, "ws", c->id);
    capfile_add_time(o, c->file);
    capfile_add_uint(o, "status", 101);
    capfile_emit(c->file, o);
}

void capture_ws_frame(struct lws *wsi, bool from_client, const void *data, size_t len, bool binary)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (!c || !c->ws || c->file->ended)
        return;
    cJSON *o = capfile_event(c->file, "ws-frame");
    capfile_add_uint(o, "ws", c->id);
    capfile_add_time(o, c->file);
    cJSON_AddStringToObject(o, "dir", from_client ? "c2s" : "s2c");
    if (binary && !cap->loop->cfg->capture_no_bodies) {
        struct buf b;
        buf_init(&b);
        if (buf_reserve(&b, 4 * (len / 3) + 5)) {
            int n = EVP_EncodeBlock((unsigned char *)b.data, data, (int)len);
            b.data[n] = '\0';
            cJSON_AddStringToObject(o, "binary", b.data);
        }
        buf_free(&b);
    } else {
        add_body(o, c->file, binary ? "binary" : "text", data, len, false,
                 !from_client && c->file->legacy);
    }
    capfile_emit(c->file, o);
}

static void write_close(struct capture_conn *c, const char *by, unsigned code, const char *reason, size_t reason_len)
{
    if (c->closed)
        return;
    c->closed = true;
    cJSON *o = capfile_event(c->file, "ws-close");
    capfile_add_uint(o, "ws", c->id);
    capfile_add_time(o, c->file);
    cJSON_AddStringToObject(o, "by", by);
    capfile_add_uint(o, "code", code);
    char text[128];
    snprintf(text, sizeof text, "%.*s", (int)(reason_len < 123 ? reason_len : 123), reason);
    cJSON_AddStringToObject(o, "reason", text);
    capfile_emit(c->file, o);
}

void capture_ws_client_close(struct lws *wsi, const void *payload, size_t len)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    const unsigned char *p = payload;
    if (c && c->ws)
        write_close(c, "client", len >= 2 ? (unsigned)(p[0] << 8 | p[1]) : 1005, len > 2 ? (const char *)p + 2 : "",
                    len > 2 ? len - 2 : 0);
}

void capture_ws_server_close(struct lws *wsi, unsigned code, const char *reason)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (c && c->ws)
        write_close(c, "server", code, reason ? reason : "", reason ? strlen(reason) : 0);
    else if (c && c->response) /* a legacy event stream the relay ends (its session closing) */
        emit_response(c, NULL);
}

void capture_wsi_gone(struct lws *wsi)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (c)
        conn_end(cap, c);
}

void capture_conns_end_all(struct capture *cap)
{
    struct dict_iter it;
    dict_iter_begin(&it, &cap->conns);
    struct dict_entry *e;
    while ((e = dict_iter_next(&it)) != NULL) {
        dict_remove(&cap->conns, e);
        conn_finish(list_container_of(e, struct capture_conn, entry));
    }
    dict_iter_end(&it);
}

/* ------------------------------------------------------------ sessions */

void capture_session_begin(struct lws *wsi, struct capture_file **slot)
{
    struct capture *cap = capture_of_wsi(wsi);
    struct capture_conn *c = cap ? conn_find(cap, wsi) : NULL;
    if (!c || *slot)
        return;
    struct capture_file *f = c->file;
    f->refs++;
    *slot = f;
    if (f->grace) {
        f->grace = false;
        capfile_release(f);
    }
}

void capture_session_end(struct capture_file **slot)
{
    if (!*slot)
        return;
    capfile_release(*slot);
    *slot = NULL;
}

