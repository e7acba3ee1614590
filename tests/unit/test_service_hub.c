/* test_service_hub.c - the service-mode hub model against a naive reference.
 *
 * The reference is plain arrays (servers, clients with their server, user,
 * protocol and a membership flag per group); every step runs the real hub
 * and the reference side by side: server choice (fewest clients, least
 * recently picked, sticky preference), joins and leaves with their Ack
 * status, removing a server (which clients it yields), and the recipients of
 * every send type, built as real MessagePack messages and decoded by
 * svc_msg_decode. Then fixed cases: the appendix's scenarios, and clients
 * removed from inside a delivery callback. */
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "test_rng.h"
#include "hub/service_hub.h"
#include "protocol/msgpack_sink.h"
#include "protocol/service_msg.h"

#define NSERVER 12
#define NAPP 3
#define NCLIENT 160
#define NGROUP 24
#define NUSER 12

struct ref_server {
    bool alive, accepting;
    int app;
    size_t clients;
    uint64_t picked_at;
    uint64_t added;       /* never-picked ties go to the one added first */
    struct svc_server_conn s;
};

struct ref_client {
    bool alive;
    int server, user;
    enum svc_protocol protocol;
    bool member[NGROUP];
    uint64_t gen;
    char id[HUB_CONN_ID_LEN + 1];
    struct svc_client c;
    int delivered;        /* deliveries in the current send */
    int expected;
};

static struct {
    struct svc_hub hub;
    struct ref_server servers[NSERVER];
    struct ref_client clients[NCLIENT];
    uint64_t picks, gen, rng, adds;
    size_t total_delivered[SVC_MULTI_GROUP_BROADCAST_DATA + 1]; /* per send type: the test is not vacuous */
    int errors;
} R;

