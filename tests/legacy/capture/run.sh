#!/usr/bin/env bash
# Replays every captured legacy session in fixtures/legacy/ against a running legacy endpoint (the
# relay's /signalr in front of tests/backend), together with the recorder's and the replayer's own
# tests, and prints `replay: N passed, M failed`.
#
#   SIGNALR_LEGACY_URL=http://127.0.0.1:8080/signalr tests/legacy/capture/run.sh
#
# SIGNALR_REPLAY_PACE=1 keeps the recorded pauses (default: as fast as the answers come).
# Exit status: 0 only if everything ran and passed.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -z "${SIGNALR_LEGACY_URL:-}" ]; then
    echo "set SIGNALR_LEGACY_URL to the legacy endpoint, e.g. http://127.0.0.1:8080/signalr" >&2
    exit 2
fi
source "$here/../../../scripts/lib/suite.sh"
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
# (reference-mask.mjs).
shopt -s nullglob
reference=("$here/../../../fixtures/legacy/reference/"*.jsonl)
if [ "${#reference[@]}" -gt 0 ]; then
    if timeout 120 node "$here/replay.mjs" --reference --target "${SIGNALR_LEGACY_URL%/signalr}" "${reference[@]}"; then
        passed=$((passed + ${#reference[@]}))
    else
        failed=$((failed + 1))
    fi
fi
echo "== replay of fixtures/legacy against $SIGNALR_LEGACY_URL ($((SECONDS - started)) s)"
echo "replay: $passed passed, $failed failed"
rm -f "$tap"
[ "$failed" -eq 0 ]
