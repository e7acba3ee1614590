/* test_replay.c - signalr-replay's comparison rules without a server (port of the rule tests of
 * tests/legacy/capture/test/replay.test.mjs): JSON values with exact numbers and member order,
 * placeholders bound once and never shared within a family, backend ids by shape, reading a
 * fixture (versions, truncation, event streams split into events), the reference masks, Core long
 * polls compared as one stream of records whatever the batching. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rp_bind.h"
#include "rp_core.h"
#include "rp_fixture.h"
#include "rp_json.h"
#include "rp_mask.h"
#include "rp_run_int.h"

/* 1 when why is non-NULL and contains want (why is freed). */
static int says(char *why, const char *want)
{
    int ok = why && strstr(why, want) != NULL;
    if (!ok)
        fprintf(stderr, "  expected a reason with \"%s\", got %s\n", want, why ? why : "(none)");
    free(why);
    return ok;
}

static char *match(const char *e, const char *a, struct rp_bindings *b, int ordered)
{
    cJSON *je = rp_json_parse(e), *ja = rp_json_parse(a);
    char *why = rp_json_match(je, ja, b, ordered, "$");
    cJSON_Delete(je);
    cJSON_Delete(ja);
    return why;
}

static void test_exact_numbers(void)
{
    cJSON *v = rp_json_parse("{\"b\":9007199254740993,\"a\":[1.5e3,\"x\",null,true],\"1\":{}}");
    CHECK(v != NULL);
    CHECK(strcmp(v->child->string, "b") == 0 && strcmp(v->child->next->string, "a") == 0);
    CHECK(strcmp(cJSON_GetObjectItem(v, "b")->valuestring, "9007199254740993") == 0);
    char *shown = rp_json_show(v, 300);
    CHECK(strcmp(shown, "{\"b\":9007199254740993,\"a\":[1.5e3,\"x\",null,true],\"1\":{}}") == 0);
    free(shown);
    cJSON_Delete(v);
    struct rp_bindings b = {0};
    const char *rec = "{\"b\":9007199254740993,\"a\":[1.5e3,\"x\",null,true],\"1\":{}}";
    CHECK(match(rec, "{\"b\":9007199254740993,\"a\":[1500,\"x\",null,true],\"1\":{}}", &b, 0) == NULL);
    CHECK(says(match(rec, "{\"b\":9007199254740992,\"a\":[1500,\"x\",null,true],\"1\":{}}", &b, 0),
               "$.b: expected 9007199254740993, got 9007199254740992"));
    CHECK(match("[-0, 0.5, 1e2]", "[0, 5e-1, 100]", &b, 0) == NULL);
    CHECK(rp_json_parse("{bad") == NULL);
    /* Numbers inside strings are not numbers. */
    v = rp_json_parse("{\"s\":\"1, 2\",\"n\":[3,\"-4\",5]}");
    CHECK(strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(v, "n"), 2)->valuestring, "5") == 0);
    cJSON_Delete(v);
    rp_bindings_free(&b);
}

static void test_types_members_order(void)
{
    struct rp_bindings b = {0};
    CHECK(says(match("{\"I\":\"0\"}", "{\"I\":0}", &b, 0), "$.I: expected string \"0\", got number 0"));
    CHECK(says(match("{\"I\":\"0\",\"R\":1}", "{\"I\":\"0\"}", &b, 0), "missing [\"R\"]"));
    CHECK(says(match("{\"I\":\"0\"}", "{\"I\":\"0\",\"X\":1}", &b, 0), "unexpected [\"X\"]"));
    CHECK(says(match("[1,2]", "[1,2,3]", &b, 0), "expected 2 elements"));
    CHECK(match("{\"R\":1,\"I\":\"0\"}", "{\"I\":\"0\",\"R\":1}", &b, 0) == NULL);
    CHECK(says(match("{\"R\":1,\"I\":\"0\"}", "{\"I\":\"0\",\"R\":1}", &b, 1),
               "member order [\"I\",\"R\"], recorded [\"R\",\"I\"]"));
    /* Member order is a top-level rule: nested objects compare by member set. */
    CHECK(match("{\"R\":{\"a\":1,\"b\":2}}", "{\"R\":{\"b\":2,\"a\":1}}", &b, 1) == NULL);
    CHECK(says(match("true", "false", &b, 0), "expected true, got false"));
    CHECK(says(match("null", "0", &b, 0), "expected null null, got number 0"));
    rp_bindings_free(&b);
}

static void test_placeholders(void)
{
    struct rp_bindings b = {0};
    cJSON *seven = cJSON_CreateNumber(7);
    CHECK(rp_match_text("<cursor:1.1>", "abc-1", &b) == NULL);
    CHECK(rp_match_text("<cursor:1.1>", "abc-1", &b) == NULL);
    CHECK(says(rp_match_text("<cursor:1.1>", "abc-2", &b), "was \"abc-1\" earlier in this run"));
    CHECK(says(rp_match_text("<cursor:1.2>", "abc-1", &b), "already <cursor:1.1>"));
    /* Another connection's cursors are another family. */
    CHECK(rp_match_text("<cursor:2.1>", "abc-1", &b) == NULL);
    CHECK(says(rp_json_match_string("<cursor:1.3>", seven, &b), "expected a string"));
    CHECK(says(rp_match_text("<backendId:1>", "short", &b), "is not a backendId"));
    CHECK(rp_match_text("id <backendId:1> and <backendId:1>", "id AAAAAAAAAAAAAAAAAAAAAA and AAAAAAAAAAAAAAAAAAAAAA",
                        &b) == NULL);
    CHECK(rp_bind_get(&b, "<backendId:1>") && strcmp(rp_bind_get(&b, "<backendId:1>"), "AAAAAAAAAAAAAAAAAAAAAA") == 0);
    CHECK(says(rp_match_text("id <backendId:1>", "id BBBBBBBBBBBBBBBBBBBBBB", &b), "expected \"id <backendId:1>\""));
    /* A repeat inside one string must be the same text. */
    CHECK(says(rp_match_text("<backendId:2>/<backendId:2>", "CCCCCCCCCCCCCCCCCCCCCC/DDDDDDDDDDDDDDDDDDDDDD", &b),
               "expected"));
    /* Not placeholders: compared as text. */
    CHECK(rp_match_text("</script>", "</script>", &b) == NULL);
    CHECK(says(rp_match_text("<cursor>x", "<cursor>y", &b), "expected"));
    /* Numbered tokens are one family. */
    CHECK(rp_match_text("<connectionToken>", "t1", &b) == NULL);
    CHECK(says(rp_match_text("<connectionToken#2>", "t1", &b), "already <connectionToken>"));
    /* Reference fixtures: the real server's cursors may be one value here. */
    b.shared_cursors = 1;
    CHECK(rp_match_text("<cursor:1.4>", "abc-1", &b) == NULL);
    /* An empty value binds nothing. */
    CHECK(says(rp_match_text("<groupsToken:1.1>", "", &b), "empty value"));
    size_t s, l;
    CHECK(rp_ph_find("a <cursor:2.5> b", 0, &s, &l) && s == 2 && l == 12);
    CHECK(!rp_ph_find("<cursor:2.> <nope> <tid", 0, &s, &l));
    cJSON_Delete(seven);
    rp_bindings_free(&b);
}

