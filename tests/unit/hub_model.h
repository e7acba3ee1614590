/* hub_model.h - a naive reference model of connections, groups and users,
 * and a randomised driver that runs the real tables and the model side by
 * side, comparing the complete state after every step.
 *
 * The model is plain arrays: for each connection slot, the join stamp of
 * each group (0 = not a member) and its user. Join stamps grow with every
 * join, so "join order" — the order the real lists must keep and iterators
 * must follow — is simply ascending stamp. Included by test_groups.c and
 * test_users.c, which drive it with different operation mixes. */
#ifndef SR_TEST_HUB_MODEL_H
#define SR_TEST_HUB_MODEL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_rng.h"
#include "hub/group.h"
#include "hub/hub_conn.h"
#include "hub/user.h"

#define NSLOT 192
#define NGROUP 192
#define NUSER 48

struct slot {
    int index;
    bool alive;
    uint64_t gen;              /* bumped on every connect: a new connection id */
    struct hub_conn *conn;
    int user;                  /* -1: anonymous */
    uint64_t user_stamp;       /* when it was attached (order in the user's list) */
    uint64_t joined[NGROUP];   /* join stamp, 0 = not a member */
    int group_count;
};

struct world {
    struct conn_table conns;
    struct group_table groups;
    struct user_table users;
    struct slot slots[NSLOT];
    int group_members[NGROUP];
    int user_conns[NUSER];
    uint64_t stamp;
    uint64_t gen;
    char group_names[NGROUP][48];
    size_t group_name_len[NGROUP];
    char user_ids[NUSER][16];
    size_t user_id_len[NUSER];
    int depth;                 /* nesting of mutating iterations */
    uint64_t rng;
    int errors;                /* model disagreements (each also a failed CHECK) */
};

static struct world W;

static uint64_t model_rand(void) { return test_rng_next(&W.rng); }

static int model_pick(int n) { return (int)(model_rand() % (uint64_t)n); }

#define MODEL_EXPECT(cond)                                                                     \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            if (W.errors++ < 20)                                                               \
                fprintf(stderr, "%s:%d: model disagrees: %s\n", __FILE__, __LINE__, #cond);    \
        }                                                                                      \
    } while (0)

/* Group names: pairs that differ only in case ("g7" / "G7"), some long,
 * some with non-ASCII UTF-8. The index can be read back from the name. */
static void model_name_groups(void)
{
    for (int g = 0; g < NGROUP; g++) {
        static const char *const suffix[3] = { "", "-a-group-name-longer-than-32-bytes", "-gr\xc3\xbcn" };
        int len = snprintf(W.group_names[g], sizeof(W.group_names[g]), "%c%d%s", g % 2 ? 'G' : 'g',
                           g / 2, suffix[(g / 2) % 3]);
        W.group_name_len[g] = (size_t)len;
    }
    for (int u = 0; u < NUSER; u++) {
        int len = snprintf(W.user_ids[u], sizeof(W.user_ids[u]), "%s%d", u % 2 ? "User" : "user", u / 2);
        W.user_id_len[u] = (size_t)len;
    }
}

static struct span group_span(int g) { return span_make(W.group_names[g], W.group_name_len[g]); }
static struct span user_span(int u) { return span_make(W.user_ids[u], W.user_id_len[u]); }

static int group_index_parse(const struct group *grp)
{
    /* "g12..." -> 2*12 + 0, "G12..." -> 2*12 + 1 */
    if (grp->name_len < 2 || (grp->name[0] != 'g' && grp->name[0] != 'G'))
        return -1;
    int g = 2 * atoi(grp->name + 1) + (grp->name[0] == 'G');
    return g >= 0 && g < NGROUP && span_eq(group_name(grp), group_span(g)) ? g : -1;
}

/* The slot whose connection this is: its id is "c<4-digit slot>x..." (model_connect). */
static int slot_of(const struct hub_conn *conn)
{
    if (!conn || conn->id[0] != 'c')
        return -1;
    int i = atoi(conn->id + 1);
    return i >= 0 && i < NSLOT ? i : -1;
}

