#!/usr/bin/env bash
# capture-legacy-fixtures.sh - regenerates fixtures/legacy/*.jsonl: real legacy SignalR 2.x client
# sessions recorded between the client and the relay (format: docs/FIXTURES.md).
#
# Starts the test backend (scripts/lib/backend.sh) and the relay (scripts/lib/relay.sh), then for
# each capture below starts tests/legacy/capture/record.mjs in front of the relay's /signalr, runs
# one scenario of a legacy client suite against the recorder, and stops the recorder. A capture
# replaces its fixture only if the scenario passed and the file is complete; at the end every new
# fixture is replayed against the same relay (signalr-replay check, tools/replay) as a check.
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

only="${1:-}"
out_dir="$root/fixtures/legacy"
work_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-capture.XXXXXX")"
# A fixture is a handful of small messages; anything bigger means a scenario with big payloads
# slipped into a capture.
max_bytes=65536
recorder_pid=""

cleanup() {
    if [ -n "$recorder_pid" ]; then kill -TERM "$recorder_pid" 2>/dev/null; wait "$recorder_pid" 2>/dev/null; fi
    relay_stop
    backend_stop
}
trap cleanup EXIT

export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

npm_ci() {
    local dir="$1"
    if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
        (cd "$dir" && timeout 600 npm ci --no-audit --no-fund --loglevel=error) || return 1
    fi
}

prepare() {
    [ -x "${SIGNALR_LEGACY_CHROMIUM:-/usr/bin/chromium}" ] ||
        { echo "no Chromium at ${SIGNALR_LEGACY_CHROMIUM:-/usr/bin/chromium}: run tests/legacy/run.sh once (it installs Debian's)" >&2; return 1; }
    npm_ci tests/legacy/capture || return 1
    npm_ci tests/legacy/browser || return 1
    local out
    out="$(timeout 600 dotnet build tests/legacy/dotnet -c Release --nologo -v quiet 2>&1)" || { printf '%s\n' "$out" >&2; return 1; }
    backend_build || return 1
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# capture NAME SUITE FILTER TRANSPORT: one scenario of one suite over TRANSPORT through a fresh
# recorder into NAME.jsonl.
capture() {
    local name="$1" suite="$2" filter="$3" transport="${4:-webSockets}"
    local port file log status
    port="$(free_port)"
    file="$work_dir/$name.jsonl"
    log="$work_dir/$name.log"
    echo "== $name ($suite, scenario \"$filter\")"
    node tests/legacy/capture/record.mjs --upstream "$RELAY_URL" --listen "127.0.0.1:$port" \
        --out "$file" --label "$name: $suite scenario /$filter/" 2>"$work_dir/$name.recorder.log" &
    recorder_pid=$!
    local waited=0
    # It says "recording ..." once it listens (a request to it would end up in the capture).
    until grep -q '^recording ' "$work_dir/$name.recorder.log" 2>/dev/null; do
        sleep 0.1; waited=$((waited + 1))
        if [ "$waited" -gt 100 ] || ! kill -0 "$recorder_pid" 2>/dev/null; then
            echo "   the recorder did not start:"; cat "$work_dir/$name.recorder.log"; return 1
        fi
    done
    local url="http://127.0.0.1:$port/signalr"
    case "$suite" in
        browser)
            (cd tests/legacy/browser && SIGNALR_LEGACY_URL="$url" SIGNALR_LEGACY_TRANSPORT="$transport" timeout 300 node --test \
                --test-name-pattern="$filter" --test-reporter=spec test/) >"$log" 2>&1 ;;
        dotnet)
            SIGNALR_LEGACY_URL="$url" SIGNALR_LEGACY_ONLY="$filter" SIGNALR_LEGACY_TRANSPORT="$transport" timeout 300 \
                dotnet tests/legacy/dotnet/bin/Release/net10.0/signalr-legacy-dotnet.dll >"$log" 2>&1 ;;
    esac
    status=$?
    kill -TERM "$recorder_pid" 2>/dev/null
    wait "$recorder_pid" 2>/dev/null
    recorder_pid=""
    # The suites report "pass 1"/"1 passed": exactly the one scenario ran, and passed.
    if [ "$status" -ne 0 ] || ! grep -qE '^(ℹ |# )?pass 1$|^1 passed, 0 failed$' "$log"; then
        echo "   the scenario failed or did not run exactly once (exit $status); fixture kept as it was. Log:"
        tail -n 30 "$log" | sed 's/^/   | /'
        return 1
    fi
    if ! tail -n 1 "$file" | grep -q '"type":"end"'; then
        echo "   the capture has no end line; fixture kept as it was"; return 1
    fi
    local bytes
    bytes="$(wc -c <"$file")"
    if [ "$bytes" -gt "$max_bytes" ]; then
        echo "   the capture is $bytes bytes (limit $max_bytes): a scenario with a big payload? fixture kept as it was"; return 1
    fi
    mkdir -p "$out_dir"
    mv "$file" "$out_dir/$name.jsonl"
    captured+=("$out_dir/$name.jsonl")
    echo "   $out_dir/$name.jsonl: $(wc -l <"$out_dir/$name.jsonl") lines, $bytes bytes"
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
relay_start || exit 1

captured=()
failed=0
for entry in "${captures[@]}"; do
    IFS='|' read -r name suite filter <<<"$entry"
    case "$name" in *"$only"*) ;; *) continue ;; esac
    transport="${name#*-*-}"; transport="${transport%%-*}"
    capture "$name" "$suite" "$filter" "$transport" || failed=$((failed + 1))
done

if [ "${#captured[@]}" -gt 0 ]; then
    echo "== replaying the new fixtures against the same relay"
    replay_bin="${SIGNALR_REPLAY_BIN:-$(dirname "$RELAY_BIN")/tools/replay/signalr-replay}"
    if [ -z "${SIGNALR_REPLAY_BIN:-}" ]; then
        nice cmake --build "$(dirname "$RELAY_BIN")" -j2 --target signalr-replay >/dev/null || failed=$((failed + 1))
    fi
    "$replay_bin" check --target "$RELAY_URL" "${captured[@]}" || failed=$((failed + 1))
fi
relay_stop || { echo "the relay did not shut down cleanly"; failed=$((failed + 1)); }
echo "capture: ${#captured[@]} captured, $failed failed (logs in $work_dir)"
[ "$failed" -eq 0 ]