static const char FIXTURE[] =
    "{\"type\":\"session\",\"format\":\"signalr-legacy-capture\",\"version\":1,\"label\":null}\n"
    "{\"type\":\"http-request\",\"id\":1,\"t\":1,\"method\":\"GET\",\"path\":\"/signalr/connect\",\"rawQuery\":\"transport=serverSentEvents\",\"headers\":{},\"body\":\"\"}\n"
    "{\"type\":\"http-response\",\"id\":1,\"t\":2,\"tEnd\":9,\"status\":200,\"cut\":\"client\",\"headers\":{\"content-type\":\"text/event-stream\"},"
    "\"chunks\":[{\"t\":2,\"data\":\"data: initialized\\n\\n\"},{\"t\":3,\"data\":\"data: {}\\n\\ndata: {\\\"C\\\":\\\"<cursor:1.1>\\\",\"},{\"t\":5,\"data\":\"\\\"M\\\":[]}\\n\\n\"}],"
    "\"body\":\"\"}\n"
    "{\"type\":\"http-request\",\"id\":2,\"t\":4,\"method\":\"GET\",\"path\":\"/signalr/start\",\"rawQuery\":\"\",\"headers\":{},\"body\":\"\"}\n"
    "{\"type\":\"http-response\",\"id\":2,\"t\":6,\"tEnd\":6,\"status\":200,\"headers\":{},\"body\":\"{}\"}\n"
    "{\"type\":\"ws-open\",\"ws\":1,\"t\":7,\"path\":\"/signalr/connect\",\"rawQuery\":\"\",\"headers\":{}}\n"
    "{\"type\":\"ws-accepted\",\"ws\":1,\"t\":7,\"status\":101}\n"
    "{\"type\":\"ws-frame\",\"ws\":1,\"t\":8,\"dir\":\"s2c\",\"text\":\"{\\\"C\\\":\\\"x\\\",\\\"S\\\":1,\\\"M\\\":[]}\"}\n"
    "{\"type\":\"ws-frame\",\"ws\":1,\"t\":8,\"dir\":\"s2c\",\"text\":\"{}\"}\n"
    "{\"type\":\"ws-frame\",\"ws\":1,\"t\":8,\"dir\":\"s2c\",\"text\":\"{\\\"C\\\":\\\"y\\\",\\\"M\\\":[1,2]}\"}\n"
    "{\"type\":\"ws-frame\",\"ws\":1,\"t\":8,\"dir\":\"s2c\",\"text\":\"{\\\"R\\\":1,\\\"I\\\":\\\"0\\\"}\"}\n"
    "{\"type\":\"end\",\"t\":10,\"placeholders\":[]}\n";

