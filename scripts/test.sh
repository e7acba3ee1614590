#!/usr/bin/env bash
# test.sh - runs every test of signalr-relay; the one command CI runs.
#
# Stages (each must pass):
#   1. deps      install what is missing (scripts/install-deps.sh)
#   2. unit      ASan+UBSan build, ctest (unit tests, corpus replays of every fuzz target)
#   3. fuzz      clang/libFuzzer build, each fuzz target for a fixed seed and number of runs
#                from fixtures/fuzz/ (deterministic; see fuzz_smoke; long campaigns: scripts/fuzz.sh);
#                it runs beside the unit stage's ctest at nice 10 and prints when its turn comes
#                (see fuzz_beside_start)
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

# A stage's function may set stage_took (seconds) when its work did not run between the two
# lines (the fuzz stage, run beside the unit stage).
stage_took=
stage() {
  local name=$1; shift
  echo "=== stage: $name"
  local start=$SECONDS took
  stage_took=
  if "$@"; then
    took=${stage_took:-$((SECONDS - start))}
    passed=$((passed + 1)); echo "=== stage $name passed in $took s"
  else
    took=${stage_took:-$((SECONDS - start))}
    failed=$((failed + 1)); failed_stages+=("$name"); echo "=== stage $name FAILED after $took s"
  fi
}

unit_tests() {
  "$root/scripts/check-layers.py" "$root" &&
    cmake -S "$root" -B "$root/build/asan" -DCMAKE_BUILD_TYPE=Debug -DSR_SANITIZE=ON >/dev/null &&
    cmake --build "$root/build/asan" -j"$jobs" || return 1
  fuzz_beside_start
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
# One target: its lines ("--- fuzz NAME: ..." and the DONE line, or the log's tail); status 0
# when it ran and passed, 1 when it ran and failed, 2 when it could not run.
fuzz_one() { # NAME SOURCE
  local name=$1 src=$2 target work runs start
  target=$root/build/fuzz/fuzz_$name
  if [ ! -x "$target" ]; then
    echo "--- fuzz $name: NOT BUILT ($target)"; return 2
  fi
  if [ ! -d "$root/fixtures/fuzz/$name" ]; then
    echo "--- fuzz $name: no seed corpus fixtures/fuzz/$name"; return 2
  fi
  runs=${FUZZ_RUNS:-$(grep -oE 'fuzz-ci-runs: [0-9]+' "$src" | head -1 | grep -oE '[0-9]+$')}
  runs=${runs:-200000}
  work=$(mktemp -d)
  echo "--- fuzz $name: $runs runs, seed $fuzz_seed"
  start=$SECONDS
  local status=0
  if ! "$target" -seed="$fuzz_seed" -runs="$runs" -reload=0 -use_cmp=0 -max_total_time=120 -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$root/build/fuzz/crash-$name-" "$work" "$root/fixtures/fuzz/$name" \
       2>"$work.log"; then
    tail -40 "$work.log"; status=1
  else
    echo "    $(grep -E '^#[0-9]+[[:space:]]+DONE' "$work.log" | tail -1 | sed -E 's/[[:space:]]+/ /g') in $((SECONDS - start)) s"
  fi
  rm -rf "$work" "$work.log"
  return $status
}

# The targets run $jobs at a time (each is one single-threaded process with its own seed, runs
# and working corpus, so this changes nothing in what each one does); their lines are printed
# in the targets' order, each target's together.
fuzz_smoke() {
  CC=clang cmake -S "$root" -B "$root/build/fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSR_FUZZ=ON -DSR_SANITIZE=ON >/dev/null &&
    cmake --build "$root/build/fuzz" -j"$jobs" || return 1
  local ok=0 ran=0 src name out n=0 i rc
  out=$(mktemp -d)
  for src in "$root"/tests/fuzz/fuzz_*.c; do
    [ -f "$src" ] || continue
    name=$(basename "$src" .c); name=${name#fuzz_}
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    { fuzz_one "$name" "$src"; echo $? >"$out/$n.rc"; } >"$out/$n.out" 2>&1 &
    n=$((n + 1))
  done
  wait
  for ((i = 0; i < n; i++)); do
    cat "$out/$i.out"
    rc=$(cat "$out/$i.rc" 2>/dev/null || echo 1)
    [ "$rc" -eq 0 ] || ok=1
    [ "$rc" -eq 2 ] || ran=$((ran + 1))
  done
  rm -rf "$out"
  if [ "$ran" -eq 0 ]; then
    echo "--- no fuzz target ran"; ok=1
  fi
  return $ok
}

# The fuzz stage shares nothing with the unit stage (its own build directory, no port, no file of
# the ASan build), and the unit stage's ctest is mostly one single-threaded model test on one of
# the two cores. So once the ASan build is done, the fuzz build and runs start beside ctest at
# nice 10 (ctest's tests keep most of the CPU they ask for; 19 would let any other niced work on
# a shared machine starve the fuzz run), their output into a file; the fuzz stage then
# waits for them and prints it, with their own time on its stage line.
fuzz_beside_pid= fuzz_beside_dir=
fuzz_beside_start() {
  [ "${SKIP_FUZZ:-0}" = 1 ] && return 0
  [ -z "$fuzz_beside_pid" ] || return 0
  fuzz_beside_dir=$(mktemp -d)
  (
    renice -n 10 -p "$BASHPID" >/dev/null
    trap 'kill $(jobs -p) 2>/dev/null' EXIT
    t0=$SECONDS
    fuzz_smoke >"$fuzz_beside_dir/out" 2>&1
    echo "$? $((SECONDS - t0))" >"$fuzz_beside_dir/rc"
  ) &
  fuzz_beside_pid=$!
}

fuzz_stage() {
  if [ -z "$fuzz_beside_pid" ]; then
    fuzz_smoke; return
  fi
  local t0=$SECONDS rc took
  wait "$fuzz_beside_pid"
  fuzz_beside_pid=
  cat "$fuzz_beside_dir/out"
  read -r rc took <"$fuzz_beside_dir/rc" 2>/dev/null || { rc=1 took=0; echo "--- the fuzz run beside the unit stage ended without a status"; }
  echo "--- ran beside the unit stage from its ctest on; waited $((SECONDS - t0)) s for it here"
  rm -rf "$fuzz_beside_dir"
  stage_took=$took
  return "$rc"
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

# Each .NET project is built once in this run (scripts/lib/built_once.sh).
SR_BUILT_ONCE_DIR=$(mktemp -d)
export SR_BUILT_ONCE_DIR
# An interrupted run does not leave the fuzz run beside the unit stage going.
trap '[ -z "$fuzz_beside_pid" ] || kill "$fuzz_beside_pid" 2>/dev/null; rm -rf "$SR_BUILT_ONCE_DIR"' EXIT
stage deps env SR_WITH_MONO=1 scripts/install-deps.sh
stage unit unit_tests
[ "${SKIP_FUZZ:-0}" = 1 ] || stage fuzz fuzz_stage
[ "${SKIP_INTEROP:-0}" = 1 ] || stage interop interop
stage bench bench_smoke

echo
[ ${#failed_stages[@]} -gt 0 ] && echo "failed stages: ${failed_stages[*]}"
echo "test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
