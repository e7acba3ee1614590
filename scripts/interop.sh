#!/usr/bin/env bash
# interop.sh - real SignalR clients against the ASP.NET Core backend in tests/backend:
#  1. the stock Core clients (JS and .NET, JSON and MessagePack) straight to the backend,
#  2. the same suites through signalr-relay (and the .NET client once more in front of a second
#     backend that it kills: the .NET client when its backend dies), once through the release build (the binary users run)
#     and once through the ASan/UBSan build (a leak or memory error under real traffic fails the
#     run); a difference between 1 and 2 is a relay bug,
#  3. the stock legacy clients (jQuery 2.4.3 in headless Chromium, .NET 2.4.2) through the relay's
#     /signalr endpoint, translated to the same backend hubs: through the ASan build with the page
#     on the relay's origin over webSockets, serverSentEvents and longPolling, and through the
#     release build the jQuery suite with the page on another origin (SIGNALR_LEGACY_PAGE=cross-origin:
#     CORS with credentials, form posts) and both suites on auto with WebSockets refused by the
#     relay (--legacy-websockets refuse), so that they fall back to serverSentEvents by themselves,
#     and the /demo page of scripts/run.sh in Chromium (both panes send, both show both messages;
#     screenshot in build/test-output/demo.png),
#  4. the captured sessions of those clients (fixtures/legacy) replayed against the ASan relay, the
#     server's side compared with the recording (signalr-replay check, tools/replay), and the Core
#     sessions of tests/replay/core and fixtures/core against the backend straight and through the
#     relay (tests/replay/run.sh).
# Builds a missing relay build first (build/release, build/asan). Every suite run is bounded in
# time (scripts/lib/suite.sh). RELAY_BUILDS="release" (or "asan") runs the relayed suites
# through one build only, for quick local loops; CI runs both.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
source scripts/lib/backend.sh
source scripts/lib/relay.sh

status=0
started=$SECONDS
timings=()
cleanup() { relay_stop || status=1; doomed_stop; backend_stop; }

# A second backend for the .NET scenario that kills its backend process (one per Core run).
DOOMED_PID= DOOMED_URL=
doomed_start() {
    local pid=$BACKEND_PID url=$BACKEND_URL port=$BACKEND_PORT log=$BACKEND_LOG
    BACKEND_PID=
    backend_start >/dev/null || return 1
    DOOMED_PID=$BACKEND_PID DOOMED_URL=$BACKEND_URL
    BACKEND_PID=$pid BACKEND_URL=$url BACKEND_PORT=$port BACKEND_LOG=$log
    export BACKEND_PID BACKEND_URL BACKEND_PORT BACKEND_LOG
}
doomed_stop() {
    [ -n "$DOOMED_PID" ] || return 0
    local pid=$BACKEND_PID
    BACKEND_PID=$DOOMED_PID
    backend_stop
    BACKEND_PID=$pid DOOMED_PID=
}
trap cleanup EXIT

build_relay() { # NAME CMAKE-FLAGS...
    local name=$1
    shift
    [ -x "$root/build/$name/signalr-relay" ] && return 0
    echo "== building the $name relay (build/$name)"
    timeout 1200 nice cmake -S "$root" -B "$root/build/$name" "$@" >/dev/null &&
        timeout 1200 nice cmake --build "$root/build/$name" -j2 --target signalr-relay >/dev/null
}

# step NAME COMMAND...: runs one suite set, notes its time, and any failure in $status.
step() {
    local name=$1 t0=$SECONDS
    shift
    "$@" || status=1
    timings+=("$(printf '%4d s  %s' $((SECONDS - t0)) "$name")")
}

backend_build || exit 1
backend_start || exit 1
# The cross-origin page is served from this port; the relays allow its origin.
PAGE_PORT="$(backend_free_port)"

echo "=== Core clients straight to the backend ($BACKEND_URL)"
doomed_start || exit 1
step "Core clients, direct" env SIGNALR_URL=$BACKEND_URL SIGNALR_DIRECT=1 \
    SIGNALR_DOOMED_PATH=$DOOMED_URL/chat SIGNALR_DOOMED_PID=$DOOMED_PID tests/interop/run.sh
doomed_stop

