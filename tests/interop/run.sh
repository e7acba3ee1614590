#!/usr/bin/env bash
# Runs the interop suites (stock JS client and stock .NET client) against a running SignalR
# endpoint, for each protocol and transport, and prints a summary.
#
#   SIGNALR_URL=http://127.0.0.1:5000 tests/interop/run.sh
#
# Environment:
#   SIGNALR_URL         required; hubs at /chat, /status, /secure
#   SIGNALR_PROTOCOLS   default "json messagepack"
#   SIGNALR_TRANSPORTS  default "$SIGNALR_TRANSPORT" or "WebSockets"
#                       (any of WebSockets ServerSentEvents LongPolling; messagepack+SSE is skipped:
#                       SSE carries text only)
#   SIGNALR_SUITES      default "js dotnet"
#   SIGNALR_DIRECT=1    the URL is the backend itself (enables direct-only checks); passed through
# Exit status: 0 only if every suite ran and nothing failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${SIGNALR_URL:?set SIGNALR_URL, e.g. http://127.0.0.1:5000}"
protocols="${SIGNALR_PROTOCOLS:-json messagepack}"
transports="${SIGNALR_TRANSPORTS:-${SIGNALR_TRANSPORT:-WebSockets}}"
suites="${SIGNALR_SUITES:-js dotnet}"
log_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-interop.XXXXXX")"

export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

prepare_js() {
    if [ ! -d "$here/js/node_modules/@microsoft/signalr" ]; then
        echo "== npm ci (tests/interop/js)"
        (cd "$here/js" && npm ci --no-audit --no-fund --loglevel=error) || return 1
    fi
}

prepare_dotnet() {
    echo "== dotnet build (tests/interop/dotnet)"
    local out
    if ! out="$(dotnet build "$here/dotnet" -c Release --nologo -v quiet 2>&1)"; then
        printf '%s\n' "$out"
        return 1
    fi
}

total_passed=0
total_failed=0
summary=()

# record NAME PASSED FAILED EXIT_STATUS
record() {
    local name="$1" passed="$2" failed="$3" status="$4"
    # A suite that crashed or ran nothing counts as one failure, whatever it printed.
    if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
    if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    summary+=("$(printf '%-8s %-34s %3d passed, %d failed' "$([ "$failed" -eq 0 ] && echo ok || echo FAILED)" "$name" "$passed" "$failed")")
}

run_js() {
    local protocol="$1" transport="$2" name="js/$1/$2" tap="$log_dir/js-$1-$2.tap"
    echo "== $name"
    (cd "$here/js" && SIGNALR_PROTOCOL="$protocol" SIGNALR_TRANSPORT="$transport" \
        node --test --test-reporter=spec --test-reporter-destination=stdout \
             --test-reporter=tap --test-reporter-destination="$tap" test/)
    local status=$?
    local passed failed
    passed="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)"
    failed="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)"
    record "$name" "${passed:-0}" "${failed:-0}" "$status"
}

run_dotnet() {
    local protocol="$1" transport="$2" name="dotnet/$1/$2" out="$log_dir/dotnet-$1-$2.txt"
    echo "== $name"
    SIGNALR_PROTOCOL="$protocol" SIGNALR_TRANSPORT="$transport" \
        dotnet "$here/dotnet/bin/Release/net10.0/signalr-interop-dotnet.dll" | tee "$out"
    local status=${PIPESTATUS[0]}
    local line passed=0 failed=0
    line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -n 1)"
    if [ -n "$line" ]; then
        passed="${line%% passed*}"
        failed="${line#*passed, }"
        failed="${failed%% failed}"
    fi
    record "$name" "$passed" "$failed" "$status"
}

started=$SECONDS
for suite in $suites; do
    case "$suite" in
        js) prepare_js || record "js (npm ci)" 0 1 1 ;;
        dotnet) prepare_dotnet || record "dotnet (build)" 0 1 1 ;;
        *) echo "unknown suite '$suite'" >&2; exit 2 ;;
    esac
done

for transport in $transports; do
    for protocol in $protocols; do
        if [ "$protocol" = messagepack ] && [ "$transport" = ServerSentEvents ]; then
            SUITE_SUMMARY+=("$(printf '%-8s %-40s (MessagePack cannot use SSE)' skipped "${label}*/$protocol/$transport")")
            continue
        fi
        for suite in $suites; do
            "run_$suite" "$protocol" "$transport"
        done
    done
done

echo
echo "== interop summary against $SIGNALR_URL ($((SECONDS - started)) s; logs in $log_dir)"
suite_summary
echo "interop: $SUITE_TOTAL_PASSED passed, $SUITE_TOTAL_FAILED failed"
[ "$SUITE_TOTAL_FAILED" -eq 0 ]
