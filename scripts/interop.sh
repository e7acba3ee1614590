#!/usr/bin/env bash
# interop.sh - real SignalR clients against the ASP.NET Core backend in tests/backend, first
# straight to it, then through signalr-relay. The two runs execute the same suites; a
# difference between them is a relay bug. The relay runs from the ASan/UBSan build when there is
# one, so a leak or memory error found under real traffic fails the run too.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/backend.sh
source scripts/lib/relay.sh

status=0
cleanup() { relay_stop || status=1; backend_stop; }
trap cleanup EXIT

backend_build || exit 1
backend_start || exit 1

echo "=== Core clients straight to the backend ($BACKEND_URL)"
SIGNALR_URL=$BACKEND_URL SIGNALR_DIRECT=1 tests/interop/run.sh || status=1

relay_start || exit 1
echo "=== Core clients through the relay ($RELAY_URL)"
SIGNALR_URL=$RELAY_URL SIGNALR_EXPECT_TRANSPORTS=WebSockets SIGNALR_EXPECT_FORWARDED_FOR=127.0.0.1 \
    tests/interop/run.sh || status=1

relay_stop || { echo "the relay did not shut down cleanly"; status=1; }
exit $status