static void test_fixture(void)
{
    struct rp_fixture fx;
    char *err = NULL;
    CHECK(rp_fixture_parse(FIXTURE, "f", &fx, &err) == 0);
    /* The stream's head at its response's t, its two events (keep-alive left out, the second
     * joined across chunks) where their chunk came: initialized after line 3 (t 2), the frame
     * after /start's request (t 5); the cut at tEnd 9. */
    int order[32], n = 0;
    for (size_t i = 0; i < fx.n && n < 32; i++)
        order[n++] = fx.ev[i].type;
    int want[] = {EV_HTTP_REQ, EV_HTTP_RESP, EV_HTTP_HEAD, EV_SSE, EV_HTTP_REQ, EV_SSE, EV_HTTP_RESP, EV_WS_OPEN, EV_WS_ACCEPTED,
                  EV_WS_FRAME, EV_WS_FRAME, EV_WS_FRAME, EV_WS_FRAME, EV_HTTP_CUT};
    CHECK_EQ_INT(n, sizeof want / sizeof want[0]);
    CHECK(memcmp(order, want, sizeof want) == 0);
    CHECK(fx.n > 5 && fx.ev[2].server && !fx.ev[2].done); /* the stream's head is waited for */
    CHECK(fx.n > 5 && fx.ev[3].data && strcmp(fx.ev[3].data, "initialized") == 0);
    CHECK(fx.n > 5 && fx.ev[5].data && strcmp(fx.ev[5].data, "{\"C\":\"<cursor:1.1>\",\"M\":[]}") == 0);
    CHECK(fx.ev[1].done); /* cut by the client: compared event by event */
    struct rp_stream *s = rp_fixture_stream(&fx, 1);
    CHECK_EQ_INT(s->nitems, 3);          /* 1, 2 and the hub result */
    CHECK_EQ_INT(s->nframes, 4);
    CHECK(s->frames[0]->special && !s->frames[0]->done);
    CHECK(s->frames[1]->keepalive && s->frames[1]->done);
    CHECK(s->items[0].element && !s->items[2].element);
    rp_fixture_free(&fx);

    char *v2 = strdup(FIXTURE);
    memcpy(strstr(v2, "\"version\":1"), "\"version\":2", 11);
    CHECK(rp_fixture_parse(v2, "f", &fx, &err) < 0 && says(err, "format version 2"));
    rp_fixture_free(&fx);
    free(v2);
    char *cut = strdup(FIXTURE);
    *strstr(cut, "{\"type\":\"end\"") = '\0';
    CHECK(rp_fixture_parse(cut, "f", &fx, &err) < 0 && says(err, "no end line"));
    rp_fixture_free(&fx);
    free(cut);
    const char *nobody = "{\"type\":\"session\",\"format\":\"signalr-capture\",\"version\":2,\"door\":\"core\"}\n"
                         "{\"type\":\"ws-frame\",\"ws\":1,\"t\":0,\"dir\":\"c2s\",\"text\":\"<body:35 bytes>\"}\n"
                         "{\"type\":\"end\",\"t\":0,\"placeholders\":[]}\n";
    CHECK(rp_fixture_parse(nobody, "n", &fx, &err) < 0 && says(err, "n:2: recorded without bodies"));
    rp_fixture_free(&fx);
    const char *trunc = "{\"type\":\"session\",\"format\":\"signalr-capture\",\"version\":2,\"door\":\"core\"}\n"
                        "{\"type\":\"end\",\"t\":0,\"truncated\":true,\"placeholders\":[]}\n";
    CHECK(rp_fixture_parse(trunc, "t", &fx, &err) < 0 && says(err, "a truncated capture"));
    rp_fixture_free(&fx);
    const char *core = "{\"type\":\"session\",\"format\":\"signalr-capture\",\"version\":2,\"door\":\"core\"}\n"
                       "{\"type\":\"end\",\"t\":0,\"placeholders\":[]}\n";
    CHECK(rp_fixture_parse(core, "c", &fx, &err) == 0 && fx.door_core);
    rp_fixture_free(&fx);
}

static void test_reference_mask(void)
{
    cJSON *v = rp_json_parse("{\"C\":\"c\",\"M\":[{\"H\":\"ChatHub\",\"M\":\"Welcome\",\"A\":[\"id\"]},"
                             "{\"H\":\"ChatHub\",\"M\":\"note\",\"A\":[1]}]}");
    rp_mask_reference_json(v, 0);
    char *s = rp_json_show(v, 500);
    /* Only welcome's argument (the connection id a hub sees) is masked; the hub name is compared. */
    CHECK(strcmp(s, "{\"C\":\"c\",\"M\":[{\"H\":\"ChatHub\",\"M\":\"Welcome\",\"A\":\"<any>\"},"
                    "{\"H\":\"ChatHub\",\"M\":\"note\",\"A\":[1]}]}") == 0);
    free(s);
    cJSON_Delete(v);
    /* Error texts are compared: the relay answers the real server's. */
    struct rp_bindings b = {0};
    v = rp_json_parse("{\"I\":\"1\",\"E\":\"boom\"}");
    rp_mask_reference_json(v, 0);
    cJSON *got = rp_json_parse("{\"I\":\"1\",\"E\":\"other text\"}");
    CHECK(says(rp_json_match(v, got, &b, 0, "$"), "$.E"));
    cJSON_Delete(got);
    cJSON_Delete(v);
    v = rp_json_parse("{\"TryWebSockets\":false,\"R\":{\"connectionId\":\"a\",\"transport\":\"x\",\"forwardedFor\":null}}");
    rp_mask_reference_json(v, 1);
    s = rp_json_show(v, 500);
    CHECK(strcmp(s, "{\"TryWebSockets\":\"<any>\",\"R\":{\"connectionId\":\"<any>\",\"transport\":\"<any>\",\"forwardedFor\":\"<any>\"}}") == 0);
    free(s);
    cJSON_Delete(v);
    CHECK(!rp_mask_reference_header(500, "content-type") && !rp_mask_reference_header(200, "content-type"));
    CHECK(!rp_mask_reference_header(500, "cache-control"));
    rp_bindings_free(&b);
}

static void test_core_records(void)
{
    cJSON *recs = cJSON_CreateArray();
    const char text[] = "{}\x1e{\"type\":6}\x1e{\"type\":3,\"invocationId\":\"1\",\"result\":9007199254740993}\x1enot json\x1e";
    CHECK_EQ_INT(rp_core_text_records(text, sizeof text - 1, recs), 4);
    CHECK(rp_json_is_keepalive(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, 0), "v")));
    CHECK(rp_core_is_ping(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, 1), "v")));
    CHECK(!rp_core_is_ping(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, 2), "v")));
    CHECK(strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, 3), "t")->valuestring, "not json") == 0);
    cJSON_Delete(recs);

    /* MessagePack: the handshake answer first (JSON ended by 0x1e), then records with a varint
     * length: [1,{},nil,"welcome",["x"],[]] and [3,{},"1",3,2^64-1], then a ping [6]. */
    static const unsigned char bin[] = {
        '{', '}', 0x1e,
        0x10, 0x96, 0x01, 0x80, 0xc0, 0xa7, 'w', 'e', 'l', 'c', 'o', 'm', 'e', 0x91, 0xa1, 'x', 0x90,
        0x0f, 0x95, 0x03, 0x80, 0xa1, '1', 0x03, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0x02, 0x91, 0x06,
    };
    recs = cJSON_CreateArray();
    char *err = NULL;
    CHECK_EQ_INT(rp_core_binary_records(bin, sizeof bin, 1, recs, &err), 4);
    char *shown = rp_json_show(recs, 1000);
    CHECK(strcmp(shown, "[{\"v\":{}},{\"v\":[1,{},null,\"welcome\",[\"x\"],[]]},"
                        "{\"v\":[3,{},\"1\",3,18446744073709551615]},{\"v\":[6]}]") == 0);
    free(shown);
    CHECK(rp_core_is_ping(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, 3), "v")));
    cJSON_Delete(recs);
    /* Not the first frame: no handshake answer there, and '{' (123) is a length that overruns. */
    recs = cJSON_CreateArray();
    CHECK(rp_core_binary_records(bin, sizeof bin, 0, recs, &err) < 0 && says(err, "123 bytes"));
    cJSON_Delete(recs);
    static const unsigned char cut[] = {0x05, 0x93, 0x01};
    recs = cJSON_CreateArray();
    CHECK(rp_core_binary_records(cut, sizeof cut, 0, recs, &err) < 0 && says(err, "left in the frame"));
    cJSON_Delete(recs);
}