static void model_init(uint64_t seed)
{
    memset(&W, 0, sizeof(W));
    W.rng = seed ? seed : 1;
    model_name_groups();
    static const uint8_t key[DICT_SEED_LEN] = { 0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78,
                                                0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2, 0xe1, 0xf0 };
    conn_table_init(&W.conns, key);
    group_table_init(&W.groups, key);
    user_table_init(&W.users, key);
    for (int i = 0; i < NSLOT; i++) {
        W.slots[i].index = i;
        W.slots[i].user = -1;
    }
}

/* ---- operations: each does the real thing, checks its result against the
 * model, and updates the model ---- */

static void model_connect(int i)
{
    struct slot *s = &W.slots[i];
    if (s->alive)
        return;
    char id[HUB_CONN_ID_LEN + 1];
    s->gen = ++W.gen;
    snprintf(id, sizeof(id), "c%04dx%016llx", i, (unsigned long long)s->gen);
    s->conn = malloc(sizeof(*s->conn));
    MODEL_EXPECT(hub_conn_init(s->conn, span_make(id, HUB_CONN_ID_LEN)) == HUB_OK);
    MODEL_EXPECT(conn_table_add(&W.conns, s->conn) == HUB_OK);
    s->alive = true;
    s->user = -1;
    s->group_count = 0;
    memset(s->joined, 0, sizeof(s->joined));
}

static void model_disconnect(int i)
{
    struct slot *s = &W.slots[i];
    if (!s->alive)
        return;
    size_t removed = group_remove_connection(s->conn);
    MODEL_EXPECT(removed == (size_t)s->group_count);
    for (int g = 0; g < NGROUP; g++) {
        if (s->joined[g]) {
            s->joined[g] = 0;
            W.group_members[g]--;
        }
    }
    s->group_count = 0;
    user_detach(s->conn);
    if (s->user >= 0)
        W.user_conns[s->user]--;
    s->user = -1;
    MODEL_EXPECT(hub_conn_is_detached(s->conn));
    MODEL_EXPECT(conn_table_remove(&W.conns, s->conn) == HUB_OK);
    MODEL_EXPECT(conn_table_remove(&W.conns, s->conn) == HUB_NOT_FOUND);
    free(s->conn);
    s->conn = NULL;
    s->alive = false;
}

static void model_join(int i, int g)
{
    struct slot *s = &W.slots[i];
    if (!s->alive)
        return;
    enum hub_status st = group_add(&W.groups, s->conn, group_span(g));
    if (s->joined[g]) {
        MODEL_EXPECT(st == HUB_ALREADY);
        return;
    }
    MODEL_EXPECT(st == HUB_OK);
    s->joined[g] = ++W.stamp;
    s->group_count++;
    W.group_members[g]++;
}

static void model_leave(int i, int g)
{
    struct slot *s = &W.slots[i];
    if (!s->alive)
        return;
    enum hub_status st = group_remove(&W.groups, s->conn, group_span(g));
    if (!s->joined[g]) {
        MODEL_EXPECT(st == HUB_NOT_FOUND);
        return;
    }
    MODEL_EXPECT(st == HUB_OK);
    s->joined[g] = 0;
    s->group_count--;
    W.group_members[g]--;
}

static void model_attach(int i, int u)
{
    struct slot *s = &W.slots[i];
    if (!s->alive)
        return;
    enum hub_status st = user_attach(&W.users, s->conn, user_span(u));
    if (s->user == u) {
        MODEL_EXPECT(st == HUB_ALREADY);
    } else if (s->user >= 0) {
        MODEL_EXPECT(st == HUB_ERR_STATE);
    } else {
        MODEL_EXPECT(st == HUB_OK);
        s->user = u;
        s->user_stamp = ++W.stamp;
        W.user_conns[u]++;
    }
}

static void model_detach(int i)
{
    struct slot *s = &W.slots[i];
    if (!s->alive)
        return;
    user_detach(s->conn);
    if (s->user >= 0)
        W.user_conns[s->user]--;
    s->user = -1;
}

/* ---- the complete-state comparison ---- */

