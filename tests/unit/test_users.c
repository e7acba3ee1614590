/* test_users.c - users: attach/detach semantics, owned ids, iteration over a
 * user's connections that survives anything its callback does, and random
 * steps against the naive model of hub_model.h (user-heavy mix), with the
 * complete state compared after every step. */
#include "hub_model.h"

static const uint8_t test_seed[DICT_SEED_LEN] = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3 };

static struct hub_conn *new_conn(int n)
{
    char id[HUB_CONN_ID_LEN + 1];
    snprintf(id, sizeof(id), "u%021d", n);
    struct hub_conn *c = malloc(sizeof(*c));
    CHECK_EQ_INT(hub_conn_init(c, span_make(id, HUB_CONN_ID_LEN)), HUB_OK);
    return c;
}

static void test_attach_detach(void)
{
    struct user_table t, other;
    user_table_init(&t, test_seed);
    user_table_init(&other, test_seed);
    struct hub_conn *a = new_conn(1), *b = new_conn(2), *c = new_conn(3);

    CHECK(!span_is_set(hub_conn_user_id(a))); /* anonymous until attached */
    char id[] = "alice";
    CHECK_EQ_INT(user_attach(&t, a, span_make(id, 5)), HUB_OK);
    id[0] = 'X'; /* the connection and the user own their copies */
    CHECK_BYTES(hub_conn_user_id(a).ptr, hub_conn_user_id(a).len, "alice");
    struct user *alice = user_find(&t, SPAN_LIT("alice"));
    CHECK(alice != NULL && user_conn_count(alice) == 1);
    CHECK_BYTES(user_id_of(alice).ptr, user_id_of(alice).len, "alice");

    CHECK_EQ_INT(user_attach(&t, a, SPAN_LIT("alice")), HUB_ALREADY);
    CHECK_EQ_INT(user_attach(&t, a, SPAN_LIT("bob")), HUB_ERR_STATE);
    CHECK_EQ_INT(user_attach(&other, a, SPAN_LIT("alice")), HUB_ERR_STATE);
    CHECK_EQ_INT(user_attach(&t, b, SPAN_LIT("")), HUB_ERR_VALUE);
    CHECK_EQ_INT(user_attach(&t, b, SPAN_NONE), HUB_ERR_VALUE);
    CHECK(b->user == NULL);

    /* Ordinal: "Alice" is someone else. */
    CHECK_EQ_INT(user_attach(&t, b, SPAN_LIT("Alice")), HUB_OK);
    CHECK_EQ_INT(user_attach(&t, c, SPAN_LIT("alice")), HUB_OK);
    CHECK_EQ_INT(user_table_count(&t), 2);
    CHECK_EQ_INT(user_conn_count(alice), 2);
    CHECK_EQ_INT(user_conn_count(user_find(&t, SPAN_LIT("Alice"))), 1);

    user_detach(a);
    CHECK(a->user == NULL && !span_is_set(hub_conn_user_id(a)));
    user_detach(a); /* no-op */
    CHECK_EQ_INT(user_conn_count(alice), 1);
    user_detach(c);
    CHECK(user_find(&t, SPAN_LIT("alice")) == NULL); /* last one gone: user freed */
    CHECK_EQ_INT(user_table_count(&t), 1);

    /* Freeing the table detaches the connections still attached. */
    user_table_free(&t);
    CHECK(b->user == NULL && !span_is_set(hub_conn_user_id(b)));
    user_table_free(&other);
    free(a);
    free(b);
    free(c);
}

/* Sending to a user touches that user's connections only. */
static bool cb_count(struct hub_conn *c, void *ctx)
{
    (void)c;
    (*(int *)ctx)++;
    return true;
}

