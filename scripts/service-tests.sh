#!/usr/bin/env bash
# service-tests.sh - service mode with real peers (tests/service, node --test): the real
# ASP.NET Core app of tests/service-app (Azure SignalR SDK 1.34.0, AddAzureSignalR) connects its
# hubs to the relay, and stock clients (@microsoft/signalr and the .NET client, JSON and
# MessagePack) negotiate at the app, follow its redirect to the relay and talk to the hubs through it.
#
# Builds what is missing (the relay's ASan/UBSan build, the app, the npm packages), starts on
# free 127.0.0.1 ports:
#   relay   --service-key KEY (ASan build: a non-zero exit on SIGTERM or a sanitizer report in
#           its log counts as a failed test)
#   app     the test app, 2 server connections per hub, pointed at the relay
# runs the tests (some start and kill apps of their own), and always stops everything (trap).
# Prints `N passed, N failed` last; exit status 0 only when nothing failed.
# The stock .NET client's scenarios (tests/service/dotnet) and the stock legacy .NET client's
# (tests/service/legacy-dotnet) run after the node suite.
# SERVICE_TESTS="test/groups.test.mjs ..." runs only those files (paths under tests/service), and
# not the .NET scenarios.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source scripts/lib/relay.sh

export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=23}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

SERVICE_KEY="service-tests-$(date +%s)-$$"
OLD_SERVICE_KEY="service-tests-old-key-$$" # a second key, as while rotating: tokens signed with it pass too
APP_DIR="$root/tests/service-app"
APP_DLL="$APP_DIR/bin/Release/net10.0/signalr-service-app.dll"

passed=0
failed=0
started=$SECONDS
log_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-service-tests.XXXXXX")"
RELAY_PID= APP_PID=

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

cleanup() {
    if [ -n "$APP_PID" ]; then
        kill -TERM "$APP_PID" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$APP_PID" 2>/dev/null
        wait "$APP_PID" 2>/dev/null
        APP_PID=
    fi
    if [ -n "$RELAY_PID" ]; then
        if relay_stop; then
            echo "ok      the relay exited 0 on SIGTERM with a clean sanitizer log"; passed=$((passed + 1))
        else
            echo "FAILED  the relay: bad exit or sanitizer report (log $RELAY_LOG)"; failed=$((failed + 1))
        fi
    fi
}