static void model_check_state(void)
{
    int alive = 0;
    for (int i = 0; i < NSLOT; i++) {
        struct slot *s = &W.slots[i];
        if (!s->alive)
            continue;
        alive++;
        struct hub_conn *c = s->conn;
        MODEL_EXPECT(conn_table_find(&W.conns, hub_conn_id(c)) == c);
        MODEL_EXPECT(c->group_count == (size_t)s->group_count);
        /* The connection's own list: exactly its groups, in join order. */
        int listed = 0;
        uint64_t last = 0;
        for (struct list_node *n = c->memberships.next; n != &c->memberships; n = n->next) {
            struct group_membership *m = group_membership_of(n);
            int g = group_index_parse(m->group);
            MODEL_EXPECT(g >= 0 && s->joined[g] > last);
            MODEL_EXPECT(m->group_link.conn == c && !m->group->detached);
            if (g >= 0)
                last = s->joined[g];
            listed++;
        }
        MODEL_EXPECT(listed == s->group_count);
        /* Its user. */
        if (s->user >= 0) {
            MODEL_EXPECT(c->user && span_eq(user_id_of(c->user), user_span(s->user)));
            MODEL_EXPECT(span_eq(hub_conn_user_id(c), user_span(s->user)));
        } else {
            MODEL_EXPECT(c->user == NULL && !span_is_set(hub_conn_user_id(c)));
        }
    }
    MODEL_EXPECT(conn_table_count(&W.conns) == (size_t)alive);

    /* Every group: present iff it has members, with exactly them in join order. */
    int nonempty = 0;
    for (int g = 0; g < NGROUP; g++) {
        struct group *grp = group_find(&W.groups, group_span(g));
        if (W.group_members[g] == 0) {
            MODEL_EXPECT(grp == NULL);
            continue;
        }
        nonempty++;
        MODEL_EXPECT(grp != NULL);
        if (!grp)
            continue;
        MODEL_EXPECT(grp->member_count == (size_t)W.group_members[g]);
        int seen = 0;
        uint64_t last = 0;
        struct group_iter it;
        struct hub_conn *c;
        group_iter_begin(&it, grp);
        while ((c = group_iter_next(&it)) != NULL) {
            int i = slot_of(c);
            MODEL_EXPECT(i >= 0 && W.slots[i].alive && W.slots[i].conn == c);
            if (i >= 0) {
                MODEL_EXPECT(W.slots[i].joined[g] > last);
                last = W.slots[i].joined[g];
            }
            seen++;
        }
        group_iter_end(&it);
        MODEL_EXPECT(seen == W.group_members[g]);
    }
    MODEL_EXPECT(group_table_count(&W.groups) == (size_t)nonempty);

    /* Every user: present iff it has connections, exactly them in attach order. */
    int users = 0;
    for (int u = 0; u < NUSER; u++) {
        struct user *usr = user_find(&W.users, user_span(u));
        if (W.user_conns[u] == 0) {
            MODEL_EXPECT(usr == NULL);
            continue;
        }
        users++;
        MODEL_EXPECT(usr != NULL);
        if (!usr)
            continue;
        MODEL_EXPECT(usr->conn_count == (size_t)W.user_conns[u]);
        int seen = 0;
        uint64_t last = 0;
        struct user_iter it;
        struct hub_conn *c;
        user_iter_begin(&it, usr);
        while ((c = user_iter_next(&it)) != NULL) {
            int i = slot_of(c);
            MODEL_EXPECT(i >= 0 && W.slots[i].user == u && W.slots[i].user_stamp > last);
            if (i >= 0)
                last = W.slots[i].user_stamp;
            seen++;
        }
        user_iter_end(&it);
        MODEL_EXPECT(seen == W.user_conns[u]);
    }
    MODEL_EXPECT(user_table_count(&W.users) == (size_t)users);
}

/* ---- iteration while the callback mutates everything ---- */

/* What an iteration must return: the members at its start, in join order,
 * each only if it is still the same member (same connection generation,
 * same join) when its turn comes. */
struct expected_visit {
    int slot;
    uint64_t gen;
    uint64_t stamp;
};

struct visit_plan {
    int target;      /* group or user index */
    bool of_user;
    int n, pos;
    struct expected_visit list[NSLOT];
};

static uint64_t plan_stamp(const struct visit_plan *p, const struct slot *s)
{
    if (p->of_user)
        return s->user == p->target ? s->user_stamp : 0;
    return s->joined[p->target];
}

