#!/usr/bin/env bash
# Runs the legacy reference checks against the real ASP.NET SignalR 2.4.1 server (tests/legacy-ref):
#   http    test/*.test.mjs: raw HTTP answers (node's test runner, per-test timeouts)
#   dotnet  the stock .NET client 2.4.2 scenarios (tests/legacy/dotnet) over serverSentEvents
#           and longPolling, with SIGNALR_LEGACY_SERVER=reference
#   parity  parity/*.test.mjs: the same requests to the real server and through the relay (in front
#           of tests/backend; build the relay first: build/asan or build/release), the fields the
#           relay answers as the real server does asserted equal
#   browser signalr-no-jquery (npm) over serverSentEvents and longPolling, and a jQuery page using
#           only the generated proxies of /signalr/hubs, in headless Chromium against the real server
#           (tests/legacy/browser/test/legacy-nojquery.test.mjs, legacy-hubs-script.test.mjs)
#   jquery  the jQuery suite (tests/legacy/browser/test/legacy-jquery.test.mjs: the stock jQuery
#           client 2.4.3 in headless Chromium, same-origin page) against the real server with
#           SIGNALR_LEGACY_SERVER=reference (only the README table's rows 1 and 26): all 17
#           scenarios over serverSentEvents, and over longPolling the 4 whose requests depend most
#           on the transport ($jquery_lp_scenarios below)
# Builds what it needs, starts the server on a free 127.0.0.1 port, always stops it (trap), and
# ends with "legacy-ref: N passed, M failed"; exit status 0 only if nothing failed.
#   tests/legacy-ref/run-tests.sh            # every suite, about 3 minutes once built
#   LEGACY_REF_SUITES=http tests/legacy-ref/run-tests.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
suites="${LEGACY_REF_SUITES:-http dotnet parity browser jquery}"
# Over longPolling, the jQuery scenarios whose requests differ most from serverSentEvents': pushes
# in poll answers (welcome; the fixture session's broadcast), results and progress between /send
# and /poll (Counter: difference row 26), a drop as an aborted poll (reconnect). The rest (Echo
# values, errors, groups, two hubs, SecureHub, the cookie read at /send, ping, stop) makes the same
# /send, negotiate and /abort requests on both transports and runs over serverSentEvents only, to
# keep this step near 60 s.
jquery_lp_scenarios='^(welcome push|streaming method Counter|reconnect:|fixture session)'

export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
source "$here/lib/reference.sh"
source "$root/scripts/lib/backend.sh"
source "$root/scripts/lib/relay.sh"
source "$root/scripts/lib/suite.sh"
cleanup() { relay_stop >/dev/null 2>&1; backend_stop; reference_stop; }
trap cleanup EXIT
trap 'exit 130' INT TERM

started=$SECONDS
passed=0 failed=0
summary=()
record() { # NAME PASSED FAILED STATUS
    local p="$2" f="$3"
    if [ "$4" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p)); failed=$((failed + f))
    summary+=("$(printf '%-8s %-34s %3d passed, %d failed' "$([ "$f" -eq 0 ] && echo ok || echo FAILED)" "$1" "$p" "$f")")
}

reference_start || { echo "legacy-ref: 0 passed, 1 failed"; exit 1; }
log_dir="$(dirname "$REFERENCE_LOG")"

