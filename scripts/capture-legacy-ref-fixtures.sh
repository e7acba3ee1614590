#!/usr/bin/env bash
# capture-legacy-ref-fixtures.sh - records fixtures/legacy/reference/*.jsonl: the stock legacy
# clients' sessions against the REAL server (ASP.NET SignalR 2.4.1 on Mono, tests/legacy-ref), which
# serves serverSentEvents and longPolling. tests/legacy/capture/run.sh replays them against the relay
# with signalr-replay check --reference: the relay must answer as the real server did, except for the
# differences of tests/legacy-ref/README.md's table that tests/legacy/capture/reference-mask.mjs masks.
#
#   scripts/capture-legacy-ref-fixtures.sh
#
# Kept: the session and reconnect scenarios of both clients over serverSentEvents and longPolling.
# Both suites run with SIGNALR_LEGACY_SERVER=reference, which relaxes what tests/legacy-ref/README.md
# lists: over longPolling the real server answers Counter's /send at once and the progress waits for
# a poll the client no longer needs (row 26; jQuery got [0] of [0, 1, 2]), so the jQuery session
# accepts an in-order prefix there. Not foreverFrame: the relay declines it by design (row 10), so
# its replay would compare one refusal and nothing else (docs/FIXTURES.md says where it is asserted).
set -uo pipefail
cd "$(dirname "$0")/.."
source tests/legacy-ref/lib/reference.sh
out_dir="fixtures/legacy/reference"
work_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-ref-capture.XXXXXX")"
recorder_pid=""
cleanup() {
    [ -n "$recorder_pid" ] && { kill -TERM "$recorder_pid" 2>/dev/null; wait "$recorder_pid" 2>/dev/null; }
    reference_stop
}
trap cleanup EXIT
reference_start || exit 1
up="${REFERENCE_URL%/signalr}"
jquery_version="$(node -p 'require("./tests/legacy/browser/node_modules/signalr/package.json").version')"
dotnet_version="$(sed -n 's/.*Include="Microsoft.AspNet.SignalR.Client" Version="\([^"]*\)".*/\1/p' tests/legacy/dotnet/LegacyDotnet.csproj)"
failed=0
for entry in "jquery-$jquery_version-longPolling-reconnect|browser|^reconnect:|longPolling" \
             "jquery-$jquery_version-longPolling-session|browser|^fixture session|longPolling" \
             "dotnet-$dotnet_version-longPolling-reconnect|dotnet|reconnect:|longPolling" \
             "dotnet-$dotnet_version-longPolling-session|dotnet|fixture session|longPolling" \
             "jquery-$jquery_version-serverSentEvents-session|browser|^fixture session|serverSentEvents" \
             "jquery-$jquery_version-serverSentEvents-reconnect|browser|^reconnect:|serverSentEvents" \
             "dotnet-$dotnet_version-serverSentEvents-session|dotnet|fixture session|serverSentEvents" \
             "dotnet-$dotnet_version-serverSentEvents-reconnect|dotnet|reconnect:|serverSentEvents"; do
    IFS='|' read -r name suite filter transport <<<"$entry"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
    node tests/legacy/capture/record.mjs --upstream "$up" --listen "127.0.0.1:$port" --out "$work_dir/$name.jsonl" \
        --label "$name: $suite scenario /$filter/ against ASP.NET SignalR 2.4.1 (tests/legacy-ref)" 2>"$work_dir/$name.rec.log" &
    recorder_pid=$!
    until grep -q '^recording ' "$work_dir/$name.rec.log" 2>/dev/null; do sleep 0.1; done
    url="http://127.0.0.1:$port/signalr"
    case "$suite" in
        browser) (cd tests/legacy/browser && SIGNALR_LEGACY_SERVER=reference SIGNALR_LEGACY_URL="$url" SIGNALR_LEGACY_TRANSPORT=$transport timeout 300 \
                      node --test --test-name-pattern="$filter" test/legacy-jquery.test.mjs) >"$work_dir/$name.log" 2>&1 ;;
        dotnet) SIGNALR_LEGACY_SERVER=reference SIGNALR_LEGACY_URL="$url" SIGNALR_LEGACY_ONLY="$filter" \
                    SIGNALR_LEGACY_TRANSPORT=$transport timeout 300 \
                    dotnet tests/legacy/dotnet/bin/Release/net10.0/signalr-legacy-dotnet.dll >"$work_dir/$name.log" 2>&1 ;;
    esac
    status=$?
    kill -TERM "$recorder_pid" 2>/dev/null; wait "$recorder_pid" 2>/dev/null; recorder_pid=""
    if [ "$status" -ne 0 ] || ! grep -qE '^(ℹ |# )?pass 1$|^1 passed, 0 failed$' "$work_dir/$name.log" ||
       ! tail -n 1 "$work_dir/$name.jsonl" | grep -q '"type":"end"'; then
        echo "== $name: the scenario failed or the capture is incomplete; kept as it was ($work_dir)"; failed=$((failed + 1)); continue
    fi
    mkdir -p "$out_dir" && mv "$work_dir/$name.jsonl" "$out_dir/$name.jsonl" && echo "== $out_dir/$name.jsonl"
done
echo "capture (real server): $failed failed"
[ "$failed" -eq 0 ]
