#!/usr/bin/env bash
# Runs the interop suites (stock JS client and stock .NET client) against a running SignalR
# endpoint, for each protocol and transport, and prints a summary.
#
#   SIGNALR_URL=http://127.0.0.1:5000 tests/interop/run.sh
#
# Environment:
#   SIGNALR_URL         required; hubs at /chat, /status, /secure
#   SIGNALR_PROTOCOLS   default "json messagepack"
#   SIGNALR_TRANSPORTS  default "$SIGNALR_TRANSPORT" or "WebSockets"
#                       (any of WebSockets ServerSentEvents LongPolling; messagepack+SSE is skipped:
#                       SSE carries text only)
#   SIGNALR_SUITES      default "js dotnet"
#   SIGNALR_EXPECT_BACKEND_TRANSPORT  the transport the hub sees (default: the client's; a relay
#                       in proxy mode reaches it over WebSockets); passed through
#   SIGNALR_DIRECT=1    the URL is the backend itself (enables direct-only checks); passed through
#   SIGNALR_LABEL       a word put in front of every suite name in the summary (e.g. "release")
#   SIGNALR_DOOMED_PATH, SIGNALR_DOOMED_PID  a chat hub (path under SIGNALR_URL, or a whole URL)
#                       whose backend process (that pid) the first .NET run kills: the .NET
#                       client when its backend dies
# Time bounds: each JS test 60 s and each JS run 300 s; each .NET scenario 60 s (Program.cs) and
# each .NET run 400 s (a stuck test or scenario fails with its name; a stuck run fails as a whole).
# Exit status: 0 only if every suite ran and nothing failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${SIGNALR_URL:?set SIGNALR_URL, e.g. http://127.0.0.1:5000}"
protocols="${SIGNALR_PROTOCOLS:-json messagepack}"
transports="${SIGNALR_TRANSPORTS:-${SIGNALR_TRANSPORT:-WebSockets}}"
suites="${SIGNALR_SUITES:-js dotnet}"
label="${SIGNALR_LABEL:+$SIGNALR_LABEL }"
log_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-interop.XXXXXX")"
source "$here/../../scripts/lib/suite.sh"

export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

prepare_js() { suite_npm_ci "$here/js"; }
prepare_dotnet() { suite_dotnet_build "$here/dotnet"; }

run_js() {
    local name="${label}js/$1/$2"
    echo "== $name"
    SIGNALR_PROTOCOL="$1" SIGNALR_TRANSPORT="$2" suite_node "$here/js" "$log_dir/js-$1-$2.tap" 60 300 test/
    suite_record "$name" "$SUITE_PASSED" "$SUITE_FAILED" "$SUITE_STATUS"
}

doomed_used=0
run_dotnet() {
    local name="${label}dotnet/$1/$2"
    echo "== $name"
    # The backend SIGNALR_DOOMED_PID serves can be killed once: only the first .NET run gets it.
    local doomed=()
    if [ -n "${SIGNALR_DOOMED_PATH:-}" ] && [ "$doomed_used" = 1 ]; then
        doomed=(env -u SIGNALR_DOOMED_PATH -u SIGNALR_DOOMED_PID)
    fi
    doomed_used=1
    SIGNALR_PROTOCOL="$1" SIGNALR_TRANSPORT="$2" suite_dotnet "$log_dir/dotnet-$1-$2.txt" 400 \
        "${doomed[@]}" dotnet "$here/dotnet/bin/Release/net10.0/signalr-interop-dotnet.dll"
    suite_record "$name" "$SUITE_PASSED" "$SUITE_FAILED" "$SUITE_STATUS"
}

started=$SECONDS
for suite in $suites; do
    case "$suite" in
        js) prepare_js || suite_record "js (npm ci)" 0 1 1 ;;
        dotnet) prepare_dotnet || suite_record "dotnet (build)" 0 1 1 ;;
        *) echo "unknown suite '$suite'" >&2; exit 2 ;;
    esac
done

for transport in $transports; do
    for protocol in $protocols; do
        if [ "$protocol" = messagepack ] && [ "$transport" = ServerSentEvents ]; then
            SUITE_SUMMARY+=("$(printf '%-8s %-40s (MessagePack cannot use SSE)' skipped "${label}*/$protocol/$transport")")
            continue
        fi
        for suite in $suites; do
            "run_$suite" "$protocol" "$transport"
        done
    done
done

echo
echo "== interop summary against $SIGNALR_URL ($((SECONDS - started)) s; logs in $log_dir)"
suite_summary
echo "interop: $SUITE_TOTAL_PASSED passed, $SUITE_TOTAL_FAILED failed"
[ "$SUITE_TOTAL_FAILED" -eq 0 ]
