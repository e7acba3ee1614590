#!/usr/bin/env bash
# relay-tests.sh - tests of what signalr-relay does that a direct connection never shows:
# backend loss, timeouts and keepalives, handshake refusals, token expiry, size limits, flow
# control, CORS, routing, /metrics, many connections at once, shutdown, and the legacy endpoint's
# own rules (validation texts, start failures, reconnects it cannot honour, dead sockets, the
# disconnect timeout) (tests/relay, node --test).
#
# Starts its own processes and always stops them (trap):
#   backend A    the test backend (tests/backend): hubs chat, status, secure
#   backend B    a second backend process, only for the "backend dies" test, which kill -9s it
#   relay "tuned"  short timers and small limits, CORS for https://app.example, and three more
#                hubs: dead (a port nothing listens on), flaky (backend B) and hung (a port the
#                backend-hangs test listens on and never answers)
#   relay "plain"  default flags (no CORS), for the no-CORS checks and the 500-connection test
#   relay "doomed" default flags; the shutdown test sends it SIGTERM under live sessions
# Some tests start relays (and a backend) of their own through tests/lib/process.mjs, from the same
# RELAY_BIN: relay-flags (--path-prefix, --token-secret, --backend-source-addresses, a restart) and
# backend-returns; each must exit 0 with a clean sanitizer log too.
# All three relays run from the ASan/UBSan build (built here if missing): a relay that exits
# non-zero on SIGTERM or leaves a sanitizer report in its log counts as a failed test.
# Prints `N passed, N failed` last; exit status 0 only when nothing failed.
# RELAY_TESTS="test/keepalive.test.mjs ..." runs only those files (paths under tests/relay).
# Time bounds: each test 120 s (tests/lib/test.mjs), the node run RELAY_TESTS_TIMEOUT (600 s).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source scripts/lib/backend.sh
source scripts/lib/relay.sh
source scripts/lib/suite.sh

# The tuned relay's flags; the tests read the same values from the environment.
KEEPALIVE_S=1
CLIENT_TIMEOUT_S=2
HANDSHAKE_TIMEOUT_S=1
NEGOTIATE_TIMEOUT_S=1
DISCONNECT_TIMEOUT_S=1
LONG_POLL_TIMEOUT_S=2
MAX_MESSAGE=1M
MAX_BUFFERED=64K
CORS_ORIGIN=https://app.example
LEGACY_KEEPALIVE_S=1
LEGACY_DISCONNECT_S=1

# relay.sh's sanitizer settings, with ASan's quarantine of freed memory cut from 256 MB to 16 MB
# so that the relay's RSS (the flow-control test bounds it) follows what the relay really holds.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=23:quarantine_size_mb=16}"

passed=0
failed=0
started=$SECONDS
log_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-relay-tests.XXXXXX")"
A_PID= B_PID= TUNED_PID= PLAIN_PID= DOOMED_PID= TUNED_LOG= PLAIN_LOG= DOOMED_LOG=

# relay_stop / backend_stop work on RELAY_* / BACKEND_* globals; these swap a saved instance in.
stop_relay_instance() { # NAME PID LOG
    [ -n "$2" ] || return 0
    RELAY_PID=$2 RELAY_LOG=$3
    if relay_stop; then
        echo "ok      relay $1 exited 0 on SIGTERM with a clean sanitizer log"; passed=$((passed + 1))
    else
        echo "FAILED  relay $1: bad exit or sanitizer report (log $3)"; failed=$((failed + 1))
    fi
}

cleanup() {
    stop_relay_instance tuned "$TUNED_PID" "$TUNED_LOG"; TUNED_PID=
    stop_relay_instance plain "$PLAIN_PID" "$PLAIN_LOG"; PLAIN_PID=
    stop_relay_instance doomed "$DOOMED_PID" "$DOOMED_LOG"; DOOMED_PID=
    BACKEND_PID=$B_PID; backend_stop; B_PID=
    BACKEND_PID=$A_PID; backend_stop; A_PID=
}