static uint64_t rnd(void) { return test_rng_next(&R.rng); }
static int pick(int n) { return (int)(rnd() % (uint64_t)n); }

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        check_count++;                                                                     \
        if (!(cond)) {                                                                     \
            check_failures++;                                                              \
            if (R.errors++ < 20)                                                           \
                fprintf(stderr, "%s:%d: model disagrees: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                                  \
    } while (0)

static char app_ids[NAPP][16];
static char group_names[NGROUP][16];
static char user_ids[NUSER][16];

static int client_slot(const struct svc_client *c)
{
    return (int)(list_container_of(c, const struct ref_client, c) - R.clients);
}

/* ---- operations ---- */

static void op_add_server(int i)
{
    struct ref_server *s = &R.servers[i];
    if (s->alive)
        return;
    char cid[32];
    snprintf(cid, sizeof cid, "cid-%d", i);
    s->app = i % NAPP;
    EXPECT(svc_hub_add_server(&R.hub, &s->s, span_from_cstr(cid), span_from_cstr(app_ids[s->app]), s) == HUB_OK);
    s->alive = s->accepting = true;
    s->clients = 0;
    s->picked_at = 0;
    s->added = ++R.adds;
}

static void yielded(void *ctx, struct svc_client *c)
{
    int *count = ctx;
    int k = client_slot(c);
    EXPECT(R.clients[k].alive);
    EXPECT(svc_hub_find_client(&R.hub, span_from_cstr(R.clients[k].id)) == NULL);
    R.clients[k].alive = false;
    (*count)++;
}

static void op_remove_server(int i)
{
    struct ref_server *s = &R.servers[i];
    if (!s->alive)
        return;
    int expect = 0, got = 0;
    for (int k = 0; k < NCLIENT; k++)
        expect += R.clients[k].alive && R.clients[k].server == i;
    EXPECT(svc_hub_remove_server(&R.hub, &s->s, yielded, &got) == (size_t)expect);
    EXPECT(got == expect);
    for (int k = 0; k < NCLIENT; k++)
        EXPECT(!(R.clients[k].alive && R.clients[k].server == i));
    s->alive = false;
}

/* The reference choice. */
static int ref_pick(int app, bool required)
{
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; pass++) {
        if (pass == 0 && app < 0)
            continue;
        if (pass == 1 && app >= 0 && required)
            break;
        for (int i = 0; i < NSERVER; i++) {
            struct ref_server *s = &R.servers[i];
            if (!s->alive || !s->accepting || (pass == 0 && s->app != app))
                continue;
            if (best < 0 || s->clients < R.servers[best].clients ||
                (s->clients == R.servers[best].clients &&
                 (s->picked_at < R.servers[best].picked_at ||
                  (s->picked_at == R.servers[best].picked_at && s->added < R.servers[best].added))))
                best = i;
        }
    }
    return best;
}

static void op_add_client(int k)
{
    struct ref_client *c = &R.clients[k];
    if (c->alive)
        return;
    int app = pick(4) == 0 ? pick(NAPP) : -1;
    bool required = pick(2);
    int expect = ref_pick(app, required);
    struct svc_server_conn *s =
        svc_hub_pick_server(&R.hub, app >= 0 ? span_from_cstr(app_ids[app]) : SPAN_NONE, required);
    EXPECT(expect < 0 ? s == NULL : s == &R.servers[expect].s);
    if (!s)
        return;
    int si = (int)((struct ref_server *)s->owner - R.servers);
    R.servers[si].picked_at = ++R.picks;
    snprintf(c->id, sizeof c->id, "c%04dx%016llx", k, (unsigned long long)++R.gen);
    c->user = pick(3) ? pick(NUSER) : -1;
    c->protocol = (enum svc_protocol)pick(SVC_PROTOCOL_COUNT);
    EXPECT(svc_hub_add_client(&R.hub, &c->c, span_make(c->id, HUB_CONN_ID_LEN), c->protocol,
                              c->user >= 0 ? span_from_cstr(user_ids[c->user]) : SPAN_NONE, s) == HUB_OK);
    c->alive = true;
    c->server = si;
    memset(c->member, 0, sizeof c->member);
    R.servers[si].clients++;
    EXPECT(s->client_count == R.servers[si].clients);
}

static void op_remove_client(int k)
{
    struct ref_client *c = &R.clients[k];
    if (!c->alive)
        return;
    svc_hub_remove_client(&R.hub, &c->c);
    R.servers[c->server].clients--;
    c->alive = false;
    EXPECT(svc_hub_find_client(&R.hub, span_from_cstr(c->id)) == NULL);
}

static void op_join_leave(int k, int g, bool join, bool all)
{
    struct ref_client *c = &R.clients[k];
    struct span id = span_from_cstr(c->id[0] ? c->id : "unknown-connection-id!");
    int32_t st = join ? svc_hub_join(&R.hub, id, span_from_cstr(group_names[g]))
                      : svc_hub_leave(&R.hub, id, all ? SPAN_NONE : span_from_cstr(group_names[g]));
    EXPECT(st == (c->alive ? SVC_ACK_OK : SVC_ACK_NOT_FOUND));
    if (!c->alive)
        return;
    if (join)
        c->member[g] = true;
    else if (all)
        memset(c->member, 0, sizeof c->member);
    else
        c->member[g] = false;
}

/* ---- sends ---- */

struct built {
    struct buf body;
    bool has[SVC_PROTOCOL_COUNT];
};

static void pack_ids(msgpack_packer *pk, const int *ids, int n, bool users, bool groups)
{
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) {
        const char *s = users ? user_ids[ids[i]] : groups ? group_names[ids[i]]
                       : R.clients[ids[i]].id[0] ? R.clients[ids[i]].id : "never-a-connection-id";
        msgpack_pack_str_with_body(pk, s, strlen(s));
    }
}

static void pack_payloads(msgpack_packer *pk, struct built *b)
{
    int n = 0;
    for (int p = 0; p < SVC_PROTOCOL_COUNT; p++)
        n += b->has[p] = pick(4) != 0;
    msgpack_pack_map(pk, (size_t)n);
    for (int p = 0; p < SVC_PROTOCOL_COUNT; p++) {
        if (!b->has[p])
            continue;
        const char *name = svc_protocol_name((enum svc_protocol)p);
        char key[16];
        snprintf(key, sizeof key, "%s", name);
        if (pick(2))
            key[0] = (char)(key[0] - 32); /* "Json": keys match case-insensitively */
        msgpack_pack_str_with_body(pk, key, strlen(key));
        msgpack_pack_bin_with_body(pk, name, strlen(name)); /* payload = the protocol's name */
    }
}

