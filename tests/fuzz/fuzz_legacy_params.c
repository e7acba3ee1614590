/* fuzz_legacy_params.c - the legacy query values the relay parses itself:
 * clientProtocol (legacy_protocol_resolve) and messageId (legacy_cursor_parse).
 * Properties: a parsed cursor formats back to exactly its input; a resolved
 * protocol formats to text that resolves to the same version, clamped to [1.2, 2.0].
 *
 * CI (scripts/test.sh): fuzz-ci-runs: 3000000 (about 10-12 s on the shared two-core machine at load 4). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/legacy_cursor.h"
#include "protocol/legacy_negotiate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct span text = span_make((const char *)data, size);
    uint32_t instance;
    uint64_t seq;
    if (legacy_cursor_parse(text, &instance, &seq)) {
        char again[LEGACY_CURSOR_MAX];
        size_t n = legacy_cursor_format(again, instance, seq);
        if (n != size || memcmp(again, data, size) != 0)
            abort();
    }
    struct legacy_protocol_version v = legacy_protocol_resolve(text);
    char rendered[LEGACY_PROTOCOL_TEXT_MAX];
    size_t n = legacy_protocol_format(v, rendered, sizeof rendered);
    if (n == 0 || n >= sizeof rendered)
        abort();
    struct legacy_protocol_version w = legacy_protocol_resolve(span_make(rendered, n));
    if (memcmp(&v, &w, sizeof v) != 0)
        abort();
    if (v.major < 1 || v.major > 2 || (v.major == 1 && v.minor < 2) || (v.major == 2 && v.minor > 0))
        abort();
    return 0;
}