static void test_core_fixture(void)
{
    /* A Core session: records are items (pings left out), {} is the handshake answer and is
     * compared; an id inside a MessagePack record becomes a placeholder. base64 of
     * 0x24 [1,{},nil,"welcome",["AAAAAAAAAAAAAAAAAAAAAA"]] + 0x02 [6]. */
    const char *text =
        "{\"type\":\"session\",\"format\":\"signalr-capture\",\"version\":2,\"door\":\"core\"}\n"
        "{\"type\":\"ws-open\",\"ws\":1,\"t\":1,\"path\":\"/chat\",\"rawQuery\":\"id=<connectionToken>\",\"headers\":{}}\n"
        "{\"type\":\"ws-frame\",\"ws\":1,\"t\":2,\"dir\":\"s2c\",\"text\":\"{}\\u001e{\\\"type\\\":6}\\u001e\"}\n"
        "{\"type\":\"ws-frame\",\"ws\":1,\"t\":3,\"dir\":\"s2c\",\"text\":\"{\\\"type\\\":6}\\u001e\"}\n"
        "{\"type\":\"ws-frame\",\"ws\":1,\"t\":4,\"dir\":\"s2c\",\"binary\":\"JJUBgMCnd2VsY29tZZG2QUFBQUFBQUFBQUFBQUFBQUFBQUFBQQKRBg==\"}\n"
        "{\"type\":\"end\",\"t\":5,\"placeholders\":[]}\n";
    struct rp_fixture fx;
    char *err = NULL;
    CHECK(rp_fixture_parse(text, "core", &fx, &err) == 0);
    free(err);
    struct rp_stream *s = rp_fixture_stream(&fx, 1);
    CHECK_EQ_INT(s->nitems, 2);
    CHECK(s->nitems == 2 && rp_json_is_keepalive(s->items[0].value));
    CHECK(s->nframes == 3 && s->frames[1]->done && !s->frames[0]->done); /* a ping-only frame expects nothing */
    char *shown = s->nitems == 2 ? rp_json_show(s->items[1].value, 300) : NULL;
    CHECK(shown && strcmp(shown, "[1,{},null,\"welcome\",[\"<backendId:1001>\"]]") == 0);
    free(shown);
    /* Compared by value: member order left out, numbers exact. */
    struct rp_bindings b = {0};
    CHECK(match("{\"type\":3,\"invocationId\":\"1\",\"result\":1}", "{\"result\":1,\"invocationId\":\"1\",\"type\":3}", &b, 0) == NULL);
    rp_bindings_free(&b);
    rp_fixture_free(&fx);
}

/* ---- Core long polling: the polls' records as one stream (rp_poll.c) */

#define RS "\\u001e"
#define POLL_REQ(id, t) "{\"type\":\"http-request\",\"id\":" #id ",\"method\":\"GET\",\"path\":\"/chat\",\"rawQuery\":\"id=tok\",\"t\":" #t "}\n"
#define POLL_RESP(id, t, status, body) \
    "{\"type\":\"http-response\",\"id\":" #id ",\"t\":" #t ",\"status\":" #status \
    ",\"headers\":{\"content-type\":\"application/octet-stream\"},\"body\":\"" body "\"}\n"
#define POST(id, t, body) \
    "{\"type\":\"http-request\",\"id\":" #id ",\"method\":\"POST\",\"path\":\"/chat\",\"rawQuery\":\"id=tok\",\"t\":" #t \
    ",\"body\":\"" body "\"}\n{\"type\":\"http-response\",\"id\":" #id ",\"t\":" #t \
    ",\"status\":200,\"headers\":{\"content-type\":\"text/plain\"},\"body\":\"\"}\n"
#define WELCOME "{\\\"type\\\":1,\\\"target\\\":\\\"welcome\\\",\\\"arguments\\\":[\\\"x\\\"]}"
#define NOTE "{\\\"type\\\":1,\\\"target\\\":\\\"note\\\",\\\"arguments\\\":[1]}"
#define RESULT "{\\\"type\\\":3,\\\"invocationId\\\":\\\"0\\\",\\\"result\\\":42}"

/* Lines 2..: the first poll (empty 200), poll 2 (recorded: the handshake answer, welcome, note),
 * poll 4 (the result), poll 6 (204 after the DELETE). */
static const char POLL_FIXTURE[] =
    "{\"type\":\"session\",\"format\":\"signalr-capture\",\"version\":2,\"door\":\"core\"}\n"
    POLL_REQ(1, 1) POLL_RESP(1, 2, 200, "") POLL_REQ(2, 3) POST(3, 4, "{\\\"protocol\\\":\\\"json\\\",\\\"version\\\":1}" RS)
    POLL_RESP(2, 6, 200, "{}" RS WELCOME RS NOTE RS) POLL_REQ(4, 7) POST(5, 8, "{\\\"type\\\":1}" RS)
    POLL_RESP(4, 10, 200, RESULT RS) POLL_REQ(6, 11)
    "{\"type\":\"http-request\",\"id\":7,\"method\":\"DELETE\",\"path\":\"/chat\",\"rawQuery\":\"id=tok\",\"t\":12}\n"
    "{\"type\":\"http-response\",\"id\":7,\"t\":13,\"status\":202,\"headers\":{},\"body\":\"\"}\n"
    POLL_RESP(6, 13, 204, "") "{\"type\":\"end\",\"t\":14,\"placeholders\":[]}\n";

