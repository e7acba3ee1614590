#!/usr/bin/env bash
# fuzz.sh - long fuzzing campaigns for signalr-relay's libFuzzer targets (tests/fuzz/fuzz_*.c).
#
# scripts/test.sh runs every target for a fixed, seeded number of inputs so CI is
# deterministic; this script is for finding things: each target (or a named subset)
# runs for a configurable time, one after the other, in the clang ASan+UBSan build
# (CMake's SR_FUZZ=ON SR_SANITIZE=ON, build/fuzz by default). See --help.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

usage() {
  cat <<'EOF'
usage: scripts/fuzz.sh [options] [target...]

Runs each libFuzzer target (all of tests/fuzz/fuzz_*.c, or the targets named,
with or without the fuzz_ prefix) for a time, one target after the other, in the
clang ASan+UBSan build, then prints executions and coverage per target.

options:
  -t, --time SECONDS    time per target (default 600, or $FUZZ_TIME)
  -j, --jobs N          fuzzing processes per target (libFuzzer -fork=N; default 1)
  -s, --seed N          libFuzzer -seed (default 0: a random seed per run)
      --max-len N       largest input libFuzzer makes (default: libFuzzer's choice)
      --nice N          run the fuzzers at this niceness (default 19)
      --build-dir DIR   the SR_FUZZ build to (re)use (default build/fuzz)
      --work-dir DIR    corpora and artifacts of the campaigns (default build/fuzz-campaign)
      --no-build        do not configure or build; use the binaries as they are
      --list            list the targets and exit
  -h, --help            this text

Seeds come from fixtures/fuzz/<target>/; what libFuzzer finds interesting goes to
<work-dir>/corpus/<target>/ and is kept for the next campaign (fixtures stay curated).
A crash, leak, timeout or out-of-memory input is copied to
fixtures/fuzz/<target>/regress-<kind>-<hash>: the ordinary test build's ctest
corpus_<target> replays every file there, so from then on it is a regression test
(failing until the bug is fixed). The report says how to reproduce each one.
Exit status: 0 when no target found anything, 1 when one did, 2 on usage or build errors.
EOF
}

time_per_target=${FUZZ_TIME:-600}
jobs=1
seed=0
max_len=
niceness=19
build_dir=$root/build/fuzz
work_dir=$root/build/fuzz-campaign
build=1
list=0
targets=()

while [ $# -gt 0 ]; do
  case $1 in
    -t|--time) time_per_target=${2:?}; shift 2 ;;
    -j|--jobs) jobs=${2:?}; shift 2 ;;
    -s|--seed) seed=${2:?}; shift 2 ;;
    --max-len) max_len=${2:?}; shift 2 ;;
    --nice) niceness=${2:?}; shift 2 ;;
    --build-dir) build_dir=$(realpath -m "${2:?}"); shift 2 ;;
    --work-dir) work_dir=$(realpath -m "${2:?}"); shift 2 ;;
    --no-build) build=0; shift ;;
    --list) list=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("${1#fuzz_}"); shift ;;
  esac
done
for n in "$time_per_target" "$jobs" "$seed" "$niceness" ${max_len:+"$max_len"}; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "fuzz.sh: not a number: $n" >&2; exit 2; }
done
[ "$jobs" -ge 1 ] && [ "$time_per_target" -ge 1 ] || { echo "fuzz.sh: --time and --jobs must be at least 1" >&2; exit 2; }

all_targets=()
for src in "$root"/tests/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c); all_targets+=("${name#fuzz_}")
done
if [ "$list" = 1 ]; then printf '%s\n' "${all_targets[@]}"; exit 0; fi
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${all_targets[@]}")
else
  for t in "${targets[@]}"; do
    [ -f "$root/tests/fuzz/fuzz_$t.c" ] || { echo "fuzz.sh: no target $t (try --list)" >&2; exit 2; }
  done
fi

if [ "$build" = 1 ]; then
  echo "--- building the ASan+UBSan libFuzzer targets in $build_dir"
  CC=clang nice -n "$niceness" cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSR_FUZZ=ON -DSR_SANITIZE=ON >/dev/null || exit 2
  make_targets=()
  for t in "${targets[@]}"; do make_targets+=(--target "fuzz_$t"); done
  nice -n "$niceness" cmake --build "$build_dir" -j"$jobs" "${make_targets[@]}" >/dev/null || {
    echo "fuzz.sh: build failed (run: cmake --build $build_dir)" >&2; exit 2; }
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$work_dir/logs"
summary=()
found=0

for t in "${targets[@]}"; do
  bin=$build_dir/fuzz_$t
  if [ ! -x "$bin" ]; then
    echo "fuzz.sh: $bin was not built" >&2; found=1
    summary+=("$(printf '%-18s %s' "$t" "NOT BUILT")"); continue
  fi
  corpus=$work_dir/corpus/$t
  artifacts=$work_dir/artifacts/$t
  log=$work_dir/logs/$t.log
  mkdir -p "$corpus" "$artifacts"
  args=(-max_total_time="$time_per_target" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -seed="$seed" -artifact_prefix="$artifacts/")
  [ -n "$max_len" ] && args+=(-max_len="$max_len")
  [ "$jobs" -gt 1 ] && args+=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  seeds=$root/fixtures/fuzz/$t
  [ -d "$seeds" ] || seeds=
  before=$(ls "$artifacts" | wc -l)
  echo "--- fuzz $t for ${time_per_target}s (jobs $jobs, seed $seed, log $log)"
  start=$SECONDS
  nice -n "$niceness" "$bin" "${args[@]}" "$corpus" ${seeds:+"$seeds"} >"$log" 2>&1
  status=$?
  elapsed=$((SECONDS - start))

  # Executions and coverage: the last status line ("#<execs> ... cov: N ft: M ...").
  line=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$line")
  execs_stat=$(sed -nE 's/^stat::number_of_executed_units: ([0-9]+)/\1/p' "$log" | tail -1)
  [ -n "$execs_stat" ] && execs=$execs_stat
  cov=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$line")
  ft=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$line")
  corpus_files=$(ls "$corpus" | wc -l)

  new=()
  while IFS= read -r f; do
    [ -n "$f" ] && new+=("$f")
  done < <(ls -t "$artifacts" | head -n $(( $(ls "$artifacts" | wc -l) - before )))
  result=ok
  if [ ${#new[@]} -gt 0 ] || [ "$status" -ne 0 ]; then
    result="FOUND ${#new[@]} (exit $status)"; found=1
    grep -m3 -E 'property violated|ERROR: |SUMMARY: |runtime error' "$log" | sed 's/^/    /'
    for f in "${new[@]}"; do
      kind=${f%%-*}
      hash=$(sha1sum "$artifacts/$f" | cut -c1-12)
      dest=$root/fixtures/fuzz/$t/regress-$kind-$hash
      mkdir -p "$root/fixtures/fuzz/$t"
      cp "$artifacts/$f" "$dest"
      echo "    $kind input saved as ${dest#$root/}"
      echo "      reproduce: $bin ${dest#$root/}"
      echo "      it is now replayed by ctest -R corpus_$t (ordinary build): fix the bug, give the file a"
      echo "      name that says what it checks, add a unit test for the case if it deserves one, commit both"
    done
  fi
  summary+=("$(printf '%-18s %6ss %12s %7s %8s %8s  %s' "$t" "$elapsed" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$corpus_files" "$result")")
done

echo
printf '%-18s %7s %12s %7s %8s %8s  %s\n' target time execs cov ft corpus result
printf '%s\n' "${summary[@]}"
exit $found
