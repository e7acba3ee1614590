#!/usr/bin/env bash
# capture-legacy-fixtures.sh - regenerates fixtures/legacy/*.jsonl: real legacy SignalR 2.x client
# sessions recorded by the relay itself (--capture; format: docs/FIXTURES.md, signalr-capture v2).
#
# Starts the test backend (scripts/lib/backend.sh) and a relay with --capture into a work
# directory (scripts/lib/relay.sh, proxy mode), then for each capture below runs one scenario of a
# legacy client suite (tests/legacy: jQuery in Chromium with node --test --test-name-pattern, the
# .NET client with SIGNALR_LEGACY_ONLY) straight at the relay's /signalr. The relay writes one file
# per client connection, its negotiate included; a scenario's files replace its fixtures only if
# the scenario ran once and passed, every file has its end line and none is over 64 KiB. The
# suites' probe negotiates (a negotiate nobody connects with) are files of their own holding one
# request: they are left out. Fixture names: <client>-<version>-<transport>-<scenario>.jsonl for
# the scenario's first connection, -2, -3, ... for the next ones, in the order they began.
# Each scenario's new files are checked and replayed at once against a second relay, without
# --capture, on the same backend (tests/legacy/capture/test/fixtures.test.mjs: its content checks,
# and signalr-replay check on the scenario's files merged into one session by merge.mjs); a
# capture that does not replay is taken again (at most 3 times).
#
#   scripts/capture-legacy-fixtures.sh            all captures
#   scripts/capture-legacy-fixtures.sh session    only captures whose name contains "session"
#
# Needs what tests/legacy/run.sh needs (node, dotnet, /usr/bin/chromium; run that once to install
# Chromium) and a built relay (build/asan or build/release, or RELAY_BIN).
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
source scripts/lib/backend.sh
source scripts/lib/relay.sh
source scripts/lib/suite.sh
source scripts/lib/capture.sh

only="${1:-}"
out_dir="$root/fixtures/legacy"
work_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-legacy-capture.XXXXXX")"
capture_dir="$work_dir/capture"
mkdir -p "$capture_dir"
# A fixture is a handful of small messages; anything bigger means a scenario with big payloads
# slipped into a capture.
max_bytes=65536

cleanup() { relay_stop; backend_stop; }
trap cleanup EXIT
export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

prepare() {
    [ -x "${SIGNALR_LEGACY_CHROMIUM:-/usr/bin/chromium}" ] ||
        { echo "no Chromium at ${SIGNALR_LEGACY_CHROMIUM:-/usr/bin/chromium}: run tests/legacy/run.sh once (it installs Debian's)" >&2; return 1; }
    suite_npm_ci tests/legacy/capture || return 1
    suite_npm_ci tests/legacy/browser || return 1
    suite_dotnet_build tests/legacy/dotnet || return 1
    backend_build || return 1
}