#define J_WELCOME "{\"type\":1,\"target\":\"welcome\",\"arguments\":[\"x\"]}\x1e"
#define J_NOTE "{\"type\":1,\"target\":\"note\",\"arguments\":[1]}\x1e"
#define J_RESULT "{\"type\":3,\"invocationId\":\"0\",\"result\":42}\x1e"

struct poll_run {
    struct rp_opts o;
    struct rp_loop loop;
    struct rp_run r;
};

static void poll_start(struct poll_run *p, int keep_going)
{
    memset(p, 0, sizeof *p);
    p->o.timeout_ms = 1000;
    p->o.keep_going = keep_going;
    char *err = NULL;
    CHECK(rp_run_init(&p->r, POLL_FIXTURE, "poll", &p->o, &p->loop, &err) == 0);
    free(err);
    for (size_t i = 0; i < p->r.fx.n; i++) /* the POSTs' answers are not under test here */
        if (p->r.fx.ev[i].type == EV_HTTP_RESP && !p->r.fx.ev[i].poll_ws)
            p->r.fx.ev[i].done = 1;
}

/* The schedule's next client action is the request of fixture line `line` (0: all done). */
static void poll_before(struct poll_run *p, int line)
{
    p->r.k = p->r.fx.n;
    for (size_t i = 0; line && i < p->r.fx.n; i++)
        if (p->r.fx.ev[i].line == line && p->r.fx.ev[i].type == EV_HTTP_REQ)
            p->r.k = i;
}

/* One poll's answer; returns what rp_poll_answer says (1: poll again). */
static int poll_answer(struct poll_run *p, int status, const char *body)
{
    return rp_poll_answer(rp_ws_state_of(&p->r, RP_POLL_WS), RP_NONE, status, "application/octet-stream", body,
                          strlen(body));
}

/* Every recorded answer of the polls compared (done), and no difference. */
static int poll_clean(struct poll_run *p)
{
    int ok = p->r.failure == NULL;
    for (size_t i = 0; i < p->r.fx.n; i++)
        if (p->r.fx.ev[i].poll_ws && p->r.fx.ev[i].type == EV_HTTP_RESP && !p->r.fx.ev[i].done)
            ok = 0;
    if (!ok)
        fprintf(stderr, "  poll run: %s\n", p->r.failure ? p->r.failure : "an answer not compared");
    return ok;
}

/* The recorded response on fixture line `line` is done (answered, or nothing to wait for). */
static int answered_line(const struct poll_run *p, int line)
{
    for (size_t i = 0; i < p->r.fx.n; i++)
        if (p->r.fx.ev[i].line == line && p->r.fx.ev[i].type == EV_HTTP_RESP)
            return p->r.fx.ev[i].done;
    return 0;
}

static void test_core_polls_batching(void)
{
    struct poll_run p;
    /* As recorded. The first poll's empty answer is the transport's start: waited for (not done
     * when the fixture is read), done with the first live answer. */
    poll_start(&p, 0);
    CHECK(!answered_line(&p, 3) && answered_line(&p, 6));
    poll_before(&p, 4); /* the first poll, before poll 2 is sent */
    CHECK(poll_answer(&p, 200, "") == 0);
    CHECK(answered_line(&p, 3));
    poll_before(&p, 8); /* poll 4 not sent yet */
    CHECK(poll_answer(&p, 200, "{}\x1e" J_WELCOME J_NOTE) == 0);
    poll_before(&p, 12);
    CHECK(poll_answer(&p, 200, J_RESULT) == 0);
    poll_before(&p, 0);
    CHECK(poll_answer(&p, 204, "") == 0);
    CHECK(poll_clean(&p));
    rp_run_free(&p.r);
    /* Fewer per poll: split over three polls, a keep-alive between; each asks for another poll. */
    poll_start(&p, 0);
    poll_before(&p, 8);
    CHECK(poll_answer(&p, 200, "{}\x1e") == 1);
    CHECK(poll_answer(&p, 200, "") == 1);
    CHECK(poll_answer(&p, 200, J_WELCOME) == 1);
    CHECK(poll_answer(&p, 200, J_NOTE "{\"type\":6}\x1e") == 0);
    poll_before(&p, 12);
    CHECK(poll_answer(&p, 200, J_RESULT) == 0);
    poll_before(&p, 0);
    CHECK(poll_answer(&p, 204, "") == 0);
    CHECK(poll_clean(&p));
    CHECK(rp_ws_state_of(&p.r, RP_POLL_WS)->ended && !rp_poll_may_send(rp_ws_state_of(&p.r, RP_POLL_WS)));
    rp_run_free(&p.r);
    /* More per poll: poll 2's answer carries poll 4's result too; poll 4 then gets the end. */
    poll_start(&p, 0);
    poll_before(&p, 9);
    CHECK(poll_answer(&p, 200, "{}\x1e" J_WELCOME J_NOTE J_RESULT) == 0);
    poll_before(&p, 0);
    CHECK(poll_answer(&p, 204, "") == 0);
    CHECK(poll_clean(&p));
    rp_run_free(&p.r);
    /* The poll and the DELETE race: a poll that reaches the server after the DELETE gets 404,
     * taken for the recorded 204 once the DELETE went out (before it, a 404 fails: below). */
    poll_start(&p, 0);
    poll_before(&p, 0);
    CHECK(poll_answer(&p, 200, "{}\x1e" J_WELCOME J_NOTE J_RESULT) == 1);
    CHECK(poll_answer(&p, 404, "No Connection with that ID") == 0);
    CHECK(poll_clean(&p));
    rp_run_free(&p.r);
    poll_start(&p, 0);
    poll_before(&p, 13); /* the DELETE not sent yet */
    CHECK(poll_answer(&p, 200, "{}\x1e" J_WELCOME J_NOTE J_RESULT) == 1);
    CHECK(poll_answer(&p, 404, "No Connection with that ID") == 0);
    CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "status 404, recorded 200 or 204"));
    rp_run_free(&p.r);
    /* The end race: a Close record where the recording has the 204. */
    poll_start(&p, 0);
    poll_before(&p, 0);
    CHECK(poll_answer(&p, 200, "{}\x1e" J_WELCOME J_NOTE J_RESULT) == 1); /* the 204 is still to come */
    CHECK(poll_answer(&p, 200, "{\"type\":7}\x1e") == 0);
    CHECK(poll_clean(&p));
    rp_run_free(&p.r);
}

