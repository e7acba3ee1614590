#!/usr/bin/env bash
# Runs the legacy client suites against a running legacy SignalR 2.x endpoint (the relay's
# /signalr) and prints a summary:
#   browser  the stock jQuery client (signalr 2.4.3 from npm) in headless Chromium
#   dotnet   the stock .NET client (Microsoft.AspNet.SignalR.Client 2.4.2)
#
#   SIGNALR_LEGACY_URL=http://127.0.0.1:8080/signalr tests/legacy/run.sh
#
# Environment:
#   SIGNALR_LEGACY_URL      required; the relay must route chatHub -> /chat, statusHub -> /status
#                           of the test backend (tests/backend)
#   SIGNALR_LEGACY_SUITES   default "browser dotnet"
#   SIGNALR_LEGACY_PAGE     same-origin (default) | cross-origin, see browser/lib/harness.mjs
#   SIGNALR_LEGACY_ONLY     .NET suite: only scenarios whose name contains this
#   SIGNALR_LEGACY_SUITE_TIMEOUT  outer bound of each suite run in seconds (default 600); each browser
#                           test has 120 s, each .NET scenario 90 s, and a stuck one fails by name
#   SIGNALR_LABEL           a word put in front of every suite name in the summary
# Installs what it needs: npm ci (browser), dotnet build, and Debian's chromium through apt-get
# when /usr/bin/chromium is missing. Every run is bounded in time; nothing listening at the URL
# makes every scenario fail at once with that reason.
# Exit status: 0 only if every suite ran and nothing failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -z "${SIGNALR_LEGACY_URL:-}" ]; then
    echo "set SIGNALR_LEGACY_URL to the legacy endpoint, e.g. http://127.0.0.1:8080/signalr" >&2
    exit 2
fi
suites="${SIGNALR_LEGACY_SUITES:-browser dotnet}"
suite_timeout="${SIGNALR_LEGACY_SUITE_TIMEOUT:-600}"
label="${SIGNALR_LABEL:+$SIGNALR_LABEL }"
log_dir="$(mktemp -d "${TMPDIR:-/tmp}/signalr-legacy.XXXXXX")"
source "$here/../../scripts/lib/suite.sh"

export DOTNET_NOLOGO=1 DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

prepare_browser() {
    if [ -z "${SIGNALR_LEGACY_CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then
        echo "== apt-get install chromium (Debian's build; no browser is downloaded)"
        { timeout 600 apt-get update -qq &&
          DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq chromium; } >"$log_dir/apt.log" 2>&1 || {
            tail -n 20 "$log_dir/apt.log"
            return 1
        }
    fi
    suite_npm_ci "$here/browser"
}

prepare_dotnet() { suite_dotnet_build "$here/dotnet"; }

run_browser() {
    echo "== ${label}legacy/browser (jQuery SignalR 2.4.3, Chromium, page ${SIGNALR_LEGACY_PAGE:-same-origin})"
    suite_node "$here/browser" "$log_dir/browser.tap" 120 "$suite_timeout" test/
    suite_record "${label}legacy/browser/${SIGNALR_LEGACY_PAGE:-same-origin}" "$SUITE_PASSED" "$SUITE_FAILED" "$SUITE_STATUS"
}

run_dotnet() {
    echo "== ${label}legacy/dotnet (Microsoft.AspNet.SignalR.Client 2.4.2)"
    suite_dotnet "$log_dir/dotnet.txt" "$suite_timeout" dotnet "$here/dotnet/bin/Release/net10.0/signalr-legacy-dotnet.dll"
    suite_record "${label}legacy/dotnet" "$SUITE_PASSED" "$SUITE_FAILED" "$SUITE_STATUS"
}

started=$SECONDS
for suite in $suites; do
    case "$suite" in
        browser) if prepare_browser; then run_browser; else suite_record "legacy/browser (setup)" 0 1 1; fi ;;
        dotnet) if prepare_dotnet; then run_dotnet; else suite_record "legacy/dotnet (build)" 0 1 1; fi ;;
        *) echo "unknown suite '$suite' (browser, dotnet)" >&2; exit 2 ;;
    esac
done

echo
echo "== legacy summary against $SIGNALR_LEGACY_URL ($((SECONDS - started)) s; logs in $log_dir)"
suite_summary
echo "legacy: $SUITE_TOTAL_PASSED passed, $SUITE_TOTAL_FAILED failed"
[ "$SUITE_TOTAL_FAILED" -eq 0 ]
