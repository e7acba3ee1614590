#!/usr/bin/env bash
# test.sh - runs every test of signalr-relay; the one command CI runs.
#
# Stages (each must pass):
#   1. deps      install what is missing (scripts/install-deps.sh)
#   2. unit      ASan+UBSan build, ctest (unit tests, corpus replays of every fuzz target)
#   3. fuzz      clang/libFuzzer build, each fuzz target for FUZZ_SECONDS (default 15) from fixtures/fuzz/
#   4. interop   release build; real SignalR clients straight to the ASP.NET Core backend in
#                tests/backend, then the same suites through the relay (scripts/interop.sh); then
#                the relay's own behaviour: timeouts, backend loss, limits, flow control, CORS,
#                metrics, many connections, shutdown (scripts/relay-tests.sh, tests/relay); service
#                mode with the real Azure SignalR SDK app and real clients (scripts/service-tests.sh,
#                tests/service); then
#                the real ASP.NET SignalR 2.4.1 server on Mono answers the legacy reference checks
#                (tests/legacy-ref/run-tests.sh)
#   5. bench     a short smoke run of the benchmark programs and of scripts/bench --quick, so they
#                never rot (not pass/fail on speed)
# Environment: FUZZ_SECONDS, SKIP_FUZZ=1, SKIP_INTEROP=1 (for quick local loops; CI sets neither).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_seconds=${FUZZ_SECONDS:-15}
passed=0
failed=0
failed_stages=()

stage() {
  local name=$1; shift
  echo "=== stage: $name"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1)); echo "=== stage $name passed in $((SECONDS - start)) s"
  else
    failed=$((failed + 1)); failed_stages+=("$name"); echo "=== stage $name FAILED after $((SECONDS - start)) s"
  fi
}

unit_tests() {
  "$root/scripts/check-layers.py" "$root" &&
    cmake -S "$root" -B "$root/build/asan" -DCMAKE_BUILD_TYPE=Debug -DSR_SANITIZE=ON >/dev/null &&
    cmake --build "$root/build/asan" -j"$jobs" &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir "$root/build/asan" --output-on-failure -j"$jobs"
}

fuzz_smoke() {
  CC=clang cmake -S "$root" -B "$root/build/fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSR_FUZZ=ON -DSR_SANITIZE=ON >/dev/null &&
    cmake --build "$root/build/fuzz" -j"$jobs" || return 1
  local ok=0 target name work
  for target in "$root"/build/fuzz/fuzz_*; do
    [ -x "$target" ] || continue
    name=$(basename "$target"); name=${name#fuzz_}
    work=$(mktemp -d)
    echo "--- fuzz $name for ${fuzz_seconds}s"
    if ! "$target" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
         -artifact_prefix="$root/build/fuzz/crash-$name-" "$work" "$root/fixtures/fuzz/$name" 2>"$work.log"; then
      tail -40 "$work.log"; ok=1
    else
      grep -E "^(#[0-9]+ *DONE|Done)" "$work.log" | tail -1
    fi
    rm -rf "$work" "$work.log"
  done
  return $ok
}

interop() {
  cmake -S "$root" -B "$root/build/release" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
    cmake --build "$root/build/release" -j"$jobs" || return 1
  local status=0
  "$root/scripts/interop.sh" || status=1
  "$root/scripts/relay-tests.sh" || status=1
  "$root/scripts/service-tests.sh" || status=1
  # the real ASP.NET SignalR 2.4.1 server on Mono, the reference the legacy side is judged by
  "$root/tests/legacy-ref/run-tests.sh" || status=1
  return $status
}

bench_smoke() {
  "$root/scripts/bench-hub" --smoke >/dev/null || return 1
  # the whole-system driver at tiny sizes (~40 s): backend, relay and nginx side by side
  local log; log=$(mktemp)
  if ! "$root/scripts/bench" --quick >"$log" 2>&1; then
    tail -30 "$log"; rm -f "$log"; return 1
  fi
  rm -f "$log"
}

stage deps env SR_WITH_MONO=1 scripts/install-deps.sh
stage unit unit_tests
[ "${SKIP_FUZZ:-0}" = 1 ] || stage fuzz fuzz_smoke
[ "${SKIP_INTEROP:-0}" = 1 ] || stage interop interop
stage bench bench_smoke

echo
[ ${#failed_stages[@]} -gt 0 ] && echo "failed stages: ${failed_stages[*]}"
echo "test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
