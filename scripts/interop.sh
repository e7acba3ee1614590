#!/usr/bin/env bash
# interop.sh - real SignalR clients against the ASP.NET Core backend in tests/backend:
#  1. the stock Core clients (JS and .NET, JSON and MessagePack) straight to the backend,
#  2. the same suites through signalr-relay (a difference between 1 and 2 is a relay bug),
#  3. the stock legacy clients (jQuery 2.4.3 in headless Chromium, .NET 2.4.2) through the relay's
#     /signalr endpoint, translated to the same backend hubs.
#  4. the captured sessions of those clients (fixtures/legacy) replayed against the same relay, the
#     server's side compared with the recording (tests/legacy/capture/replay.mjs).
# The relay runs from the ASan/UBSan build when there is one, so a leak or memory error found under
# real traffic fails the run too.
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

echo "=== legacy clients through the relay ($RELAY_URL/signalr)"
SIGNALR_LEGACY_URL=$RELAY_URL/signalr tests/legacy/run.sh || status=1

echo "=== captured legacy sessions (fixtures/legacy) replayed through the same relay"
SIGNALR_LEGACY_URL=$RELAY_URL/signalr tests/legacy/capture/run.sh || status=1

relay_stop || { echo "the relay did not shut down cleanly"; status=1; }
exit $status