for build in ${RELAY_BUILDS:-release asan}; do
    case "$build" in
        release) build_relay release -DCMAKE_BUILD_TYPE=RelWithDebInfo || { echo "release build failed"; exit 1; } ;;
        asan) build_relay asan -DCMAKE_BUILD_TYPE=Debug -DSR_SANITIZE=ON || { echo "ASan build failed"; exit 1; } ;;
        *) echo "unknown build '$build' (release, asan)" >&2; exit 2 ;;
    esac
    RELAY_BIN="$root/build/$build/signalr-relay"
    doomed_start || exit 1
    relay_start --cors-origin "http://127.0.0.1:$PAGE_PORT" --hub "doomed=$DOOMED_URL/chat" --demo-dir "$root/demo" || exit 1

    echo "=== Core clients through the $build relay ($RELAY_URL)"
    # The relay offers SSE and long polling and reaches the hub over a WebSocket whatever the
    # client's transport; all three transports run through the release relay (~90 s more).
    transports=WebSockets
    [ "$build" = release ] && transports="WebSockets LongPolling ServerSentEvents"
    step "Core clients, $build relay" env SIGNALR_URL=$RELAY_URL SIGNALR_LABEL=$build SIGNALR_TRANSPORTS="$transports" \
        SIGNALR_EXPECT_BACKEND_TRANSPORT=WebSockets \
        SIGNALR_EXPECT_FORWARDED_FOR=127.0.0.1 SIGNALR_DOOMED_PATH=/doomed SIGNALR_DOOMED_PID=$DOOMED_PID tests/interop/run.sh
    doomed_stop

    if [ "$build" = asan ]; then
        echo "=== legacy clients through the $build relay ($RELAY_URL/signalr), page on the relay's origin"
        step "legacy clients, $build relay" env SIGNALR_LEGACY_URL=$RELAY_URL/signalr SIGNALR_LABEL=$build tests/legacy/run.sh
        for transport in serverSentEvents longPolling; do
            echo "=== legacy clients over $transport through the $build relay"
            step "legacy clients over $transport, $build relay" env SIGNALR_LEGACY_URL=$RELAY_URL/signalr \
                SIGNALR_LABEL="$build $transport" SIGNALR_LEGACY_TRANSPORT=$transport tests/legacy/run.sh
        done
        echo "=== captured legacy sessions (fixtures/legacy) replayed through the $build relay"
        step "legacy replay, $build relay" env SIGNALR_LEGACY_URL=$RELAY_URL/signalr tests/legacy/capture/run.sh
        echo "=== captured Core sessions replayed against the backend and through the $build relay"
        step "Core replay, $build relay vs backend" env RELAY_URL=$RELAY_URL BACKEND_URL=$BACKEND_URL tests/replay/run.sh
    else
        echo "=== jQuery client through the $build relay ($RELAY_URL/signalr), page on another origin"
        step "legacy jQuery cross-origin, $build relay" env SIGNALR_LEGACY_URL=$RELAY_URL/signalr SIGNALR_LABEL=$build \
            SIGNALR_LEGACY_SUITES=browser SIGNALR_LEGACY_PAGE=cross-origin SIGNALR_LEGACY_PAGE_PORT=$PAGE_PORT tests/legacy/run.sh
        echo "=== the /demo page (scripts/run.sh's) in Chromium through the $build relay"
        step "demo page in Chromium, $build relay" env DEMO_URL=$RELAY_URL tests/legacy/browser/demo/run.sh
        # Transport fallback: the relay refuses every WebSocket upgrade (negotiate still says
        # TryWebSockets), so both clients on auto try WebSockets, fail, and end up on serverSentEvents.
        relay_stop || { echo "the $build relay did not shut down cleanly"; status=1; }
        relay_start --legacy-websockets refuse || exit 1
        echo "=== legacy clients on auto, WebSockets refused by the $build relay: fallback"
        step "legacy fallback (auto, WebSockets refused), $build relay" env SIGNALR_LEGACY_URL=$RELAY_URL/signalr \
            SIGNALR_LABEL="$build fallback" SIGNALR_LEGACY_TRANSPORT=auto SIGNALR_LEGACY_AUTO_EXPECT=serverSentEvents \
            tests/legacy/run.sh
    fi

    relay_stop || { echo "the $build relay did not shut down cleanly"; status=1; }
    RELAY_BIN=
done

echo
echo "== interop.sh: $((SECONDS - started)) s"
printf '%s\n' "${timings[@]}"
exit $status