finish() {
    cleanup
    echo
    echo "== relay tests: $((SECONDS - started)) s; logs in $log_dir"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

setup_failed() {
    echo "relay-tests: $1" >&2
    failed=$((failed + 1))
    finish
    exit 1
}

trap 'cleanup' EXIT
trap 'exit 130' INT TERM

# --- build what is missing ----------------------------------------------------------------------
if [ -z "${RELAY_BIN:-}" ]; then
    RELAY_BIN="$root/build/asan/signalr-relay"
    relay_build_asan || setup_failed "relay build failed"
fi
export RELAY_BIN
if [ ! -d tests/relay/node_modules/@microsoft/signalr ] || [ ! -d tests/relay/node_modules/ws ]; then
    (cd tests/relay && npm ci --no-audit --no-fund --loglevel=error) || setup_failed "npm ci (tests/relay) failed"
fi
backend_build || setup_failed "backend build failed"

# --- start backends and relays --------------------------------------------------------------------
backend_start || setup_failed "backend A did not start"
A_PID=$BACKEND_PID A_URL=$BACKEND_URL A_LOG=$BACKEND_LOG
BACKEND_PID=
backend_start || setup_failed "backend B did not start"
B_PID=$BACKEND_PID B_URL=$BACKEND_URL
BACKEND_PID=
BACKEND_URL=$A_URL

# A port that was free a moment ago and that nothing listens on now, and one for a test to listen on.
DEAD_PORT="$(backend_free_port)"
HUNG_PORT="$(backend_free_port)"

# Debian's lws needs more than the 1024 descriptors some shells default to for 500 sessions.
ulimit -n 8192 2>/dev/null || true

relay_start --keepalive "$KEEPALIVE_S" --client-timeout "$CLIENT_TIMEOUT_S" \
    --handshake-timeout "$HANDSHAKE_TIMEOUT_S" --negotiate-timeout "$NEGOTIATE_TIMEOUT_S" \
    --disconnect-timeout "$DISCONNECT_TIMEOUT_S" --long-poll-timeout "$LONG_POLL_TIMEOUT_S" \
    --max-message-size "$MAX_MESSAGE" --max-buffered "$MAX_BUFFERED" --cors-origin "$CORS_ORIGIN" \
    --legacy-keepalive "$LEGACY_KEEPALIVE_S" --legacy-disconnect-timeout "$LEGACY_DISCONNECT_S" \
    --hub "dead=http://127.0.0.1:$DEAD_PORT/chat" --hub "flaky=$B_URL/chat" \
    --hub "hung=http://127.0.0.1:$HUNG_PORT/chat" ||
    setup_failed "tuned relay did not start"
TUNED_PID=$RELAY_PID TUNED_LOG=$RELAY_LOG TUNED_URL=$RELAY_URL
RELAY_PID=
relay_start || setup_failed "plain relay did not start"
PLAIN_PID=$RELAY_PID PLAIN_LOG=$RELAY_LOG PLAIN_URL=$RELAY_URL
RELAY_PID=
relay_start || setup_failed "doomed relay did not start"
DOOMED_PID=$RELAY_PID DOOMED_LOG=$RELAY_LOG DOOMED_URL=$RELAY_URL
RELAY_PID=

# --- run the suite ----------------------------------------------------------------------------------
tap="$log_dir/relay-tests.tap"
(cd tests/relay &&
    RELAY_URL=$TUNED_URL RELAY_PID=$TUNED_PID PLAIN_RELAY_URL=$PLAIN_URL BACKEND_URL=$A_URL \
    DOOMED_RELAY_URL=$DOOMED_URL DOOMED_RELAY_PID=$DOOMED_PID \
    FLAKY_BACKEND_PID=$B_PID DEAD_PORT=$DEAD_PORT HUNG_PORT=$HUNG_PORT \
    RELAY_KEEPALIVE_S=$KEEPALIVE_S RELAY_CLIENT_TIMEOUT_S=$CLIENT_TIMEOUT_S \
    RELAY_HANDSHAKE_TIMEOUT_S=$HANDSHAKE_TIMEOUT_S RELAY_NEGOTIATE_TIMEOUT_S=$NEGOTIATE_TIMEOUT_S \
    RELAY_DISCONNECT_TIMEOUT_S=$DISCONNECT_TIMEOUT_S RELAY_LONG_POLL_TIMEOUT_S=$LONG_POLL_TIMEOUT_S \
    RELAY_MAX_MESSAGE=$MAX_MESSAGE RELAY_MAX_BUFFERED=$MAX_BUFFERED RELAY_CORS_ORIGIN=$CORS_ORIGIN \
    RELAY_LEGACY_KEEPALIVE_S=$LEGACY_KEEPALIVE_S RELAY_LEGACY_DISCONNECT_S=$LEGACY_DISCONNECT_S \
    suite_node . "$tap" 120 "${RELAY_TESTS_TIMEOUT:-600}" --test-concurrency=1 ${RELAY_TESTS:-test/}
    echo "$SUITE_PASSED $SUITE_FAILED" >"$log_dir/counts")
read -r node_passed node_failed <"$log_dir/counts" 2>/dev/null || { node_passed=0; node_failed=1; }
passed=$((passed + node_passed)) failed=$((failed + node_failed))
# Backend A must outlive the suite (only backend B is killed on purpose): if it died, every failure
# after that is its death, not the relay's doing. Its exit status tells how: 0 after a SIGTERM or
# SIGINT (graceful shutdown), 137 for SIGKILL, 134 for an abort.
if [ ! -r "/proc/$A_PID/status" ] || grep -q '^State:.*zombie' "/proc/$A_PID/status"; then
    wait "$A_PID" 2>/dev/null; a_status=$?
    echo "FAILED  backend A (pid $A_PID) stopped during the run (exit status $a_status); its log:"; tail -5 "$A_LOG"
    failed=$((failed + 1))
fi

echo "relay logs: tuned $TUNED_LOG, plain $PLAIN_LOG, doomed $DOOMED_LOG"
trap - EXIT
finish