for suite in $suites; do
    case "$suite" in
    http)
        echo "== raw HTTP answers of the real server (node --test)"
        tap="$log_dir/http.tap"
        (cd "$here" && SIGNALR_LEGACY_REF_URL="$REFERENCE_URL" timeout 300 node --test \
            --test-reporter=spec --test-reporter-destination=stdout \
            --test-reporter=tap --test-reporter-destination="$tap" test/)
        status=$?
        p="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" | tail -n 1)"
        f="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" | tail -n 1)"
        record "legacy-ref/http" "${p:-0}" "${f:-0}" "$status"
        ;;
    dotnet)
        if built_once_done "$root/tests/legacy/dotnet"; then
            echo "== dotnet build (tests/legacy/dotnet): built earlier in this run"
        else
            echo "== dotnet build (tests/legacy/dotnet)"
            if ! out="$(timeout 600 nice dotnet build "$root/tests/legacy/dotnet" -c Release --nologo -v quiet 2>&1)"; then
                printf '%s\n' "$out"
                record "legacy-ref/dotnet (build)" 0 1 1
                continue
            fi
            built_once_mark "$root/tests/legacy/dotnet"
        fi
        for transport in serverSentEvents longPolling; do
            echo "== .NET client 2.4.2 over $transport against the real server"
            out_file="$log_dir/dotnet-$transport.txt"
            SIGNALR_LEGACY_URL="$REFERENCE_URL" SIGNALR_LEGACY_TRANSPORT="$transport" SIGNALR_LEGACY_SERVER=reference \
                timeout 600 dotnet "$root/tests/legacy/dotnet/bin/Release/net10.0/signalr-legacy-dotnet.dll" | tee "$out_file"
            status=${PIPESTATUS[0]}
            line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out_file" | tail -n 1)"
            p=0 f=0
            if [ -n "$line" ]; then p="${line%% passed*}"; f="${line#*passed, }"; f="${f%% failed}"; fi
            record "legacy-ref/dotnet $transport" "$p" "$f" "$status"
        done
        ;;
    parity)
        echo "== the same requests to the real server and through the relay (node --test parity/)"
        if ! { suite_npm_ci "$root/tests/legacy/capture" && backend_build && backend_start && relay_start; }; then
            record "legacy-ref/parity (setup)" 0 1 1
            continue
        fi
        tap="$log_dir/parity.tap"
        (cd "$here" && SIGNALR_LEGACY_REF_URL="$REFERENCE_URL" SIGNALR_LEGACY_RELAY_URL="$RELAY_URL/signalr" \
            timeout 300 node --test --test-reporter=spec --test-reporter-destination=stdout \
            --test-reporter=tap --test-reporter-destination="$tap" parity/)
        status=$?
        relay_stop || status=1
        p="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" | tail -n 1)"
        f="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" | tail -n 1)"
        record "legacy-ref/parity" "${p:-0}" "${f:-0}" "$status"
        ;;
    browser)
        echo "== signalr-no-jquery and the generated proxies in Chromium against the real server"
        if [ ! -x "${SIGNALR_LEGACY_CHROMIUM:-/usr/bin/chromium}" ] || ! suite_npm_ci "$root/tests/legacy/browser"; then
            record "legacy-ref/browser (setup: chromium, npm ci)" 0 1 1
            continue
        fi
        tap="$log_dir/browser.tap"
        (cd "$root/tests/legacy/browser" && SIGNALR_LEGACY_URL="$REFERENCE_URL" timeout 300 node --test \
            --test-reporter=spec --test-reporter-destination=stdout \
            --test-reporter=tap --test-reporter-destination="$tap" test/legacy-nojquery.test.mjs test/legacy-hubs-script.test.mjs)
        status=$?
        p="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" | tail -n 1)"
        f="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" | tail -n 1)"
        record "legacy-ref/browser" "${p:-0}" "${f:-0}" "$status"
        ;;
    jquery)
        if [ ! -x "${SIGNALR_LEGACY_CHROMIUM:-/usr/bin/chromium}" ] || ! suite_npm_ci "$root/tests/legacy/browser"; then
            record "legacy-ref/jquery (setup: chromium, npm ci)" 0 1 1
            continue
        fi
        for transport in serverSentEvents longPolling; do
            echo "== the jQuery suite over $transport in Chromium against the real server"
            pattern=()
            [ "$transport" = longPolling ] && pattern=(--test-name-pattern="$jquery_lp_scenarios")
            tap="$log_dir/jquery-$transport.tap"
            (cd "$root/tests/legacy/browser" && SIGNALR_LEGACY_URL="$REFERENCE_URL" SIGNALR_LEGACY_TRANSPORT="$transport" \
                SIGNALR_LEGACY_SERVER=reference SIGNALR_LEGACY_TIMEOUT_S=30 timeout 300 node --test "${pattern[@]}" \
                --test-reporter=spec --test-reporter-destination=stdout \
                --test-reporter=tap --test-reporter-destination="$tap" test/legacy-jquery.test.mjs)
            status=$?
            p="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" | tail -n 1)"
            f="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" | tail -n 1)"
            record "legacy-ref/jquery $transport" "${p:-0}" "${f:-0}" "$status"
        done
        ;;
    *) echo "unknown suite '$suite' (http, dotnet, parity, browser, jquery)" >&2; exit 2 ;;
    esac
done

echo
echo "== legacy-ref summary ($((SECONDS - started)) s; server log $REFERENCE_LOG)"
printf '%s\n' "${summary[@]}"
echo "legacy-ref: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
