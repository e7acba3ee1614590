#!/usr/bin/env bash
# Replays every captured legacy session in fixtures/legacy/ (the relay's --capture: one file per
# connection, a scenario's files merged into one session by merge.mjs) against a running legacy
# endpoint (the relay's /signalr in front of tests/backend) with signalr-replay check (tools/replay),
# together with the merger's, the recorder's and the replayer's own tests, and prints
# `replay: N passed, M failed`.
#
#   SIGNALR_LEGACY_URL=http://127.0.0.1:8080/signalr tests/legacy/capture/run.sh
#
# SIGNALR_REPLAY_PACE=1 keeps the recorded pauses (default: as fast as the answers come).
# SIGNALR_REPLAY_BIN=path uses that signalr-replay; otherwise build/asan's is built (incrementally).
# Exit status: 0 only if everything ran and passed.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -z "${SIGNALR_LEGACY_URL:-}" ]; then
    echo "set SIGNALR_LEGACY_URL to the legacy endpoint, e.g. http://127.0.0.1:8080/signalr" >&2
    exit 2
fi
source "$here/../../../scripts/lib/suite.sh"
root="$(cd "$here/../../.." && pwd)"
if [ -z "${SIGNALR_REPLAY_BIN:-}" ]; then
    if [ ! -f "$root/build/asan/CMakeCache.txt" ]; then
        cmake -S "$root" -B "$root/build/asan" -DCMAKE_BUILD_TYPE=Debug -DSR_SANITIZE=ON >/dev/null
    fi
    if ! timeout 900 nice cmake --build "$root/build/asan" -j2 --target signalr-replay >/dev/null; then
        echo "replay: 0 passed, 1 failed (building signalr-replay)"
        exit 1
    fi
    export SIGNALR_REPLAY_BIN="$root/build/asan/tools/replay/signalr-replay"
fi
suite_npm_ci "$here" || { echo "replay: 0 passed, 1 failed (npm ci)"; exit 1; }
tap="$(mktemp "${TMPDIR:-/tmp}/signalr-replay.XXXXXX.tap")"
started=$SECONDS
suite_node "$here" "$tap" 60 "${SIGNALR_REPLAY_TIMEOUT:-300}" test/
passed=$SUITE_PASSED failed=$SUITE_FAILED
skipped="$(grep -cE '^ *ok [0-9]+ - .* # SKIP' "$tap")"
# A run that skipped the replays counts as a failure too.
if [ "${skipped:-0}" -ne 0 ]; then failed=$((failed + 1)); fi
# Sessions recorded against the real 2.x server (fixtures/legacy/reference, scripts/capture-legacy-ref-fixtures.sh):
# the relay must answer as it did, the differences listed in tests/legacy-ref/README.md masked
# (signalr-replay --reference).
shopt -s nullglob
reference=("$here/../../../fixtures/legacy/reference/"*.jsonl)
if [ "${#reference[@]}" -gt 0 ]; then
    if timeout 120 "$SIGNALR_REPLAY_BIN" check --reference --target "${SIGNALR_LEGACY_URL%/signalr}" "${reference[@]}"; then
        passed=$((passed + ${#reference[@]}))
    else
        failed=$((failed + 1))
    fi
fi
echo "== replay of fixtures/legacy against $SIGNALR_LEGACY_URL ($((SECONDS - started)) s)"
echo "replay: $passed passed, $failed failed"
rm -f "$tap"
[ "$failed" -eq 0 ]