static bool plan_still_valid(const struct visit_plan *p, const struct expected_visit *e)
{
    const struct slot *s = &W.slots[e->slot];
    return s->alive && s->gen == e->gen && plan_stamp(p, s) == e->stamp;
}

static int compare_visits(const void *a, const void *b)
{
    const struct expected_visit *x = a, *y = b;
    return x->stamp < y->stamp ? -1 : x->stamp > y->stamp;
}

static void plan_make(struct visit_plan *p, int target, bool of_user)
{
    p->target = target;
    p->of_user = of_user;
    p->n = p->pos = 0;
    for (int i = 0; i < NSLOT; i++) {
        struct slot *s = &W.slots[i];
        uint64_t stamp = s->alive ? plan_stamp(p, s) : 0;
        if (stamp)
            p->list[p->n++] = (struct expected_visit){ i, s->gen, stamp };
    }
    qsort(p->list, (size_t)p->n, sizeof(p->list[0]), compare_visits);
}

/* Checks one returned connection against the plan. */
static void plan_visit(struct visit_plan *p, struct hub_conn *c)
{
    while (p->pos < p->n && !plan_still_valid(p, &p->list[p->pos]))
        p->pos++;
    MODEL_EXPECT(p->pos < p->n); /* nothing else may be returned */
    if (p->pos < p->n) {
        MODEL_EXPECT(W.slots[p->list[p->pos].slot].conn == c);
        p->pos++;
    }
}

/* After the iteration: no still-valid member may have been skipped. */
static void plan_finish(struct visit_plan *p)
{
    for (; p->pos < p->n; p->pos++)
        MODEL_EXPECT(!plan_still_valid(p, &p->list[p->pos]));
}

static int random_alive_slot(void)
{
    for (int tries = 0; tries < 8; tries++) {
        int i = model_pick(NSLOT);
        if (W.slots[i].alive)
            return i;
    }
    return -1;
}

static void model_iterate(int target, bool of_user);

/* What a send callback might do to the world: anything at all. */
static void mutate_from_callback(const struct visit_plan *p, int visited)
{
    int actions = model_pick(3);
    for (int a = 0; a < actions; a++) {
        int other = random_alive_slot();
        int g = p->of_user ? model_pick(NGROUP) : p->target;
        switch (model_pick(12)) {
        case 0: model_disconnect(visited); break;                   /* the current one */
        case 1: if (other >= 0) model_disconnect(other); break;    /* maybe one ahead */
        case 2:
            if (p->of_user) model_detach(visited);
            else model_leave(visited, g);
            break;
        case 3:                                                    /* leave and come back */
            if (p->of_user) {
                int u = W.slots[visited].user;
                model_detach(visited);
                if (u >= 0) model_attach(visited, u);
            } else {
                model_leave(visited, g);
                model_join(visited, g);
            }
            break;
        case 4:                                                    /* a newcomer */
            if (other >= 0) {
                if (p->of_user) model_attach(other, p->target);
                else model_join(other, g);
            }
            break;
        case 5: if (other >= 0) model_leave(other, model_pick(NGROUP)); break;
        case 6: if (other >= 0) model_join(other, model_pick(NGROUP)); break;
        case 7: {                                                  /* a new connection joins */
            int i = model_pick(NSLOT);
            if (!W.slots[i].alive) {
                model_connect(i);
                if (p->of_user) model_attach(i, p->target);
                else model_join(i, g);
            }
            break;
        }
        case 8: model_check_state(); break;                        /* nested plain iterations */
        case 9:
            if (W.depth < 3) model_iterate(p->target, p->of_user); /* nested mutating one */
            break;
        case 10: if (other >= 0) model_detach(other); break;
        case 11: if (other >= 0) model_attach(other, model_pick(NUSER)); break;
        }
    }
}