# The files of connections, in the order they began (the relay's capture number, the name's last
# field): a probe's file (its negotiate and nothing else) is left out.
connection_files() {
    local f
    for f in "$capture_dir"/*.jsonl; do
        [ -e "$f" ] || continue
        [ "$(grep -c '"type":"http-request"\|"type":"ws-open"' "$f")" -gt 1 ] || continue
        local seq="${f##*-}"
        printf '%s %s\n' "${seq%.jsonl}" "$f"
    done | sort -n | cut -d' ' -f2-
}

# capture NAME SUITE FILTER TRANSPORT: one scenario over TRANSPORT, its connections into NAME*.jsonl.
capture() {
    local name="$1" suite="$2" filter="$3" transport="$4" log="$work_dir/$1.log" status
    local url="$RELAY_URL/signalr"
    echo "== $name ($suite, scenario \"$filter\")"
    rm -f "$capture_dir"/*.jsonl
    case "$suite" in
        browser)
            (cd tests/legacy/browser && SIGNALR_LEGACY_URL="$url" SIGNALR_LEGACY_TRANSPORT="$transport" timeout 300 node --test \
                --test-name-pattern="$filter" --test-reporter=spec test/) >"$log" 2>&1 ;;
        dotnet)
            SIGNALR_LEGACY_URL="$url" SIGNALR_LEGACY_ONLY="$filter" SIGNALR_LEGACY_TRANSPORT="$transport" timeout 300 \
                dotnet tests/legacy/dotnet/bin/Release/net10.0/signalr-legacy-dotnet.dll >"$log" 2>&1 ;;
    esac
    status=$?
    # The suites report "pass 1"/"1 passed": exactly the one scenario ran, and passed.
    if [ "$status" -ne 0 ] || ! grep -qE '^(ℹ |# )?pass 1$|^1 passed, 0 failed$' "$log"; then
        echo "   the scenario failed or did not run exactly once (exit $status); fixtures kept as they were. Log:"
        tail -n 30 "$log" | sed 's/^/   | /'
        return 1
    fi
    # A connection's file ends when the relay ends the connection (/abort, or the disconnect
    # timeout), a probe negotiate's after --negotiate-timeout.
    capture_all_ended "$capture_dir" 60 || { echo "   a capture has no end line 60 s after the scenario; fixtures kept as they were"; return 1; }
    local files f bytes k=1
    mapfile -t files < <(connection_files)
    [ "${#files[@]}" -gt 0 ] || { echo "   the relay wrote no connection's capture"; return 1; }
    for f in "${files[@]}"; do
        bytes="$(wc -c <"$f")"
        [ "$bytes" -le "$max_bytes" ] || { echo "   $(basename "$f") is $bytes bytes (limit $max_bytes); fixtures kept as they were"; return 1; }
    done
    # Named as fixtures, checked in a directory of their own, then moved into fixtures/legacy.
    local staged="$work_dir/staged/$name"
    rm -rf "$staged" && mkdir -p "$staged"
    for f in "${files[@]}"; do
        local target="$staged/$name.jsonl"
        [ "$k" -gt 1 ] && target="$staged/$name-$k.jsonl"
        mv "$f" "$target"
        k=$((k + 1))
    done
    verify "$name" "$staged" || return 2
    mkdir -p "$out_dir"
    rm -f "$out_dir/$name.jsonl" "$out_dir/$name"-[0-9]*.jsonl
    for f in "$staged"/*.jsonl; do
        mv "$f" "$out_dir/"
        echo "   $out_dir/$(basename "$f"): $(wc -l <"$out_dir/$(basename "$f")") lines, $(wc -c <"$out_dir/$(basename "$f")") bytes"
    done
    captured+=("$name")
}

# verify NAME DIR: the content checks and the replay of tests/legacy/capture/test/fixtures.test.mjs
# on the scenario's files in DIR, against the relay without --capture (its traffic is recorded
# nowhere). A recording can hold an order the replay cannot reproduce (jQuery's stop sends /abort
# and closes its socket at once; when the relay reads the /abort first, a replay that sends it
# first sees the relay close the socket before it can): such a capture is taken again.
verify() {
    local name="$1" dir="$2" log="$work_dir/$1.verify.log"
    if (cd tests/legacy/capture && SIGNALR_LEGACY_URL="$VERIFY_URL/signalr" SIGNALR_REPLAY_BIN="$replay_bin"         SIGNALR_LEGACY_FIXTURE_DIR="$dir" SIGNALR_LEGACY_FIXTURES="$name" timeout 300 node --test --test-reporter=spec \
        test/fixtures.test.mjs) >"$log" 2>&1; then
        echo "   checked and replayed against a relay without --capture"
        return 0
    fi
    echo "   the new capture fails its checks or its replay. Log:"
    grep -E "^✖|FAIL|line [0-9]+:|Error" "$log" | head -n 12 | sed 's/^/   | /'
    return 1
}


prepare || exit 1
jquery_version="$(node -p 'require("./tests/legacy/browser/node_modules/signalr/package.json").version')"
dotnet_version="$(sed -n 's/.*Include="Microsoft.AspNet.SignalR.Client" Version="\([^"]*\)".*/\1/p' tests/legacy/dotnet/LegacyDotnet.csproj)"
[ -n "$jquery_version" ] && [ -n "$dotnet_version" ] || { echo "cannot tell the client versions" >&2; exit 1; }

# name | suite | scenario filter (node --test-name-pattern / SIGNALR_LEGACY_ONLY); the transport is in the name
captures=()
for transport in webSockets serverSentEvents longPolling; do
    captures+=(
        "jquery-$jquery_version-$transport-session|browser|^fixture session"
        "jquery-$jquery_version-$transport-reconnect|browser|^reconnect:"
        "dotnet-$dotnet_version-$transport-session|dotnet|fixture session"
        "dotnet-$dotnet_version-$transport-reconnect|dotnet|reconnect:"
    )
done

backend_start || exit 1
relay_pick_binary || exit 1
replay_bin="${SIGNALR_REPLAY_BIN:-$(dirname "$RELAY_BIN")/tools/replay/signalr-replay}"
if [ -z "${SIGNALR_REPLAY_BIN:-}" ]; then
    nice cmake --build "$(dirname "$RELAY_BIN")" -j2 --target signalr-replay >/dev/null || exit 1
fi
# Two relays on the one backend: the one that records (probe negotiates end their files after
# --negotiate-timeout: 5 s rather than 15 keeps the wait short) and one without --capture that the
# new fixtures are replayed against. relay.sh keeps one relay in RELAY_*: the verifying one's are kept aside.
relay_start || exit 1
VERIFY_PID=$RELAY_PID VERIFY_URL=$RELAY_URL VERIFY_LOG=$RELAY_LOG
relay_start --capture "$capture_dir" --negotiate-timeout 5 || exit 1
stop_both() {
    local status=0
    relay_stop || { echo "the capturing relay did not shut down cleanly"; status=1; }
    RELAY_PID=$VERIFY_PID RELAY_LOG=$VERIFY_LOG
    VERIFY_PID=
    relay_stop || { echo "the verifying relay did not shut down cleanly"; status=1; }
    return $status
}
cleanup() { stop_both; backend_stop; }

captured=()
failed=0
for entry in "${captures[@]}"; do
    IFS='|' read -r name suite filter <<<"$entry"
    case "$name" in *"$only"*) ;; *) continue ;; esac
    transport="${name#*-*-}"; transport="${transport%%-*}"
    for attempt in 1 2 3; do
        capture "$name" "$suite" "$filter" "$transport"
        status=$?
        [ "$status" -eq 2 ] && [ "$attempt" -lt 3 ] && { echo "   capturing it again (attempt $((attempt + 1)) of 3)"; continue; }
        break
    done
    [ "$status" -eq 0 ] || failed=$((failed + 1))
done
stop_both || failed=$((failed + 1))
echo "capture: ${#captured[@]} scenarios captured, $failed failed (logs in $work_dir)"
[ "$failed" -eq 0 ]
