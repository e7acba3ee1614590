/* test_groups.c - groups: join/leave/disconnect semantics, iteration that
 * survives anything its callback does, disconnect cost independent of the
 * rest of the table, and 500k random steps against the naive model of
 * hub_model.h with the complete state compared after every step. */
#include "hub_model.h"

static const uint8_t test_seed[DICT_SEED_LEN] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6 };

static struct hub_conn *new_conn(int n)
{
    char id[HUB_CONN_ID_LEN + 1];
    snprintf(id, sizeof(id), "t%021d", n);
    struct hub_conn *c = malloc(sizeof(*c));
    CHECK_EQ_INT(hub_conn_init(c, span_make(id, HUB_CONN_ID_LEN)), HUB_OK);
    return c;
}

static void drop_conn(struct hub_conn *c)
{
    group_remove_connection(c);
    user_detach(c);
    free(c);
}

static void test_conn_ids(void)
{
    struct hub_conn c;
    CHECK_EQ_INT(hub_conn_init(&c, SPAN_LIT("AAAAAAAAAAAAAAAAAAAAAA")), HUB_OK);
    CHECK_EQ_INT(hub_conn_init(&c, SPAN_LIT("abcXYZ019-_abcXYZ019-_")), HUB_OK);
    CHECK_BYTES(hub_conn_id(&c).ptr, hub_conn_id(&c).len, "abcXYZ019-_abcXYZ019-_");
    CHECK_EQ_INT(hub_conn_init(&c, SPAN_LIT("AAAAAAAAAAAAAAAAAAAAA")), HUB_ERR_VALUE);   /* 21 */
    CHECK_EQ_INT(hub_conn_init(&c, SPAN_LIT("AAAAAAAAAAAAAAAAAAAAAAA")), HUB_ERR_VALUE); /* 23 */
    CHECK_EQ_INT(hub_conn_init(&c, SPAN_LIT("AAAAAAAAAAAAAAAAAAAAA=")), HUB_ERR_VALUE);
    CHECK_EQ_INT(hub_conn_init(&c, SPAN_LIT("AAAAAAAAAAAAAAAAAAAAA+")), HUB_ERR_VALUE);
    CHECK_EQ_INT(hub_conn_init(&c, SPAN_NONE), HUB_ERR_VALUE);

    struct conn_table t;
    conn_table_init(&t, test_seed);
    struct hub_conn *a = new_conn(1), *b = new_conn(1), *d = new_conn(2);
    CHECK_EQ_INT(conn_table_add(&t, a), HUB_OK);
    CHECK_EQ_INT(conn_table_add(&t, b), HUB_ALREADY); /* same id */
    CHECK_EQ_INT(conn_table_add(&t, d), HUB_OK);
    CHECK(conn_table_find(&t, hub_conn_id(b)) == a);
    CHECK_EQ_INT(conn_table_count(&t), 2);
    CHECK_EQ_INT(conn_table_remove(&t, b), HUB_NOT_FOUND);
    CHECK_EQ_INT(conn_table_remove(&t, a), HUB_OK);
    CHECK(conn_table_find(&t, hub_conn_id(a)) == NULL);
    CHECK_EQ_INT(conn_table_remove(&t, d), HUB_OK);
    conn_table_free(&t);
    free(a);
    free(b);
    free(d);
}

