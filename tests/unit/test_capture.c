/* test_capture.c - --capture's parts that need no socket: the placeholders of a file
 * (relay/capture_mask.c), the writer thread (relay/capture_writer.c) and the --capture-* settings
 * (relay/config_capture.c). The recorder as a whole: tests/relay/test/capture.test.mjs. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "relay/capture_mask.h"
#include "relay/capture_writer.h"
#include "relay/config.h"

static const uint8_t seed[DICT_SEED_LEN] = { 1, 2, 3 };

/* out as a NUL-terminated string, then reset. */
static const char *take(struct buf *out)
{
    static char copy[4096];
    snprintf(copy, sizeof copy, "%.*s", (int)out->len, out->data ? out->data : "");
    buf_reset(out);
    return copy;
}

static void found_token(void *ctx, const char *token)
{
    char *seen = ctx;
    strcat(seen, token);
    strcat(seen, ";");
}

static void test_names_and_text(void)
{
    struct mask_table t;
    mask_table_init(&t, seed);
    struct buf out;
    buf_init(&out);
    CHECK(strcmp(mask_name_for(&t, MASK_CONNECTION_TOKEN, "tok-aaaaaaaa", 12, true), "<connectionToken>") == 0);
    CHECK(strcmp(mask_name_for(&t, MASK_CONNECTION_TOKEN, "tok-bbbbbbbb", 12, true), "<connectionToken#2>") == 0);
    CHECK(strcmp(mask_name_for(&t, MASK_CONNECTION_TOKEN, "tok-aaaaaaaa", 12, true), "<connectionToken>") == 0);
    CHECK(strcmp(mask_name_for(&t, MASK_CURSOR, "7", 1, false), "<cursor:1.1>") == 0);
    CHECK(strcmp(mask_name_for(&t, MASK_CONNECTION_ID, "short", 5, true), "<connectionId>") == 0);
    /* Secrets of 8 characters or more are replaced anywhere in text, the first occurrence first;
     * short values and cursors only where they stand. */
    const char *text = "a tok-bbbbbbbb b tok-aaaaaaaatok-aaaaaaaa short 7";
    CHECK(mask_text(&t, &out, text, strlen(text)));
    CHECK(strcmp(take(&out), "a <connectionToken#2> b <connectionToken><connectionToken> short 7") == 0);
    CHECK(strcmp(mask_lookup(&t, "7", 1), "<cursor:1.1>") == 0);
    CHECK(mask_lookup(&t, "8", 1) == NULL);
    CHECK(strcmp(mask_fixed(&t, MASK_COOKIE), "<cookie>") == 0);
    cJSON *list = cJSON_CreateArray();
    mask_list_add(&t, list);
    char *printed = cJSON_PrintUnformatted(list);
    CHECK(strcmp(printed, "[\"<connectionToken>\",\"<connectionToken#2>\",\"<cursor:1.1>\",\"<connectionId>\",\"<cookie>\"]") == 0);
    free(printed);
    cJSON_Delete(list);
    buf_free(&out);
    mask_table_free(&t);
}

static void test_persistent_and_negotiate(void)
{
    struct mask_table t;
    mask_table_init(&t, seed);
    struct buf out;
    buf_init(&out);
    char seen[256] = "";
    const char *legacy = "{\"Url\":\"/signalr\",\"ConnectionToken\":\"AQAAAtokentoken\",\"ConnectionId\":\"1234-5678-90\"}";
    mask_learn_negotiate(&t, legacy, strlen(legacy), found_token, seen);
    CHECK(strcmp(seen, "AQAAAtokentoken;") == 0);
    CHECK(mask_text(&t, &out, legacy, strlen(legacy)));
    CHECK(strcmp(take(&out), "{\"Url\":\"/signalr\",\"ConnectionToken\":\"<connectionToken>\",\"ConnectionId\":\"<connectionId>\"}") == 0);
    /* A PersistentResponse: C and G where they stand (a cursor "1" elsewhere stays), the
     * backend's connection id learned from the welcome push and replaced everywhere. */
    const char *frame = "data: {\"C\":\"1\",\"G\":\"grp-1\",\"M\":[{\"H\":\"h\",\"M\":\"welcome\",\"A\":[\"AYFhP-6Xs31O5hrg-ISahg\"]},"
                        "{\"H\":\"h\",\"M\":\"m\",\"A\":[\"1\",\"id AYFhP-6Xs31O5hrg-ISahg\"]}]}\n\n";
    CHECK(mask_persistent(&t, &out, frame, strlen(frame)));
    CHECK(strcmp(take(&out), "data: {\"C\":\"<cursor:1.1>\",\"G\":\"<groupsToken:1.1>\",\"M\":[{\"H\":\"h\",\"M\":\"welcome\",\"A\":[\"<backendId:1>\"]},"
                             "{\"H\":\"h\",\"M\":\"m\",\"A\":[\"1\",\"id <backendId:1>\"]}]}\n\n") == 0);
    const char *result = "{\"R\":\"x\",\"I\":\"0\"}"; /* not a PersistentResponse: unchanged */
    CHECK(mask_persistent(&t, &out, result, strlen(result)));
    CHECK(strcmp(take(&out), result) == 0);
    seen[0] = '\0';
    const char *core = "{\"negotiateVersion\":1,\"connectionId\":\"cid-0123456789\",\"connectionToken\":\"ctok-0123456789\","
                       "\"accessToken\":\"jwt.jwt.jwt\"}";
    mask_learn_negotiate(&t, core, strlen(core), found_token, seen);
    CHECK(strcmp(seen, "ctok-0123456789;cid-0123456789;") == 0);
    CHECK(mask_text(&t, &out, core, strlen(core)));
    CHECK(strcmp(take(&out), "{\"negotiateVersion\":1,\"connectionId\":\"<connectionId#2>\",\"connectionToken\":\"<connectionToken#2>\","
                             "\"accessToken\":\"<accessToken>\"}") == 0);
    buf_free(&out);
    mask_table_free(&t);
}

