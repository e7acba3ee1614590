#!/usr/bin/env bash
# capture-core-fixtures.sh - regenerates fixtures/core/*.jsonl: real ASP.NET Core SignalR client
# sessions recorded by the relay itself (--capture; format: docs/FIXTURES.md, signalr-capture v2).
#
# Starts the test backend (scripts/lib/backend.sh) and a relay with --capture into a work
# directory (scripts/lib/relay.sh), then for each capture below runs one scenario of an interop
# suite (tests/interop: the stock @microsoft/signalr client with node --test --test-name-pattern,
# the stock .NET client with SIGNALR_ONLY) through the relay. The relay writes one file per client
# connection; a scenario's files replace its fixtures only if the scenario ran once and passed,
# every file has its end line (the relay writes it when the session ends) and none is over 64 KiB.
# Fixture names: <client>-<version>-<protocol>-<transport>-<scenario>.jsonl, and -2, -3, ... after
# the scenario when it opened more than one connection.
#
#   scripts/capture-core-fixtures.sh            all captures
#   scripts/capture-core-fixtures.sh LongPolling only captures whose name contains "LongPolling"
#
# Needs node, dotnet and a built relay (build/asan or build/release, or RELAY_BIN).
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
source scripts/lib/backend.sh
source scripts/lib/relay.sh
source scripts/lib/suite.sh
source scripts/lib/capture.sh

only="${1:-}"
out_dir="$root/fixtures/core"
work_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-core-capture.XXXXXX")"
capture_dir="$work_dir/capture"
mkdir -p "$capture_dir"
# A fixture is a handful of small messages; anything bigger means a scenario with big payloads.
max_bytes=65536

cleanup() { relay_stop; backend_stop; }
trap cleanup EXIT
export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

prepare() {
    suite_npm_ci tests/interop/js || return 1
    suite_dotnet_build tests/interop/dotnet || return 1
    backend_build || return 1
}

# capture NAME SUITE FILTER PROTOCOL TRANSPORT: one scenario, its capture files into NAME*.jsonl.
capture() {
    local name="$1" suite="$2" filter="$3" protocol="$4" transport="$5" log="$work_dir/$1.log" status
    echo "== $name ($suite, scenario \"$filter\")"
    rm -f "$capture_dir"/*.jsonl
    case "$suite" in
        js)
            (cd tests/interop/js && SIGNALR_URL="$RELAY_URL" SIGNALR_PROTOCOL="$protocol" SIGNALR_TRANSPORT="$transport" \
                SIGNALR_EXPECT_BACKEND_TRANSPORT=WebSockets timeout 300 node --test --test-name-pattern="$filter" \
                --test-reporter=spec test/) >"$log" 2>&1 ;;
        dotnet)
            SIGNALR_URL="$RELAY_URL" SIGNALR_PROTOCOL="$protocol" SIGNALR_TRANSPORT="$transport" \
                SIGNALR_EXPECT_BACKEND_TRANSPORT=WebSockets SIGNALR_ONLY="$filter" timeout 300 \
                dotnet tests/interop/dotnet/bin/Release/net10.0/signalr-interop-dotnet.dll >"$log" 2>&1 ;;
    esac
    status=$?
    if [ "$status" -ne 0 ] || ! grep -qE '^(ℹ |# )?pass 1$|^1 passed, 0 failed$' "$log"; then
        echo "   the scenario failed or did not run exactly once (exit $status); fixtures kept as they were. Log:"
        tail -n 30 "$log" | sed 's/^/   | /'
        return 1
    fi
    capture_all_ended "$capture_dir" 30 || { echo "   a capture has no end line 30 s after the scenario; fixtures kept as they were"; return 1; }
    local files=("$capture_dir"/*.jsonl) f bytes k=1
    [ -e "${files[0]}" ] || { echo "   the relay wrote no capture"; return 1; }
    for f in "${files[@]}"; do
        bytes="$(wc -c <"$f")"
        [ "$bytes" -le "$max_bytes" ] || { echo "   $(basename "$f") is $bytes bytes (limit $max_bytes); fixtures kept as they were"; return 1; }
    done
    mkdir -p "$out_dir"
    rm -f "$out_dir/$name.jsonl" "$out_dir/$name"-[0-9]*.jsonl
    for f in "${files[@]}"; do
        local target="$out_dir/$name.jsonl"
        [ "$k" -gt 1 ] && target="$out_dir/$name-$k.jsonl"
        mv "$f" "$target"
        captured+=("$target")
        echo "   $target: $(wc -l <"$target") lines, $(wc -c <"$target") bytes"
        k=$((k + 1))
    done
}

prepare || exit 1
js_version="$(node -p 'require("./tests/interop/js/node_modules/@microsoft/signalr/package.json").version')"
dotnet_version="$(sed -n 's/.*Include="Microsoft.AspNetCore.SignalR.Client" Version="\([^"]*\)".*/\1/p' tests/interop/dotnet/InteropDotnet.csproj)"
[ -n "$js_version" ] && [ -n "$dotnet_version" ] || { echo "cannot tell the client versions" >&2; exit 1; }

# name | suite | scenario filter | protocol | transport
captures=(
    "js-$js_version-json-WebSockets-add|js|^Add returns|json|WebSockets"
    "js-$js_version-messagepack-WebSockets-add|js|^Add returns|messagepack|WebSockets"
    "js-$js_version-json-ServerSentEvents-add|js|^Add returns|json|ServerSentEvents"
    "js-$js_version-json-LongPolling-add|js|^Add returns|json|LongPolling"
    "js-$js_version-messagepack-LongPolling-add|js|^Add returns|messagepack|LongPolling"
    "dotnet-$dotnet_version-json-WebSockets-add|dotnet|Add|json|WebSockets"
    "dotnet-$dotnet_version-messagepack-WebSockets-add|dotnet|Add|messagepack|WebSockets"
    "dotnet-$dotnet_version-json-LongPolling-add|dotnet|Add|json|LongPolling"
)

backend_start || exit 1
relay_start --capture "$capture_dir" || exit 1

captured=()
failed=0
for entry in "${captures[@]}"; do
    IFS='|' read -r name suite filter protocol transport <<<"$entry"
    case "$name" in *"$only"*) ;; *) continue ;; esac
    capture "$name" "$suite" "$filter" "$protocol" "$transport" || failed=$((failed + 1))
done
relay_stop || { echo "the relay did not shut down cleanly"; failed=$((failed + 1)); }
echo "capture: ${#captured[@]} captured, $failed failed (logs in $work_dir)"
[ "$failed" -eq 0 ]