static void test_join_leave(void)
{
    struct group_table t;
    group_table_init(&t, test_seed);
    struct hub_conn *a = new_conn(1), *b = new_conn(2);

    CHECK_EQ_INT(group_add(&t, a, SPAN_LIT("room")), HUB_OK);
    CHECK_EQ_INT(group_add(&t, a, SPAN_LIT("room")), HUB_ALREADY); /* idempotent */
    CHECK_EQ_INT(a->group_count, 1);
    struct group *room = group_find(&t, SPAN_LIT("room"));
    CHECK(room != NULL && group_member_count(room) == 1);
    CHECK_BYTES(group_name(room).ptr, group_name(room).len, "room");

    /* Ordinal: case matters, as in ASP.NET Core's dictionary of groups. */
    CHECK(group_find(&t, SPAN_LIT("Room")) == NULL);
    CHECK_EQ_INT(group_add(&t, b, SPAN_LIT("Room")), HUB_OK);
    CHECK_EQ_INT(group_table_count(&t), 2);
    CHECK(group_find(&t, SPAN_LIT("Room")) != room);
    CHECK(!group_has_member(&t, room, b));
    CHECK(group_has_member(&t, room, a));

    CHECK_EQ_INT(group_add(&t, a, SPAN_LIT("")), HUB_ERR_VALUE);
    CHECK_EQ_INT(group_add(&t, a, SPAN_NONE), HUB_ERR_VALUE);
    CHECK(group_find(&t, SPAN_LIT("")) == NULL);

    CHECK_EQ_INT(group_remove(&t, b, SPAN_LIT("room")), HUB_NOT_FOUND);   /* not a member */
    CHECK_EQ_INT(group_remove(&t, a, SPAN_LIT("nowhere")), HUB_NOT_FOUND); /* no such group */
    CHECK_EQ_INT(group_add(&t, b, SPAN_LIT("room")), HUB_OK);
    CHECK_EQ_INT(group_member_count(room), 2);
    CHECK_EQ_INT(group_remove(&t, a, SPAN_LIT("room")), HUB_OK);
    CHECK_EQ_INT(group_remove(&t, a, SPAN_LIT("room")), HUB_NOT_FOUND);
    CHECK_EQ_INT(group_member_count(room), 1);
    CHECK_EQ_INT(group_remove(&t, b, SPAN_LIT("room")), HUB_OK);
    CHECK(group_find(&t, SPAN_LIT("room")) == NULL); /* emptied: gone at once */
    CHECK_EQ_INT(group_table_count(&t), 1);

    /* Rejoin after leaving works and creates the group afresh. */
    CHECK_EQ_INT(group_add(&t, a, SPAN_LIT("room")), HUB_OK);
    CHECK_EQ_INT(group_remove_connection(a), 1);
    CHECK_EQ_INT(group_remove_connection(b), 1);
    CHECK_EQ_INT(group_table_count(&t), 0);
    CHECK(hub_conn_is_detached(a) && hub_conn_is_detached(b));
    group_table_free(&t);
    free(a);
    free(b);
}

/* A legacy connection can use several hubs: one group table each. */
static void test_two_hubs(void)
{
    struct group_table chat, game;
    group_table_init(&chat, test_seed);
    group_table_init(&game, test_seed);
    struct hub_conn *a = new_conn(1), *b = new_conn(2);
    CHECK_EQ_INT(group_add(&chat, a, SPAN_LIT("lobby")), HUB_OK);
    CHECK_EQ_INT(group_add(&game, a, SPAN_LIT("lobby")), HUB_OK); /* same name, other hub */
    CHECK_EQ_INT(group_add(&game, b, SPAN_LIT("lobby")), HUB_OK);
    CHECK_EQ_INT(group_remove(&chat, b, SPAN_LIT("lobby")), HUB_NOT_FOUND);
    CHECK_EQ_INT(a->group_count, 2);
    CHECK_EQ_INT(group_remove_connection(a), 2);
    CHECK(group_find(&chat, SPAN_LIT("lobby")) == NULL);
    CHECK_EQ_INT(group_member_count(group_find(&game, SPAN_LIT("lobby"))), 1);
    /* Freeing a table unlinks the connections still in it. */
    group_table_free(&game);
    CHECK(hub_conn_is_detached(b) && b->group_count == 0);
    group_table_free(&chat);
    free(a);
    free(b);
}

/* Disconnect walks only the connection's own memberships: the work, counted
 * in dict probes and memberships, does not depend on the 20000 other groups. */
static void test_disconnect_is_local(void)
{
    enum { GROUPS = 20000, FILLERS = 200 };
    struct group_table t;
    group_table_init(&t, test_seed);
    struct hub_conn *fillers[FILLERS];
    char name[32];
    for (int f = 0; f < FILLERS; f++)
        fillers[f] = new_conn(1000 + f);
    for (int g = 0; g < GROUPS; g++) {
        int len = snprintf(name, sizeof(name), "group-%d", g);
        group_add(&t, fillers[g % FILLERS], span_make(name, (size_t)len));
    }
    CHECK_EQ_INT(group_table_count(&t), GROUPS);

    uint64_t worst = 0;
    for (int round = 0; round < 50; round++) {
        struct hub_conn *c = new_conn(round);
        for (int k = 0; k < 10; k++) {
            int len = snprintf(name, sizeof(name), "group-%d", (round * 397 + k * 1013) % GROUPS);
            CHECK_EQ_INT(group_add(&t, c, span_make(name, (size_t)len)), HUB_OK);
        }
        uint64_t before = t.by_name.stats.probes + t.memberships.stats.probes;
        CHECK_EQ_INT(group_remove_connection(c), 10);
        uint64_t work = t.by_name.stats.probes + t.memberships.stats.probes - before;
        if (work > worst)
            worst = work;
        free(c);
    }
    /* 10 memberships, each one chain walk in the membership index; a tiny
     * constant per membership, nowhere near GROUPS. */
    CHECK(worst <= 10 * 8);
    CHECK_EQ_INT(group_table_count(&t), GROUPS);
    for (int f = 0; f < FILLERS; f++)
        drop_conn(fillers[f]);
    CHECK_EQ_INT(group_table_count(&t), 0);
    group_table_free(&t);
}