/* A Core WebSocket the client closed after its Close record: the server's Close answering it,
 * after all the recorded records, is the end race (load at --speed 10 met it); where the server
 * closed, or before the end, it is a difference. */
#define WS_CLOSE_FIXTURE(by)                                                                              \
    "{\"type\":\"session\",\"format\":\"signalr-capture\",\"version\":2,\"door\":\"core\"}\n"                \
    "{\"type\":\"ws-open\",\"ws\":1,\"t\":1,\"path\":\"/chat\",\"rawQuery\":\"id=tok\",\"headers\":{}}\n"      \
    "{\"type\":\"ws-frame\",\"ws\":1,\"t\":2,\"dir\":\"s2c\",\"text\":\"{}\\u001e\"}\n"                     \
    "{\"type\":\"ws-frame\",\"ws\":1,\"t\":3,\"dir\":\"c2s\",\"text\":\"{\\\"type\\\":7}\\u001e\"}\n"       \
    "{\"type\":\"ws-close\",\"ws\":1,\"t\":4,\"by\":\"" by "\",\"code\":1000,\"reason\":\"\"}\n"             \
    "{\"type\":\"end\",\"t\":5,\"placeholders\":[]}\n"

static void test_core_ws_close_race(void)
{
    static const char *const fixtures[] = {WS_CLOSE_FIXTURE("client"), WS_CLOSE_FIXTURE("server")};
    for (int i = 0; i < 2; i++) {
        struct poll_run p;
        memset(&p, 0, sizeof p);
        p.o.timeout_ms = 1000;
        char *err = NULL;
        CHECK(rp_run_init(&p.r, fixtures[i], "ws", &p.o, &p.loop, &err) == 0);
        free(err);
        struct rp_ws_state *st = rp_ws_state_of(&p.r, 1);
        const char *close = "{\"type\":7}\x1e";
        rp_match_core_records(st, close, strlen(close), 0); /* before the end: a changed record */
        CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "got {\"type\":7}"));
        rp_run_free(&p.r);
        memset(&p, 0, sizeof p);
        p.o.timeout_ms = 1000;
        CHECK(rp_run_init(&p.r, fixtures[i], "ws", &p.o, &p.loop, &err) == 0);
        free(err);
        st = rp_ws_state_of(&p.r, 1);
        rp_match_core_records(st, "{}\x1e", 3, 0);
        CHECK(p.r.failure == NULL);
        rp_match_core_records(st, close, strlen(close), 0);
        if (i == 0)
            CHECK(p.r.failure == NULL);
        else
            CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "after all 1 recorded ones"));
        rp_run_free(&p.r);
    }
}

static void test_core_polls_differ(void)
{
    struct poll_run p;
    /* A missing record: note where welcome was recorded. */
    poll_start(&p, 0);
    poll_before(&p, 9);
    CHECK(poll_answer(&p, 200, "{}\x1e" J_NOTE) == 0);
    CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "line 7: response 2 (200): got {\"type\":1,\"target\":\"note\""));
    rp_run_free(&p.r);
    /* An extra record after all recorded ones. */
    poll_start(&p, 0);
    poll_before(&p, 0);
    CHECK(poll_answer(&p, 200, "{}\x1e" J_WELCOME J_NOTE J_RESULT J_NOTE) == 0);
    CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "after all 4 recorded ones"));
    rp_run_free(&p.r);
    /* A changed record, across a batching difference. */
    poll_start(&p, 0);
    poll_before(&p, 13);
    CHECK(poll_answer(&p, 200, "{}\x1e" J_WELCOME) == 1);
    CHECK(poll_answer(&p, 200, J_NOTE "{\"type\":3,\"invocationId\":\"0\",\"result\":43}\x1e") == 0);
    CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "$.result: expected 42, got 43"));
    rp_run_free(&p.r);
    /* Another status, and the end before the records. */
    poll_start(&p, 0);
    poll_before(&p, 9);
    CHECK(poll_answer(&p, 404, "No Connection with that ID") == 0);
    CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "line 7: response 2 (200): status 404"));
    rp_run_free(&p.r);
    poll_start(&p, 0);
    poll_before(&p, 9);
    CHECK(poll_answer(&p, 200, "{}\x1e") == 1);
    CHECK(poll_answer(&p, 204, "") == 0);
    CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "status 204 (the server ended the connection) before 3"));
    rp_run_free(&p.r);
    /* Not records at all. */
    poll_start(&p, 0);
    poll_before(&p, 9);
    CHECK(poll_answer(&p, 200, "{\"unterminated\"") == 0);
    CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "line 7: response 2 (200): got \"{\\\"unterminated\\\"\""));
    rp_run_free(&p.r);
}

/* 1 when the run noted a difference containing want. */
static int noted(const struct poll_run *p, const char *want)
{
    for (size_t i = 0; i < p->r.ndiffs; i++)
        if (strstr(p->r.diffs[i], want))
            return 1;
    fprintf(stderr, "  no difference with \"%s\" among %zu\n", want, p->r.ndiffs);
    return 0;
}