/* Two files of one recorder: a's backend id, learned from its welcome, keeps its number in b, where
 * b's client names it (a hub call with a's id); ids b learns itself go on from there. Once a's file
 * is freed, a third file no longer knows a's id. */
static void test_shared_backend_ids(void)
{
    struct mask_shared shared;
    mask_shared_init(&shared, seed);
    struct mask_table a, b, c;
    mask_table_init(&a, seed);
    mask_table_init(&b, seed);
    mask_table_init(&c, seed);
    mask_table_share(&a, &shared);
    mask_table_share(&b, &shared);
    mask_table_share(&c, &shared);
    struct buf out;
    buf_init(&out);
    const char *welcome_a = "{\"C\":\"1\",\"M\":[{\"H\":\"h\",\"M\":\"welcome\",\"A\":[\"AYFhP-6Xs31O5hrg-ISahg\"]}]}";
    const char *welcome_b = "{\"C\":\"1\",\"M\":[{\"H\":\"h\",\"M\":\"welcome\",\"A\":[\"BBBBBBBBBBBBBBBBBBBBBB\"]}]}";
    CHECK(mask_persistent(&a, &out, welcome_a, strlen(welcome_a)));
    CHECK(strstr(take(&out), "\"A\":[\"<backendId:1>\"]") != NULL);
    CHECK(mask_persistent(&b, &out, welcome_b, strlen(welcome_b)));
    CHECK(strstr(take(&out), "\"A\":[\"<backendId:2>\"]") != NULL);
    /* A longer run that holds a's id is not a's id (c does not learn it)... */
    const char *longer = "{\"A\":[\"xAYFhP-6Xs31O5hrg-ISahg\"]}";
    CHECK(mask_text(&c, &out, longer, strlen(longer)));
    CHECK(strcmp(take(&out), longer) == 0);
    /* ...b's client asking about a is. */
    const char *call = "{\"H\":\"h\",\"M\":\"GetDisconnectInfo\",\"A\":[\"AYFhP-6Xs31O5hrg-ISahg\"],\"I\":1}";
    CHECK(mask_text(&b, &out, call, strlen(call)));
    CHECK(strcmp(take(&out), "{\"H\":\"h\",\"M\":\"GetDisconnectInfo\",\"A\":[\"<backendId:1>\"],\"I\":1}") == 0);
    cJSON *list = cJSON_CreateArray();
    mask_list_add(&b, list);
    char *printed = cJSON_PrintUnformatted(list);
    CHECK(strcmp(printed, "[\"<backendId:2>\",\"<cursor:1.1>\",\"<backendId:1>\"]") == 0);
    free(printed);
    cJSON_Delete(list);
    mask_table_free(&a);
    CHECK(mask_text(&c, &out, call, strlen(call)));
    CHECK(strcmp(take(&out), call) == 0);
    CHECK(mask_text(&b, &out, call, strlen(call))); /* b keeps what it learned */
    CHECK(strstr(take(&out), "[\"<backendId:1>\"]") != NULL);
    buf_free(&out);
    mask_table_free(&b);
    mask_table_free(&c);
    mask_shared_free(&shared);
}

