/* fuzz_connection_data.c - connectionData: decode, re-encode, decode again.
 *
 * Properties checked for every input:
 *   - a failure has a detail string;
 *   - a success is strict JSON (tests/fuzz/json_oracle.h), or empty or white
 *     space only (no hubs, as documented), and holds at most LEGACY_MAX_HUBS non-empty names, no two equal
 *     in any case;
 *   - the names written back as connectionData ([{"name":...}]) decode to the
 *     same names byte for byte;
 *   - each name written as the H of a server->client invocation element is
 *     strict JSON (tests/fuzz/json_oracle.h) with exactly one H, that name.
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 1000000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "containers/buf.h"
#include "protocol/json_write.h"
#include "protocol/legacy_connection_data.h"
#include "protocol/legacy_frame.h"
#include "json_oracle.h"

#define REQUIRE(cond)                                                                  \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

static void check_round_trip(const struct legacy_hub_list *list)
{
    struct buf b;
    buf_init(&b);
    REQUIRE(buf_append_byte(&b, '['));
    for (size_t i = 0; i < list->count; i++) {
        REQUIRE(buf_append_cstr(&b, i ? ",{" : "{"));
        REQUIRE(json_write_key(&b, "Name", true) && json_write_string(&b, list->names[i]));
        REQUIRE(buf_append_byte(&b, '}'));
    }
    REQUIRE(buf_append_byte(&b, ']'));

    struct legacy_hub_list again;
    struct proto_error err = { 0 };
    REQUIRE(legacy_connection_data_decode(b.data, b.len, &again, &err) == PROTO_OK);
    REQUIRE(again.count == list->count);
    for (size_t i = 0; i < list->count; i++)
        REQUIRE(span_eq(again.names[i], list->names[i]));
    legacy_hub_list_release(&again);
    buf_free(&b);
}

static void check_as_hub_field(struct span name)
{
    struct buf b;
    struct proto_error err = { 0 };
    struct payload none = { PAYLOAD_NONE, SPAN_NONE };
    buf_init(&b);
    REQUIRE(legacy_invocation_element_encode(&b, name, SPAN_LIT("m"), none, none, &err) == PROTO_OK);
    struct jo_value el;
    REQUIRE(jo_parse(b.data, b.len, JO_MAX_DEPTH, &el));
    REQUIRE(el.type == JO_OBJECT && jo_member_count(&el, "H") == 1);
    REQUIRE(jo_string_is(jo_member(&el, "H"), name));
    jo_free(&el);
    buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct legacy_hub_list list;
    struct proto_error err = { 0 };
    enum proto_status st = legacy_connection_data_decode((const char *)data, size, &list, &err);
    if (st != PROTO_OK) {
        REQUIRE(proto_status_is_error(st));
        REQUIRE(err.detail != NULL);
        legacy_hub_list_release(&list);
        return 0;
    }
    size_t blank = 0; /* empty or white-space-only text means no hubs (documented) */
    while (blank < size && (data[blank] == ' ' || data[blank] == '\t' || data[blank] == '\n' || data[blank] == '\r'))
        blank++;
    REQUIRE(blank == size ? list.count == 0 : jo_is_json((const char *)data, size));
    REQUIRE(list.count <= LEGACY_MAX_HUBS);
    for (size_t i = 0; i < list.count; i++) {
        REQUIRE(span_is_set(list.names[i]) && list.names[i].len > 0);
        for (size_t j = 0; j < i; j++)
            REQUIRE(!span_eq_nocase(list.names[i], list.names[j]));
        check_as_hub_field(list.names[i]);
    }
    check_round_trip(&list);
    legacy_hub_list_release(&list);
    return 0;
}
