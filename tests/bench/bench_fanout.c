/* bench_fanout.c - what choosing the recipients of a service-mode send costs
 * (hub/service_hub.c), per recipient, as the audience grows from 1k to 100k.
 *
 * Each row decodes nothing: the message is decoded once, then sent SENDS
 * times to a callback that only counts. Columns: group send (13) without
 * exclusions, group send with 8 excluded connections and 2 excluded users
 * (the per-send stamp: the exclusions cost O(8 + connections of 2 users),
 * each recipient one compare), broadcast (10) with 8 exclusions, a send to
 * 10 groups (14) that overlap by half (deduplicated by the same stamp), and
 * for contrast the group send with exclusions checked by scanning the
 * exclude list for every recipient, which is what the stamp avoids.
 *
 * Prints a markdown table. Build without sanitizers for meaningful numbers:
 *   cmake -S . -B /tmp/rel -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/rel
 *   /tmp/rel/bench_fanout */
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hub/service_hub.h"
#include "protocol/msgpack_sink.h"
#include "protocol/service_msg.h"

#define SENDS 20
#define EXCLUDED 8
#define GROUPS_14 10

static const uint8_t bench_seed[DICT_SEED_LEN] = { 0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7,
                                                   0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff };

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count(void *ctx, struct svc_client *c, struct span payload)
{
    (void)c;
    *(size_t *)ctx += payload.len;
}

static char ids[EXCLUDED][HUB_CONN_ID_LEN + 1];

/* Packs [type, <head>, excluded ids, {"json": x, "messagepack": y}, {}(, ["u0","u1"], nil)]. */
static void build(struct buf *out, enum svc_msg_type type, const char *group, int excluded, bool users)
{
    struct buf_sink sink = { out, false };
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sink, msgpack_sink_write);
    buf_reset(out);
    msgpack_pack_array(&pk, type == SVC_GROUP_BROADCAST_DATA ? 7 : 4);
    msgpack_pack_int(&pk, type);
    if (type == SVC_GROUP_BROADCAST_DATA)
        msgpack_pack_str_with_body(&pk, group, strlen(group));
    msgpack_pack_array(&pk, (size_t)(type == SVC_MULTI_GROUP_BROADCAST_DATA ? GROUPS_14 : excluded));
    if (type == SVC_MULTI_GROUP_BROADCAST_DATA) {
        for (int g = 0; g < GROUPS_14; g++) {
            char name[16];
            int n = snprintf(name, sizeof name, "g%d", g);
            msgpack_pack_str_with_body(&pk, name, (size_t)n);
        }
    } else {
        for (int i = 0; i < excluded; i++)
            msgpack_pack_str_with_body(&pk, ids[i], HUB_CONN_ID_LEN);
    }
    msgpack_pack_map(&pk, 2);
    msgpack_pack_str_with_body(&pk, "json", 4);
    msgpack_pack_bin_with_body(&pk, "{\"type\":1}\x1e", 11);
    msgpack_pack_str_with_body(&pk, "messagepack", 11);
    msgpack_pack_bin_with_body(&pk, "\x01\x91\x06", 3);
    msgpack_pack_map(&pk, 0);
    if (type == SVC_GROUP_BROADCAST_DATA) {
        msgpack_pack_array(&pk, users ? 2 : 0);
        if (users) {
            msgpack_pack_str_with_body(&pk, "u0", 2);
            msgpack_pack_str_with_body(&pk, "u1", 2);
        }
        msgpack_pack_nil(&pk);
    }
}

/* ns per delivery of SENDS sends of the message in out. */
static double time_sends(struct svc_hub *hub, const struct buf *body, size_t *per_send)
{
    struct svc_msg msg;
    if (svc_msg_decode(body->data, body->len, &msg, NULL) != PROTO_OK) {
        fprintf(stderr, "bench message does not decode\n");
        exit(1);
    }
    size_t bytes = 0, delivered = 0;
    uint64_t t0 = now_ns();
    for (int i = 0; i < SENDS; i++)
        delivered += svc_hub_fanout(hub, &msg, count, &bytes).delivered;
    uint64_t t = now_ns() - t0;
    *per_send = delivered / SENDS;
    return delivered ? (double)t / (double)delivered : 0;
}

