/* test_backend_pool.c - relay/backend_pool.c: which instance a new connection goes to, backoff
 * after failures, and instances kept, made and drained across configurations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "relay/backend_pool.h"
#include "relay/config.h"

static void parse(struct relay_config *cfg, const char *hub_spec, const char *hub_spec2)
{
    char err[512] = "";
    config_init(cfg);
    CHECK_EQ_INT(config_add_hub(cfg, hub_spec, err, sizeof err), CONFIG_OK);
    if (hub_spec2)
        CHECK_EQ_INT(config_add_hub(cfg, hub_spec2, err, sizeof err), CONFIG_OK);
}

static unsigned drained;
static void on_draining(void *ctx, struct backend_instance *in)
{
    (void)ctx;
    (void)in;
    drained++;
}

static void test_pick_and_backoff(void)
{
    struct relay_config cfg;
    parse(&cfg, "chat=http://a:1/chat,http://b:1/chat,http://c:1/chat", NULL);
    struct backend_pools pools;
    backend_pools_init(&pools);
    CHECK(backend_pools_apply(&pools, &cfg, on_draining, NULL));
    struct backend_pool *p = backend_pool_of(&pools, "CHAT");
    CHECK(p != NULL && p->count == 3);
    CHECK(backend_pool_of(&pools, "other") == NULL);
    /* Fewest active first, ties in turn. */
    uint32_t tried = 0;
    struct backend_instance *first = backend_pool_pick(p, 1000, &tried);
    CHECK(first == p->members[0]);
    first->active++;
    tried = 0;
    struct backend_instance *second = backend_pool_pick(p, 1000, &tried);
    CHECK(second == p->members[1]);
    second->active++;
    p->members[2]->active = 5;
    tried = 0;
    CHECK(backend_pool_pick(p, 1000, &tried) != p->members[2]);
    /* A failure takes an instance out for 2 s, doubling; a success puts it back. */
    p->members[2]->active = 0;
    backend_instance_failed(p->members[2], 1000);
    CHECK_EQ_INT(p->members[2]->backoff_until, 1000 + BACKEND_BACKOFF_MIN_MS);
    tried = 0;
    CHECK(backend_pool_pick(p, 1500, &tried) != p->members[2]);
    tried = 0;
    CHECK(backend_pool_pick(p, 1000 + BACKEND_BACKOFF_MIN_MS, &tried) == p->members[2]);
    backend_instance_failed(p->members[2], 5000);
    CHECK_EQ_INT(p->members[2]->backoff_until, 5000 + 2 * BACKEND_BACKOFF_MIN_MS);
    for (int i = 0; i < 10; i++)
        backend_instance_failed(p->members[2], 5000);
    CHECK_EQ_INT(p->members[2]->backoff_until, 5000 + BACKEND_BACKOFF_MAX_MS);
    CHECK_EQ_INT(backend_pool_reachable(p), 2);
    backend_instance_worked(p->members[2]);
    CHECK_EQ_INT(p->members[2]->backoff_until, 0);
    CHECK_EQ_INT(backend_pool_reachable(p), 3);
    /* Every one out: the one back soonest; every one tried: none. */
    backend_instance_failed(p->members[0], 100);
    backend_instance_failed(p->members[1], 50);
    backend_instance_failed(p->members[2], 200);
    tried = 0;
    CHECK(backend_pool_pick(p, 300, &tried) == p->members[1]);
    CHECK(backend_pool_pick(p, 300, &tried) == p->members[0]);
    CHECK(backend_pool_pick(p, 300, &tried) == p->members[2]);
    CHECK(backend_pool_pick(p, 300, &tried) == NULL);
    backend_pools_free(&pools);
    config_free(&cfg);
}

