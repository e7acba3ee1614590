#!/usr/bin/env bash
# Builds and starts the test backend, runs the interop suites straight against it (no relay),
# and always stops the backend. Arguments are none; tests/interop/run.sh's environment variables
# (SIGNALR_PROTOCOLS, SIGNALR_TRANSPORTS, SIGNALR_SUITES) pass through.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/backend.sh
source "$root/scripts/lib/backend.sh"

trap backend_stop EXIT
trap 'exit 130' INT TERM

started=$SECONDS
echo "== building backend"
backend_build
backend_start

status=0
SIGNALR_URL="$BACKEND_URL" SIGNALR_DIRECT=1 "$root/tests/interop/run.sh" || status=$?

if [ "$status" -ne 0 ]; then
    echo "== backend log ($BACKEND_LOG), last lines:"
    tail -n 40 "$BACKEND_LOG" || true
fi
echo "interop-direct finished in $((SECONDS - started)) s"
exit "$status"
