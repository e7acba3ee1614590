#!/usr/bin/env bash
# test.sh - runs every test of signalr-relay; the one command CI runs.
#
# Stages (each must pass):
#   1. deps      install what is missing (scripts/install-deps.sh)
#   2. unit      ASan+UBSan build, ctest (unit tests, corpus replays of every fuzz target)
#   3. fuzz      clang/libFuzzer build, each fuzz target for a fixed seed and number of runs
#                from fixtures/fuzz/ (deterministic; see fuzz_smoke; long campaigns: scripts/fuzz.sh)
#   4. interop   release build; real SignalR clients straight to the ASP.NET Core backend in
#                tests/backend, then the same suites through the release and the ASan relay
#                (scripts/interop.sh); then
#                the relay's own behaviour: timeouts, backend loss, limits, flow control, CORS,
#                metrics, many connections, shutdown (scripts/relay-tests.sh, tests/relay); service
#                mode with the real Azure SignalR SDK app and real clients (scripts/service-tests.sh,
#                tests/service); then
#                the real ASP.NET SignalR 2.4.1 server on Mono answers the legacy reference checks
#                (tests/legacy-ref/run-tests.sh)
#   5. bench     a short smoke run of the benchmark programs and of scripts/bench --quick, so they
#                never rot (not pass/fail on speed)
# Environment: FUZZ_RUNS, FUZZ_SEED, SKIP_FUZZ=1, SKIP_INTEROP=1 (for quick local loops; CI sets neither).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_seed=${FUZZ_SEED:-1}
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
      ctest --test-dir "$root/build/asan" --output-on-failure -j"$jobs" &&
    "$root/scripts/check-config-doc.sh" "$root/build/asan/signalr-relay" &&
    "$root/scripts/check-install.sh" "$root/build/asan"
}

# Deterministic: every target gets a fixed seed and a fixed number of inputs, from an empty
# working corpus plus fixtures/fuzz/<name>/, so a run fails only on a real regression and
# fails the same way again. The number is the target's own "fuzz-ci-runs: N" (a comment in
# tests/fuzz/fuzz_<name>.c, sized to about 12 s here), else 200000; FUZZ_RUNS overrides it for
# every target, FUZZ_SEED (default 1) changes the seed. Two libFuzzer features make a run
# depend on more than the seed, and are off here: -reload (the corpus is re-read once a
# second, so the path depends on the machine's speed) and -use_cmp (operands of traced
# comparisons become mutation material, and many of them are heap and stack addresses,
# which ASLR changes from run to run). With both off, the same seed and runs give the same
# inputs, cov, ft and corpus (checked for every target but fuzz_convert, whose ft still varies
# by a few percent in about one run of three, cause not yet found), so a failure here fails
# again on a rerun; the comparison-guided search is left to scripts/fuzz.sh's campaigns. Every
# failure is a property violation or a sanitizer report, never a timing. max_total_time is only a guard
# against a slow machine: hitting it ends that target early, never fails it. Long,
# randomised campaigns are scripts/fuzz.sh. The stage fails when any tests/fuzz/fuzz_*.c
# target was not built.
fuzz_smoke() {
  CC=clang cmake -S "$root" -B "$root/build/fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSR_FUZZ=ON -DSR_SANITIZE=ON >/dev/null &&
    cmake --build "$root/build/fuzz" -j"$jobs" || return 1
  local ok=0 ran=0 src name target work runs start
  for src in "$root"/tests/fuzz/fuzz_*.c; do
    [ -f "$src" ] || continue
    name=$(basename "$src" .c); name=${name#fuzz_}
    target=$root/build/fuzz/fuzz_$name
    if [ ! -x "$target" ]; then
      echo "--- fuzz $name: NOT BUILT ($target)"; ok=1; continue
    fi
    if [ ! -d "$root/fixtures/fuzz/$name" ]; then
      echo "--- fuzz $name: no seed corpus fixtures/fuzz/$name"; ok=1; continue
    fi
    runs=${FUZZ_RUNS:-$(grep -oE 'fuzz-ci-runs: [0-9]+' "$src" | head -1 | grep -oE '[0-9]+$')}
    runs=${runs:-200000}
    work=$(mktemp -d)
    echo "--- fuzz $name: $runs runs, seed $fuzz_seed"
    start=$SECONDS
    if ! "$target" -seed="$fuzz_seed" -runs="$runs" -reload=0 -use_cmp=0 -max_total_time=120 -timeout=10 -rss_limit_mb=2048 \
         -print_final_stats=1 -artifact_prefix="$root/build/fuzz/crash-$name-" "$work" "$root/fixtures/fuzz/$name" \
         2>"$work.log"; then
      tail -40 "$work.log"; ok=1
    else
      echo "    $(grep -E '^#[0-9]+[[:space:]]+DONE' "$work.log" | tail -1 | sed -E 's/[[:space:]]+/ /g') in $((SECONDS - start)) s"
    fi
    ran=$((ran + 1))
    rm -rf "$work" "$work.log"
  done
  if [ "$ran" -eq 0 ]; then
    echo "--- no fuzz target ran"; ok=1
  fi
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
  python3 "$root/tests/bench/test_bench_report.py" >/dev/null || return 1   # report helpers, milliseconds
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