static void test_reload(void)
{
    struct relay_config one, two;
    parse(&one, "chat=http://a:1/chat,http://b:1/chat", "old=http://a:1/old");
    parse(&two, "chat=http://b:1/chat,http://c:1/chat", "new=http://a:1/new");
    struct backend_pools pools;
    backend_pools_init(&pools);
    drained = 0;
    CHECK(backend_pools_apply(&pools, &one, on_draining, NULL));
    struct backend_instance *a = backend_pool_of(&pools, "chat")->members[0];
    struct backend_instance *b = backend_pool_of(&pools, "chat")->members[1];
    uint32_t a_id = a->id, b_id = b->id;
    CHECK(a_id != b_id && a_id != 0);
    CHECK(backend_pools_apply(&pools, &two, on_draining, NULL));
    CHECK_EQ_INT(drained, 2); /* chat's a, and old's only instance */
    CHECK(a->draining && !b->draining);
    struct backend_pool *chat = backend_pool_of(&pools, "chat");
    CHECK(chat->members[0] == b && chat->members[1]->id > b_id); /* b kept (with its id), c made */
    CHECK(backend_pool_of(&pools, "old") == NULL && backend_pool_of(&pools, "new") != NULL);
    CHECK(backend_instance_find(&pools, a_id) == a); /* a pin to a draining instance still finds it */
    /* Configured again: it stops draining, same object, same id. */
    CHECK(backend_pools_apply(&pools, &one, on_draining, NULL));
    CHECK(!a->draining && backend_pool_of(&pools, "chat")->members[0] == a && a->id == a_id);
    struct buf out;
    buf_init(&out);
    backend_pools_render_metrics(&pools, 0, &out);
    CHECK(buf_append_byte(&out, '\0'));
    CHECK(strstr(out.data, "signalr_relay_backend_active{hub=\"chat\",backend=\"http://a:1/chat\"} 0\n") != NULL);
    buf_free(&out);
    backend_pools_free(&pools);
    config_free(&one);
    config_free(&two);
}

/* /readyz's instance lines: members in configured order (up, backed off, not reachable), then a
 * draining instance of the hub that still has connections. */
static void test_readyz_lines(void)
{
    struct relay_config one, two;
    parse(&one, "chat=http://a:1/chat,http://b:1/chat,http://c:1/chat", NULL);
    parse(&two, "chat=http://b:1/chat,http://c:1/chat", NULL);
    struct backend_pools pools;
    backend_pools_init(&pools);
    CHECK(backend_pools_apply(&pools, &one, NULL, NULL));
    struct backend_pool *chat = backend_pool_of(&pools, "chat");
    struct backend_instance *a = chat->members[0], *b = chat->members[1], *c = chat->members[2];
    a->active = 1;
    b->active = 2;
    backend_instance_failed(b, 1000);
    backend_instance_failed(c, 0);
    CHECK(backend_pools_apply(&pools, &two, NULL, NULL)); /* a drains, with its one link; at 2500 b's backoff has 0.5 s left, c's is over */
    struct buf out;
    buf_init(&out);
    backend_pool_render_readyz(&pools, backend_pool_of(&pools, "chat"), 2500, &out);
    CHECK_BYTES(out.data, out.len, "  backend http://b:1/chat: backed off for another 0.5 s (1 failure in a row), 2 active links\n"
                           "  backend http://c:1/chat: not reachable (its last connection or probe failed; the next client tries it), 0 active links\n"
                           "  backend http://a:1/chat: draining (no new clients), 1 active link\n");
    buf_free(&out);
    a->active = 0; /* a draining instance without connections is no longer listed */
    backend_instance_worked(b);
    buf_init(&out);
    backend_pool_render_readyz(&pools, backend_pool_of(&pools, "chat"), 2500, &out);
    CHECK_BYTES(out.data, out.len, "  backend http://b:1/chat: up, 2 active links\n"
                           "  backend http://c:1/chat: not reachable (its last connection or probe failed; the next client tries it), 0 active links\n");
    buf_free(&out);
    backend_pools_free(&pools);
    config_free(&one);
    config_free(&two);
}

int main(void)
{
    test_pick_and_backoff();
    test_reload();
    test_readyz_lines();
    return test_main_result("test_backend_pool");
}