/* ab (keep_going): a side reports a structural difference and goes on. */
static void test_ab_goes_on(void)
{
    struct poll_run p;
    /* A changed record, and then one beyond the recording (reported and skipped, where check
     * stops): two differences, the run not stopped. */
    poll_start(&p, 1);
    poll_before(&p, 8);
    CHECK(poll_answer(&p, 200, "{}\x1e" J_WELCOME J_NOTE) == 0);
    poll_before(&p, 12);
    CHECK(poll_answer(&p, 200, "{\"type\":3,\"invocationId\":\"0\",\"result\":43}\x1e" J_NOTE) == 0);
    CHECK(noted(&p, "line 11: response 4 (200): got {\"type\":3,\"invocationId\":\"0\",\"result\":43}: $.result: expected 42, got 43"));
    CHECK(noted(&p, "the long polls: unexpected record {\"type\":1,\"target\":\"note\",\"arguments\":[1]} after all 4 recorded ones"));
    CHECK_EQ_INT(p.r.ndiffs, 2);
    poll_before(&p, 0);
    CHECK(poll_answer(&p, 204, "") == 0);
    CHECK(p.r.failure == NULL);
    rp_run_free(&p.r);
    /* An answer that never came: given up at the timeout (reported), its records skipped, so the
     * next poll's answer compares with the next recorded one. */
    poll_start(&p, 1);
    poll_before(&p, 4);
    CHECK(poll_answer(&p, 200, "") == 0); /* the first poll's answer (the transport's start) */
    poll_before(&p, 8);
    rp_give_up(&p.r, p.r.k);
    CHECK(noted(&p, "timed out after 1000 ms waiting for line 7: response 2 (200)"));
    CHECK_EQ_INT(p.r.ndiffs, 1);
    poll_before(&p, 12);
    CHECK(poll_answer(&p, 200, J_RESULT) == 0);
    CHECK_EQ_INT(p.r.ndiffs, 1);
    poll_before(&p, 0);
    CHECK(poll_answer(&p, 204, "") == 0);
    CHECK(poll_clean(&p)); /* every answer compared or given up, the run not stopped */
    CHECK_EQ_INT(p.r.ndiffs, 1);
    rp_run_free(&p.r);
    /* It stops where it cannot go on: the server ended the connection (204) before the records. */
    poll_start(&p, 1);
    poll_before(&p, 8);
    CHECK(poll_answer(&p, 204, "") == 0);
    CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL, "status 204 (the server ended the connection) before 4"));
    rp_run_free(&p.r);
    /* check (not ab) still stops at the first difference. */
    poll_start(&p, 0);
    poll_before(&p, 8);
    CHECK(poll_answer(&p, 200, "{}\x1e" J_NOTE) == 0);
    CHECK(p.r.failure != NULL && p.r.ndiffs == 0);
    rp_run_free(&p.r);
}

/* ---- legacy long polls answered with more messages than recorded (rp_carry.c) */

#define LNOTE(n) "{\\\"H\\\":\\\"h\\\",\\\"M\\\":\\\"note\\\",\\\"A\\\":[" #n "]}"
#define LPOLL(id, t, from) \
    "{\"type\":\"http-request\",\"id\":" #id ",\"t\":" #t ",\"method\":\"POST\",\"path\":\"/signalr/poll\"," \
    "\"rawQuery\":\"transport=longPolling&connectionToken=<connectionToken>&messageId=" from "\",\"headers\":{},\"body\":\"\"}\n"
#define LANSWER(id, t, body) \
    "{\"type\":\"http-response\",\"id\":" #id ",\"t\":" #t ",\"status\":200,\"headers\":{},\"body\":\"" body "\"}\n"

/* Lines: 2-3 connect, 4-5 poll 2 [1], 6-7 poll 3 [2,3], 8-9 poll 4 [4]. */
static const char LEGACY_POLLS[] =
    "{\"type\":\"session\",\"format\":\"signalr-legacy-capture\",\"version\":1}\n"
    "{\"type\":\"http-request\",\"id\":1,\"t\":1,\"method\":\"GET\",\"path\":\"/signalr/connect\","
    "\"rawQuery\":\"transport=longPolling&connectionToken=<connectionToken>\",\"headers\":{},\"body\":\"\"}\n"
    LANSWER(1, 2, "{\\\"C\\\":\\\"<cursor:1.1>\\\",\\\"S\\\":1,\\\"M\\\":[]}")
    LPOLL(2, 3, "<cursor:1.1>") LANSWER(2, 4, "{\\\"C\\\":\\\"<cursor:1.2>\\\",\\\"M\\\":[" LNOTE(1) "]}")
    LPOLL(3, 5, "<cursor:1.2>") LANSWER(3, 6, "{\\\"C\\\":\\\"<cursor:1.3>\\\",\\\"M\\\":[" LNOTE(2) "," LNOTE(3) "]}")
    LPOLL(4, 7, "<cursor:1.3>") LANSWER(4, 8, "{\\\"C\\\":\\\"<cursor:1.4>\\\",\\\"M\\\":[" LNOTE(4) "]}")
    "{\"type\":\"end\",\"t\":9}\n";

static size_t request_at(const struct rp_run *r, int line)
{
    for (size_t i = 0; i < r->fx.n; i++)
        if (r->fx.ev[i].line == line && r->fx.ev[i].type == EV_HTTP_REQ)
            return i;
    return RP_NONE;
}

/* Poll 2's answer carried `notes` (JSON array text) beyond its own, with live cursor `cursor`. */
static void carried(struct poll_run *p, int keep_going, const char *notes, const char *cursor)
{
    memset(p, 0, sizeof *p);
    p->o.timeout_ms = 1000;
    p->o.keep_going = keep_going;
    char *err = NULL;
    CHECK(rp_run_init(&p->r, LEGACY_POLLS, "legacy", &p->o, &p->loop, &err) == 0);
    free(err);
    rp_carry_keep(&p->r, request_at(&p->r, 4), rp_json_parse(notes), rp_strdup(cursor));
}

