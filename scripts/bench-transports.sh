#!/usr/bin/env bash
# bench-transports.sh - messages per second, p50/p99 round trip and the relay's RSS per idle client
# for Core WebSockets, Server-Sent Events and long polling through the relay (release build), each
# transport on a fresh relay in front of the test backend (tests/relay/bench-transports.mjs).
# With a fourth argument "legacy", then the legacy transports too (tests/legacy/bench/transports.mjs):
# pushes to one receiver per transport (5000 broadcasts) on one relay, and the RSS per idle client
# (idle clients) of each transport on a fresh relay.
#   scripts/bench-transports.sh [clients=20] [seconds=10] [idle=500] [legacy]
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/backend.sh
source scripts/lib/relay.sh
[ -x build/release/signalr-relay ] || { cmake -S . -B build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
    nice cmake --build build/release -j2 --target signalr-relay >/dev/null; } || exit 1
RELAY_BIN="$PWD/build/release/signalr-relay"
[ -d tests/relay/node_modules/@microsoft/signalr ] || (cd tests/relay && npm ci --no-audit --no-fund --loglevel=error) || exit 1
ulimit -n 8192 2>/dev/null || true
backend_build || exit 1
backend_start >/dev/null || exit 1
trap 'relay_stop >/dev/null; backend_stop' EXIT
for transport in WebSockets ServerSentEvents LongPolling; do
    relay_start >/dev/null || exit 1
    (cd tests/relay && node bench-transports.mjs "$RELAY_URL" "$RELAY_PID" "${1:-20}" "${2:-10}" "${3:-500}" "$transport") |
        { [ "$transport" = WebSockets ] && cat || tail -1; }
    relay_stop >/dev/null || exit 1
done
[ "${4:-}" = legacy ] || exit 0
[ -d tests/legacy/bench/node_modules/ws ] || (cd tests/legacy/bench && npm ci --no-audit --no-fund --loglevel=error) || exit 1
relay_start >/dev/null || exit 1
node tests/legacy/bench/transports.mjs --relay "$RELAY_URL" --pid "$RELAY_PID" --messages 5000 --idle 0 | sed -n '/^pushes/,/^└/p'
relay_stop >/dev/null || exit 1
for transport in webSockets serverSentEvents longPolling; do
    relay_start >/dev/null || exit 1
    node tests/legacy/bench/transports.mjs --relay "$RELAY_URL" --pid "$RELAY_PID" --idle "${3:-500}" --idle-only "$transport" | tail -2 | head -1
    relay_stop >/dev/null || exit 1
done