static void test_send_reaches_only_the_user(void)
{
    enum { OTHERS = 5000 };
    struct user_table t;
    user_table_init(&t, test_seed);
    struct hub_conn **others = malloc(OTHERS * sizeof(*others));
    char id[32];
    for (int i = 0; i < OTHERS; i++) {
        others[i] = new_conn(1000 + i);
        int len = snprintf(id, sizeof(id), "user-%d", i % 1000);
        user_attach(&t, others[i], span_make(id, (size_t)len));
    }
    struct hub_conn *bob[3];
    for (int i = 0; i < 3; i++) {
        bob[i] = new_conn(i);
        CHECK_EQ_INT(user_attach(&t, bob[i], SPAN_LIT("bob")), HUB_OK);
    }
    int n = 0;
    CHECK_EQ_INT(user_for_each(&t, SPAN_LIT("bob"), cb_count, &n), 3);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(user_for_each(&t, SPAN_LIT("nobody"), cb_count, &n), 0);
    CHECK_EQ_INT(user_table_count(&t), 1001);
    for (int i = 0; i < OTHERS; i++) {
        user_detach(others[i]);
        free(others[i]);
    }
    for (int i = 0; i < 3; i++) {
        user_detach(bob[i]);
        free(bob[i]);
    }
    CHECK_EQ_INT(user_table_count(&t), 0);
    user_table_free(&t);
    free(others);
}

/* ---- re-entrancy ---- */

enum { CONNS = 6 };

struct send_ctx {
    struct user_table *t;
    struct group_table *g;
    struct hub_conn *conns[CONNS];
    struct hub_conn *visited[CONNS * 4];
    int visits;
    struct hub_conn *newcomers[CONNS * 4];
    int n_newcomers;
};

static void send_ctx_init(struct send_ctx *x, struct user_table *t, struct group_table *g)
{
    memset(x, 0, sizeof(*x));
    x->t = t;
    x->g = g;
    for (int i = 0; i < CONNS; i++) {
        x->conns[i] = new_conn(i);
        user_attach(t, x->conns[i], SPAN_LIT("carol"));
        group_add(g, x->conns[i], SPAN_LIT("team"));
    }
}

static int conn_index(struct send_ctx *x, struct hub_conn *c)
{
    for (int i = 0; i < CONNS; i++)
        if (x->conns[i] == c)
            return i;
    return -1;
}

/* What the relay does on disconnect. */
static void disconnect(struct send_ctx *x, struct hub_conn *c)
{
    x->conns[conn_index(x, c)] = NULL;
    group_remove_connection(c);
    user_detach(c);
    free(c);
}

static void send_ctx_free(struct send_ctx *x)
{
    for (int i = 0; i < CONNS; i++)
        if (x->conns[i])
            disconnect(x, x->conns[i]);
    for (int i = 0; i < x->n_newcomers; i++) {
        group_remove_connection(x->newcomers[i]);
        user_detach(x->newcomers[i]);
        free(x->newcomers[i]);
    }
    CHECK_EQ_INT(user_table_count(x->t), 0);
    CHECK_EQ_INT(group_table_count(x->g), 0);
}

static bool cb_disconnect_current(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    x->visited[x->visits++] = c;
    disconnect(x, c);
    return true;
}

static bool cb_disconnect_next(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    x->visited[x->visits++] = c;
    int i = conn_index(x, c);
    if (i + 1 < CONNS && x->conns[i + 1])
        disconnect(x, x->conns[i + 1]);
    return true;
}

static bool cb_attach_newcomer(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    x->visited[x->visits++] = c;
    struct hub_conn *n = new_conn(100 + x->n_newcomers);
    x->newcomers[x->n_newcomers++] = n;
    CHECK_EQ_INT(user_attach(x->t, n, SPAN_LIT("carol")), HUB_OK);
    return true;
}

static bool cb_detach_and_reattach(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    x->visited[x->visits++] = c;
    user_detach(c);
    CHECK_EQ_INT(user_attach(x->t, c, SPAN_LIT("carol")), HUB_OK);
    return true;
}