static int answered(const struct poll_run *p, int id)
{
    for (size_t i = 0; i < p->r.fx.n; i++)
        if (p->r.fx.ev[i].type == EV_HTTP_RESP && p->r.fx.ev[i].id == id)
            return p->r.fx.ev[i].done;
    return 0;
}

static void test_legacy_carry(void)
{
    struct poll_run p;
    cJSON *again = NULL;
    char *cursor = NULL;
    CHECK_EQ_INT(rp_carry_count("{\"C\":\"x\",\"M\":[1,2]}"), 2);
    CHECK_EQ_INT(rp_carry_count("{\"C\":\"x\",\"S\":1,\"M\":[]}"), -1); /* head fields come where recorded */
    CHECK_EQ_INT(rp_carry_count("{\"I\":\"0\"}"), -1);
    /* Poll 3's messages all came with poll 2's answer: poll 3 is not sent, compared with them, and
     * its C placeholder takes the live C. */
    carried(&p, 0, "[{\"H\":\"h\",\"M\":\"note\",\"A\":[2]},{\"H\":\"h\",\"M\":\"note\",\"A\":[3]}]", "c-3");
    CHECK(rp_carry_poll(&p.r, request_at(&p.r, 6), &again, &cursor) == 1 && again == NULL);
    CHECK(p.r.failure == NULL && answered(&p, 3) && p.r.carry == NULL);
    CHECK(rp_bind_get(&p.r.b, "<cursor:1.3>") && strcmp(rp_bind_get(&p.r.b, "<cursor:1.3>"), "c-3") == 0);
    rp_run_free(&p.r);
    /* Some of them: poll 3 is sent from the live C, its answer to be joined after them. */
    carried(&p, 0, "[{\"H\":\"h\",\"M\":\"note\",\"A\":[2]}]", "c-2b");
    CHECK(rp_carry_poll(&p.r, request_at(&p.r, 6), &again, &cursor) == 0);
    CHECK(cJSON_GetArraySize(again) == 1 && cursor && strcmp(cursor, "c-2b") == 0 && !answered(&p, 3));
    cJSON_Delete(again);
    free(cursor);
    again = NULL;
    cursor = NULL;
    rp_run_free(&p.r);
    /* More than poll 3's: poll 3 compared without a C, poll 4 with the rest and the live C. */
    carried(&p, 0, "[{\"H\":\"h\",\"M\":\"note\",\"A\":[2]},{\"H\":\"h\",\"M\":\"note\",\"A\":[3]},{\"H\":\"h\",\"M\":\"note\",\"A\":[4]}]", "c-4");
    CHECK(rp_carry_poll(&p.r, request_at(&p.r, 6), &again, &cursor) == 1);
    CHECK(rp_bind_get(&p.r.b, "<cursor:1.3>") == NULL && answered(&p, 3));
    CHECK(rp_carry_poll(&p.r, request_at(&p.r, 8), &again, &cursor) == 1);
    CHECK(p.r.failure == NULL && answered(&p, 4) && rp_bind_get(&p.r.b, "<cursor:1.4>"));
    rp_run_free(&p.r);
    /* Strict: a carried message other than recorded fails, naming the poll. */
    carried(&p, 0, "[{\"H\":\"h\",\"M\":\"note\",\"A\":[9]},{\"H\":\"h\",\"M\":\"note\",\"A\":[3]}]", "c-3");
    CHECK(rp_carry_poll(&p.r, request_at(&p.r, 6), &again, &cursor) == 1);
    CHECK(says(p.r.failure ? rp_strdup(p.r.failure) : NULL,
               "line 7: response 3 (200): body (the previous poll's answer had it): $.M[0].A[0]: expected 2, got 9"));
    rp_run_free(&p.r);
    /* Carried messages no recorded answer takes are a difference. */
    carried(&p, 1, "[{\"H\":\"h\",\"M\":\"note\",\"A\":[2]},{\"H\":\"h\",\"M\":\"note\",\"A\":[3]},"
                   "{\"H\":\"h\",\"M\":\"note\",\"A\":[4]},{\"H\":\"h\",\"M\":\"note\",\"A\":[5]}]", "c-5");
    CHECK(rp_carry_poll(&p.r, request_at(&p.r, 6), &again, &cursor) == 1);
    CHECK(rp_carry_poll(&p.r, request_at(&p.r, 8), &again, &cursor) == 1);
    rp_carry_finish(&p.r);
    CHECK(p.r.ndiffs == 1 && strstr(p.r.diffs[0], "1 message(s) the server sent beyond the recorded answers"));
    rp_run_free(&p.r);
}

/* ab: each side's differences with its own bound values put back as placeholders. */
static void test_unbind(void)
{
    struct rp_bindings b = {0};
    CHECK(rp_bind(&b, "<connectionToken>", "tok-AAAA") == NULL);
    CHECK(rp_bind(&b, "<connectionId>", "tok-AAAA-long") == NULL);
    CHECK(rp_bind(&b, "<cursor:1.1>", "7") == NULL);
    char *u = rp_unbind(&b, "got \"tok-AAAA-long echoed\" for tok-AAAA at 7");
    CHECK(strcmp(u, "got \"<connectionId> echoed\" for <connectionToken> at 7") == 0);
    free(u);
    rp_bindings_free(&b);
}

int main(void)
{
    test_unbind();
    test_core_records();
    test_core_fixture();
    test_core_polls_batching();
    test_core_polls_differ();
    test_core_ws_close_race();
    test_ab_goes_on();
    test_legacy_carry();
    test_exact_numbers();
    test_types_members_order();
    test_placeholders();
    test_fixture();
    test_reference_mask();
    return test_main_result("test_replay");
}
