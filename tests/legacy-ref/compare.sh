#!/usr/bin/env bash
# Starts the real ASP.NET SignalR 2.4.1 server (tests/legacy-ref), the test backend and the relay
# (build it first: build/release or build/asan), runs every raw HTTP case of lib/observe.mjs
# against both legacy endpoints and prints where the relay answers differently (A = real server,
# B = relay). Stops everything it started, whatever happens. About 1 minute.
#   tests/legacy-ref/compare.sh [--only TEXT] [--skip TEXT]
# relay_start maps chatHub, statusHub and secureHub. If the relay dies during the run, the cases
# after that fail with "fetch failed" and the relay's log is shown.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$here/lib/reference.sh"
source "$root/scripts/lib/backend.sh"
source "$root/scripts/lib/relay.sh"
cleanup() { relay_stop >/dev/null 2>&1; backend_stop; reference_stop; }
trap cleanup EXIT
trap 'exit 130' INT TERM

reference_start || exit 1
backend_build || exit 1
backend_start || exit 1
relay_start || exit 1
echo "A = real server $REFERENCE_URL, B = relay $RELAY_URL/signalr"
node "$here/compare.mjs" "$REFERENCE_URL" "$RELAY_URL/signalr" "$@"
status=$?
if ! kill -0 "$RELAY_PID" 2>/dev/null; then
    echo "!! the relay died during the run; the end of its log:"
    tail -5 "$RELAY_LOG"
    status=1
fi
exit $status