static void on_deliver(void *ctx, struct svc_client *c, struct span payload)
{
    (void)ctx;
    int k = client_slot(c);
    EXPECT(R.clients[k].alive);
    EXPECT(span_eq_cstr(payload, svc_protocol_name(c->protocol)));
    R.clients[k].delivered++;
}

static void op_send(void)
{
    static const enum svc_msg_type types[] = { SVC_MULTI_CONNECTION_DATA, SVC_USER_DATA, SVC_MULTI_USER_DATA,
                                               SVC_BROADCAST_DATA, SVC_GROUP_BROADCAST_DATA,
                                               SVC_MULTI_GROUP_BROADCAST_DATA };
    enum svc_msg_type type = types[pick(6)];
    struct built b;
    memset(&b, 0, sizeof b);
    buf_init(&b.body);
    struct buf_sink sink = { &b.body, false };
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sink, msgpack_sink_write);
    int ids[8], users[4], n = pick(6), nu = pick(3), user = pick(NUSER), group = pick(NGROUP);
    for (int i = 0; i < n; i++)
        ids[i] = type == SVC_MULTI_GROUP_BROADCAST_DATA ? pick(NGROUP)
               : type == SVC_MULTI_USER_DATA ? pick(NUSER) : pick(NCLIENT);
    for (int i = 0; i < nu; i++)
        users[i] = pick(NUSER);

    msgpack_pack_array(&pk, type == SVC_GROUP_BROADCAST_DATA ? 7 : 4);
    msgpack_pack_int(&pk, type);
    if (type == SVC_USER_DATA)
        msgpack_pack_str_with_body(&pk, user_ids[user], strlen(user_ids[user]));
    else if (type == SVC_GROUP_BROADCAST_DATA)
        msgpack_pack_str_with_body(&pk, group_names[group], strlen(group_names[group]));
    if (type != SVC_USER_DATA)
        pack_ids(&pk, ids, n, type == SVC_MULTI_USER_DATA, type == SVC_MULTI_GROUP_BROADCAST_DATA);
    pack_payloads(&pk, &b);
    msgpack_pack_map(&pk, 0);
    if (type == SVC_GROUP_BROADCAST_DATA) {
        pack_ids(&pk, users, nu, true, false);
        msgpack_pack_nil(&pk);
    }

    /* the reference recipients */
    for (int k = 0; k < NCLIENT; k++) {
        struct ref_client *c = &R.clients[k];
        c->delivered = c->expected = 0;
        if (!c->alive)
            continue;
        bool excluded = false;
        int times = 0;
        switch (type) {
        case SVC_MULTI_CONNECTION_DATA:
            for (int i = 0; i < n; i++)
                times += ids[i] == k;
            break;
        case SVC_USER_DATA:
            times = c->user == user;
            break;
        case SVC_MULTI_USER_DATA:
            for (int i = 0; i < n; i++)
                times |= c->user == ids[i];
            break;
        case SVC_BROADCAST_DATA:
            for (int i = 0; i < n; i++)
                excluded |= ids[i] == k;
            times = !excluded;
            break;
        case SVC_GROUP_BROADCAST_DATA:
            for (int i = 0; i < n; i++)
                excluded |= ids[i] == k;
            for (int i = 0; i < nu; i++)
                excluded |= c->user == users[i];
            times = c->member[group] && !excluded;
            break;
        case SVC_MULTI_GROUP_BROADCAST_DATA:
            for (int i = 0; i < n; i++)
                times |= c->member[ids[i]];
            break;
        default:
            break;
        }
        c->expected = times;
    }

    struct svc_msg msg;
    EXPECT(svc_msg_decode(b.body.data, b.body.len, &msg, NULL) == PROTO_OK);
    struct svc_fanout_result r = svc_hub_fanout(&R.hub, &msg, on_deliver, NULL);
    size_t want_delivered = 0, want_skipped = 0;
    for (int k = 0; k < NCLIENT; k++) {
        struct ref_client *c = &R.clients[k];
        if (!c->expected)
            continue;
        if (b.has[c->protocol]) {
            EXPECT(c->delivered == c->expected);
            want_delivered += (size_t)c->expected;
        } else {
            EXPECT(c->delivered == 0);
            want_skipped += (size_t)c->expected;
        }
    }
    for (int k = 0; k < NCLIENT; k++)
        if (!R.clients[k].expected)
            EXPECT(R.clients[k].delivered == 0);
    EXPECT(r.delivered == want_delivered);
    R.total_delivered[type] += r.delivered;
    EXPECT(r.no_payload == want_skipped);
    buf_free(&b.body);
}

