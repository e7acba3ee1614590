# Bash functions that run one test suite with bounded time and count its results, shared by
# scripts/relay-tests.sh, tests/interop/run.sh, tests/legacy/run.sh and tests/legacy/capture/run.sh.
# Source this file; nothing runs on load.
#
#   suite_node DIR TAP PER_TEST_S OUTER_S [node --test arguments: files, directories...]
#       runs `node --test` in DIR with a per-test timeout (a stuck test fails with its name; the
#       test files import test/it/hooks from tests/lib/test.mjs, which applies it),
#       --test-force-exit (a socket left open cannot keep the process alive after the last test)
#       and an outer `timeout` around the whole run; spec output on stdout, TAP into TAP.
#   suite_dotnet OUT OUTER_S COMMAND...
#       runs a .NET scenario runner (it bounds each scenario itself and prints
#       "N passed, M failed" last) under an outer `timeout`, output on stdout and in OUT.
# Both set SUITE_PASSED, SUITE_FAILED and SUITE_STATUS (the exit status, 124 after the outer
# timeout). A run that crashed, timed out or ran nothing counts as (at least) one failure.
#
#   suite_npm_ci DIR                         npm ci in DIR when its node_modules is missing or older
#                                            than its package-lock.json (bounded)
#   suite_dotnet_build DIR                   dotnet build -c Release, quiet unless it fails (bounded);
#                                            once per scripts/test.sh run (scripts/lib/built_once.sh)
#   suite_record NAME PASSED FAILED STATUS   adds one line to SUITE_SUMMARY and the counts to
#                                            SUITE_TOTAL_PASSED / SUITE_TOTAL_FAILED
#   suite_summary                            prints SUITE_SUMMARY

source "$(dirname "${BASH_SOURCE[0]}")/built_once.sh"

SUITE_TOTAL_PASSED=0
SUITE_TOTAL_FAILED=0
SUITE_SUMMARY=()

suite_counts() { # STATUS PASSED FAILED
    SUITE_STATUS=$1 SUITE_PASSED=${2:-0} SUITE_FAILED=${3:-0}
    if [ "$SUITE_STATUS" -eq 124 ] || [ "$SUITE_STATUS" -eq 137 ]; then
        echo "TIMED OUT: the run was stopped by its outer timeout (a test outlived the per-test timeout or the process did not exit)"
        SUITE_FAILED=$((SUITE_FAILED + 1))
    elif [ "$SUITE_STATUS" -ne 0 ] && [ "$SUITE_FAILED" -eq 0 ]; then
        SUITE_FAILED=1
    fi
    if [ "$SUITE_PASSED" -eq 0 ] && [ "$SUITE_FAILED" -eq 0 ]; then SUITE_FAILED=1; fi
}

suite_node() {
    local dir=$1 tap=$2 per_test=$3 outer=$4
    shift 4
    : >"$tap"
    # Each test and hook: PER_TEST_S (tests/lib/test.mjs reads SUITE_TEST_TIMEOUT_S); each file:
    # a little under OUTER_S (Node 20's --test-timeout bounds a file, and names it); the run: OUTER_S.
    (cd "$dir" && SUITE_TEST_TIMEOUT_S="$per_test" timeout --kill-after=15 "$outer" \
        node --test --test-timeout="$(((outer > 30 ? outer - 15 : outer) * 1000))" \
        --test-force-exit --test-reporter=spec --test-reporter-destination=stdout \
        --test-reporter=tap --test-reporter-destination="$tap" "$@")
    local status=$?
    # Counted from the test lines, not from the summary: with --test-force-exit Node 20 may end
    # before the TAP reporter writes its summary. Suites (describe) are not tests, skipped and todo
    # tests (a known bug, documented where it is marked) count neither way; a test that timed out
    # is named.
    local report
    report="$(awk '
        function flush() {
            if (line == "") return
            if (!suite) {
                if (line ~ / # (SKIP|TODO)/) skipped++
                else if (line ~ /^ *ok /) passed++
                else {
                    failed++
                    if (timedout) { sub(/^ *not ok [0-9]+ - /, "", line); print "TIMED OUT: " line }
                }
            }
            line = ""; suite = 0; timedout = 0
        }
        /^ *(not )?ok [0-9]+ - / { flush(); line = $0; next }
        /^ *type: .suite.$/ { suite = 1 }
        /failureType: .testTimeoutFailure./ { timedout = 1 }
        END { flush(); printf "COUNTS %d %d\n", passed, failed }' "$tap" 2>/dev/null)"
    grep -v '^COUNTS ' <<<"$report"
    local counts
    counts="$(sed -n 's/^COUNTS //p' <<<"$report")"
    suite_counts "$status" "${counts% *}" "${counts#* }"
}

suite_dotnet() {
    local out=$1 outer=$2
    shift 2
    timeout --kill-after=15 "$outer" "$@" | tee "$out"
    local status=${PIPESTATUS[0]} line passed=0 failed=0
    line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)"
    if [ -n "$line" ]; then
        passed="${line%% passed*}"
        failed="${line#*passed, }"
        failed="${failed%% failed}"
    fi
    suite_counts "$status" "$passed" "$failed"
}

suite_npm_ci() {
    local dir=$1
    if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        echo "== npm ci ($dir)"
        (cd "$dir" && timeout 600 npm ci --no-audit --no-fund --loglevel=error) || return 1
    fi
}

suite_dotnet_build() {
    local dir=$1 out
    if built_once_done "$dir"; then
        echo "== dotnet build ($dir): built earlier in this run"
        return 0
    fi
    echo "== dotnet build ($dir)"
    if ! out="$(DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 timeout 600 dotnet build "$dir" -c Release --nologo -v quiet 2>&1)"; then
        printf '%s\n' "$out"
        return 1
    fi
    built_once_mark "$dir"
}

suite_record() { # NAME PASSED FAILED STATUS
    local name=$1 passed=$2 failed=$3 status=$4
    if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
    if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
    SUITE_TOTAL_PASSED=$((SUITE_TOTAL_PASSED + passed))
    SUITE_TOTAL_FAILED=$((SUITE_TOTAL_FAILED + failed))
    SUITE_SUMMARY+=("$(printf '%-8s %-40s %3d passed, %d failed' "$([ "$failed" -eq 0 ] && echo ok || echo FAILED)" "$name" "$passed" "$failed")")
}

suite_summary() {
    printf '%s\n' "${SUITE_SUMMARY[@]}"
}