/* ---- re-entrancy: callbacks that change the group being sent to ---- */

enum { MEMBERS = 6 };

struct send_ctx {
    struct group_table *t;
    struct hub_conn *members[MEMBERS];
    struct hub_conn *visited[MEMBERS * 4];
    int visits;
    int fresh_id;
    struct hub_conn *newcomers[MEMBERS * 4]; /* joined from callbacks */
    int n_newcomers;
};

static void send_ctx_init(struct send_ctx *x, struct group_table *t, const char *group)
{
    memset(x, 0, sizeof(*x));
    x->t = t;
    x->fresh_id = 100;
    for (int i = 0; i < MEMBERS; i++) {
        x->members[i] = new_conn(i);
        group_add(t, x->members[i], span_from_cstr(group));
        group_add(t, x->members[i], SPAN_LIT("elsewhere"));
    }
}

static int member_index(struct send_ctx *x, struct hub_conn *c)
{
    for (int i = 0; i < MEMBERS; i++)
        if (x->members[i] == c)
            return i;
    return -1;
}

static void record(struct send_ctx *x, struct hub_conn *c)
{
    x->visited[x->visits++] = c;
}

static bool cb_disconnect_current(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    record(x, c);
    x->members[member_index(x, c)] = NULL;
    drop_conn(c); /* out of every group, memory freed */
    return true;
}

static void test_callback_disconnects_current(void)
{
    struct group_table t;
    group_table_init(&t, test_seed);
    struct send_ctx x;
    send_ctx_init(&x, &t, "r");
    struct hub_conn *order[MEMBERS];
    memcpy(order, x.members, sizeof(order));
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("r"), cb_disconnect_current, &x), MEMBERS);
    for (int i = 0; i < MEMBERS; i++)
        CHECK(x.visited[i] == order[i]); /* each once, in join order */
    CHECK(group_find(&t, SPAN_LIT("r")) == NULL);
    CHECK(group_find(&t, SPAN_LIT("elsewhere")) == NULL);
    CHECK_EQ_INT(group_table_count(&t), 0);
    group_table_free(&t);
}

static bool cb_disconnect_next(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    record(x, c);
    int i = member_index(x, c);
    if (i + 1 < MEMBERS && x->members[i + 1]) {
        drop_conn(x->members[i + 1]);
        x->members[i + 1] = NULL;
    }
    return true;
}

static void test_callback_disconnects_next(void)
{
    struct group_table t;
    group_table_init(&t, test_seed);
    struct send_ctx x;
    send_ctx_init(&x, &t, "r");
    struct hub_conn *order[MEMBERS];
    memcpy(order, x.members, sizeof(order));
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("r"), cb_disconnect_next, &x), MEMBERS / 2);
    for (int i = 0; i < MEMBERS / 2; i++)
        CHECK(x.visited[i] == order[2 * i]); /* 0, 2, 4: the dropped ones are skipped */
    CHECK_EQ_INT(group_member_count(group_find(&t, SPAN_LIT("r"))), MEMBERS / 2);
    for (int i = 0; i < MEMBERS; i++)
        if (x.members[i])
            drop_conn(x.members[i]);
    CHECK_EQ_INT(group_table_count(&t), 0);
    group_table_free(&t);
}

static bool cb_join_newcomer(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    record(x, c);
    struct hub_conn *n = new_conn(x->fresh_id++);
    x->newcomers[x->n_newcomers++] = n;
    CHECK_EQ_INT(group_add(x->t, n, SPAN_LIT("r")), HUB_OK);
    return true;
}

static void test_callback_joins_members(void)
{
    struct group_table t;
    group_table_init(&t, test_seed);
    struct send_ctx x;
    send_ctx_init(&x, &t, "r");
    /* Newcomers joined during the send are not part of it. */
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("r"), cb_join_newcomer, &x), MEMBERS);
    for (int i = 0; i < MEMBERS; i++)
        CHECK(x.visited[i] == x.members[i]);
    CHECK_EQ_INT(group_member_count(group_find(&t, SPAN_LIT("r"))), 2 * MEMBERS);
    /* A second send reaches all of them, in join order, and no newer one. */
    x.visits = 0;
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("r"), cb_join_newcomer, &x), 2 * MEMBERS);
    for (int i = 0; i < MEMBERS; i++) {
        CHECK(x.visited[i] == x.members[i]);
        CHECK(x.visited[MEMBERS + i] == x.newcomers[i]);
    }
    CHECK_EQ_INT(group_member_count(group_find(&t, SPAN_LIT("r"))), 4 * MEMBERS);
    group_table_free(&t); /* frees the memberships of all connections */
    for (int i = 0; i < MEMBERS; i++) {
        CHECK(hub_conn_is_detached(x.members[i]));
        free(x.members[i]);
    }
    for (int i = 0; i < x.n_newcomers; i++) {
        CHECK(hub_conn_is_detached(x.newcomers[i]));
        free(x.newcomers[i]);
    }
}