static void model_iterate(int target, bool of_user)
{
    struct visit_plan *p = malloc(sizeof(*p));
    plan_make(p, target, of_user);
    W.depth++;
    bool stop_early = model_pick(16) == 0;
    int visits = 0;
    struct hub_conn *c;
    if (of_user) {
        struct user *u = user_find(&W.users, user_span(target));
        MODEL_EXPECT((u != NULL) == (p->n > 0));
        if (u) {
            struct user_iter it;
            user_iter_begin(&it, u);
            while ((c = user_iter_next(&it)) != NULL) {
                plan_visit(p, c);
                mutate_from_callback(p, slot_of(c));
                if (stop_early && ++visits == 2)
                    break;
            }
            user_iter_end(&it);
        }
    } else {
        struct group *grp = group_find(&W.groups, group_span(target));
        MODEL_EXPECT((grp != NULL) == (p->n > 0));
        if (grp) {
            struct group_iter it;
            group_iter_begin(&it, grp);
            while ((c = group_iter_next(&it)) != NULL) {
                plan_visit(p, c);
                mutate_from_callback(p, slot_of(c));
                if (stop_early && ++visits == 2)
                    break;
            }
            group_iter_end(&it);
        }
    }
    if (!stop_early || visits < 2)
        plan_finish(p);
    W.depth--;
    free(p);
}

/* ---- the driver ---- */

struct op_mix {
    int connect, disconnect, join, leave, rejoin, attach, detach, iterate_group, iterate_user;
};

static void model_step(const struct op_mix *mix)
{
    int total = mix->connect + mix->disconnect + mix->join + mix->leave + mix->rejoin +
                mix->attach + mix->detach + mix->iterate_group + mix->iterate_user;
    int r = model_pick(total);
    int i = model_pick(NSLOT);
    /* Groups and users are drawn from a skewed range so some get crowded. */
    int g = model_pick(4) == 0 ? model_pick(8) : model_pick(NGROUP);
    int u = model_pick(NUSER);
    if ((r -= mix->connect) < 0) {
        model_connect(i);
        if (model_pick(2))
            model_attach(i, u);
    } else if ((r -= mix->disconnect) < 0) {
        model_disconnect(i);
    } else if ((r -= mix->join) < 0) {
        model_join(i, g);
    } else if ((r -= mix->leave) < 0) {
        /* Leave one of its groups if it has any, else a random one (a no-op). */
        struct slot *s = &W.slots[i];
        if (s->alive && s->group_count > 0 && model_pick(4) != 0) {
            int k = model_pick(s->group_count);
            for (int x = 0; x < NGROUP; x++)
                if (s->joined[x] && k-- == 0) {
                    g = x;
                    break;
                }
        }
        model_leave(i, g);
    } else if ((r -= mix->rejoin) < 0) {
        model_leave(i, g);
        model_join(i, g);
        model_join(i, g); /* twice: the second must be a no-op */
    } else if ((r -= mix->attach) < 0) {
        model_attach(i, u);
    } else if ((r -= mix->detach) < 0) {
        model_detach(i);
    } else if ((r -= mix->iterate_group) < 0) {
        model_iterate(g, false);
    } else {
        model_iterate(u, true);
    }
}

static void model_run(uint64_t seed, int steps, const struct op_mix *mix)
{
    model_init(seed);
    for (int step = 0; step < steps && W.errors == 0; step++) {
        model_step(mix);
        model_check_state();
        if (W.errors)
            fprintf(stderr, "first disagreement at step %d (seed %llu)\n", step,
                    (unsigned long long)seed);
    }
    CHECK_EQ_INT(W.errors, 0);
    /* Tear down in the "wrong" order on purpose for half the connections:
     * freeing the tables must unlink the connections that are still there. */
    for (int i = 0; i < NSLOT; i += 2)
        model_disconnect(i);
    group_table_free(&W.groups);
    user_table_free(&W.users);
    for (int i = 1; i < NSLOT; i += 2) {
        struct slot *s = &W.slots[i];
        if (!s->alive)
            continue;
        CHECK(hub_conn_is_detached(s->conn) && s->conn->group_count == 0 && !span_is_set(hub_conn_user_id(s->conn)));
        CHECK_EQ_INT(conn_table_remove(&W.conns, s->conn), HUB_OK);
        free(s->conn);
        s->alive = false;
    }
    CHECK_EQ_INT(conn_table_count(&W.conns), 0);
    conn_table_free(&W.conns);
}

#endif