static void check_state(void)
{
    size_t alive = 0;
    for (int k = 0; k < NCLIENT; k++) {
        struct ref_client *c = &R.clients[k];
        if (!c->alive)
            continue;
        alive++;
        EXPECT(svc_hub_find_client(&R.hub, span_from_cstr(c->id)) == &c->c);
        EXPECT(c->c.server == &R.servers[c->server].s);
        size_t groups = 0;
        for (int g = 0; g < NGROUP; g++) {
            groups += c->member[g];
            struct group *grp = group_find(&R.hub.groups, span_from_cstr(group_names[g]));
            EXPECT(c->member[g] == (grp && group_has_member(&R.hub.groups, grp, &c->c.conn)));
        }
        EXPECT(c->c.conn.group_count == groups);
    }
    EXPECT(svc_hub_client_count(&R.hub) == alive);
    size_t servers = 0;
    for (int i = 0; i < NSERVER; i++) {
        if (!R.servers[i].alive)
            continue;
        servers++;
        EXPECT(R.servers[i].s.client_count == R.servers[i].clients);
        EXPECT(R.servers[i].s.accepting == R.servers[i].accepting);
    }
    EXPECT(R.hub.server_count == servers);
}

static void test_randomised(uint64_t seed, int steps)
{
    static const uint8_t key[DICT_SEED_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    memset(&R, 0, sizeof R);
    R.rng = seed;
    svc_hub_init(&R.hub, key);
    for (int step = 0; step < steps; step++) {
        int op = pick(100);
        if (op < 3)
            op_add_server(pick(NSERVER));
        else if (op < 4)
            op_remove_server(pick(NSERVER));
        else if (op < 5) {
            int i = pick(NSERVER);
            if (R.servers[i].alive) {
                svc_server_stop_accepting(&R.servers[i].s);
                R.servers[i].accepting = false;
            }
        } else if (op < 30)
            op_add_client(pick(NCLIENT));
        else if (op < 40)
            op_remove_client(pick(NCLIENT));
        else if (op < 65)
            op_join_leave(pick(NCLIENT), pick(NGROUP), true, false);
        else if (op < 75)
            op_join_leave(pick(NCLIENT), pick(NGROUP), false, pick(8) == 0);
        else
            op_send();
        if (step % 64 == 0)
            check_state();
    }
    check_state();
    for (int t = SVC_MULTI_CONNECTION_DATA; t <= SVC_MULTI_GROUP_BROADCAST_DATA; t++)
        if (t != SVC_JOIN_GROUP && t != SVC_LEAVE_GROUP)
            EXPECT(R.total_delivered[t] > 100);
    for (int i = 0; i < NSERVER; i++)
        if (R.servers[i].alive)
            op_remove_server(i);
    EXPECT(svc_hub_client_count(&R.hub) == 0);
    EXPECT(group_table_count(&R.hub.groups) == 0 && user_table_count(&R.hub.users) == 0);
    svc_hub_free(&R.hub);
}

/* ---- fixed cases ---- */

/* Five connections of one app: clients are spread round-robin while counts
 * are equal, a lighter connection is filled first, a stopped one skipped. */
static void test_spread(void)
{
    static const uint8_t key[DICT_SEED_LEN] = { 0 };
    struct svc_hub hub;
    struct svc_server_conn s[5];
    struct svc_client c[12];
    svc_hub_init(&hub, key);
    CHECK(svc_hub_pick_server(&hub, SPAN_NONE, false) == NULL);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(svc_hub_add_server(&hub, &s[i], SPAN_LIT("cid"), SPAN_LIT("app"), NULL), HUB_OK);
    for (int i = 0; i < 10; i++) {
        char id[HUB_CONN_ID_LEN + 1];
        snprintf(id, sizeof id, "client%016d", i);
        struct svc_server_conn *srv = svc_hub_pick_server(&hub, SPAN_NONE, false);
        CHECK(srv == &s[i % 5]);
        CHECK_EQ_INT(svc_hub_add_client(&hub, &c[i], span_make(id, HUB_CONN_ID_LEN), SVC_PROTOCOL_JSON,
                                        SPAN_NONE, srv),
                     HUB_OK);
    }
    svc_hub_remove_client(&hub, &c[7]); /* s[2] now has one client */
    CHECK(svc_hub_pick_server(&hub, SPAN_NONE, false) == &s[2]);
    svc_server_stop_accepting(&s[2]);
    struct svc_server_conn *next = svc_hub_pick_server(&hub, SPAN_NONE, false);
    CHECK(next != &s[2] && next != NULL);
    /* sticky: an unknown server id falls back unless required */
    CHECK(svc_hub_pick_server(&hub, SPAN_LIT("other"), true) == NULL);
    CHECK(svc_hub_pick_server(&hub, SPAN_LIT("other"), false) != NULL);
    CHECK(svc_hub_pick_server(&hub, SPAN_LIT("app"), true) != NULL);
    /* a bad id or a taken one changes nothing */
    CHECK_EQ_INT(svc_hub_add_client(&hub, &c[10], SPAN_LIT("short"), SVC_PROTOCOL_JSON, SPAN_NONE, &s[0]),
                 HUB_ERR_VALUE);
    CHECK_EQ_INT(svc_hub_add_client(&hub, &c[10], hub_conn_id(&c[0].conn), SVC_PROTOCOL_JSON, SPAN_NONE,
                                    &s[0]),
                 HUB_ALREADY);
    CHECK_EQ_INT(s[0].client_count, 2);
    for (int i = 0; i < 5; i++)
        svc_hub_remove_server(&hub, &s[i], NULL, NULL);
    CHECK_EQ_INT(svc_hub_client_count(&hub), 0);
    svc_hub_free(&hub);
}

/* A server connection going while its clients' callback removes others: a
 * later client of the same server (not handed over again) and a client of
 * another server (gone, the rest of that server untouched). Its clients are
 * found in the hub's list, interleaved with the other server's. */
struct server_gone {
    struct svc_hub *hub;
    struct svc_client *c;
    int handed[8];
    bool removed_others;
};

static void server_gone_client(void *ctx, struct svc_client *client)
{
    struct server_gone *g = ctx;
    int i = (int)(client - g->c);
    g->handed[i]++;
    if (!g->removed_others) {
        g->removed_others = true;
        svc_hub_remove_client(g->hub, &g->c[4]); /* s[0]'s, later in the list */
        svc_hub_remove_client(g->hub, &g->c[3]); /* s[1]'s */
    }
}

static void test_remove_server_removing(void)
{
    static const uint8_t key[DICT_SEED_LEN] = { 0 };
    struct svc_hub hub;
    struct svc_server_conn s[2];
    struct svc_client c[8];
    svc_hub_init(&hub, key);
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(svc_hub_add_server(&hub, &s[i], SPAN_LIT("cid"), SPAN_LIT("app"), NULL), HUB_OK);
    for (int i = 0; i < 8; i++) { /* even ones on s[0], odd ones on s[1] */
        char id[HUB_CONN_ID_LEN + 1];
        snprintf(id, sizeof id, "gone%018d", i);
        CHECK_EQ_INT(svc_hub_add_client(&hub, &c[i], span_make(id, HUB_CONN_ID_LEN), SVC_PROTOCOL_JSON,
                                        SPAN_NONE, &s[i % 2]),
                     HUB_OK);
    }
    struct server_gone g = { .hub = &hub, .c = c };
    CHECK_EQ_INT(svc_hub_remove_server(&hub, &s[0], server_gone_client, &g), 3); /* c[0], c[2], c[6] */
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(g.handed[i], i == 0 || i == 2 || i == 6);
    CHECK_EQ_INT(s[1].client_count, 3);
    CHECK_EQ_INT(svc_hub_client_count(&hub), 3);
    for (int i = 1; i < 8; i += 2)
        CHECK((svc_hub_find_client(&hub, hub_conn_id(&c[i].conn)) != NULL) == (i != 3));
    CHECK_EQ_INT(svc_hub_remove_server(&hub, &s[1], NULL, NULL), 3);
    CHECK_EQ_INT(svc_hub_client_count(&hub), 0);
    svc_hub_free(&hub);
}

/* A delivery callback that removes clients: the current recipient and the
 * one after it. Every other member still gets exactly one delivery. */
struct removing {
    struct svc_hub *hub;
    struct svc_client *c;
    int delivered[8];
    bool removed[8];
};

static void remove_on_deliver(void *ctx, struct svc_client *c, struct span payload)
{
    struct removing *r = ctx;
    (void)payload;
    int i = (int)(c - r->c);
    r->delivered[i]++;
    if (i == 2) {
        svc_hub_remove_client(r->hub, &r->c[2]);
        svc_hub_remove_client(r->hub, &r->c[3]);
        r->removed[2] = r->removed[3] = true;
    }
}

static void test_remove_during_send(void)
{
    static const uint8_t key[DICT_SEED_LEN] = { 0 };
    struct svc_hub hub;
    struct svc_server_conn s;
    struct svc_client c[8];
    svc_hub_init(&hub, key);
    svc_hub_add_server(&hub, &s, SPAN_LIT("cid"), SPAN_NONE, NULL);
    for (int i = 0; i < 8; i++) {
        char id[HUB_CONN_ID_LEN + 1];
        snprintf(id, sizeof id, "member%016d", i);
        CHECK_EQ_INT(svc_hub_add_client(&hub, &c[i], span_make(id, HUB_CONN_ID_LEN), SVC_PROTOCOL_MESSAGEPACK,
                                        SPAN_LIT("u"), &s),
                     HUB_OK);
        CHECK_EQ_INT(svc_hub_join(&hub, span_make(id, HUB_CONN_ID_LEN), SPAN_LIT("g")), SVC_ACK_OK);
    }
    CHECK_EQ_INT(svc_hub_join(&hub, SPAN_LIT("nobody"), SPAN_LIT("g")), SVC_ACK_NOT_FOUND);
    CHECK_EQ_INT(svc_hub_join(&hub, hub_conn_id(&c[0].conn), SPAN_LIT("")), SVC_ACK_INTERNAL_ERROR);

    /* [13, "g", [], {"messagepack": x}, {}] and [10, [], ...] and [8, "u", ...] */
#define BODY(s) { s, sizeof(s) - 1 }
    static const struct span bodies[] = {
        BODY("\x95\x0d\xa1g\x90\x81\xabmessagepack\xc4\x01x\x80"),
        BODY("\x94\x0a\x90\x81\xabmessagepack\xc4\x01x\x80"),
        BODY("\x94\x08\xa1u\x81\xabmessagepack\xc4\x01x\x80"),
    };
#undef BODY
    for (int b = 0; b < 3; b++) {
        struct svc_msg msg;
        CHECK_EQ_INT(svc_msg_decode(bodies[b].ptr, bodies[b].len, &msg, NULL), PROTO_OK);
        struct removing r = { &hub, c, { 0 }, { false } };
        for (int i = 0; i < 8; i++)
            r.removed[i] = svc_hub_find_client(&hub, hub_conn_id(&c[i].conn)) == NULL;
        bool was_removed[8];
        memcpy(was_removed, r.removed, sizeof was_removed);
        struct svc_fanout_result res = svc_hub_fanout(&hub, &msg, remove_on_deliver, &r);
        int sum = 0;
        for (int i = 0; i < 8; i++) {
            sum += r.delivered[i];
            if (was_removed[i] || i == 3)
                CHECK_EQ_INT(r.delivered[i], 0);
            else
                CHECK_EQ_INT(r.delivered[i], 1);
        }
        CHECK_EQ_INT(res.delivered, sum);
    }
    svc_hub_remove_server(&hub, &s, NULL, NULL);
    svc_hub_free(&hub);
}

/* 32-bit send stamps across the counter's wrap-around: a client's stamp left
 * from a send before the wrap must not exclude it from, or count as a visit
 * in, the sends after it (svc_hub_fanout resets the stamps when it wraps). */
static void count_deliver(void *ctx, struct svc_client *c, struct span payload)
{
    (void)payload;
    ((int *)ctx)[c->conn.id[HUB_CONN_ID_LEN - 1] - '0']++;
}

static int fanout_count(struct svc_hub *hub, struct span body, int counts[3])
{
    struct svc_msg msg;
    memset(counts, 0, 3 * sizeof(int));
    CHECK_EQ_INT(svc_msg_decode(body.ptr, body.len, &msg, NULL), PROTO_OK);
    return (int)svc_hub_fanout(hub, &msg, count_deliver, counts).delivered;
}

static void test_stamp_wrap(void)
{
    static const uint8_t key[DICT_SEED_LEN] = { 0 };
    struct svc_hub hub;
    struct svc_server_conn s;
    struct svc_client c[3];
    svc_hub_init(&hub, key);
    svc_hub_add_server(&hub, &s, SPAN_LIT("cid"), SPAN_NONE, NULL);
    for (int i = 0; i < 3; i++) {
        char id[HUB_CONN_ID_LEN + 1];
        snprintf(id, sizeof id, "wrapped%015d", i);
        CHECK_EQ_INT(svc_hub_add_client(&hub, &c[i], span_make(id, HUB_CONN_ID_LEN), SVC_PROTOCOL_MESSAGEPACK,
                                        SPAN_NONE, &s),
                     HUB_OK);
        CHECK_EQ_INT(svc_hub_join(&hub, span_make(id, HUB_CONN_ID_LEN), SPAN_LIT("g")), SVC_ACK_OK);
    }
#define BODY(s) span_make(s, sizeof(s) - 1)
    /* [10, [c0], {"messagepack": x}, {}]: everyone but c0; [10, [], ...]: everyone;
     * [14, ["g", "g"], ...]: each member once */
    struct span all_but_0 = BODY("\x94\x0a\x91\xb6wrapped000000000000000\x81\xabmessagepack\xc4\x01x\x80");
    struct span all_but_1 = BODY("\x94\x0a\x91\xb6wrapped000000000000001\x81\xabmessagepack\xc4\x01x\x80");
    struct span all = BODY("\x94\x0a\x90\x81\xabmessagepack\xc4\x01x\x80");
    struct span groups_twice = BODY("\x94\x0e\x92\xa1g\xa1g\x81\xabmessagepack\xc4\x01x\x80");
#undef BODY
    int n[3];
    CHECK_EQ_INT(fanout_count(&hub, all_but_0, n), 2);
    CHECK(n[0] == 0 && n[1] == 1 && n[2] == 1);
    CHECK_EQ_INT(fanout_count(&hub, groups_twice, n), 3); /* stamps c0..c2 visited at 2 */
    /* 2^32 - 3 sends later the counter is at its last value: the next sends reuse 1, 2, ... */
    hub.stamp = UINT32_MAX - 1;
    CHECK_EQ_INT(fanout_count(&hub, all, n), 3); /* UINT32_MAX */
    CHECK(n[0] == 1 && n[1] == 1 && n[2] == 1);
    CHECK_EQ_INT(fanout_count(&hub, all, n), 3); /* wraps: 1, c0's exclusion of long ago */
    CHECK(n[0] == 1 && n[1] == 1 && n[2] == 1);
    CHECK_EQ_INT(fanout_count(&hub, groups_twice, n), 3); /* 2, every client's visit of long ago */
    CHECK(n[0] == 1 && n[1] == 1 && n[2] == 1);
    CHECK_EQ_INT(fanout_count(&hub, all_but_1, n), 2); /* exclusion still works after the wrap */
    CHECK(n[0] == 1 && n[1] == 0 && n[2] == 1);
    CHECK(hub.stamp == 3);
    svc_hub_remove_server(&hub, &s, NULL, NULL);
    svc_hub_free(&hub);
}

int main(void)
{
    for (int i = 0; i < NAPP; i++)
        snprintf(app_ids[i], sizeof app_ids[i], "app%d", i);
    for (int g = 0; g < NGROUP; g++)
        snprintf(group_names[g], sizeof group_names[g], g % 2 ? "G%d" : "g%d", g / 2);
    for (int u = 0; u < NUSER; u++)
        snprintf(user_ids[u], sizeof user_ids[u], u % 2 ? "User%d" : "user%d", u / 2);
    test_spread();
    test_remove_server_removing();
    test_remove_during_send();
    test_stamp_wrap();
    for (uint64_t seed = 1; seed <= 6; seed++)
        test_randomised(seed * 0x9E3779B97F4A7C15ull, 20000);
    return test_main_result("test_service_hub");
}