/* The alternative the stamp replaces: compare each recipient with every excluded id. */
static double time_scan_excludes(struct svc_hub *hub, const char *group)
{
    struct group *g = group_find(&hub->groups, span_from_cstr(group));
    size_t delivered = 0, bytes = 0;
    uint64_t t0 = now_ns();
    for (int i = 0; i < SENDS; i++) {
        struct group_iter it;
        struct hub_conn *conn;
        group_iter_begin(&it, g);
        while ((conn = group_iter_next(&it)) != NULL) {
            bool skip = false;
            for (int e = 0; e < EXCLUDED && !skip; e++)
                skip = memcmp(conn->id, ids[e], HUB_CONN_ID_LEN) == 0;
            if (!skip) {
                count(&bytes, svc_client_of(conn), SPAN_LIT("x"));
                delivered++;
            }
        }
        group_iter_end(&it);
    }
    uint64_t t = now_ns() - t0;
    return delivered ? (double)t / (double)delivered : 0;
}

static void row(size_t members)
{
    struct svc_hub hub;
    struct svc_server_conn servers[5];
    svc_hub_init(&hub, bench_seed);
    for (int i = 0; i < 5; i++)
        svc_hub_add_server(&hub, &servers[i], SPAN_LIT("cid"), SPAN_LIT("app"), NULL);
    struct svc_client *clients = calloc(members, sizeof(*clients));
    char id[HUB_CONN_ID_LEN + 1], user[16];
    for (size_t i = 0; i < members; i++) {
        snprintf(id, sizeof id, "f%021zu", i);
        int ulen = snprintf(user, sizeof user, "u%zu", i % 1000);
        svc_hub_add_client(&hub, &clients[i], span_make(id, HUB_CONN_ID_LEN),
                           i % 2 ? SVC_PROTOCOL_JSON : SVC_PROTOCOL_MESSAGEPACK, span_make(user, (size_t)ulen),
                           svc_hub_pick_server(&hub, SPAN_NONE, false));
        svc_hub_join(&hub, span_make(id, HUB_CONN_ID_LEN), SPAN_LIT("all"));
        /* ten groups g0..g9, each with a fifth of the members: overlapping by half */
        char g[16];
        int n = snprintf(g, sizeof g, "g%zu", i % GROUPS_14);
        svc_hub_join(&hub, span_make(id, HUB_CONN_ID_LEN), span_make(g, (size_t)n));
        n = snprintf(g, sizeof g, "g%zu", (i + 1) % GROUPS_14);
        svc_hub_join(&hub, span_make(id, HUB_CONN_ID_LEN), span_make(g, (size_t)n));
    }
    for (int e = 0; e < EXCLUDED; e++)
        memcpy(ids[e], clients[(size_t)e * (members / EXCLUDED)].conn.id, HUB_CONN_ID_LEN + 1);

    struct buf body;
    buf_init(&body);
    size_t n13, n13x, n10, n14;
    build(&body, SVC_GROUP_BROADCAST_DATA, "all", 0, false);
    double group = time_sends(&hub, &body, &n13);
    build(&body, SVC_GROUP_BROADCAST_DATA, "all", EXCLUDED, true);
    double group_x = time_sends(&hub, &body, &n13x);
    build(&body, SVC_BROADCAST_DATA, NULL, EXCLUDED, false);
    double all_x = time_sends(&hub, &body, &n10);
    build(&body, SVC_MULTI_GROUP_BROADCAST_DATA, NULL, 0, false);
    double groups = time_sends(&hub, &body, &n14);
    double scan = time_scan_excludes(&hub, "all");
    printf("| %zu | %.1f | %.1f (%zu) | %.1f (%zu) | %.1f (%zu) | %.1f |\n", members, group, group_x, n13x,
           all_x, n10, groups, n14, scan);

    buf_free(&body);
    for (int i = 0; i < 5; i++)
        svc_hub_remove_server(&hub, &servers[i], NULL, NULL);
    svc_hub_free(&hub);
    free(clients);
    (void)n13;
}

int main(void)
{
    printf("ns per delivery (recipients per send in parentheses), %d sends each\n\n", SENDS);
    printf("| members | 13 group | 13 group, 8 conns + 2 users excluded | 10 all, 8 excluded | "
           "14 ten groups (dedup) | 13 with per-recipient exclude scan |\n");
    printf("|---|---|---|---|---|---|\n");
    static const size_t sizes[] = { 1000, 10000, 100000 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        row(sizes[i]);
    return 0;
}