static bool cb_empty_user(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    x->visited[x->visits++] = c;
    struct user *old = user_find(x->t, SPAN_LIT("carol"));
    for (int i = 0; i < CONNS; i++)
        if (x->conns[i])
            user_detach(x->conns[i]);
    CHECK(user_find(x->t, SPAN_LIT("carol")) == NULL);
    CHECK_EQ_INT(user_attach(x->t, x->conns[2], SPAN_LIT("carol")), HUB_OK);
    CHECK(user_find(x->t, SPAN_LIT("carol")) != old);
    return true;
}

static bool cb_nested(struct hub_conn *c, void *ctx)
{
    struct send_ctx *x = ctx;
    x->visited[x->visits++] = c;
    int n = 0;
    CHECK_EQ_INT(user_for_each(x->t, SPAN_LIT("carol"), cb_count, &n), CONNS);
    return true;
}

static void test_reentrancy(void)
{
    struct user_table t;
    struct group_table g;
    user_table_init(&t, test_seed);
    group_table_init(&g, test_seed);
    struct send_ctx x;
    struct hub_conn *order[CONNS];

    send_ctx_init(&x, &t, &g);
    memcpy(order, x.conns, sizeof(order));
    CHECK_EQ_INT(user_for_each(&t, SPAN_LIT("carol"), cb_disconnect_current, &x), CONNS);
    for (int i = 0; i < CONNS; i++)
        CHECK(x.visited[i] == order[i]);
    CHECK(user_find(&t, SPAN_LIT("carol")) == NULL);
    CHECK(group_find(&g, SPAN_LIT("team")) == NULL);
    send_ctx_free(&x);

    send_ctx_init(&x, &t, &g);
    memcpy(order, x.conns, sizeof(order));
    CHECK_EQ_INT(user_for_each(&t, SPAN_LIT("carol"), cb_disconnect_next, &x), CONNS / 2);
    for (int i = 0; i < CONNS / 2; i++)
        CHECK(x.visited[i] == order[2 * i]);
    CHECK_EQ_INT(user_conn_count(user_find(&t, SPAN_LIT("carol"))), CONNS / 2);
    send_ctx_free(&x);

    send_ctx_init(&x, &t, &g);
    CHECK_EQ_INT(user_for_each(&t, SPAN_LIT("carol"), cb_attach_newcomer, &x), CONNS);
    CHECK_EQ_INT(user_conn_count(user_find(&t, SPAN_LIT("carol"))), 2 * CONNS);
    send_ctx_free(&x);

    send_ctx_init(&x, &t, &g);
    CHECK_EQ_INT(user_for_each(&t, SPAN_LIT("carol"), cb_detach_and_reattach, &x), CONNS);
    for (int i = 0; i < CONNS; i++)
        CHECK(x.visited[i] == x.conns[i]);
    send_ctx_free(&x);

    send_ctx_init(&x, &t, &g);
    CHECK_EQ_INT(user_for_each(&t, SPAN_LIT("carol"), cb_empty_user, &x), 1);
    CHECK_EQ_INT(user_conn_count(user_find(&t, SPAN_LIT("carol"))), 1);
    send_ctx_free(&x);

    send_ctx_init(&x, &t, &g);
    CHECK_EQ_INT(user_for_each(&t, SPAN_LIT("carol"), cb_nested, &x), CONNS);
    send_ctx_free(&x);

    user_table_free(&t);
    group_table_free(&g);
}

int main(void)
{
    test_attach_detach();
    test_send_reaches_only_the_user();
    test_reentrancy();

    static const struct op_mix user_heavy = {
        .connect = 6, .disconnect = 4, .join = 6, .leave = 4, .rejoin = 1,
        .attach = 20, .detach = 12, .iterate_group = 1, .iterate_user = 6,
    };
    model_run(UINT64_C(0x05e40001), 150000, &user_heavy);
    return test_main_result("test_users");
}