static void test_credentials(void)
{
    struct mask_table t;
    mask_table_init(&t, seed);
    struct buf out;
    buf_init(&out);
    const char *auth = "Bearer abcdefgh12345";
    mask_learn_credential(&t, MASK_AUTHORIZATION, auth, strlen(auth));
    const char *cookie = "theme=dark; session=s3cr3t-cookie-v";
    mask_learn_credential(&t, MASK_COOKIE, cookie, strlen(cookie));
    const char *text = "{\"authorization\":\"Bearer abcdefgh12345\",\"token\":\"abcdefgh12345\",\"cookie\":\"theme=dark; "
                       "session=s3cr3t-cookie-v\",\"s\":\"s3cr3t-cookie-v\",\"theme\":\"dark\"}";
    CHECK(mask_text(&t, &out, text, strlen(text)));
    CHECK(strcmp(take(&out), "{\"authorization\":\"<authorization>\",\"token\":\"<authorization>\",\"cookie\":\"<cookie>\","
                             "\"s\":\"<cookie>\",\"theme\":\"dark\"}") == 0);
    /* The bearer token where an access token stands (access_token=) becomes <accessToken>. */
    CHECK(strcmp(mask_name_for(&t, MASK_ACCESS_TOKEN, "abcdefgh12345", 13, true), "<accessToken>") == 0);
    cJSON *list = cJSON_CreateArray();
    mask_list_add(&t, list);
    char *printed = cJSON_PrintUnformatted(list);
    CHECK(strcmp(printed, "[\"<accessToken>\",\"<authorization>\",\"<cookie>\"]") == 0);
    free(printed);
    cJSON_Delete(list);
    buf_free(&out);
    mask_table_free(&t);
}

static void test_writer(void)
{
    char path[] = "/tmp/test_capture_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path); /* the writer creates it (O_EXCL) */
    struct capture_writer *w = capture_writer_start(64);
    CHECK(w != NULL);
    struct capture_writer_file f;
    CHECK(capture_writer_open(w, path, &f));
    CHECK(capture_writer_append(w, &f, "line 1\n", 7));
    char big[100];
    memset(big, 'x', sizeof big);
    /* Over the queue's 64 bytes: refused, never waited for (it may have room again later). */
    CHECK(!capture_writer_append(w, &f, big, sizeof big));
    capture_writer_close(w, &f);
    CHECK(f.sink == NULL);
    struct capture_writer_file again; /* an existing file is never overwritten */
    CHECK(capture_writer_open(w, path, &again));
    capture_writer_close(w, &again);
    capture_writer_stop(w); /* drains the queue first */
    FILE *in = fopen(path, "r");
    char text[64] = "";
    CHECK(in && fread(text, 1, sizeof text - 1, in) == 7);
    CHECK(strcmp(text, "line 1\n") == 0);
    if (in)
        fclose(in);
    unlink(path);
}

static void test_settings(void)
{
    struct relay_config cfg;
    char err[512] = "";
    config_init(&cfg);
    CHECK(cfg.capture_dir == NULL);
    CHECK(cfg.capture_sample == 1);
    CHECK_EQ_INT(cfg.capture_max_file_bytes, 16u << 20);
    CHECK_EQ_INT(cfg.capture_max_dir_bytes, 1u << 30);
    char *argv[] = { "relay", "--capture", "/tmp", "--capture-bodies", "none", "--capture-sample", "0.25",
                     "--capture-max-file", "64K", "--capture-max-dir", "2G" };
    CHECK_EQ_INT(config_parse_args(&cfg, 11, argv, err, sizeof err), CONFIG_OK);
    CHECK(strcmp(cfg.capture_dir, "/tmp") == 0);
    CHECK(cfg.capture_no_bodies);
    CHECK(cfg.capture_sample == 0.25);
    CHECK_EQ_INT(cfg.capture_max_file_bytes, 64u << 10);
    CHECK_EQ_INT(cfg.capture_max_dir_bytes, 2ull << 30);
    static const struct {
        const char *flag, *value, *error;
    } bad[] = {
        { "--capture-bodies", "some", "--capture-bodies wants all or none, got 'some'" },
        { "--capture-sample", "1.5", "--capture-sample wants a fraction from 0 to 1" },
        { "--capture-sample", "nan", "--capture-sample wants a fraction from 0 to 1" },
        { "--capture-max-file", "3G", "--capture-max-file wants a size between 4K and 2048M, got '3G'" },
        { "--capture-max-dir", "1K", "--capture-max-dir wants a size between 4K and 1048576G, got '1K'" },
        { "--capture", "", "--capture wants a value, got an empty one" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args[] = { "relay", (char *)bad[i].flag, (char *)bad[i].value };
        err[0] = '\0';
        CHECK_EQ_INT(config_parse_args(&cfg, 3, args, err, sizeof err), CONFIG_ERROR);
        if (strncmp(err, bad[i].error, strlen(bad[i].error)) != 0) {
            fprintf(stderr, "%s %s: got \"%s\"\n", bad[i].flag, bad[i].value, err);
            CHECK(!"the error names the flag and the accepted values");
        }
    }
    config_free(&cfg);
}

int main(void)
{
    test_names_and_text();
    test_persistent_and_negotiate();
    test_credentials();
    test_shared_backend_ids();
    test_writer();
    test_settings();
    return test_main_result("test_capture");
}