finish() {
    cleanup
    echo
    echo "== service tests: $((SECONDS - started)) s; logs in $log_dir"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

setup_failed() {
    echo "service-tests: $1" >&2
    failed=$((failed + 1))
    trap - EXIT
    finish
    exit 1
}

trap 'cleanup' EXIT
trap 'exit 130' INT TERM

# --- build what is missing ----------------------------------------------------------------------
if [ -z "${RELAY_BIN:-}" ]; then
    RELAY_BIN="$root/build/asan/signalr-relay"
    relay_build_asan || setup_failed "relay build failed"
    # test/capture.test.mjs replays what the relay captured
    nice cmake --build build/asan -j2 --target signalr-replay >/dev/null || setup_failed "signalr-replay build failed"
fi
export RELAY_BIN
if [ ! -d tests/legacy/browser/node_modules/playwright-core ] || [ ! -d tests/legacy/browser/node_modules/signalr ]; then
    # The legacy jQuery client and the Chromium driver of test/legacy.test.mjs (tests/legacy/browser).
    (cd tests/legacy/browser && npm ci --no-audit --no-fund --loglevel=error) || setup_failed "npm ci (tests/legacy/browser) failed"
fi
if [ ! -d tests/service/node_modules/@microsoft/signalr ] || [ ! -d tests/service/node_modules/ws ] ||
    [ ! -d tests/service/node_modules/signalr-v3 ]; then
    (cd tests/service && npm ci --no-audit --no-fund --loglevel=error) || setup_failed "npm ci (tests/service) failed"
fi
if ! out="$(nice dotnet build "$APP_DIR/ServiceApp.csproj" -c Release --nologo -v quiet 2>&1)"; then
    printf '%s\n' "$out" >&2
    setup_failed "the service app did not build"
fi
DOTNET_CLIENT_DIR="$root/tests/service/dotnet"
if ! out="$(nice dotnet build "$DOTNET_CLIENT_DIR/ServiceClientDotnet.csproj" -c Release --nologo -v quiet 2>&1)"; then
    printf '%s\n' "$out" >&2
    setup_failed "the .NET client scenarios did not build"
fi
LEGACY_DOTNET_DIR="$root/tests/service/legacy-dotnet"
if ! out="$(nice dotnet build "$LEGACY_DOTNET_DIR/ServiceLegacyDotnet.csproj" -c Release --nologo -v quiet 2>&1)"; then
    printf '%s\n' "$out" >&2
    setup_failed "the legacy .NET client scenarios did not build"
fi

# --- start the relay and the app ------------------------------------------------------------------
RELAY_LOG="$log_dir/relay.log"
RELAY_PORT="$(free_port)"
RELAY_URL="http://127.0.0.1:$RELAY_PORT"
APP_PORT="$(free_port)"
APP_URL="http://127.0.0.1:$APP_PORT"
LEGACY_APP_PORT="$(free_port)" # an app test/legacy.test.mjs starts and kills, legacy hub `lboard`
# The relay also answers /board/negotiate and /ops/negotiate by asking the app (--app-negotiate),
# and asks it who a legacy client of board, ops or lboard is. A dropped legacy client ends after
# 10 s (+5 s) instead of 30 s (+5 s): test/legacy-leave.test.mjs waits for that.
"$RELAY_BIN" --listen "127.0.0.1:$RELAY_PORT" --service-key "$OLD_SERVICE_KEY" --service-key "$SERVICE_KEY" \
    --legacy-disconnect-timeout 10 \
    --app-negotiate "board=$APP_URL/board" --app-negotiate "ops=$APP_URL/ops" \
    --app-negotiate "lboard=http://127.0.0.1:$LEGACY_APP_PORT/board" >"$RELAY_LOG" 2>&1 </dev/null &
RELAY_PID=$!
for i in $(seq 1 100); do
    curl -sf -o /dev/null --max-time 2 "$RELAY_URL/metrics" && break
    kill -0 "$RELAY_PID" 2>/dev/null || { cat "$RELAY_LOG" >&2; RELAY_PID=; setup_failed "the relay exited during start"; }
    [ "$i" -eq 100 ] && setup_failed "the relay did not answer within 20 s"
    sleep 0.2
done
echo "relay listening on $RELAY_URL (pid $RELAY_PID, log $RELAY_LOG)"

APP_LOG="$log_dir/app.log"
nice dotnet "$APP_DLL" --urls "$APP_URL" \
    "--Azure:SignalR:ConnectionString=Endpoint=http://127.0.0.1;Port=$RELAY_PORT;AccessKey=$SERVICE_KEY;Version=1.0;" \
    >"$APP_LOG" 2>&1 </dev/null &
APP_PID=$!
# Ready when its negotiate redirects: at least one server connection per hub finished the handshake.
for i in $(seq 1 150); do
    status="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST "$APP_URL/board/negotiate?negotiateVersion=1" || true)"
    [ "$status" = 200 ] && break
    kill -0 "$APP_PID" 2>/dev/null || { cat "$APP_LOG" >&2; APP_PID=; setup_failed "the app exited during start"; }
    [ "$i" -eq 150 ] && { tail -30 "$APP_LOG" >&2; setup_failed "the app did not connect to the relay within 30 s"; }
    sleep 0.2
done
echo "app listening on $APP_URL (pid $APP_PID, log $APP_LOG)"

# --- run the suite ----------------------------------------------------------------------------------
tap="$log_dir/service-tests.tap"
(cd tests/service &&
    RELAY_URL=$RELAY_URL APP_URL=$APP_URL APP_DLL=$APP_DLL SERVICE_KEY=$SERVICE_KEY OLD_SERVICE_KEY=$OLD_SERVICE_KEY \
    LEGACY_APP_PORT=$LEGACY_APP_PORT \
    timeout 900 node --test --test-concurrency=1 --test-timeout=90000 \
        --test-reporter=spec --test-reporter-destination=stdout \
        --test-reporter=tap --test-reporter-destination="$tap" ${SERVICE_TESTS:-test/})
node_status=$?
node_passed="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)"
node_failed="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)"
node_passed=${node_passed:-0} node_failed=${node_failed:-0}
if [ "$node_status" -ne 0 ] && [ "$node_failed" -eq 0 ]; then node_failed=1; fi
if [ "$node_passed" -eq 0 ] && [ "$node_failed" -eq 0 ]; then node_failed=1; fi
passed=$((passed + node_passed)) failed=$((failed + node_failed))
# A .NET client run's result lines, and its "N passed, M failed" added to the totals; a run that
# failed without a count, or counted nothing, is one failure.
count_client_run() { # LOG EXIT_STATUS RESULT_LINE_PATTERN
    local log=$1 status=$2 p f
    grep -E "$3" "$log"
    p="$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$log" | tail -n 1)"
    f="$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$log" | tail -n 1)"
    p=${p:-0} f=${f:-0}
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; tail -20 "$log"; fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p)) failed=$((failed + f))
}

# The stock .NET client (Microsoft.AspNetCore.SignalR.Client), JSON and MessagePack.
if [ -z "${SERVICE_TESTS:-}" ]; then
    dotnet_log="$log_dir/dotnet-client.log"
    APP_URL=$APP_URL timeout 180 dotnet "$DOTNET_CLIENT_DIR/bin/Release/net10.0/signalr-service-client-dotnet.dll" \
        >"$dotnet_log" 2>&1
    count_client_run "$dotnet_log" $? "^(PASS|FAIL) "
    # The stock legacy .NET client (Microsoft.AspNet.SignalR.Client 2.4.2) at the relay's /signalr.
    legacy_log="$log_dir/legacy-dotnet-client.log"
    RELAY_URL=$RELAY_URL APP_URL=$APP_URL timeout 200 dotnet \
        "$LEGACY_DOTNET_DIR/bin/Release/net10.0/signalr-service-legacy-dotnet.dll" >"$legacy_log" 2>&1
    count_client_run "$legacy_log" $? "^(PASS|FAIL) "
fi
if ! kill -0 "$APP_PID" 2>/dev/null; then
    echo "FAILED  the suite's app (pid $APP_PID) stopped during the run; its log:"; tail -20 "$APP_LOG"
    failed=$((failed + 1))
    APP_PID=
fi
# The relay pings every server connection every 5 s: the SDK must never have timed one out.
if grep -q "elapsed without receiving a message from service" "$APP_LOG"; then
    echo "FAILED  the app timed out a server connection (no bytes from the relay for 30 s):"
    grep "elapsed without receiving" "$APP_LOG" | head -3
    failed=$((failed + 1))
else
    echo "ok      the app never timed out a server connection (the relay's [3] pings)"; passed=$((passed + 1))
fi
grep -E "Sanitizer|runtime error" "$RELAY_LOG" | head -5
trap - EXIT
finish