static bool cb_leave_and_rejoin(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    record(x, c);
    CHECK_EQ_INT(group_remove(x->t, c, SPAN_LIT("r")), HUB_OK);
    CHECK_EQ_INT(group_add(x->t, c, SPAN_LIT("r")), HUB_OK);
    return true;
}

static void test_callback_leaves_and_rejoins(void)
{
    struct group_table t;
    group_table_init(&t, test_seed);
    struct send_ctx x;
    send_ctx_init(&x, &t, "r");
    /* Each rejoin puts the member behind the fence: visited once, not twice. */
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("r"), cb_leave_and_rejoin, &x), MEMBERS);
    for (int i = 0; i < MEMBERS; i++)
        CHECK(x.visited[i] == x.members[i]);
    for (int i = 0; i < MEMBERS; i++)
        drop_conn(x.members[i]);
    group_table_free(&t);
}

static bool cb_count(struct hub_conn *c, void *ctx)
{
    (void)c;
    (*(int *)ctx)++;
    return true;
}

static bool cb_nested_send(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    record(x, c);
    int inner = 0;
    CHECK_EQ_INT(group_for_each(x->t, SPAN_LIT("r"), cb_count, &inner), MEMBERS);
    CHECK_EQ_INT(inner, MEMBERS);
    return true;
}

static void test_nested_send(void)
{
    struct group_table t;
    group_table_init(&t, test_seed);
    struct send_ctx x;
    send_ctx_init(&x, &t, "r");
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("r"), cb_nested_send, &x), MEMBERS);
    for (int i = 0; i < MEMBERS; i++)
        drop_conn(x.members[i]);
    group_table_free(&t);
}

static bool cb_empty_and_refill(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    record(x, c);
    struct group *old = group_find(x->t, SPAN_LIT("r"));
    for (int i = 0; i < MEMBERS; i++)
        group_remove(x->t, x->members[i], SPAN_LIT("r"));
    CHECK(group_find(x->t, SPAN_LIT("r")) == NULL); /* out of the table at once */
    CHECK_EQ_INT(group_add(x->t, x->members[3], SPAN_LIT("r")), HUB_OK);
    struct group *fresh = group_find(x->t, SPAN_LIT("r"));
    CHECK(fresh != NULL && fresh != old && group_member_count(fresh) == 1);
    return true;
}

static void test_callback_empties_group(void)
{
    struct group_table t;
    group_table_init(&t, test_seed);
    struct send_ctx x;
    send_ctx_init(&x, &t, "r");
    /* The old group is pinned by the iterator (ASan would catch a use after
     * free, LeakSanitizer a group never freed); the new one is not visited. */
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("r"), cb_empty_and_refill, &x), 1);
    CHECK_EQ_INT(group_member_count(group_find(&t, SPAN_LIT("r"))), 1);
    for (int i = 0; i < MEMBERS; i++)
        drop_conn(x.members[i]);
    CHECK_EQ_INT(group_table_count(&t), 0);
    group_table_free(&t);
}

static bool cb_stop_at_two(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    record(x, c);
    return x->visits < 2;
}

static void test_stop_early(void)
{
    struct group_table t;
    group_table_init(&t, test_seed);
    struct send_ctx x;
    send_ctx_init(&x, &t, "r");
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("r"), cb_stop_at_two, &x), 2);
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("none"), cb_stop_at_two, &x), 0);
    /* The list is clean afterwards: a full walk sees only real members. */
    int n = 0;
    CHECK_EQ_INT(group_for_each(&t, SPAN_LIT("r"), cb_count, &n), MEMBERS);
    for (int i = 0; i < MEMBERS; i++)
        drop_conn(x.members[i]);
    group_table_free(&t);
}

int main(void)
{
    test_conn_ids();
    test_join_leave();
    test_two_hubs();
    test_disconnect_is_local();
    test_callback_disconnects_current();
    test_callback_disconnects_next();
    test_callback_joins_members();
    test_callback_leaves_and_rejoins();
    test_nested_send();
    test_callback_empties_group();
    test_stop_early();

    static const struct op_mix group_heavy = {
        .connect = 6, .disconnect = 4, .join = 30, .leave = 20, .rejoin = 6,
        .attach = 3, .detach = 2, .iterate_group = 4, .iterate_user = 1,
    };
    model_run(UINT64_C(0x5eed0001), 250000, &group_heavy);
    model_run(UINT64_C(0x5eed0002), 250000, &group_heavy);
    return test_main_result("test_groups");
}
